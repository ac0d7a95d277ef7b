"""A preset's result over several training seeds, re-measured on today's code.

``reproduce`` trains the preset once per training seed (each run in ``<out>/seed_<S>``, continued where it stopped
when the same call is made again), evaluates each final policy (or each run's best checkpoint, ``checkpoint="best"``;
playing its most likely actions with ``deterministic``) on ``games`` game seeds x 8 seat rotations against
each opponent lineup with an evaluation seed that is none of the training seeds, and aggregates over the training
seeds: the mean of the per-seed mean placements with a 95% t interval over seeds (``agents.arena.significance``),
and the training minutes until the in-run evaluation first placed <= ``TARGET`` against 7 greedy bots (median over
seeds; None for a seed that never did); each run's ``train_s`` counts every call of a run that was stopped and
resumed (``run_train_s``). Each seed's evaluation is kept in ``<out>/seed_<S>.eval.json``, so a
repeated call re-evaluates nothing; ``<out>/reproduce.json`` is the aggregate (``experiments.reproduce`` turns it
into a ``docs/results`` record).

Per opponent the aggregate holds ``{"mean_placement", "ci95", "per_seed", "per_seed_ci95"}``: ``ci95`` is the
half-width over training seeds (None with one seed), ``per_seed_ci95`` each seed's half-width over its game seeds.
With ``ladder_games`` each final policy is also rated on the ladder (``agents.arena.ladder.rate_on_ladder``, kept in
``<out>/seed_<S>.ladder.json``), and ``"ladder"`` holds ``{"version", "games", "seed", "rating", "ci95", "per_seed",
"per_seed_ci95"}``: the mean of the seeds' ratings in ladder points, the t half-width over seeds (None with one
seed), and each seed's bootstrap interval ``[low, high]`` over its game seeds.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

from agents.arena import ladder as ladder_rating
from agents.arena.significance import t_interval
from agents.arena.tournament import evaluate
from agents.config import TrainConfig
from agents.run.preflight import best_checkpoint, check_resumable, load_config
from agents.run.training import train
from agents.storage.metrics import load_metrics
from agents.storage.run_dir import read_owner
from agents.utils.progress import NoProgress, Progress

#: the opponent lineups every game preset is evaluated against (7 of each); ``vs_<name>`` in the aggregate
OPPONENTS = ("random", "greedy", "expert", "baseline:ppo_small-v1")
#: mean placement vs 7 greedy bots that "time to strength" measures the time to (issue 43)
TARGET = 2.5
#: which checkpoint of each seed's run is evaluated (``reproduce``'s ``checkpoint``)
CHECKPOINTS = ("final", "best")
TIME_METRIC = "eval/placement_vs_greedy"


class StoppedError(RuntimeError):
    """A training run stopped by a signal: the same call continues it."""


def seed_config(config: TrainConfig, seed: int) -> TrainConfig:
    """``config`` for training seed ``seed``."""
    return config.with_overrides({"seed": seed})


def train_seed(config: TrainConfig, preset: str, seed: int, run_dir, progress: Progress | None = None) -> dict:
    """Train (or continue: ``run_dir`` holds this seed's run) ``config`` with training seed ``seed``; the run's
    summary. A run there of another config is a ``RunError`` naming the fields."""
    config = seed_config(config, seed)
    run_dir = Path(run_dir)
    resume = run_dir.is_dir() and read_owner(run_dir) is not None
    if resume:
        check_resumable(load_config(run_dir), config)
    summary = train(config, run_dir, resume=resume, preset=preset, progress=progress, stop_on_signals=True)
    if summary.get("stopped"):
        raise StoppedError(f"seed {seed}: stopped by {summary['stopped']} after update {summary['updates']}")
    return summary


def kept_summary(run_dir: Path, wanted: dict, make) -> dict:
    """``make()``'s summary of the run in ``run_dir``, kept in ``<run_dir>.train.json`` with ``wanted`` (JSON data
    naming what the run is) once the run is whole: the same call repeated returns it without compiling again."""
    done = run_dir.with_name(run_dir.name + ".train.json")
    wanted = json.loads(json.dumps(wanted))  # as read back
    if done.is_file():
        kept = json.loads(done.read_text())
        if kept.get("config") == wanted:
            return kept["summary"]
    summary = make()
    done.write_text(json.dumps({"config": wanted, "summary": summary}, indent=1))
    return summary


def _trained(config, preset, seed, run_dir, progress) -> dict:
    """``train_seed``'s summary, kept (``kept_summary``) once the run is whole."""

    def make():
        progress.status(f"{preset} seed {seed}: training in {run_dir}")
        return train_seed(config, preset, seed, run_dir, progress)

    return kept_summary(run_dir, seed_config(config, seed).to_dict(), make)


def run_train_s(run_dir, summary: dict) -> float:
    """A finished run's training seconds over all its calls: the last ``wall_s`` of its metrics (the chunks'
    seconds, carried across a resume by the checkpoint). ``train``'s summary counts only the call that finished
    the run, too little for a run that was stopped and resumed; it is the answer only when there are no
    metrics."""
    try:
        records = [r for r in load_metrics(str(run_dir))[1] if "update" in r and r.get("wall_s") is not None]
    except FileNotFoundError:
        records = []
    return round(float(records[-1]["wall_s"]), 3) if records else summary["train_s"]


def first_at_or_below(records, target: float = TARGET, metric: str = TIME_METRIC) -> dict | None:
    """The first metrics record (``agents.storage.metrics.load_metrics``) whose in-run evaluation ``metric`` is <=
    ``target``; None when none is."""
    return next((r for r in records if r.get(metric) is not None and r[metric] <= target), None)


def minutes_to_target(run_dir, target: float = TARGET, metric: str = TIME_METRIC) -> float | None:
    """Training minutes (the run's ``wall_s``: chunks only, no compiling or evaluating) until the in-run
    evaluation's ``metric`` first was <= ``target``; None when it never was."""
    first = first_at_or_below(load_metrics(str(run_dir))[1], target, metric)
    return None if first is None else round(first["wall_s"] / 60, 2)


def over_seeds(values) -> dict:
    """``{"mean", "ci95", "n", "values"}`` of per-seed ``values`` (floats): the t interval over seeds."""
    values = [float(v) for v in values]
    mean, half = t_interval(values)
    return {"mean": mean, "ci95": half, "n": len(values), "values": values}


def _median_minutes(minutes: list) -> float | None:
    """The median over seeds, a seed that never reached the target counted as the slowest; None when the median
    itself is such a seed (at most half the seeds reached it)."""
    median = statistics.median([m if m is not None else math.inf for m in minutes]) if minutes else math.inf
    return None if math.isinf(median) else median


def aggregate(per_seed: list[dict], vs: tuple[str, ...]) -> dict:
    """The aggregate over seeds of ``per_seed`` entries ``{"seed", "eval", "minutes_to_target", ...}``."""
    out = {}
    for name in vs:
        summaries = [entry["eval"][f"vs_{name}"] for entry in per_seed]
        stats = over_seeds([s["mean_placement"] for s in summaries])
        out[f"vs_{name}"] = {
            "mean_placement": stats["mean"],
            "ci95": stats["ci95"],
            "per_seed": stats["values"],
            "per_seed_ci95": [s["ci95"] for s in summaries],
        }
    minutes = [entry["minutes_to_target"] for entry in per_seed]
    reached = [m for m in minutes if m is not None]
    out["minutes_to_target"] = {
        "target": TARGET,
        "per_seed": minutes,
        "median": _median_minutes(minutes),
        "reached": len(reached),
    }
    for key in ("updates", "env_steps", "train_s", "compile_s"):
        out[key] = [entry["summary"].get(key) for entry in per_seed]
    if all("pipeline_wall_s" in entry["summary"] for entry in per_seed):  # every phase, compiles included
        out["pipeline_wall_s"] = [entry["summary"]["pipeline_wall_s"] for entry in per_seed]
    if per_seed and all(entry.get("ladder") is not None for entry in per_seed):
        ratings = [entry["ladder"] for entry in per_seed]
        stats = over_seeds([r["rating"] for r in ratings])
        out["ladder"] = {
            "version": ratings[0]["ladder"],
            "games": ratings[0]["games"],
            "seed": ratings[0]["seed"],
            "rating": round(stats["mean"], 1),
            "ci95": None if stats["ci95"] is None else round(stats["ci95"], 1),
            "per_seed": stats["values"],
            "per_seed_ci95": [r["ci95"] for r in ratings],
        }
    return out


def _kept_answer(path: Path, wanted: dict, status: str, make, progress: Progress) -> dict:
    """``make()``'s result, kept in ``path`` as ``{"wanted", "result"}``: read back when ``wanted`` (JSON data
    naming the question) is what was asked before, so the same question asked again plays nothing."""
    cached = json.loads(path.read_text()) if path.is_file() else None
    if cached is None or cached.get("wanted") != wanted:
        progress.status(status)
        cached = {"wanted": wanted, "result": make()}
        path.write_text(json.dumps(cached, indent=1))
    return cached["result"]


def ladder_rated(
    player: str,
    step: int,
    ladder_file: Path,
    label: str,
    games: int,
    deterministic: bool = False,
    progress: Progress | None = None,
) -> dict:
    """``player``'s ladder rating (``rate_on_ladder`` on ``games`` game seeds, its default seed and version), kept
    in ``ladder_file`` with what was asked, so that the same question asked again plays nothing."""
    progress = progress or NoProgress()
    wanted = {
        "games": games,
        "update": step,
        "deterministic": deterministic,
        "version": ladder_rating.CURRENT_LADDER,
        "seed": ladder_rating.DEFAULT_SEED,
    }
    return _kept_answer(
        ladder_file,
        wanted,
        f"{label}: rating update {step} on {ladder_rating.CURRENT_LADDER} ({games} game seeds x 8)",
        lambda: ladder_rating.rate_on_ladder(player, games=games, deterministic=deterministic, progress=progress),
        progress,
    )


def evaluated(
    player: str,
    step: int,
    eval_file: Path,
    label: str,
    vs,
    games: int,
    eval_seed: int,
    checkpoint: str = "final",
    deterministic: bool = False,
    progress: Progress | None = None,
) -> dict:
    """``player``'s evaluation (``agents.arena.tournament.evaluate``: ``games`` game seeds x 8 rotations per lineup
    of ``vs`` from ``eval_seed``), kept in ``eval_file`` with what was asked, so that the same question asked again
    (same lineups, games, seed, ``step``, ``checkpoint`` and ``deterministic``) plays nothing."""
    progress = progress or NoProgress()
    wanted = {"vs": list(vs), "games": games, "eval_seed": eval_seed, "update": step}
    if checkpoint != "final" or deterministic:  # the defaults' files stay as earlier versions wrote them
        wanted.update(checkpoint=checkpoint, deterministic=deterministic)
    return _kept_answer(
        eval_file,
        wanted,
        f"{label}: evaluating update {step} ({games} x 8 games per lineup of "
        f"{', '.join(vs)}{', most likely actions' if deterministic else ''})",
        lambda: evaluate(
            player, vs=list(vs), games=games, seed=eval_seed, deterministic=deterministic, progress=progress
        ),
        progress,
    )


def with_previous(vs, previous: str | None) -> tuple[str, ...]:
    """The lineups ``vs`` with the ``previous`` version's (when given and not already there)."""
    vs = tuple(vs)
    return vs if previous is None or previous in vs else (*vs, previous)


def check_arguments(seeds, eval_seed: int, games, span: int = 1, ladder_games=None) -> list[int]:
    """``seeds`` as ints; ``ValueError`` for no seeds or repeated ones, an evaluation seed or the ladder's seed that
    a run trains with (the run of seed ``s`` uses seeds ``s`` .. ``s + span - 1``: a pipeline's phases add their
    number), ``games`` not an int >= 1 or ``ladder_games`` neither None nor an int >= 2."""
    seeds = [int(s) for s in seeds]
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct and at least one, got {seeds}")
    if any(0 <= eval_seed - s < span for s in seeds):
        raise ValueError(f"eval_seed {eval_seed} is a training seed: evaluate on seeds never used in training")
    if isinstance(games, bool) or not isinstance(games, int) or games < 1:
        raise ValueError(f"games must be an int >= 1, got {games!r}")
    if ladder_games is not None:
        if isinstance(ladder_games, bool) or not isinstance(ladder_games, int) or ladder_games < 2:
            raise ValueError(f"ladder_games must be an int >= 2 (an interval needs a spread), got {ladder_games!r}")
        if any(0 <= ladder_rating.DEFAULT_SEED - s < span for s in seeds):
            raise ValueError(
                f"the ladder's seed {ladder_rating.DEFAULT_SEED} is a training seed: rate on seeds "
                "never used in training"
            )
    return seeds


def evaluated_runs(
    run,
    seeds,
    out,
    preset: str,
    vs,
    games: int,
    eval_seed: int,
    checkpoint: str = "final",
    deterministic: bool = False,
    progress: Progress | None = None,
    ladder_games: int | None = None,
) -> list[dict]:
    """For each of ``seeds``: ``run(seed, run_dir)`` (``run_dir`` is ``out/seed_<S>``) trains it or reads it
    back and returns ``(summary, player, step)``; the player is ``evaluated`` (kept in ``out/seed_<S>.eval.json``)
    and, with ``ladder_games``, ``ladder_rated`` (kept in ``out/seed_<S>.ladder.json``). Returns per seed
    ``{"seed", "run_dir", "eval", "ladder" (None without ``ladder_games``), "summary", "evaluated",
    "evaluated_update"}``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    per_seed = []
    for seed in seeds:
        run_dir = out / f"seed_{seed}"
        summary, player, step = run(seed, run_dir)
        label = f"{preset} seed {seed}"
        result = evaluated(
            player,
            step,
            out / f"seed_{seed}.eval.json",
            label,
            vs,
            games,
            eval_seed,
            checkpoint,
            deterministic,
            progress,
        )
        rating = (
            None
            if ladder_games is None
            else ladder_rated(
                player, step, out / f"seed_{seed}.ladder.json", label, ladder_games, deterministic, progress
            )
        )
        per_seed.append(
            {
                "seed": seed,
                "run_dir": str(run_dir),
                "eval": result,
                "ladder": rating,
                "summary": summary,
                "evaluated": player,
                "evaluated_update": step,
            }
        )
    return per_seed


def reproduce(
    config: TrainConfig,
    preset: str,
    seeds,
    out,
    vs=OPPONENTS,
    games: int = 32,
    eval_seed: int = 4242,
    checkpoint: str = "final",
    deterministic: bool = False,
    progress: Progress | None = None,
    ladder_games: int | None = None,
    previous: str | None = None,
) -> dict:
    """Train ``config`` (the preset ``preset``'s, with any changes) for each of ``seeds`` in ``out/seed_<S>``,
    evaluate each (``games`` game seeds x 8
    rotations per lineup of ``vs``, ``eval_seed``), aggregate (the module docstring); writes and returns
    ``out/reproduce.json``. ``checkpoint``: which of a run's checkpoints plays, ``"final"`` (its latest good one)
    or ``"best"`` (``agents.run.preflight.best_checkpoint``: by the run's ``best_by``, e.g. a clone's lowest validation
    cross-entropy; the latest when none was ranked); ``deterministic``: it plays its most likely legal action
    instead of sampling. ``ladder_games``: each final policy's ladder rating too (the module docstring).
    ``previous``: the shipped version this preset replaces (a player spec, e.g. ``baseline:ppo_small-v3``): one more
    lineup, named in the result (``"previous"``) so that a record can publish it as "1 vs 7 of the previous version".
    ``ValueError`` for an evaluation seed among the training seeds, no seeds or repeated ones, an unknown
    ``checkpoint``; ``StoppedError`` when a signal stopped a run (call again to continue)."""
    if checkpoint not in CHECKPOINTS:
        raise ValueError(f"checkpoint must be one of {CHECKPOINTS}, got {checkpoint!r}")
    seeds = check_arguments(seeds, eval_seed, games, ladder_games=ladder_games)
    vs = with_previous(vs, previous)
    progress = progress or NoProgress()

    def run(seed, run_dir):
        summary = _trained(config, preset, seed, run_dir, progress)
        if checkpoint == "final":
            return summary, str(run_dir), summary["updates"]
        best = best_checkpoint(run_dir)  # None: no checkpoint was ranked, the latest plays
        step = summary["updates"] if best is None else best
        return summary, f"{run_dir}:{step}", step

    per_seed = evaluated_runs(
        run, seeds, out, preset, vs, games, eval_seed, checkpoint, deterministic, progress, ladder_games
    )
    for entry in per_seed:
        entry["minutes_to_target"] = minutes_to_target(entry["run_dir"])
        entry["summary"] = {**entry["summary"], "train_s": run_train_s(entry["run_dir"], entry["summary"])}
    result = {
        "preset": preset,
        "seeds": seeds,
        "eval_seed": eval_seed,
        "games_per_lineup": games * 8,
        "config": seed_config(config, seeds[0]).to_dict(),
        "schedule_updates": config.num_updates,
        "checkpoint": checkpoint,
        "deterministic": deterministic,
        **({} if previous is None else {"previous": previous}),
        **aggregate(per_seed, tuple(vs)),
        "runs": [{k: e[k] for k in ("seed", "run_dir", "evaluated_update", "minutes_to_target")} for e in per_seed],
    }
    (Path(out) / "reproduce.json").write_text(json.dumps(result, indent=1))
    return result
