"""ONNX export cost and inference speed against the JAX function, on this machine's CPU: prints JSON.

    python benchmarks/onnx_inference.py [--repeats 200] [--threads 0]

For each network kind the project ships (the MLP ``ppo_small-v3`` and ``ppo_large-v1``, the entity network
``pipeline_entity-v1``) and the pixel tile network (``tiles``, freshly initialised: no shipped version), it exports
``policy.onnx`` and reports its size, the export's seconds, and the median seconds of one call at batch 1 and 256:
onnxruntime (CPU provider, ``--threads`` intra-op threads; 0 = its default) against ``jax.jit`` of the same
``(obs, mask) -> (masked logits, value)`` (compiled before timing, ``block_until_ready``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.config import TrainConfig  # noqa: E402
from agents.core import distributions  # noqa: E402
from agents.core.networks import actor_critic  # noqa: E402
from agents.policies import onnx_client  # noqa: E402
from agents.policies.load import RunPolicy, load_policy  # noqa: E402
from agents.policies.onnx_export import export_onnx  # noqa: E402

BATCHES = (1, 256)


def _tiles_policy() -> RunPolicy:
    config = TrainConfig.from_fields(obs="pixels", network="tiles", hidden=(256,), activation="relu", shared_torso=True)
    net = actor_critic("tiles", 258, (256,), "relu", True)
    params = net.init(jax.random.key(0), jnp.zeros((1, 72, 20), jnp.uint8))
    return RunPolicy(name="fresh:tiles", run_dir="fresh", step=0, config=config, network=net, params=params)


def _median_seconds(fn, repeats: int) -> float:
    fn()  # warm: the first call of a session or a jit allocates
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def measure(policy: RunPolicy, repeats: int, threads: int) -> dict:
    import onnxruntime

    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        spec = export_onnx(policy, Path(tmp) / "out")
        export_s = time.perf_counter() - start
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        session = onnxruntime.InferenceSession(
            str(Path(tmp) / "out" / onnx_client.MODEL_FILE), options, providers=["CPUExecutionProvider"]
        )
    network, params = policy.network, policy.params

    @jax.jit
    def jax_fn(obs, mask):
        logits, value = network.apply(params, obs)
        return distributions.mask_logits(logits, mask), value

    shape, dtype = tuple(spec["observation"]["shape"]), np.dtype(spec["observation"]["dtype"])
    row = {
        "network": spec["network"]["kind"],
        "hidden": spec["network"]["hidden"],
        "obs": spec["observation"]["kind"],
        "onnx_bytes": spec["files"]["model_bytes"],
        "export_s": round(export_s, 2),
    }
    rng = np.random.default_rng(0)
    for batch in BATCHES:
        obs = (
            rng.integers(0, 256, (batch, *shape), dtype=np.uint8)
            if dtype == np.uint8
            else rng.random((batch, *shape), dtype=np.float32)
        )
        mask = rng.random((batch, 258)) < 0.2
        jax_obs, jax_mask = jnp.asarray(obs), jnp.asarray(mask)
        feed = {"obs": obs, "mask": mask}
        row[f"onnx_ms_b{batch}"] = round(1e3 * _median_seconds(lambda feed=feed: session.run(None, feed), repeats), 4)
        row[f"jax_ms_b{batch}"] = round(
            1e3 * _median_seconds(lambda o=jax_obs, m=jax_mask: jax.block_until_ready(jax_fn(o, m)), repeats), 4
        )
        logits = session.run(None, {"obs": obs, "mask": mask})[0]
        row[f"max_abs_logit_diff_b{batch}"] = float(np.abs(logits - np.asarray(jax_fn(jax_obs, jax_mask)[0])).max())
    return row


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--threads", type=int, default=0, help="onnxruntime intra-op threads (0: its default)")
    args = parser.parse_args(argv)
    import onnx
    import onnxruntime

    players = {name: load_policy(f"baseline:{name}") for name in ("ppo_small-v3", "pipeline_entity-v1", "ppo_large-v1")}
    players["tiles (fresh)"] = _tiles_policy()
    out = {
        "machine": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "jax": jax.__version__,
        "onnx": onnx.__version__,
        "onnxruntime": onnxruntime.__version__,
        "repeats": args.repeats,
        "threads": args.threads,
        "players": {name: measure(policy, args.repeats, args.threads) for name, policy in players.items()},
    }
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
