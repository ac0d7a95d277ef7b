"""Export a trained policy as a standalone function: ``python -m experiments.export``.

    python -m experiments.export runs/mine --out exported/           # the latest good checkpoint
    python -m experiments.export runs/mine:120 --out exported/ --platforms cpu
    python -m experiments.export baseline:ppo_small-v1 --out exported/
    python -m experiments.export runs/independent --seat 3 --out exported/   # one learner of an independent run

Writes ``act_greedy.jaxexport`` / ``act_sample.jaxexport`` (``jax.export`` serializations of
``act(obs, mask[, key]) -> (action, logits, value)``, any batch size, lowered for each platform), ``spec.json``
and ``policy_loader.py``, which loads them with only jax and numpy (docs/interop.md, "Policies to take away").
``--out`` must be new or empty.
"""

from __future__ import annotations

import json
from pathlib import Path

from agents.policies.export import DEFAULT_PLATFORMS, export_policy
from agents.policies.load import PolicyError, load_policy
from agents.storage.checkpoints import NoGoodCheckpointError
from experiments.common import check_out, fail, make_parser, player_spec, quiet_logs


def main(argv=None):
    quiet_logs()
    parser = make_parser("experiments.export", __doc__)
    parser.add_argument("policy", metavar="RUN_DIR[:STEP] | baseline:NAME")
    parser.add_argument("--out", type=Path, required=True, help="a new or empty directory")
    parser.add_argument("--platforms", default=",".join(DEFAULT_PLATFORMS),
                        help="comma-separated: cpu, cuda, rocm, tpu (default %(default)s)")
    parser.add_argument("--seat", type=int, default=None, choices=range(8), metavar="0..7",
                        help="an independent-learners run: the seat whose learner to export")
    args = parser.parse_args(argv)
    parsed = player_spec(parser, args.policy)
    check_out(parser, args.out)  # before anything is loaded or lowered
    if isinstance(parsed, str):
        fail(parser, f"{args.policy!r} is a scripted bot, not a trained policy (RUN_DIR[:STEP] or baseline:NAME)")
    try:
        spec = export_policy(load_policy(*parsed), args.out, tuple(p.strip() for p in args.platforms.split(",")),
                             args.seat)
    except (PolicyError, FileNotFoundError) as err:
        fail(parser, err)
    except NoGoodCheckpointError as err:
        fail(parser, err, status=1)
    print(json.dumps({"out": str(args.out), "name": spec["name"], "obs": spec["obs"], "platforms": spec["platforms"]}))
    return spec


if __name__ == "__main__":
    main()
