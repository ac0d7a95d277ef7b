"""Learning curves from training runs' ``metrics.jsonl``, one PNG.

    python -m experiments.plot RUN_DIR [RUN_DIR ...] --out curves.png
    python -m experiments.plot runs/ppo_s0 runs/ppo_s1 --out plots/curves.png --x wall_s
    python -m experiments.plot runs/ppo_s0 --out kl.png --metrics loss/approx_kl,loss/clip_frac

Each RUN_DIR holds the ``metrics.jsonl`` a trainer writes (``agents.storage.metrics``): a first line
``{"meta": {...}}`` (config, seed, versions), then one JSON record per training
chunk (``update``, ``env_steps``, ``seat_steps``, ``wall_s``, ``train/...``,
``loss/...``, ``perf/...`` and, on evaluation chunks only, ``eval/...``). A
RUN_DIR may also be the path of the ``.jsonl`` file itself.

  * ``--x`` picks the x axis: ``env_steps`` (default), ``update``, ``wall_s`` or ``samples_per_learner``: the
    seat-steps each set of parameters trained on, from the run's config (its meta line): env_steps x 8 for
    shared-parameter self-play (every seat's samples train the one network), env_steps (seat_steps / 8) for
    ``independent`` learners (each trains on its own seat only), env_steps x the "self" seats with bot
    opponents; refused for a league or a ``bc_dataset`` run. It compares learning per sample across runs
    whose learners see different shares of the data:

        python -m experiments.plot runs/ppo_small runs/independent --x samples_per_learner --out per_learner.png
  * ``--metrics`` is a comma-separated list of record keys, one panel each. By
    default: those of ``eval/placement_vs_random``, ``eval/placement_vs_greedy``,
    ``train/episode_return``, ``train/placement``, ``loss/entropy``,
    ``loss/value``, ``loss/policy``, ``loss/approx_kl`` and ``perf/sps`` that
    some run has (gymnax runs have no placement or eval keys).

One subplot per metric in a grid, one line per run (same colour in every
panel) labelled with the run directory's name. Placement panels (1 best .. 8
worst) get a dashed reference line at 4.5, the mean placement of an average
seat. Null, NaN and non-numeric values are skipped point by point; lines that
do not parse (a run killed mid-write can leave a partial last line) are skipped
with a warning on stderr. The PNG's parent directories are created; one JSON line goes to stdout:
``{"out": ..., "runs": [...], "metrics": [...], "points": {metric: count}}``.

From a notebook: ``agents.storage.metrics.load_metrics(run_dir) -> (meta, records)`` and
``agents.run.plotting.plot_runs(run_dirs, out, x="env_steps", metrics=None) -> dict`` (the same
summary as the JSON line).
"""

from __future__ import annotations

import json
import os
import sys
import warnings

from agents.run.plotting import X_FIELDS, plot_runs
from agents.storage.metrics import METRICS_FILE, metrics_path
from experiments.common import check_out, fail, make_parser


def main(argv=None) -> dict:
    parser = make_parser("experiments.plot", __doc__)
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help=f"run directory holding {METRICS_FILE}")
    parser.add_argument("--out", required=True, help="PNG path (parent directories are created)")
    parser.add_argument(
        "--x",
        default="env_steps",
        choices=X_FIELDS,
        help="x axis: a record field or samples_per_learner (derived from the run's config; "
        "see above); default: env_steps",
    )
    parser.add_argument("--metrics", default=None, help="comma-separated metric names (default: see above)")
    args = parser.parse_args(argv)
    check_out(parser, args.out, "file")  # before anything is loaded
    missing = [d for d in args.run_dirs if not os.path.isfile(metrics_path(d))]
    if missing:
        fail(parser, f"no {METRICS_FILE} in: {', '.join(missing)}")
    metrics = None if args.metrics is None else args.metrics.split(",")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            summary = plot_runs(args.run_dirs, args.out, x=args.x, metrics=metrics)
        except ValueError as e:
            fail(parser, str(e))
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
