"""Replays of an evaluation's games: the records of the first N games of each lineup, as the evaluation played them.

``evaluate PLAYER --vs LINEUP --games G --seed S --save-replays N DIR`` plays G game seeds x 8 rotations per lineup
(``agents.arena.tables``); ``save_evaluation_replays`` records games ``0 .. N-1`` of the same table key in rotation 0
(PLAYER in seat 0): the same deal, draws and placements as those games of the evaluation (``record.record_game``
with ``game=g, num_games=G``). Each is written as ``DIR/<lineup>-game<g>.json`` (docs/replays.md) and
``.html`` (the viewer). A recording costs about what the whole evaluation's decision steps cost (its game sits in a
batch of the table's shape, so its numbers are the table's), so keep N small.
"""

from __future__ import annotations

import re
from pathlib import Path

from agents.replays import format as replay_format
from agents.replays import record, viewer
from agents.utils.progress import NoProgress, Progress


def lineup_slug(spec: str) -> str:
    """A file-name part for a ``--vs`` spec: ``greedy``, ``baseline-ppo_small-v1``, ``greedy-x6-random`` ...;
    letters, digits, ``_``, ``.`` and ``-`` only."""
    names = [n.strip() for n in spec.split(",")]
    parts = []
    for name in dict.fromkeys(names):
        count = names.count(name)
        parts.append(name if count == 1 else f"{name}-x{count}")
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", "-".join(parts)).strip("-.")
    return slug[:80] or "lineup"


def save_evaluation_replays(
    player: str,
    lineups: dict,
    games: int,
    seed: int,
    count: int,
    out_dir,
    rules: dict | None = None,
    deterministic: bool = False,
    progress: Progress | None = None,
) -> list[dict]:
    """Record games ``0 .. count-1`` of each lineup (``{spec: 7 opponent specs}``) of the evaluation of ``player``
    with ``games`` game seeds and table seed ``seed``; write each record and its viewer into ``out_dir``. Returns
    per game ``{"lineup", "game", "json", "html", "placement"}`` (``placement``: the player's rank, seat 0).
    ``ValueError`` unless ``1 <= count <= games``."""
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= games:
        raise ValueError(f"the number of replays must be in [1, games={games}], got {count!r}")
    progress = progress or NoProgress()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    saved = []
    for spec, names in lineups.items():
        for game in range(count):
            progress.status(f"recording game {game} of {player} vs {spec} ...")
            rec = record.record_game(
                [player, *names],
                seed,
                rules=rules,
                deterministic=deterministic,
                game=game,
                num_games=games,
                rotation=0,
                progress=progress,
            )
            stem = out / f"{lineup_slug(spec)}-game{game}"
            replay_format.write(rec, stem.with_suffix(".json"))
            viewer.write_html(rec, stem.with_suffix(".html"))
            saved.append(
                {
                    "lineup": spec,
                    "game": game,
                    "json": str(stem.with_suffix(".json")),
                    "html": str(stem.with_suffix(".html")),
                    "placement": rec["placements"][0],
                }
            )
    return saved
