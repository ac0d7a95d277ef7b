"""Re-measure a preset's result over training seeds on today's code: ``python -m experiments.reproduce``.

    python -m experiments.reproduce ppo_small --seeds 3 --out runs/repro-ppo_small
    python -m experiments.reproduce ppo_small --seeds 3 --out runs/repro-ppo_small --record ppo_small_seeds
    python -m experiments.reproduce ppo_small --ladder 64 --previous baseline:ppo_small-v3 --out runs/repro
    python -m experiments.reproduce smoke --seeds 0,1 --games 2 --vs greedy --out runs/repro-smoke
    python -m experiments.reproduce bc_data --set bc_dataset=data/expert --checkpoint best --deterministic --out DIR
    python -m experiments.reproduce pipeline_short --seeds 3 --out runs/repro-pipeline_short

Trains PRESET once per training seed (``--seeds N``: seeds 0 .. N-1; or a comma-separated list), each run in
``OUT/seed_S``; the same command continues where it stopped (a signal, a requeued job) and neither retrains nor
re-evaluates a finished seed. Each final policy (``--checkpoint best``: each run's best checkpoint by its
``best_by``, e.g. a clone's lowest validation cross-entropy; ``--deterministic``: playing its most likely legal
action instead of sampling) plays ``--games`` game seeds x 8 seat rotations against each
``--vs`` lineup (default random, greedy, expert, baseline:ppo_small-v1; one player for all 7 seats or 7
comma-separated players) from ``--eval-seed`` (never a training seed). The aggregate (``agents.run.over_seeds``):
per lineup the mean placement over the training seeds with a 95% t interval over seeds, each seed's mean and
interval over its game seeds, and the training minutes until the in-run evaluation first placed <= 2.5 against 7
greedy bots (median over seeds). It is written to ``OUT/reproduce.json`` and printed as the last line of stdout.
``--ladder GAMES`` also rates each final policy on the ladder (``experiments.ladder``, kept in
``OUT/seed_S.ladder.json``): the mean of the seeds' ladder points with a 95% t interval over seeds. ``--previous
PLAYER`` names the shipped version the preset replaces and plays it as one more lineup (1 vs 7 of it).

``--record ID`` also writes the result record ``docs/results/records/ID.json`` with its evidence
(``docs/results/ID.seeds.json``, the aggregate; ``docs/results/ID.seed<S>.metrics.jsonl``, each run's metrics)
and regenerates docs/results.md and the README's table (``python -m experiments.results``). The record carries
the command, the machine, the seeds, the date and the commit (git HEAD; a work tree with uncommitted changes is
refused, since the record would name code it did not run).

A pipeline preset (``experiments.pipeline --list-presets``) is re-measured the same way
(``agents.pipeline.over_seeds``): the whole pipeline runs once per seed in ``OUT/seed_S`` (the recording with seed
S, phase i training with S + i; the evaluation seed must be none of these), and its final policy, the last phase's
result, plays. ``--set PHASE.FIELD=VALUE`` changes one phase's field; the record's time is the wall time of every
phase (``pipeline_wall_s``), and its evidence includes each seed's ``pipeline.json`` and each phase's metrics.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import jax

from agents.pipeline.over_seeds import reproduce_pipeline
from agents.pipeline.runner import PIPELINE_FILE, phase_overrides
from agents.policies.load import PolicyError
from agents.presets import PIPELINES, PRESETS, pipeline_spec, preset_config
from agents.run import over_seeds
from agents.storage import results
from agents.storage.checkpoints import NoGoodCheckpointError
from agents.storage.run_dir import RunError
from agents.utils.health import NonFiniteError
from agents.utils.progress import ConsoleProgress, NoProgress
from experiments.common import (
    add_cache_args,
    add_deterministic,
    add_quiet,
    apply_sets,
    check_out,
    enable_compilation_cache,
    fail,
    handles_ctrl_c,
    make_parser,
    parse_overrides,
    parse_phase_sets,
    parse_seeds,
    preset_name,
    quiet_logs,
)

ROOT = Path(__file__).resolve().parents[1]


def training_seeds(parser, text: str) -> list[int]:
    """``--seeds N`` -> seeds 0 .. N-1 (N in [1, 64]); ``a,b,c`` -> those seeds."""
    seeds = parse_seeds(parser, text)
    if isinstance(seeds, list):
        return seeds
    if not 1 <= seeds <= 64:
        fail(parser, f"--seeds: a count in [1, 64], got {seeds}")
    return list(range(seeds))


def describe_machine() -> tuple[str, str]:
    """(``machine``, ``environment``) of a record: ``2-core CPU`` or ``1x <device kind>``; CPU model, jax version."""
    devices = jax.devices()
    if devices[0].platform == "cpu":
        machine = f"{os.cpu_count()}-core CPU"
    else:
        machine = f"{len(devices)}x {devices[0].device_kind}"
    model = platform.processor() or platform.machine()
    try:
        model = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
    except (OSError, StopIteration):
        pass
    return machine, f"{model}, {platform.machine()}; jax {jax.__version__}"


def git_head() -> str:
    """HEAD of the source tree; ``RuntimeError`` when the tree has uncommitted changes to tracked files."""

    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()

    if git("status", "--porcelain", "--untracked-files=no"):
        raise RuntimeError(
            "the work tree has uncommitted changes: commit them first, so the record names the code that ran"
        )
    return git("rev-parse", "HEAD")


def write_record(result: dict, record_id: str, out: Path, command: list[str], commit: str) -> Path:
    """The record and its evidence in docs/results; the pages regenerated. Returns the record's path."""
    docs = ROOT / "docs" / "results"
    evidence = f"{record_id}.seeds.json"
    shutil.copyfile(out / "reproduce.json", docs / evidence)
    files = [evidence]
    for seed in result["seeds"]:
        run_dir = out / f"seed_{seed}"
        if result.get("pipeline"):  # its pipeline.json, and each training phase's metrics
            copies = {f"{record_id}.seed{seed}.pipeline.json": run_dir / PIPELINE_FILE}
            copies.update(
                {
                    f"{record_id}.seed{seed}.{phase}.metrics.jsonl": run_dir / phase / "metrics.jsonl"
                    for phase in result["config"]["phases"]
                }
            )
        else:
            copies = {f"{record_id}.seed{seed}.metrics.jsonl": run_dir / "metrics.jsonl"}
        for name, source in copies.items():
            shutil.copyfile(source, docs / name)
            files.append(name)
    machine, environment = describe_machine()
    record = results.record_from_seeds(
        result,
        record_id,
        command=command,
        machine=machine,
        environment=environment,
        date=datetime.date.today().isoformat(),
        commit=commit,
        files=files,
        evaluation=evidence,
    )
    problems = results.validate(record, docs) + results.check_evidence(record, docs)
    if problems:
        raise ValueError("; ".join(problems))
    path = docs / "records" / f"{record_id}.json"
    path.write_text(json.dumps(record, indent=2) + "\n")
    pages, problems = results.expected_pages(ROOT)  # the pages generated from every record, this one included
    if problems:
        raise ValueError("; ".join(problems))
    for page, text in pages.items():
        page.write_text(text, encoding="utf-8")
    return path


@handles_ctrl_c
def main(argv=None) -> dict:
    quiet_logs()
    parser = make_parser("experiments.reproduce", __doc__)
    names = sorted(PRESETS) + sorted(PIPELINES)
    parser.add_argument(
        "preset",
        type=preset_name(names, "python -m experiments.train --list-presets"),
        metavar="PRESET",
        help=f"the preset or pipeline preset to re-measure: {', '.join(names)}",
    )
    parser.add_argument("--seeds", default="3", help="a count N (seeds 0..N-1) or a comma-separated list (default 3)")
    parser.add_argument("--out", required=True, help="the directory of the runs and evaluations")
    parser.add_argument("--games", type=int, default=32, help="game seeds per lineup, each x 8 rotations (default 32)")
    parser.add_argument("--eval-seed", type=int, default=4242, help="the evaluation's seed (default 4242)")
    parser.add_argument(
        "--vs", action="append", default=None, help=f"a lineup (repeatable; default {', '.join(over_seeds.OPPONENTS)})"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config field of every seed's run, as experiments.train --set (a "
        "pipeline's: PHASE.FIELD=VALUE, as experiments.pipeline --set)",
    )
    parser.add_argument(
        "--ladder",
        type=int,
        default=None,
        metavar="GAMES",
        help="also rate each final policy on the ladder (GAMES game seeds x 8 rotations, e.g. 64: "
        "about 3 minutes a seed on 2 cores); the record's ladder points are the mean over seeds",
    )
    parser.add_argument(
        "--previous",
        default=None,
        metavar="PLAYER",
        help="the shipped version this preset replaces (e.g. baseline:ppo_small-v3): also played "
        "as 1 vs 7 of it, the README's 'previous version' column",
    )
    parser.add_argument(
        "--record",
        metavar="ID",
        default=None,
        help="also write docs/results/records/ID.json and its evidence, and regenerate the pages",
    )
    parser.add_argument(
        "--checkpoint",
        choices=over_seeds.CHECKPOINTS,
        default="final",
        help="which checkpoint of each run plays: its final one (default) or its best by best_by",
    )
    add_deterministic(parser, "the evaluated policies")
    add_quiet(parser)
    add_cache_args(parser)
    args = parser.parse_args(argv)
    seeds = training_seeds(parser, args.seeds)
    if args.games < 1:
        fail(parser, f"--games: an int >= 1, got {args.games}")
    if args.ladder is not None and args.ladder < 2:
        fail(parser, f"--ladder: game seeds, an int >= 2 (an interval needs a spread), got {args.ladder}")
    if args.record is not None and not results._ID.match(args.record):
        fail(parser, f"--record: lower case letters, digits, '_', '.', '-', got {args.record!r}")
    pipeline = args.preset in PIPELINES
    if pipeline and args.checkpoint != "final":
        fail(
            parser,
            "--checkpoint: a pipeline's final policy is its last phase's result (its best checkpoint by "
            "its best_by); only --checkpoint final applies",
        )
    try:  # a bad --set fails before any work
        if pipeline:
            config = pipeline_spec(args.preset).with_overrides(phase_overrides(parse_phase_sets(parser, args.set)))
        else:
            config = apply_sets(preset_config(args.preset), parse_overrides(parser, args.set))
    except ValueError as err:
        fail(parser, err)
    check_out(parser, args.out)
    commit = None
    if args.record is not None:
        try:
            commit = git_head()
        except (RuntimeError, OSError, subprocess.CalledProcessError) as err:
            fail(parser, f"--record: {err}")
    enable_compilation_cache(None if args.no_cache else args.cache_dir)
    progress = NoProgress() if args.quiet else ConsoleProgress()
    try:
        vs = tuple(args.vs or over_seeds.OPPONENTS)
        if pipeline:
            result = reproduce_pipeline(
                config,
                args.preset,
                seeds,
                args.out,
                games=args.games,
                vs=vs,
                eval_seed=args.eval_seed,
                deterministic=args.deterministic,
                progress=progress,
                ladder_games=args.ladder,
                previous=args.previous,
            )
        else:
            result = over_seeds.reproduce(
                config,
                args.preset,
                seeds,
                args.out,
                games=args.games,
                vs=vs,
                eval_seed=args.eval_seed,
                checkpoint=args.checkpoint,
                deterministic=args.deterministic,
                progress=progress,
                ladder_games=args.ladder,
                previous=args.previous,
            )
    except (ValueError, RunError, PolicyError) as err:
        fail(parser, err)
    except over_seeds.StoppedError as err:
        fail(parser, f"{err}; the same command continues", status=1)
    except (NonFiniteError, NoGoodCheckpointError) as err:  # nothing non-finite was saved
        fail(parser, err, status=1)
    except OSError as err:
        fail(parser, f"{err}; the same command continues from the complete checkpoints", status=1)
    except KeyboardInterrupt:
        fail(parser, "interrupted; the same command continues", status=130)
    if args.record is not None:
        command = ["python -m experiments.reproduce " + shlex.join(sys.argv[1:] if argv is None else list(argv))]
        try:
            path = write_record(result, args.record, Path(args.out), command, commit)
        except ValueError as err:
            fail(parser, f"--record: {err}", status=1)
        print(f"wrote {path.relative_to(ROOT)}", file=sys.stderr)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
