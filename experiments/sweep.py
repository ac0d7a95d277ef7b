"""Sweep seeds and hyperparameters in ONE compiled program: ``python -m experiments.sweep``.

    python -m experiments.sweep --preset=ppo_small --seeds 8 --set lr=1e-4,3e-4,1e-3 --set ent_coef=0.0,0.01
    python -m experiments.sweep --preset=smoke --seeds 0,5,7 --set lr=1e-3,3e-4 --out runs/my-sweep
    python -m experiments.sweep --out runs/my-sweep --resume
    python -m experiments.sweep --preset=ppo_small --seeds 4 --vs greedy --set lr=1e-4,3e-4

A comma-separated ``--set`` value sweeps that field; only the traced
hyperparameters (lr, gamma, gae_lambda, clip_eps, ent_coef, vf_coef,
max_grad_norm) can be swept, other fields take one value. ``--seeds N`` runs
seeds ``0 .. N - 1``, as ``experiments.reproduce --seeds N`` does (``--set seed=`` is refused: the seeds are
``--seeds``'); ``--seeds 0,5,7`` names them. ``--vs OPPONENTS`` is the config's ``task.opponents``, as in
``experiments.train`` (one value for every run). Every grid point runs with every seed: R =
points x seeds runs, vmapped (``agents.run.sweep``), chunk by chunk with the
training run's loop (``agents.run.sweep_loop.run_sweep``, which this calls).

The sweep directory (``--out``, default ``runs/sweep-<preset>-<timestamp>``) holds
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

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

# Only what needs no JAX is imported here: the preset, the --set keys, the seeds and --out are checked before
# ``main`` imports the library (tests/test_cli.py); the swept values after it.
from agents.storage.run_dir import RunError
from experiments.common import (
    add_cache_args,
    add_quiet,
    add_training_vs,
    apply_sets,
    check_field_names,
    check_out,
    enable_compilation_cache,
    fail,
    handles_ctrl_c,
    make_parser,
    parse_overrides,
    parse_seeds,
    preset_name,
    quiet_logs,
    run_job,
    training_vs,
)
from experiments.names import names

if TYPE_CHECKING:
    from agents.config import TrainConfig
    from agents.run.sweep import SweepSpec

#: Fields whose ``--set`` value contains commas as part of ONE value.
LIST_VALUED = ("hidden", "opponents")


def spec_from_sets(config: TrainConfig, overrides: dict, seeds) -> tuple[TrainConfig, SweepSpec]:
    """Split ``--set`` strings into fixed overrides and swept values.

    ``overrides``: field -> string; a comma-separated list for a field of
    ``HPARAM_FIELDS`` sweeps it; a list for any other field is an error
    naming it. ``seeds``: an int ``n`` (seeds ``0 .. n - 1``) or a sequence of ints; ``seed`` is no override.
    Returns (the base config with the fixed overrides, the spec); every run's
    config is validated.
    """
    from agents.config import HPARAM_FIELDS, TrainConfig
    from agents.run.sweep import MAX_RUNS, SweepSpec, unsweepable

    fixed, grid = {}, {}
    for name, text in overrides.items():
        name = TrainConfig.field_path(name).split(".")[1]  # "hparams.lr" and "lr" name the same field
        values = str(text).split(",")
        if name == "seed":
            raise ValueError("give the seeds with --seeds (a count N: seeds 0..N-1, or a list), not --set seed=...")
        if len(values) == 1 or name in LIST_VALUED:
            fixed[name] = text
        elif name not in HPARAM_FIELDS:
            raise ValueError(unsweepable(name))
        else:
            try:
                grid[name] = tuple(float(v) for v in values)
            except ValueError:
                raise ValueError(f"TrainConfig.{name}: cannot parse the swept values {text!r} as numbers") from None
    base = apply_sets(config, fixed)
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        if seeds < 1:
            raise ValueError(f"the number of seeds must be >= 1, got {seeds}")
        if seeds > MAX_RUNS:  # before a range of them is built
            raise ValueError(f"a sweep holds at most {MAX_RUNS:,} runs (seeds x grid points), got {seeds:,} seeds")
        seeds = range(seeds)
    spec = SweepSpec.make(seeds, grid)
    for p in range(spec.num_points):
        spec.run_config(base, p * len(spec.seeds))  # validates every grid point's values (the seeds are valid)
    return base, spec


def parse_args(argv=None):
    parser = make_parser("experiments.sweep", __doc__)
    presets = names()["presets"]
    parser.add_argument(
        "--preset",
        type=preset_name(presets, "python -m experiments.train --list-presets"),
        metavar="NAME",
        help=f"named config: {', '.join(presets)} (python -m experiments.train --list-presets)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=V[,V...]",
        help="override a config field; a comma-separated list sweeps a hyperparameter (repeatable)",
    )
    parser.add_argument("--seeds", default="1", help="a count N (seeds 0..N-1) or a comma-separated list (default 1)")
    parser.add_argument("--env", help="env override: 'autochess' or 'gymnax:<EnvName>'")
    add_training_vs(parser)
    parser.add_argument("--out", metavar="SWEEP_DIR", help="sweep directory (default runs/sweep-<preset>-<timestamp>)")
    parser.add_argument("--resume", action="store_true", help="continue the sweep in --out from its latest checkpoint")
    add_cache_args(parser)
    add_quiet(parser)
    args = parser.parse_args(argv)
    if not args.resume and not args.preset:
        fail(parser, "give --preset NAME (or --resume with --out)")
    if args.resume and not args.out:
        fail(parser, "--resume needs --out SWEEP_DIR")
    overrides = training_vs(parser, args.vs, parse_overrides(parser, args.set, args.env))
    check_field_names(parser, [key for key in overrides if key != "env"])
    args.seeds = parse_seeds(parser, args.seeds)
    args.out = args.out or f"runs/sweep-{args.preset}-{time.strftime('%Y%m%d-%H%M%S')}"
    check_out(parser, Path(args.out))  # before anything is imported or compiled
    return parser, args, overrides


def build_config(parser, args, overrides):
    """(base TrainConfig, SweepSpec); bad input is a parser error before anything is compiled."""
    from agents.presets import preset_config
    from agents.run.preflight import check_resumable
    from agents.run.sweep_loop import load_sweep

    try:
        if args.resume:
            saved, spec = load_sweep(args.out)
            config = apply_sets(saved, overrides)
            check_resumable(saved, config)
            return config, spec
        return spec_from_sets(preset_config(args.preset), overrides, args.seeds)
    except RunError as err:
        fail(parser, f"--resume: {err}" if "not found" in str(err) else err)
    except ValueError as err:
        fail(parser, err)


def run_sweep(*args, **kwargs):
    """``agents.run.sweep_loop.run_sweep``, imported when the sweep starts (after its arguments are checked)."""
    from agents.run import sweep_loop

    return sweep_loop.run_sweep(*args, **kwargs)


@handles_ctrl_c
def main(argv=None):
    parser, args, overrides = parse_args(argv)  # before JAX: a bad argument costs no import
    quiet_logs()
    from agents.utils.progress import ConsoleProgress

    config, spec = build_config(parser, args, overrides)
    run_dir = Path(args.out)
    cache = enable_compilation_cache(None if args.no_cache else args.cache_dir)
    summary = run_job(
        parser,
        lambda: run_sweep(
            config,
            spec,
            run_dir,
            resume=args.resume,
            preset=args.preset,
            progress=None if args.quiet else ConsoleProgress(),
            stop_on_signals=True,
        ),
        run_dir,
    )
    print(summary.pop("table"))
    if summary["stopped"]:
        print(
            f"stopped by {summary['stopped']} after update {summary['updates']} (checkpoint saved); continue with "
            f"--out {run_dir} --resume",
            file=sys.stderr,
        )
    summary["cache_dir"] = cache
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
