"""``--what learning``: minutes (and env steps) of training until a preset's policy first places <= a target
against 7 greedy bots, over >= 128 seat-rotated games.

``bench_learning`` trains the preset through the library (``agents.run.training.train``, so with its checkpoints and
``metrics.jsonl`` in ``run_dir``) with the in-run evaluation every ``eval_every`` chunks on ``eval_games`` game
seeds x 8 rotations per bot (16 seeds: 128 games), and reads the curve back. Training time excludes compiling
(``compile_s``, reported apart) and evaluating (the run's ``wall_s`` counts the training chunks only); the
evaluation's games use the run's evaluation stream, never its training keys. JSON: ``preset``, ``seed``,
``target``, ``games_per_evaluation``, ``reached`` (bool), ``train_s_to_target`` / ``minutes_to_target`` /
``env_steps_to_target`` / ``update_to_target`` (None when never reached), ``compile_s``, ``train_s`` (the
whole run's), ``wall_s`` (the command's, evaluations and compiling included), ``run_dir`` and ``curve``: per
evaluation ``[update, env_steps, train_s, placement vs greedy, its 95% half-width]``.
"""

from __future__ import annotations

import time
from pathlib import Path

from agents.presets import preset_config
from agents.run.over_seeds import TARGET, TIME_METRIC, first_at_or_below
from agents.run.training import train
from agents.storage.metrics import load_metrics
from agents.utils.progress import ConsoleProgress, NoProgress

GOAL_MINUTES = 6.0  # the target for ppo_small on the 2-core CPU


def bench_learning(
    preset: str,
    run_dir,
    target: float = TARGET,
    eval_games: int = 16,
    eval_every: int = 1,
    seed: int = 0,
    total_steps: int | None = None,
    progress: bool = True,
    config=None,
) -> dict:
    """``config``: the preset's config with ``--set`` overrides (default: the preset's)."""
    overrides = {"eval_games": eval_games, "eval_every": eval_every, "seed": seed}
    if total_steps:
        overrides["total_steps"] = total_steps
    config = (config or preset_config(preset)).with_overrides(overrides)
    start = time.perf_counter()
    summary = train(config, Path(run_dir), preset=preset, progress=ConsoleProgress() if progress else NoProgress())
    _, records = load_metrics(str(run_dir))
    metric = TIME_METRIC
    curve = [
        [r["update"], r["env_steps"], r["wall_s"], r[metric], r.get(metric + "_ci95")]
        for r in records
        if r.get(metric) is not None
    ]
    first = first_at_or_below(records, target, metric)
    return {
        "preset": preset,
        "config": config.to_dict(),
        "seed": seed,
        "target": target,
        "goal_minutes": GOAL_MINUTES,
        "games_per_evaluation": eval_games * 8,
        "reached": first is not None,
        "update_to_target": first["update"] if first else None,
        "env_steps_to_target": first["env_steps"] if first else None,
        "train_s_to_target": first["wall_s"] if first else None,
        "minutes_to_target": round(first["wall_s"] / 60, 2) if first else None,
        "compile_s": summary["compile_s"],
        "train_s": summary["train_s"],
        "wall_s": round(time.perf_counter() - start, 1),
        "run_dir": str(run_dir),
        "curve": curve,
    }
