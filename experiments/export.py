"""Export a trained policy as a standalone function: ``python -m experiments.export``.

    python -m experiments.export runs/mine --out exported/           # the latest good checkpoint
    python -m experiments.export runs/mine:120 --out exported/ --platforms cpu
    python -m experiments.export baseline:ppo_small-v1 --out exported/
    python -m experiments.export runs/independent --seat 3 --out exported/   # one learner of an independent run
    python -m experiments.export baseline:ppo_small-v1 --out ppo_small-v1-jax-now/   # re-export for this jax
    python -m experiments.export baseline:ppo_small-v3 --format onnx --out exported-onnx/   # no JAX to run it

Writes ``act_greedy.jaxexport`` / ``act_sample.jaxexport`` (``jax.export`` serializations of
``act(obs, mask[, key]) -> (action, logits, value)``, any batch size, lowered for each platform), ``spec.json``
and ``policy_loader.py``, which loads them with only jax and numpy (docs/interop.md, "Policies to take away").
``--format onnx`` writes ``policy.onnx`` (``(obs, mask) -> (masked logits, value)``, any batch size), ``onnx.json``
and two clients that run it without JAX, ``policy_client.py`` (onnxruntime) and ``policy_client.cjs``
(onnxruntime-node); docs/interop.md, "ONNX: policies outside JAX".
``--out`` must be new or empty, and outside ``agents/policies/baseline_policies/``: a shipped version's export is
never overwritten. An export ages with the jax that wrote it (``jax.export`` promises 6 months of backward and 3 weeks
of forward compatibility); when the loader says the running jax is outside that window, re-export the same
checkpoint or baseline with the installed jax, into a new directory, with the command it names.
"""

from __future__ import annotations

import json
from pathlib import Path

# Only what needs no JAX is imported here: the player and --out are checked before ``main`` imports the library
# (tests/test_cli.py).
from agents.policies.specs import PolicyError, baseline_directory
from experiments.common import check_out, fail, handles_ctrl_c, make_parser, player_spec, quiet_logs
from experiments.names import names


@handles_ctrl_c
def main(argv=None):
    parser = make_parser("experiments.export", __doc__)
    parser.add_argument("policy", metavar="RUN_DIR[:STEP] | baseline:NAME")
    parser.add_argument("--out", type=Path, required=True, help="a new or empty directory")
    parser.add_argument(
        "--format",
        choices=("jax", "onnx"),
        default="jax",
        help="jax: jax.export functions (needs jax to run); onnx: policy.onnx (default %(default)s)",
    )
    parser.add_argument(
        "--platforms",
        default=None,
        help=f"--format jax: comma-separated cpu, cuda, rocm, tpu (default {','.join(names()['export_platforms'])})",
    )
    parser.add_argument(
        "--seat",
        type=int,
        default=None,
        choices=range(8),
        metavar="0..7",
        help="an independent-learners run: the seat whose learner to export",
    )
    args = parser.parse_args(argv)
    parsed = player_spec(parser, args.policy)
    shipped = baseline_directory().resolve()
    if args.out.resolve() == shipped or shipped in args.out.resolve().parents:
        fail(
            parser,
            f"--out {args.out} is inside the shipped baselines ({shipped}), whose versions are never "
            "overwritten: give a directory elsewhere",
        )
    check_out(parser, args.out)  # before anything is loaded or lowered
    if isinstance(parsed, str):
        fail(parser, f"{args.policy!r} is a scripted bot, not a trained policy (RUN_DIR[:STEP] or baseline:NAME)")
    if args.format == "onnx" and args.platforms is not None:
        fail(parser, "--platforms applies to --format jax; an ONNX file runs wherever onnxruntime does")
    quiet_logs()
    from agents.policies.export import DEFAULT_PLATFORMS, export_policy
    from agents.policies.load import load_policy
    from agents.storage.checkpoints import NoGoodCheckpointError

    try:
        if args.format == "onnx":
            from agents.policies.onnx_export import export_onnx
            from agents.policies.onnx_graph import OnnxExportError

            try:
                spec = export_onnx(load_policy(*parsed), args.out, args.seat)
            except OnnxExportError as err:
                fail(parser, err)
            print(
                json.dumps(
                    {
                        "out": str(args.out),
                        "name": spec["name"],
                        "obs": spec["observation"]["kind"],
                        "layout_version": spec["observation"]["layout_version"],
                        "opset": spec["opset"],
                        "bytes": spec["files"]["model_bytes"],
                    }
                )
            )
            return spec
        platforms = tuple(p.strip() for p in (args.platforms or ",".join(DEFAULT_PLATFORMS)).split(","))
        spec = export_policy(load_policy(*parsed), args.out, platforms, args.seat)
    except (PolicyError, FileNotFoundError) as err:
        fail(parser, err)
    except NoGoodCheckpointError as err:
        fail(parser, err, status=1)
    print(json.dumps({"out": str(args.out), "name": spec["name"], "obs": spec["obs"], "platforms": spec["platforms"]}))
    return spec


if __name__ == "__main__":
    main()
