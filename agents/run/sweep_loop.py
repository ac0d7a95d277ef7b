"""A vmapped sweep (``agents.run.sweep.Sweep``) run chunk by chunk in a sweep directory, with the training run's loop.

    from agents.run.sweep_loop import run_sweep
    summary = run_sweep(config, SweepSpec.make(seeds=(0, 1), grid={"lr": (1e-4, 3e-4)}), "runs/my-sweep")
    summary = run_sweep(config, spec, "runs/my-sweep", resume=True)    # continue from its last checkpoint

``python -m experiments.sweep`` is the command line. The sweep directory holds ``config.json`` (the shared
config), ``sweep.json`` (seeds, grid and the runs: index, grid point, seed, values),
``runs/run_NNN/metrics.jsonl`` and ``runs/run_NNN/tb/`` per run (records carry ``run``, ``seed`` and
``values``), ``checkpoints/`` (the stacked state of all runs), and at the end ``summary.json`` /
``summary.csv`` (final and best value of each objective per run and mean +- std over seeds per grid
point) and ``curves.png`` (mean over seeds with a +- std band per grid point). The chunk loop, logs and
checkpoints are ``agents.run.chunks``'s (``ChunkLoop``); only what is per run differs.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from pathlib import Path

import jax
import numpy as np

from agents.algorithms import registry as trainers
from agents.arena.evaluation import EVAL_STREAM, OPPONENTS, placement_summary
from agents.config import TrainConfig
from agents.run import wandb_log
from agents.run.build import fresh_arrays
from agents.run.chunks import ChunkProgram, compile_and_loop, start_run
from agents.run.plotting import plot_bands
from agents.run.preflight import CONFIG_FILE, check_env_available, check_memory, claim_run_dir, run_identity, run_meta
from agents.run.signals import stop_signals
from agents.run.sweep import Sweep, SweepSpec
from agents.storage import run_dir as run_dir_lib
from agents.storage.checkpoints import CheckpointStore
from agents.storage.metrics import MetricsLog, load_metrics
from agents.storage.run_dir import RunError
from agents.utils.progress import NoProgress, Progress

SWEEP_FILE = "sweep.json"

#: Objectives summarised per grid point, and whether smaller is better.
OBJECTIVES = {
    "eval/placement_vs_greedy": "min",
    "eval/placement_vs_random": "min",
    "eval/placement_vs_expert": "min",
    "train/episode_return": "max",
}


def load_sweep(run_dir) -> tuple[TrainConfig, SweepSpec]:
    """The shared config and the spec saved in a sweep directory; ``RunError`` when they are not there."""
    run_dir = Path(run_dir)
    try:
        config = TrainConfig.from_dict(json.loads((run_dir / CONFIG_FILE).read_text()))
        spec = SweepSpec.from_dict(json.loads((run_dir / SWEEP_FILE).read_text()))
    except FileNotFoundError as err:
        raise RunError(f"{err.filename} not found (is {str(run_dir)!r} a sweep directory?)") from None
    return config, spec


def run_log_dir(run_dir, index: int) -> Path:
    return Path(run_dir) / "runs" / f"run_{index:03d}"


class SweepProgram(ChunkProgram):
    """The runs of a ``Sweep`` as a ``ChunkProgram``: one log per run, the vmapped bot evaluation."""

    metrics_update_axis = 1  # a chunk's metrics are [runs, updates]

    def __init__(self, config: TrainConfig, spec: SweepSpec):
        self.config, self.spec = config, spec
        self.sweep = Sweep(config, spec)
        self.trainer, self.evaluator = self.sweep.trainer, self.sweep.evaluator
        self.runs = spec.runs
        self.num_players = self.sweep.env.num_players
        self.has_eval = self.sweep.evaluator is not None
        self.eval_keys = jax.vmap(lambda k: jax.random.fold_in(k, EVAL_STREAM))(self.sweep.master_keys())

    def init(self):
        return self.sweep.init(self.compiler_options)

    def restore(self, store: CheckpointStore):
        step, runners, saved = store.restore(jax.eval_shape(self.sweep.init), check=self.step_check)
        return step, (fresh_arrays(runners) if self.sweep.mesh is None else self.sweep.place(runners)), saved

    def updates_done(self, runner) -> int:
        return int(runner.update[0])

    def lower_chunk(self, runner, num_updates):
        return self.sweep.run.lower(runner, num_updates)

    def lower_upto(self, runner, num_updates):
        return self.sweep.run_upto.lower(runner, num_updates, np.int32(num_updates))

    def lower_eval(self, runner):
        return self.has_eval and (lambda: self.sweep.evaluator.lower(runner.params, self.eval_keys, np.int32(0)))

    def records(self, base, metrics, num_updates, seconds):
        sps = num_updates * self.config.steps_per_update / seconds  # per run
        seats = self.num_players
        return [
            {
                "run": r.index,
                "seed": r.seed,
                "values": r.values,
                **base,
                **trainers.summarize({name: v[k] for name, v in metrics.items()}),
                "perf/sps": sps,
                "perf/seat_sps": sps * seats,
                "perf/sweep_seat_sps": sps * seats * len(self.runs),
            }
            for k, r in enumerate(self.runs)
        ]

    def evaluate(self, runner, update):
        keys = jax.vmap(lambda k: jax.random.fold_in(k, update))(self.eval_keys)
        out = [{} for _ in self.runs]
        for index, name in enumerate(OPPONENTS):
            ranks = np.asarray(self.compiled_eval(runner.params, keys, np.int32(index)))  # [R, G, 8]
            for k, run_ranks in enumerate(ranks):
                out[k][f"eval/placement_vs_{name}"] = placement_summary(run_ranks)["mean_placement"]
        return runner, out

    def checkpoint_payload(self, wall_s):
        return {"config": self.config.to_dict(), "sweep": self.spec.to_dict(), "wall_s": wall_s}

    def progress_text(self, records, evaluation):
        return f"{records[0]['perf/sweep_seat_sps']:.0f} seat-steps/s (all runs)"


def run_sweep(
    config: TrainConfig,
    spec: SweepSpec,
    run_dir,
    resume: bool = False,
    preset: str | None = None,
    progress: Progress | None = None,
    stop_on_signals: bool = False,
) -> dict:
    """Run (or with ``resume``, continue) the sweep ``spec`` of ``config`` in ``run_dir``; returns the JSON summary
    (the per-grid-point table is in ``summary.json`` and the returned ``"table"``)."""
    progress = progress or NoProgress()
    start_wall = time.perf_counter()
    run_dir = Path(run_dir)
    check_env_available(config)
    program = SweepProgram(config, spec)
    devices = 1 if program.sweep.mesh is None else program.sweep.mesh.devices.size
    check_memory(config, program, runs=spec.num_runs // devices)  # each device holds its share of the runs
    with (
        stop_signals(stop_on_signals, progress) as stop,
        claim_run_dir(run_dir, "sweep", {**run_identity(config), "sweep": spec.to_dict()}, SWEEP_FILE, resume),
    ):
        runs = spec.runs
        progress.status(
            f"sweep dir {run_dir}; {len(runs)} runs ({len(spec.points)} grid points x {len(spec.seeds)} "
            f"seeds) of {config.run.algo} on {config.task.env} with {config.run.num_envs} envs each "
            f"({devices} {jax.default_backend()} device(s))"
        )
        started = start_run(program, run_dir, resume, progress)
        run_dir_lib.write_json(run_dir / CONFIG_FILE, config.to_dict())
        run_dir_lib.write_json(
            run_dir / SWEEP_FILE, {**spec.to_dict(), "runs": [dataclasses.asdict(r) for r in runs], "preset": preset}
        )
        done, restored = program.updates_done(started.runner), started.restored
        meta = run_meta(config, preset)
        logs = []
        for r in runs:
            log_dir = run_log_dir(run_dir, r.index)
            log_dir.mkdir(parents=True, exist_ok=True)
            run_meta_r = {
                **meta,
                "config": spec.run_config(config, r.index).to_dict(),
                "seed": r.seed,
                "run": r.index,
                "point": r.point,
                "values": r.values,
            }
            logs.append(
                MetricsLog(
                    log_dir,
                    None if restored else run_meta_r,
                    done if restored else None,
                    wandb_log.sinks(spec.run_config(config, r.index), log_dir, group=run_dir.name),
                )
            )

        result, compile_s = compile_and_loop(
            program, started, logs, progress, f"the sweep's training chunk for {len(runs)} runs", stop
        )

        records = load_runs(run_dir, spec)  # the whole run's, resumed parts included
        table = summarize_sweep(records, spec)
        run_dir_lib.write_json(run_dir / "summary.json", table)
        run_dir_lib.write_csv(run_dir / "summary.csv", table["points"])
        plot = plot_sweep(records, spec, run_dir / "curves.png")
    steps_per_update = config.steps_per_update
    return {
        "run_dir": str(run_dir),
        "preset": preset,
        "runs": len(runs),
        "devices": devices,
        "grid_points": len(spec.points),
        "seeds": list(spec.seeds),
        "updates": result.updates,
        "env_steps_per_run": result.updates * steps_per_update,
        "wall_s": round(time.perf_counter() - start_wall, 2),
        "compile_s": round(compile_s, 2),
        "train_s": round(result.train_s, 3),  # ms: a tiny run's chunks can take less than 5 ms in all
        "sweep_sps": (
            round(result.trained_updates * steps_per_update * len(runs) / result.train_s, 1) if result.train_s else None
        ),
        "summary": str(run_dir / "summary.json"),
        "plot": plot,
        "stopped": result.stopped,
        "table": format_table(table["points"]),
    }


# ---------------------------------------------------------------- results


def load_runs(run_dir, spec):
    """Per run: its records from ``runs/run_NNN/metrics.jsonl`` (meta line dropped)."""
    return [load_metrics(str(run_log_dir(run_dir, r.index)))[1] for r in spec.runs]


def _finite(records, metric):
    return [r[metric] for r in records if isinstance(r.get(metric), (int, float)) and math.isfinite(r[metric])]


def summarize_sweep(records, spec) -> dict:
    """``{"runs": [...], "points": [...]}``: per run the final and best value of each objective it
    has; per grid point their mean and std (ddof 0) over seeds, with the values and seeds.
    ``records``: per run, its records (``load_runs``)."""
    per_run = []
    for r, recs in zip(spec.runs, records):
        row = {"run": r.index, "point": r.point, "seed": r.seed, **r.values}
        for metric, mode in OBJECTIVES.items():
            values = _finite(recs, metric)
            if values:
                row[f"{metric}:final"] = values[-1]
                row[f"{metric}:best"] = min(values) if mode == "min" else max(values)
        per_run.append(row)
    points = []
    for p, values in enumerate(spec.points):
        rows = [row for row in per_run if row["point"] == p]
        point = {"point": p, **values, "seeds": len(rows)}
        for column in sorted({c for row in rows for c in row if ":" in c}):
            xs = np.array([row[column] for row in rows if column in row], np.float64)
            point[f"{column}:mean"] = float(xs.mean())
            point[f"{column}:std"] = float(xs.std())
        points.append(point)
    return {"runs": per_run, "points": points}


def format_table(points) -> str:
    """The per-grid-point table: values, seeds and ``final mean +- std`` of each objective."""
    value_columns = [c for c in points[0] if c not in ("point", "seeds") and ":" not in c] if points else []
    objectives = [m for m in OBJECTIVES if any(f"{m}:final:mean" in p for p in points)]
    header = ["point", *value_columns, "seeds", *[f"{m} (final)" for m in objectives]]
    lines = []
    for p in points:
        cells = [str(p["point"]), *[f"{p[c]:g}" for c in value_columns], str(p["seeds"])]
        for m in objectives:
            mean, std = p.get(f"{m}:final:mean"), p.get(f"{m}:final:std")
            cells.append("-" if mean is None else f"{mean:.3f} +- {std:.3f}")
        lines.append(cells)
    widths = [max(len(h), *(len(row[i]) for row in lines)) for i, h in enumerate(header)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*header), *(fmt.format(*row) for row in lines)])


def plot_sweep(records, spec, out) -> dict:
    """``curves.png``: per objective, each grid point's mean over seeds with a +- std band;
    ``records``: per run, its records (``load_runs``)."""
    groups = []
    for p, values in enumerate(spec.points):
        label = ", ".join(f"{k}={v:g}" for k, v in values.items()) or "all seeds"
        groups.append((label, [recs for r, recs in zip(spec.runs, records) if r.point == p]))
    metrics = [m for m in OBJECTIVES if any(_finite(recs, m) for recs in records)]
    return plot_bands(groups, str(out), metrics=metrics or None)


__all__ = [
    "OBJECTIVES",
    "SweepProgram",
    "format_table",
    "load_runs",
    "load_sweep",
    "plot_sweep",
    "run_sweep",
    "summarize_sweep",
]
