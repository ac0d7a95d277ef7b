"""A pipeline preset's result over several pipeline seeds, re-measured on today's code: the pipeline counterpart of
``agents.run.over_seeds.reproduce`` (``python -m experiments.reproduce PIPELINE``).

``reproduce_pipeline`` runs the whole pipeline (``agents.pipeline.runner.run_pipeline``) once per seed in
``<out>/seed_<S>`` (continued where it stopped when the same call is made again: the recording redone if it was
unfinished, a training phase resumed from its checkpoints), evaluates each pipeline's final policy (its last
phase's result, ``RUN_DIR:STEP``) against each opponent lineup with an evaluation seed that no phase trained with
(the pipeline of seed ``s`` records with ``s`` and trains phase ``i`` with ``s + i``), and aggregates over the
seeds as ``agents.run.over_seeds.aggregate`` does. A pipeline's phases evaluate at their ends only, so the time to
strength is not measured (``minutes_to_target`` is None for every seed); its time is ``pipeline_wall_s``, the wall
seconds of every phase with their compiles, evaluations and the recording, and ``train_s``, the training phases'
compiled chunks added up.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from agents.pipeline.runner import PIPELINE_FILE, PipelineSpec, pipeline_identity, run_pipeline
from agents.policies.load import parse_spec
from agents.run.over_seeds import (
    OPPONENTS,
    StoppedError,
    aggregate,
    check_arguments,
    evaluated_runs,
    kept_summary,
    run_train_s,
    with_previous,
)
from agents.utils.progress import NoProgress, Progress


def spec_dict(spec: PipelineSpec) -> dict:
    """``spec`` as JSON data: ``{"description", "record": RecordPhase's fields, "phases": {name: config dict}}``."""
    return {
        "description": spec.description,
        "record": dataclasses.asdict(spec.record),
        "phases": {phase.name: phase.config.to_dict() for phase in spec.phases},
    }


def pipeline_summary(state: dict) -> dict:
    """A finished pipeline's summary in ``agents.run.over_seeds.aggregate``'s terms, from its ``pipeline.json``
    ``state``: ``updates`` (the last phase's), ``env_steps``, ``train_s`` and ``compile_s`` (the training phases'
    added up; ``train_s`` per phase by ``agents.run.over_seeds.run_train_s``, a resumed phase's earlier calls
    included), ``pipeline_wall_s`` (every phase, the recording included), ``phases_wall_s`` (phase -> its wall
    seconds) and ``final`` (the last phase's result, ``RUN_DIR:STEP``)."""
    phases = state["phases"]
    trained = [entry for entry in phases.values() if "config" in entry]
    return {
        "updates": trained[-1]["summary"]["updates"],
        "env_steps": sum(e["summary"]["env_steps"] for e in trained),
        "train_s": round(sum(run_train_s(e["dir"], e["summary"]) for e in trained), 2),
        "compile_s": round(sum(e["summary"]["compile_s"] for e in trained), 2),
        "pipeline_wall_s": state["wall_s"],
        "phases_wall_s": {name: entry["wall_s"] for name, entry in phases.items()},
        "final": state["final"],
    }


def _piped(spec: PipelineSpec, preset: str, seed: int, pipe_dir: Path, progress: Progress) -> dict:
    """The pipeline's summary (``pipeline_summary``), kept (``agents.run.over_seeds.kept_summary``) once the
    pipeline is whole."""

    def make():
        resume = (pipe_dir / PIPELINE_FILE).is_file()
        progress.status(f"{preset} seed {seed}: {'continuing' if resume else 'running'} the pipeline in {pipe_dir}")
        state = run_pipeline(spec, pipe_dir, preset, seed, resume=resume, progress=progress)
        if state.get("stopped"):
            raise StoppedError(f"seed {seed}: stopped by {state['stopped']}")
        return pipeline_summary(state)

    return kept_summary(pipe_dir, pipeline_identity(preset, seed, spec), make)


def reproduce_pipeline(
    spec: PipelineSpec,
    preset: str,
    seeds,
    out,
    vs=OPPONENTS,
    games: int = 32,
    eval_seed: int = 4242,
    deterministic: bool = False,
    progress: Progress | None = None,
    ladder_games: int | None = None,
    previous: str | None = None,
) -> dict:
    """Run the pipeline ``spec`` (the preset ``preset``'s, with any changes) for each of ``seeds`` in
    ``out/seed_<S>``, evaluate each final policy (``games`` game seeds x 8 rotations per lineup of ``vs``,
    ``eval_seed``; ``deterministic``: its most likely legal actions), aggregate (the module docstring); writes and
    returns ``out/reproduce.json``, ``agents.run.over_seeds.reproduce``'s keys plus ``pipeline`` (True),
    ``pipeline_wall_s`` and per run ``phases_wall_s``; ``ladder_games`` and ``previous`` as there. ``ValueError``
    for an evaluation seed that a phase trains with, no seeds or repeated ones, a pipeline without a training phase;
    ``StoppedError`` when a signal stopped a phase (call again to continue)."""
    if not spec.phases:
        raise ValueError("the pipeline has no training phase: nothing to evaluate")
    seeds = check_arguments(seeds, eval_seed, games, span=len(spec.phases) + 1, ladder_games=ladder_games)
    vs = with_previous(vs, previous)
    progress = progress or NoProgress()

    def run(seed, pipe_dir):
        summary = _piped(spec, preset, seed, pipe_dir, progress)
        _, step = parse_spec(summary["final"])  # RUN_DIR:STEP
        return summary, summary["final"], step

    per_seed = evaluated_runs(
        run, seeds, out, preset, vs, games, eval_seed, "final", deterministic, progress, ladder_games
    )
    for entry in per_seed:
        entry.update(minutes_to_target=None, phases_wall_s=entry["summary"]["phases_wall_s"])
    result = {
        "preset": preset,
        "pipeline": True,
        "seeds": seeds,
        "eval_seed": eval_seed,
        "games_per_lineup": games * 8,
        "config": spec_dict(spec),
        "schedule_updates": spec.phases[-1].config.num_updates,
        "checkpoint": "final",
        "deterministic": deterministic,
        **({} if previous is None else {"previous": previous}),
        **aggregate(per_seed, tuple(vs)),
        "runs": [
            {
                k: e[k]
                for k in ("seed", "run_dir", "evaluated", "evaluated_update", "minutes_to_target", "phases_wall_s")
            }
            for e in per_seed
        ],
    }
    (Path(out) / "reproduce.json").write_text(json.dumps(result, indent=1))
    return result


__all__ = ["pipeline_summary", "reproduce_pipeline", "spec_dict"]
