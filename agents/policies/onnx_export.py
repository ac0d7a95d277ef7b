"""Write a trained policy as an ONNX file (``python -m experiments.export PLAYER --format onnx --out DIR``).

    export_onnx(load_policy("baseline:ppo_small-v3"), "exported/")

The directory holds:

* ``policy.onnx``: ``(obs, mask) -> (logits, value)`` for any batch size B: ``obs`` float32[B, 582] (vector) or
  uint8[B, 72, 20] (packed pixel frames), ``mask`` bool[B, 258] (True = legal); ``logits`` float32[B, 258] with every
  illegal action at -1e9 (``agents.core.distributions.mask_logits``), ``value`` float32[B]. The parameters are the
  file's initializers; opset ``onnx_graph.OPSET``.
* ``onnx.json``: the observation (kind, shape, dtype, layout version and fingerprint, ``jaxgame.layout``), the
  action table, the opset, the inputs and outputs, the source (run, step, seat) with the sha256 of its checkpoint's
  digest (a run step's ``SHA256SUMS``, a baseline's ``NAME.sha256``) and the sha256 of ``policy.onnx``.
* ``policy_client.py`` (numpy + onnxruntime: ``agents.policies.onnx_client``) and ``policy_client.cjs``
  (onnxruntime-node), which run it and serve it to a game client as JSON lines.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from agents.core import distributions
from agents.core.recurrent import is_recurrent
from agents.policies import baselines, card, onnx_client, onnx_graph
from agents.policies.export import new_export_dir, one_seat
from agents.policies.load import PolicyError, RunPolicy, is_baseline, require_parameters
from agents.storage.checkpoints import CHECKPOINT_DIR, SUMS_FILE
from agents.utils.versions import package_versions
from jaxgame import constants as C
from jaxgame import layout

CLIENT_FILES = {"python": "policy_client.py", "node": "policy_client.cjs"}


def source_sha256(policy: RunPolicy) -> tuple[str | None, str | None]:
    """(the file that pins the policy's parameters, its sha256): a baseline's digest file ``NAME.sha256``, a run
    step's ``checkpoints/<step>/SHA256SUMS``; (None, None) where the step has none (saved before checksums)."""
    if is_baseline(policy.run_dir):
        path = baselines.DIRECTORY / f"{str(policy.run_dir)[len(baselines.PREFIX) :]}.sha256"
    else:
        path = Path(policy.run_dir) / CHECKPOINT_DIR / str(policy.step) / SUMS_FILE
    if not path.is_file():
        return None, None
    return path.name, hashlib.sha256(path.read_bytes()).hexdigest()


def trace_policy(policy: RunPolicy):
    """(the ClosedJaxpr of ``(obs, mask) -> (masked logits, value)`` with a symbolic batch B, B)."""
    observation = card.observation(policy.config)
    network, params = policy.network, policy.params

    def masked_policy(obs, mask):
        logits, value = network.apply(params, obs)
        return distributions.mask_logits(logits, mask), value.astype(jnp.float32)

    (batch,) = jax.export.symbolic_shape("B")
    obs = jax.ShapeDtypeStruct((batch, *observation["shape"]), observation["dtype"])
    mask = jax.ShapeDtypeStruct((batch, C.NUM_ACTIONS), np.bool_)
    return jax.make_jaxpr(masked_policy)(obs, mask), batch


def export_onnx(policy: RunPolicy, out_dir, seat: int | None = None) -> dict:
    """Write ``policy`` to ``out_dir`` (new or empty) as the module docstring says; return ``onnx.json``'s dict.
    Raises ``PolicyError`` for a directory in use and ``onnx_graph.OnnxExportError`` for a network the translator
    cannot write (it names the primitive)."""
    policy = one_seat(require_parameters(policy, "export to ONNX"), seat)
    if is_recurrent(policy.network):
        raise PolicyError(
            f"{policy.name} is a recurrent policy (network={policy.config.net.network!r}): ONNX exports hold "
            "feed-forward policies only for now; --format jax exports it with its memory"
        )
    out_dir = new_export_dir(out_dir)
    observation = card.observation(policy.config)
    kind = observation["kind"]
    closed, batch = trace_policy(policy)
    source_file, source_digest = source_sha256(policy)
    model = onnx_graph.to_onnx(
        closed,
        ["obs", "mask"],
        ["logits", "value"],
        batch,
        doc=f"jaxgame policy {policy.name}: (obs, mask) -> (masked logits, value)",
        metadata={
            "jaxgame.layout_version": layout.LAYOUT_VERSIONS[kind],
            "jaxgame.observation": kind,
            "jaxgame.source": policy.name,
        },
    )
    data = model.SerializeToString()
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / onnx_client.MODEL_FILE).write_bytes(data)
    spec = {
        "format": onnx_client.FORMAT,
        "format_version": onnx_client.FORMAT_VERSION,
        "name": policy.name,
        "source": {
            "run": policy.run_dir,
            "step": policy.step,
            "seat": seat,
            "digest_file": source_file,
            "digest_sha256": source_digest,
        },
        "observation": {
            "kind": kind,
            "shape": list(observation["shape"]),
            "dtype": observation["dtype"].name,
            "layout_version": layout.LAYOUT_VERSIONS[kind],
            "layout_fingerprint": layout.layout_fingerprint(kind),
        },
        "num_actions": C.NUM_ACTIONS,
        "actions": layout.action_table(),
        "rules": policy.config.rules(),
        "network": {"kind": policy.config.net.network, "hidden": list(policy.config.net.hidden)},
        "opset": onnx_graph.OPSET,
        "ir_version": onnx_graph.IR_VERSION,
        "inputs": {
            "obs": f"{observation['dtype'].name}[B, {', '.join(map(str, observation['shape']))}]",
            "mask": f"bool[B, {C.NUM_ACTIONS}] (True = legal)",
        },
        "outputs": {
            "logits": f"float32[B, {C.NUM_ACTIONS}], illegal actions at {distributions.MASKED_LOGIT:g}",
            "value": "float32[B]",
        },
        "files": {
            "model": onnx_client.MODEL_FILE,
            "model_sha256": hashlib.sha256(data).hexdigest(),
            "model_bytes": len(data),
            **{f"client_{k}": v for k, v in CLIENT_FILES.items()},
        },
        "versions": package_versions("jax", "onnx", "jaxgame"),
        "exported": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    shutil.copyfile(onnx_client.__file__, out_dir / CLIENT_FILES["python"])
    shutil.copyfile(Path(onnx_client.__file__).with_suffix(".cjs"), out_dir / CLIENT_FILES["node"])
    (out_dir / onnx_client.SPEC_FILE).write_text(json.dumps(spec, indent=2) + "\n")
    return spec


__all__ = ["CLIENT_FILES", "export_onnx", "source_sha256", "trace_policy"]
