"""Run the design's training pipeline end to end: record -> behaviour cloning -> oracle teacher -> distilled student
-> anchored league, each phase in its own run directory under ``--out`` (the console script: ``jaxgame-pipeline``).

    python -m experiments.pipeline --preset=pipeline_small --out runs/pipe        # CPU (2 cores), about 12 min
    python -m experiments.pipeline --out runs/pipe --resume                          # continue where it stopped
    python -m experiments.pipeline --preset=pipeline_small --set student.total_steps=409600 --out runs/pipe2
    python -m experiments.pipeline --preset=pipeline_smoke --out /tmp/pipe --stop-after bc
    python -m experiments.pipeline --list-presets

The pipeline is the library's ``agents.pipeline.runner.run_pipeline`` (docs/training.md, "The pipeline"): each phase's
config links to the earlier phases' results (``"@PHASE"``: the recording's directory, or a training phase's best
checkpoint ``RUN_DIR:STEP``). ``--set PHASE.FIELD=VALUE`` changes one phase's config field (``record.games=64``
for the recording). ``DIR/pipeline.json`` lists the phases, their directories, configs, results and wall times;
``--resume`` skips the finished phases and continues the unfinished one from its checkpoints (the preset, seed and
``--set`` values are read back from it). Ctrl-C or SIGTERM during a training phase saves its checkpoint and stops
the pipeline (exit 0, resumable). Progress goes to stderr; the last line on stdout is the JSON summary.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from agents.pipeline.runner import PIPELINE_FILE, phase_overrides, run_pipeline
from agents.presets import PIPELINES, pipeline_spec
from agents.utils.progress import ConsoleProgress, NoProgress
from experiments.common import (
    add_cache_args,
    add_quiet,
    check_out,
    enable_compilation_cache,
    fail,
    handles_ctrl_c,
    make_parser,
    parse_phase_sets,
    preset_name,
    quiet_logs,
    run_job,
)


def parse_args(argv=None):
    parser = make_parser("experiments.pipeline", __doc__)
    parser.add_argument(
        "--preset",
        default="pipeline_small",
        metavar="NAME",
        type=preset_name(PIPELINES, kind="pipeline preset"),
        help=f"a pipeline preset: {', '.join(sorted(PIPELINES))} (--list-presets; default pipeline_small)",
    )
    parser.add_argument("--out", metavar="DIR", help="the pipeline's directory (default runs/<preset>-<timestamp>)")
    parser.add_argument("--seed", type=int, default=0, help="the recording's seed; phase i trains with seed + i")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="PHASE.FIELD=VALUE",
        help="override one phase's config field (repeatable)",
    )
    parser.add_argument("--resume", action="store_true", help="continue the pipeline in --out")
    parser.add_argument("--stop-after", metavar="PHASE", help="stop after this phase (resume later)")
    parser.add_argument("--list-presets", action="store_true", help="print the pipeline presets and exit")
    add_quiet(parser)
    add_cache_args(parser)
    args = parser.parse_args(argv)
    if not 0 <= args.seed < 2**31 - 16:
        fail(parser, f"--seed must be in [0, 2^31 - 16), got {args.seed}")
    return parser, args


@handles_ctrl_c
def main(argv=None):
    quiet_logs()
    parser, args = parse_args(argv)
    if args.list_presets:
        for name, spec in PIPELINES.items():
            print(f"{name}: {spec.description}")
            print(f"    record: {spec.record.games} games of {','.join(spec.record.players)}")
            for phase in spec.phases:
                links = ", ".join(f"{f}=@{p}" for f, p in phase.links)
                print(f"    {phase.name}: {phase.config.run.algo}, {phase.config.num_updates} updates ({links})")
        return None
    sets = parse_phase_sets(parser, args.set)
    if args.resume:
        if not args.out:
            fail(parser, "--resume needs --out DIR")
        if sets:
            fail(parser, "--resume continues the pipeline as it started; --set is not allowed")
        try:
            state = json.loads((Path(args.out) / PIPELINE_FILE).read_text())
        except (OSError, json.JSONDecodeError) as err:
            fail(parser, f"{Path(args.out) / PIPELINE_FILE} cannot be read ({err}); is --out a pipeline directory?")
        preset, seed, overrides = state["pipeline"], state["seed"], state.get("overrides") or {}
    else:
        preset, seed = args.preset, args.seed
        try:
            overrides = phase_overrides(sets)
        except ValueError as err:
            fail(parser, err)
    try:
        spec = pipeline_spec(preset)
    except ValueError as err:
        fail(parser, err)
    out_dir = args.out or f"runs/{preset}-{time.strftime('%Y%m%d-%H%M%S')}"
    check_out(parser, out_dir)  # before anything is recorded or compiled
    enable_compilation_cache(None if args.no_cache else args.cache_dir)
    summary = run_job(
        parser,
        lambda: run_pipeline(
            spec,
            out_dir,
            preset,
            seed,
            args.resume,
            NoProgress() if args.quiet else ConsoleProgress(),
            args.stop_after,
            overrides,
        ),
        out_dir,
        kept="what was completed before it is kept",
        bad_input=(ValueError, TypeError, FileNotFoundError, MemoryError),
    )
    result = {
        "dir": str(out_dir),
        "pipeline": preset,
        "final": summary["final"],
        "wall_s": summary["wall_s"],
        "stopped": summary["stopped"],
        "phases": {
            k: {"dir": v["dir"], "result": v["result"], "wall_s": v["wall_s"]} for k, v in summary["phases"].items()
        },
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
