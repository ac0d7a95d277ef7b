"""Sweep seeds and hyperparameters in ONE compiled program: ``python -m experiments.sweep``.

    python -m experiments.sweep --preset=ppo_small --seeds 8 --set lr=1e-4,3e-4,1e-3 --set ent_coef=0.0,0.01
    python -m experiments.sweep --preset=smoke --seeds 0,5,7 --set lr=1e-3,3e-4 --run-dir runs/my-sweep
    python -m experiments.sweep --run-dir runs/my-sweep --resume

A comma-separated ``--set`` value sweeps that field; only the traced
hyperparameters (lr, gamma, gae_lambda, clip_eps, ent_coef, vf_coef,
max_grad_norm) can be swept, other fields take one value. ``--seeds N`` runs
seeds ``seed .. seed + N - 1`` (``seed`` from the preset or ``--set seed=``);
``--seeds 0,5,7`` names them. Every grid point runs with every seed: R =
points x seeds runs, vmapped (agents/sweep.py), chunk by chunk like
``experiments.train``.

The sweep directory (default ``runs/sweep-<preset>-<timestamp>``) holds
``config.json`` (the shared config), ``sweep.json`` (seeds, grid and the runs:
index, grid point, seed, values), ``runs/run_NNN/metrics.jsonl`` and
``runs/run_NNN/tb/`` per run (records carry ``run``, ``seed`` and
``values``), ``checkpoints/`` (orbax, the stacked state of all runs: resume
with ``--resume``), and at the end ``summary.json`` / ``summary.csv`` (final
and best value of each objective per run and mean +- std over seeds per grid
point, also printed) and ``curves.png`` (mean over seeds with a +- std band
per grid point). The last line on stdout is a JSON summary.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import dataclasses
import json
import math
import sys
import time
from pathlib import Path

from experiments.common import DEFAULT_CACHE, enable_compilation_cache, parse_overrides, status

#: Objectives summarised per grid point, and whether smaller is better.
OBJECTIVES = {
    "eval/placement_vs_greedy": "min",
    "eval/placement_vs_random": "min",
    "train/episode_return": "max",
}


def parse_args(argv=None):
    from experiments.presets import PRESETS

    parser = argparse.ArgumentParser(
        prog="python -m experiments.sweep", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--preset", choices=sorted(PRESETS), help="named config (python -m experiments.train --list-presets)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=V[,V...]",
                        help="override a config field; a comma-separated list sweeps a hyperparameter (repeatable)")
    parser.add_argument("--seeds", default="1", help="a count N (seeds seed..seed+N-1) or a comma-separated list")
    parser.add_argument("--env", help="env override: 'autochess' or 'gymnax:<EnvName>'")
    parser.add_argument("--run-dir", help="sweep directory (default runs/sweep-<preset>-<timestamp>)")
    parser.add_argument("--resume", action="store_true", help="continue the sweep in --run-dir from its latest checkpoint")
    parser.add_argument("--cache-dir", default=DEFAULT_CACHE, help=f"JAX compilation cache (default {DEFAULT_CACHE})")
    parser.add_argument("--no-cache", action="store_true", help="do not use the persistent compilation cache")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = parser.parse_args(argv)
    if not args.resume and not args.preset:
        parser.error("give --preset NAME (or --resume with --run-dir)")
    if args.resume and not args.run_dir:
        parser.error("--resume needs --run-dir")
    overrides = parse_overrides(parser, args.set, args.env)
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    except ValueError:
        parser.error(f"--seeds {args.seeds!r}: expected a count or a comma-separated list of ints")
    args.seeds = seeds[0] if len(seeds) == 1 and "," not in args.seeds else seeds
    return parser, args, overrides


def build_config(parser, args, overrides):
    """(base TrainConfig, SweepSpec); bad input is a parser error before anything is compiled."""
    from agents.config import TrainConfig
    from agents.sweep import SweepSpec
    from experiments.presets import preset_config
    from experiments.train import check_resumable

    try:
        if args.resume:
            run_dir = Path(args.run_dir)
            saved = TrainConfig.from_dict(json.loads((run_dir / "config.json").read_text()))
            spec = SweepSpec.from_dict(json.loads((run_dir / "sweep.json").read_text()))
            config = saved.with_overrides(overrides)
            check_resumable(saved, config)
            return config, spec
        return SweepSpec.from_overrides(preset_config(args.preset), overrides, args.seeds)
    except FileNotFoundError as err:
        parser.error(f"--resume: {err.filename} not found (is {args.run_dir!r} a sweep directory?)")
    except ValueError as err:
        parser.error(str(err))


def main(argv=None):
    parser, args, overrides = parse_args(argv)
    config, spec = build_config(parser, args, overrides)
    run_dir = Path(args.run_dir or f"runs/sweep-{args.preset}-{time.strftime('%Y%m%d-%H%M%S')}")
    if not args.resume and (run_dir / "sweep.json").exists():
        parser.error(f"{run_dir} already holds a sweep; use --resume to continue it or choose another --run-dir")
    cache = enable_compilation_cache(None if args.no_cache else args.cache_dir)
    return sweep(config, spec, run_dir, resume=args.resume, preset=args.preset, quiet=args.quiet, cache_dir=cache)


def sweep(config, spec, run_dir, resume=False, preset=None, quiet=False, cache_dir=None):
    """Run (or continue) a sweep in ``run_dir``; returns the JSON summary dict."""
    import jax
    import numpy as np
    from tqdm import tqdm

    from agents import trainers
    from agents.evaluation import EVAL_STREAM, OPPONENTS
    from agents.sweep import Sweep
    from experiments.checkpoints import CheckpointStore
    from experiments.train import MetricsLog, fresh_arrays, run_meta

    start_wall = time.perf_counter()
    run_dir = Path(run_dir)
    runs = spec.runs
    status(f"sweep dir {run_dir}; {len(runs)} runs ({len(spec.points)} grid points x {len(spec.seeds)} seeds) of "
           f"{config.algo} on {config.env} with {config.num_envs} envs each ({jax.default_backend()})", not quiet)
    sw = Sweep(config, spec)
    store = CheckpointStore(run_dir / "checkpoints", keep=config.keep_checkpoints)
    eval_keys = jax.vmap(lambda k: jax.random.fold_in(k, EVAL_STREAM))(sw.master_keys())

    compile_start = time.perf_counter()
    if resume:
        step, runners, saved = store.restore(jax.eval_shape(sw.init))
        runners = fresh_arrays(runners)
        wall_before = float(saved.get("wall_s", 0.0))
        status(f"resuming from update {step}", not quiet)
    else:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "config.json").write_text(json.dumps(config.to_dict(), indent=2) + "\n")
        sweep_json = {**spec.to_dict(), "runs": [dataclasses.asdict(r) for r in runs], "preset": preset}
        (run_dir / "sweep.json").write_text(json.dumps(sweep_json, indent=2) + "\n")
        runners = sw.init()
        wall_before = 0.0
    done_updates = int(runners.update[0])
    meta = run_meta(config, preset)
    logs = []
    for r in runs:
        (run_dir / "runs" / f"run_{r.index:03d}").mkdir(parents=True, exist_ok=True)
        run_meta_r = {**meta, "config": spec.run_config(config, r.index).to_dict(), "seed": r.seed,
                      "run": r.index, "point": r.point, "values": r.values}
        logs.append(MetricsLog(run_dir / "runs" / f"run_{r.index:03d}", None if resume else run_meta_r,
                               done_updates if resume else None))

    chunk = config.updates_per_chunk
    status(f"compiling the sweep's training chunk ({chunk} updates x {len(runs)} runs)"
           + (" and evaluation" if sw.evaluator else "") + " ...", not quiet)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        run_future = pool.submit(lambda: sw.run.lower(runners, chunk).compile())
        eval_future = sw.evaluator and pool.submit(
            lambda: sw.evaluator.lower(runners.params, eval_keys, np.int32(0)).compile()
        )
        compiled_run = run_future.result()
        compiled_eval = eval_future.result() if sw.evaluator else None
    compile_s = time.perf_counter() - compile_start
    status(f"compiled in {compile_s:.1f} s", not quiet)

    def evaluate(params, update):
        keys = jax.vmap(lambda k: jax.random.fold_in(k, update))(eval_keys)
        out = [{} for _ in runs]
        for index, name in enumerate(OPPONENTS):
            ranks = np.asarray(compiled_eval(params, keys, np.int32(index)), np.float64)  # [R, G, 8]
            for k, mean in enumerate(ranks.mean(axis=(1, 2))):
                out[k][f"eval/placement_vs_{name}"] = float(mean)
        return out

    steps_per_update = config.steps_per_update
    total = config.num_updates
    seats = sw.env.num_players
    bar = tqdm(total=total, initial=done_updates, unit="upd", disable=quiet, file=sys.stderr, dynamic_ncols=True)
    train_s, trained_updates = 0.0, 0
    while done_updates < total:
        n = min(chunk, total - done_updates)
        t0 = time.perf_counter()
        run = compiled_run if n == chunk else (lambda r, n=n: sw.run(r, n))
        runners, metrics = run(runners)
        metrics = jax.device_get(metrics)
        elapsed = time.perf_counter() - t0
        train_s += elapsed
        done_updates = int(runners.update[0])
        trained_updates += n
        chunks_done = -(-done_updates // chunk)
        finished = done_updates >= total
        evals = evaluate(runners.params, done_updates) if sw.evaluator and (
            chunks_done % config.eval_every == 0 or finished) else [{} for _ in runs]
        sps = n * steps_per_update / elapsed  # per run
        for k, r in enumerate(runs):
            record = {
                "run": r.index, "seed": r.seed, "values": r.values,
                "update": done_updates,
                "env_steps": done_updates * steps_per_update,
                "seat_steps": done_updates * steps_per_update * seats,
                "wall_s": round(wall_before + train_s, 3),
                **trainers.summarize({name: v[k] for name, v in metrics.items()}),
                **evals[k],
                "perf/sps": sps,
                "perf/seat_sps": sps * seats,
                "perf/sweep_seat_sps": sps * seats * len(runs),
            }
            logs[k].write(record)
        if finished or (config.checkpoint_every and chunks_done % config.checkpoint_every == 0):
            store.save(done_updates, runners, {"config": config.to_dict(), "sweep": spec.to_dict(),
                                               "wall_s": wall_before + train_s})
        bar.update(n)
        bar.set_postfix_str(f"{sps * seats * len(runs):.0f} seat-steps/s (all runs)")
    bar.close()
    for log in logs:
        log.close()
    store.close()

    records = load_runs(run_dir, spec)  # the whole run's, resumed parts included
    table = summarize_sweep(records, spec)
    (run_dir / "summary.json").write_text(json.dumps(table, indent=2) + "\n")
    write_csv(run_dir / "summary.csv", table["points"])
    plot = plot_sweep(records, spec, run_dir / "curves.png")
    print(format_table(table["points"]))
    summary = {
        "run_dir": str(run_dir),
        "preset": preset,
        "runs": len(runs),
        "grid_points": len(spec.points),
        "seeds": list(spec.seeds),
        "updates": done_updates,
        "env_steps_per_run": done_updates * steps_per_update,
        "wall_s": round(time.perf_counter() - start_wall, 2),
        "compile_s": round(compile_s, 2),
        "train_s": round(train_s, 2),
        "sweep_sps": round(trained_updates * steps_per_update * len(runs) / train_s, 1) if train_s else None,
        "summary": str(run_dir / "summary.json"),
        "plot": plot,
        "cache_dir": cache_dir,
    }
    print(json.dumps(summary))
    return summary


# ---------------------------------------------------------------- results
def load_runs(run_dir, spec):
    """Per run: its records from ``runs/run_NNN/metrics.jsonl`` (meta line dropped)."""
    from experiments.plot import load_metrics

    return [load_metrics(str(Path(run_dir) / "runs" / f"run_{r.index:03d}"))[1] for r in spec.runs]


def _finite(records, metric):
    return [r[metric] for r in records if isinstance(r.get(metric), (int, float)) and math.isfinite(r[metric])]


def summarize_sweep(records, spec) -> dict:
    """``{"runs": [...], "points": [...]}``: per run the final and best value of each objective it
    has; per grid point their mean and std (ddof 0) over seeds, with the values and seeds.
    ``records``: per run, its records (``load_runs``)."""
    import numpy as np

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


def write_csv(path, rows):
    columns = list(dict.fromkeys(c for row in rows for c in row))
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


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
    from experiments.plot import plot_bands

    groups = []
    for p, values in enumerate(spec.points):
        label = ", ".join(f"{k}={v:g}" for k, v in values.items()) or "all seeds"
        groups.append((label, [recs for r, recs in zip(spec.runs, records) if r.point == p]))
    metrics = [m for m in OBJECTIVES if any(_finite(recs, m) for recs in records)]
    return plot_bands(groups, str(out), metrics=metrics or None)


if __name__ == "__main__":
    main()
