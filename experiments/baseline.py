"""The shipped baseline policies (``agents.policies.baselines``): ``python -m experiments.baseline``.

    python -m experiments.baseline list                       # the versions, where they came from, their results
    python -m experiments.baseline freeze runs/mine:120 --name ppo_small-v2 --results eval.json

``freeze`` writes a run's policy (``RUN_DIR`` for its latest good checkpoint, ``RUN_DIR:STEP``) into
``agents/policies/baseline_policies/`` as a new version (``NAME.msgpack``, ``NAME.json`` and its standalone export
``NAME/``: ``agents.policies.export.freeze_baseline``); ``--results`` is a JSON file of what it measured (e.g. the
output of ``experiments.evaluate --checkpoint``), kept beside it. Versions are never overwritten. Anywhere a
player is named (``experiments.evaluate --vs``, ``experiments.rate``), ``baseline:NAME`` plays it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from agents.policies import baselines
from agents.policies.export import freeze_baseline
from agents.policies.load import PolicyError, load_policy, parse_spec
from agents.storage.checkpoints import NoGoodCheckpointError
from experiments.common import fail, quiet_logs


def main(argv=None):
    quiet_logs()
    parser = argparse.ArgumentParser(prog="python -m experiments.baseline", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="the shipped versions")
    freeze = commands.add_parser("freeze", help="write a run's policy as a new version")
    freeze.add_argument("run", metavar="RUN_DIR[:STEP]")
    freeze.add_argument("--name", required=True, help="the new version, e.g. ppo_small-v2")
    freeze.add_argument("--results", type=Path, help="a JSON file of what the policy measured, kept beside it")
    args = parser.parse_args(argv)
    if args.command == "list":
        out = {name: {k: v for k, v in baselines.describe(name).items() if k != "config"}
               for name in baselines.available()}
        print(json.dumps(out, indent=1))
        return out
    parsed = parse_spec(args.run)
    if isinstance(parsed, str) or parsed[0].startswith(baselines.PREFIX):
        fail(parser, f"{args.run!r} is not a training run (RUN_DIR or RUN_DIR:STEP)")
    try:
        results = json.loads(args.results.read_text()) if args.results else None
    except (OSError, ValueError) as err:
        fail(parser, f"--results {args.results}: {err}")
    try:
        path = freeze_baseline(load_policy(*parsed), args.name, results)
    except (baselines.BaselineError, PolicyError, FileNotFoundError) as err:
        fail(parser, err)
    except NoGoodCheckpointError as err:
        fail(parser, err, status=1)
    print(json.dumps({"baseline": args.name, "json": str(path)}))
    return path


if __name__ == "__main__":
    main()
