"""``--what memory``: the per-device memory of one training update at a preset's full shapes, from the compiled
program (``agents.utils.memory.compiled_bytes``: XLA's buffer assignment), on 1 or more devices, with PPO's global and
local shuffle (``TrainConfig.shuffle``).

Nothing runs: each update is compiled from abstract arguments (``jax.eval_shape`` of ``init``, placed as the
trainer places a runner). On a CPU, ``D`` devices are forced host devices (``--xla_force_host_platform_device_count``,
which must be set before JAX starts), so each device count runs in a child process; on an accelerator the first
``D`` real devices are used in this process. XLA:CPU's temporaries stand in for the GPU's: the same buffers, up to
each backend's fusion choices.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import jax

from agents.presets import preset_config
from agents.run.build import build
from agents.utils import memory
from jaxgame.xla_flags import with_host_devices

GIB = float(1 << 30)
#: the checkout this module is in: benchmarks/ is not installed, so the child imports it from here
REPO_ROOT = Path(__file__).resolve().parents[2]


def measure(preset: str, devices: int, shuffle: str) -> dict:
    """GiB per device of one update of ``preset`` on ``devices`` devices of this process (and the compile time)."""
    fields = {"num_devices": devices}
    if preset_config(preset).algo == "ppo":
        fields["shuffle"] = shuffle
    config = preset_config(preset).with_overrides(fields)
    trainer = build(config).trainer
    runner = jax.eval_shape(trainer.init, jax.random.key(config.run.seed))
    shardings = trainer.shardings(runner)
    if shardings is not None:
        runner = jax.tree_util.tree_map(
            lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s), runner, shardings
        )
    start = time.perf_counter()
    compiled = jax.jit(trainer.run, static_argnums=1).lower(runner, 1).compile()
    seconds = time.perf_counter() - start
    sizes = memory.compiled_bytes(compiled)
    gathers = memory.all_gathers(compiled)
    return {
        **{f"{name}_gib": round(value / GIB, 3) for name, value in sizes.items()},
        "largest_all_gather_gib": round(gathers[0] / GIB, 3) if gathers else 0.0,
        "compile_s": round(seconds, 1),
    }


def _measure_all(cases) -> dict:
    return {f"{preset}/{devices}/{shuffle}": measure(preset, devices, shuffle) for preset, devices, shuffle in cases}


def _in_child(devices: int, cases) -> dict:
    env = {
        **os.environ,
        "JAX_PLATFORMS": "cpu",
        "XLA_FLAGS": with_host_devices(os.environ.get("XLA_FLAGS", ""), devices),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
    }
    code = (
        "import json, sys; from benchmarks.harness.memory import _measure_all; "
        "print(json.dumps(_measure_all(json.loads(sys.argv[1]))))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps(cases)], env=env, capture_output=True, text=True, check=False
    )
    if proc.returncode:
        raise RuntimeError(f"the {devices}-device child failed: {proc.stderr.strip().splitlines()[-1:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench_memory(presets, device_counts, progress: bool = True) -> dict:
    """``{"memory": {preset: {devices: {shuffle: sizes}}}}`` (``measure``'s sizes; A2C has no shuffle:
    "global" only)."""
    out: dict = {}
    on_cpu = jax.default_backend() == "cpu"
    for devices in device_counts:
        if not on_cpu and devices > jax.device_count():
            raise ValueError(f"--devices {devices}: only {jax.device_count()} {jax.default_backend()} device(s)")
        cases = [
            (preset, devices, shuffle)
            for preset in presets
            for shuffle in (("global", "local") if preset_config(preset).algo == "ppo" and devices > 1 else ("global",))
        ]
        start = time.perf_counter()
        results = _in_child(devices, cases) if on_cpu and devices != jax.device_count() else _measure_all(cases)
        for key, sizes in results.items():
            preset, _, shuffle = key.split("/")
            out.setdefault(preset, {}).setdefault(str(devices), {})[shuffle] = sizes
            if progress:
                print(
                    f"  {preset} on {devices} device(s), shuffle={shuffle}: peak {sizes['peak_gib']:.2f} GiB per "
                    f"device",
                    file=sys.stderr,
                    flush=True,
                )
        if progress:
            print(f"  ({devices} device(s): {time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)
    return {"memory": out}


__all__ = ["bench_memory", "measure"]
