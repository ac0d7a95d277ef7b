"""Train an agent: ``python -m experiments.train --preset=NAME [--set key=value ...]``.

    python -m experiments.train --preset=smoke                     # CPU, about 20 s
    python -m experiments.train --preset=ppo_small --set lr=1e-4 --out runs/mine
    python -m experiments.train --preset=ppo_small --vs greedy --out runs/vs-greedy   # seat 0 learns, 7 greedy bots
    python -m experiments.train --out runs/mine --resume          # continue where it stopped
    python -m experiments.train --preset=ppo_small --out runs/job --auto-resume   # start, or continue
    python -m experiments.train --env gymnax:CartPole-v1 --preset=ppo_gymnax
    python -m experiments.train --list-presets
    python -m experiments.train --list-fields                      # every config field, documented
    python -m experiments.train --preset=ppo_large --set num_devices=4   # data parallel over 4 devices (0: all)
    python -m experiments.train --preset=ppo_large --coordinator=host0:1234 --num-processes=2 --process-id=0

The run itself is the library's ``agents.run.training.train`` (docs/training.md): this module parses the command
line, calls it with a ``ConsoleProgress`` and prints its summary. ``--vs OPPONENTS`` is the config's
``task.opponents`` (who the learner plays: ``self``, the default, or bots), as ``--set opponents=...`` sets it; 7
comma-separated names are the seats after the learner's seat 0. The run directory (``--out``, default
``runs/<preset>-<timestamp>``) gets ``config.json``, ``metrics.jsonl`` (a ``{"meta": ...}`` line, then one
record per chunk), tensorboardX event files and ``checkpoints/`` (orbax). Training runs in jitted chunks of
``updates_per_chunk`` updates; between chunks the host logs, evaluates (every ``eval_every`` chunks) and
checkpoints (every ``checkpoint_every`` chunks, and at the end). Ctrl-C or SIGTERM saves a checkpoint at
the next chunk boundary and exits 0 (a second one stops at once). A run whose parameters or losses stop
being finite exits 1 with a one-line error naming the update. Progress goes to stderr; the last line on
stdout is a JSON summary. JAX's persistent compilation cache is on (``--cache-dir``, default
``~/.cache/jaxgame/jax``; ``--no-cache``).

Devices and hosts (``agents.utils.distributed``, docs/training.md): the envs are sharded over
``num_devices`` devices (0 = all). For several hosts, run the same command once per host with
``--coordinator HOST:PORT --num-processes N --process-id I`` (or ``$JAXGAME_COORDINATOR``,
``$JAXGAME_NUM_PROCESSES``, ``$JAXGAME_PROCESS_ID``; ``--distributed`` lets JAX detect a SLURM or Open
MPI job); every process trains and saves its shards of the checkpoints, only process 0 writes the logs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

# Only what needs no JAX is imported here: the arguments are parsed and checked (the preset, the --set keys,
# --out) before ``main`` imports the library, so a mistyped one is answered at once (tests/test_cli.py).
from agents.storage.run_dir import RunError, read_owner
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
    preset_name,
    quiet_logs,
    run_job,
    training_vs,
)
from experiments.names import names

if TYPE_CHECKING:
    from agents.config import TrainConfig


def add_host_args(parser):
    """The multi-host flags (also parsed on their own, before anything starts JAX's backend)."""
    hosts = parser.add_argument_group("multi-host (one process per host, the same command on each)")
    hosts.add_argument(
        "--coordinator", metavar="HOST:PORT", help="process 0's address and a free port ($JAXGAME_COORDINATOR)"
    )
    hosts.add_argument("--num-processes", type=int, metavar="N", help="processes in the run ($JAXGAME_NUM_PROCESSES)")
    hosts.add_argument("--process-id", type=int, metavar="I", help="this process, 0..N-1 ($JAXGAME_PROCESS_ID)")
    hosts.add_argument(
        "--distributed",
        action="store_true",
        help="let JAX detect the cluster (SLURM, Open MPI, ...) instead of the three flags above",
    )


def start_distributed(argv=None) -> bool:
    """``agents.utils.distributed.initialize`` from the multi-host flags of ``argv`` (or the environment); True when
    this process is part of a multi-process run. Runs before any JAX computation."""
    parser = argparse.ArgumentParser(add_help=False)
    add_host_args(parser)
    args, _ = parser.parse_known_args(argv)
    # importing it starts no JAX computation (tests/test_layering.py checks it), so jax.distributed comes first
    from agents.utils import distributed

    try:
        return distributed.initialize(args.coordinator, args.num_processes, args.process_id, auto=args.distributed)
    except ValueError as err:
        fail(parser, str(err))


def parse_args(argv=None):
    parser = make_parser("experiments.train", __doc__)
    presets = names()["presets"]
    parser.add_argument(
        "--preset",
        type=preset_name(presets),
        metavar="NAME",
        help=f"named config: {', '.join(presets)} (see --list-presets)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config field (repeatable), e.g. --set lr=1e-4; see --list-fields",
    )
    parser.add_argument("--env", help="env override: 'autochess' or 'gymnax:<EnvName>'")
    add_training_vs(parser)
    parser.add_argument("--out", metavar="RUN_DIR", help="the run directory (default runs/<preset>-<timestamp>)")
    parser.add_argument("--resume", action="store_true", help="continue the run in --out from its latest checkpoint")
    parser.add_argument(
        "--auto-resume",
        action="store_true",
        help="with --preset and --out: continue the run there if it holds this run, else start it "
        "(a requeued cluster job runs the same command again)",
    )
    parser.add_argument("--list-presets", action="store_true", help="print the presets and exit")
    parser.add_argument("--list-fields", action="store_true", help="print every config field with its doc and exit")
    add_cache_args(parser)
    add_quiet(parser)
    add_host_args(parser)
    args = parser.parse_args(argv)
    if not (args.list_presets or args.list_fields or args.resume or args.preset):
        fail(parser, "give --preset NAME (or --resume with --out, or --list-presets)")
    if args.resume and not args.out:
        fail(parser, "--resume needs --out RUN_DIR")
    if args.resume and args.preset:
        fail(
            parser,
            "--resume continues the run's saved config: give --out and --set changes, not --preset "
            "(or --auto-resume with --preset to start the run when there is none yet)",
        )
    if args.auto_resume and not (args.out and args.preset) or args.auto_resume and args.resume:
        fail(parser, "--auto-resume needs --preset and --out (and no --resume)")
    if args.auto_resume:  # the directory holds this run: continue it; otherwise start it
        args.resume = read_owner_quietly(args.out) is not None
    overrides = training_vs(parser, args.vs, parse_overrides(parser, args.set, args.env))
    check_field_names(parser, [key for key in overrides if key != "env"])
    if not (args.list_presets or args.list_fields):
        args.out = args.out or f"runs/{args.preset}-{time.strftime('%Y%m%d-%H%M%S')}"
        check_out(parser, Path(args.out))  # before anything is imported or compiled
    return parser, args, overrides


def read_owner_quietly(run_dir):
    """The run directory's owner record, None when it has none (or does not exist)."""
    try:
        return read_owner(run_dir) if Path(run_dir).is_dir() else None
    except RunError:
        return None


def build_config(parser, args, overrides) -> TrainConfig:
    """The run's TrainConfig; a bad override or a run that cannot resume so is a parser error (nothing is trained)."""
    from agents.presets import preset_config
    from agents.run.preflight import check_resumable, load_config

    try:
        if args.resume:
            saved = load_config(args.out)
            config = apply_sets(saved, overrides)
            check_resumable(saved, config)
            if args.auto_resume:  # the command must be the one that started the run
                check_resumable(saved, apply_sets(preset_config(args.preset), overrides))
            return config
        return apply_sets(preset_config(args.preset), overrides)
    except RunError as err:
        fail(parser, f"--resume: {err}" if "config.json" in str(err) else err)
    except ValueError as err:
        fail(parser, err)


def describe_fields() -> str:
    """Every TrainConfig field with its default and doc."""
    from agents.config import TrainConfig

    defaults = TrainConfig().to_flat_dict(dotted=True)
    return "\n".join(f"{name} = {defaults[name]!r}: {doc}" for name, doc in TrainConfig.field_docs().items())


@handles_ctrl_c
def main(argv=None):
    parser, args, overrides = parse_args(argv)  # before JAX: a bad argument costs no import
    start_distributed(argv)
    quiet_logs()
    if args.list_presets or args.list_fields:
        from agents.presets import describe

        print(describe() if args.list_presets else describe_fields())
        return None
    from agents.run.training import train
    from agents.utils import distributed
    from agents.utils.progress import ConsoleProgress

    config = build_config(parser, args, overrides)
    try:
        distributed.make_mesh(config.run.num_devices, config.run.num_envs)  # more devices than there are: a usage error
    except ValueError as err:
        fail(parser, err)
    run_dir = Path(args.out)
    cache = enable_compilation_cache(None if args.no_cache else args.cache_dir)
    summary = run_job(
        parser,
        lambda: train(
            config,
            run_dir,
            resume=args.resume,
            preset=args.preset,
            progress=None if args.quiet else ConsoleProgress(),
            stop_on_signals=True,
        ),
        run_dir,
    )
    summary["cache_dir"] = cache
    if distributed.is_main_process():
        if summary["stopped"]:
            saved = " (its checkpoint is saved)" if summary["updates"] else ""
            print(
                f"stopped by {summary['stopped']} after update {summary['updates']}{saved}; continue with "
                f"--out {run_dir} --resume",
                file=sys.stderr,
            )
        elif summary["early_stopped"]:
            print(
                f"early stopping after update {summary['updates']}: the validation cross-entropy did not fall for "
                f"{config.bc.bc_patience} validations in a row",
                file=sys.stderr,
            )
        print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
