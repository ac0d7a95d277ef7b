"""Check a jitted program for an accelerator without the accelerator: lower it for another platform
(``jax.export`` with ``platforms=("cuda",)``) and look for what would not run there or would stall the device.

    problems = lowering_problems(trainer.run, runner_shapes, 1, platform="cuda")   # [] when it is clean

What counts as a problem: the program does not lower for the platform (for example a ``jax.pure_callback`` or
``io_callback``: from a CPU-only JAX they cannot be lowered for CUDA at all), a host callback custom call, an
infeed/outfeed or send/recv (the device waits on the host every step), or float64 values (slow on GPUs, and the
project's programs are float32 by design). The arguments may be ``jax.ShapeDtypeStruct`` trees
(``jax.eval_shape`` of an init), so nothing is allocated: a ``ppo_large`` chunk is checked at its full shapes on a
laptop.
"""

from __future__ import annotations

import re

import jax

_CUSTOM_CALL = re.compile(r"custom_call @([\w.$-]+)")
_HOST_OPS = ("infeed", "outfeed", "send", "recv")
_FLOAT64 = re.compile(r"[<x]f64>")


def lowered_text(fn, *args, platform: str = "cuda") -> str:
    """The StableHLO text of jitted ``fn(*args)`` lowered for ``platform`` (raises what the lowering raises)."""
    return jax.export.export(fn, platforms=(platform,))(*args).mlir_module()


def text_problems(text: str) -> list[str]:
    """What a lowered program's StableHLO ``text`` holds that would not run on, or would stall, a device."""
    problems = [f"host callback custom call {name}" for name in sorted(set(_CUSTOM_CALL.findall(text)))
                if "callback" in name.lower() or "host" in name.lower()]
    problems += [f"stablehlo.{op}" for op in _HOST_OPS if re.search(rf"stablehlo\.{op}\b", text)]
    if _FLOAT64.search(text):
        problems.append("float64 values")
    return problems


def lowering_problems(fn, *args, platform: str = "cuda") -> list[str]:
    """``text_problems`` of jitted ``fn(*args)`` lowered for ``platform``, or the one-line reason it does not lower."""
    try:
        text = lowered_text(fn, *args, platform=platform)
    except Exception as err:  # noqa: BLE001  (any lowering failure is the finding)
        return [f"does not lower for {platform}: {type(err).__name__}: {str(err).splitlines()[0]}"]
    return text_problems(text)


__all__ = ["lowered_text", "lowering_problems", "text_problems"]
