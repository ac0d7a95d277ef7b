"""The console's progress line of a training chunk, built once, from the names of the metrics its record holds: no
trainer or loss formats text. Host machinery.

    progress_line(record, evaluation, unit="seat-steps", self_play=False)
    # '5120 seat-steps/s | place 4.21 | ret 0.10 | vs greedy 3.50 | entropy 3.12 | value loss 0.041'
"""

from __future__ import annotations

import math

from agents.arena.evaluation import OPPONENTS


def loss_parts(record: dict) -> list[str]:
    """The losses' part of the line, from the metrics ``record`` holds: a clone's accuracy on the samples it trained
    on (``loss/accuracy``), on held-out data (``val/...``: a dataset's validation games, with its best
    cross-entropy, or the new games of online cloning), then the entropy and value loss every trainer logs."""
    parts = []
    if "loss/accuracy" in record:
        parts.append(
            f"trained on: teacher's action {record['loss/accuracy']:.0%} | cross-entropy "
            f"{record['loss/cross_entropy']:.2f}"
        )
    if "val/best_cross_entropy" in record:  # a dataset clone's validation games
        parts.append(
            f"validation: teacher's action {record['val/accuracy']:.0%}{_placements(record)}, cross-entropy "
            f"{record['val/cross_entropy']:.3f} (best {record['val/best_cross_entropy']:.3f})"
        )
    elif "val/accuracy" in record:  # online cloning: the update's new games, measured before it trained on them
        parts.insert(
            0,
            f"new games: teacher's action {record['val/accuracy']:.0%}, cross-entropy "
            f"{record['val/cross_entropy']:.2f}",
        )
    parts.append(f"entropy {record['loss/entropy']:.2f} | value loss {record['loss/value']:.3f}")
    return parts


def _placements(record: dict) -> str:
    """' (placements 41%)': the held-out accuracy on the teacher's placements, where the record has a finite one."""
    value = record.get("val/accuracy_place")
    return f" (placements {value:.0%})" if isinstance(value, float) and math.isfinite(value) else ""


def progress_line(record: dict, evaluation: dict, unit: str, self_play: bool) -> str:
    """Throughput in ``unit`` per second, the training placement (not under pure ``self_play``, where it is 4.5 by
    symmetry), the episode return, the latest evaluation (``evaluation``: its metrics, {} before the first) and the
    losses (``loss_parts``)."""
    parts = [f"{record['perf/seat_sps']:.0f} {unit}/s"]
    if not self_play and math.isfinite(record.get("train/placement", math.nan)):
        parts.append(f"place {record['train/placement']:.2f}")
    if math.isfinite(record.get("train/episode_return", math.nan)):
        parts.append(f"ret {record['train/episode_return']:.2f}")
    for name in OPPONENTS:
        if f"eval/placement_vs_{name}" in evaluation:
            parts.append(f"vs {name} {evaluation[f'eval/placement_vs_{name}']:.2f}")
    if "eval/rating" in evaluation:
        parts.append(f"rating {evaluation['eval/rating']:.1f}")
    return " | ".join(parts + loss_parts(record))


__all__ = ["loss_parts", "progress_line"]
