"""XLA_FLAGS defaults: add a flag unless the environment already names it (the user's value wins).

No JAX here: XLA reads XLA_FLAGS when JAX starts its backend, so these run before that (``import jaxgame``
sets its own default; the test suite adds its compile-speed flags, tests/xla_flags.py).
"""

import os


def with_flags(flags: str, *defaults: str) -> str:
    """``flags`` (an XLA_FLAGS value) plus each of ``defaults`` ("--name=value") whose name it does not set."""
    for flag in defaults:
        if flag.split("=")[0] not in flags:
            flags = f"{flags} {flag}"
    return flags.strip()


def set_default_flags(*defaults: str) -> None:
    """Add ``defaults`` to this process's XLA_FLAGS (subprocesses inherit it)."""
    os.environ["XLA_FLAGS"] = with_flags(os.environ.get("XLA_FLAGS", ""), *defaults)


#: XLA:CPU options that compile a program in about half the time and run it slower: LLVM's optimisation passes off
#: and the older elemental fusion emitters instead of the MLIR ones. The smoke preset's first run (its training
#: chunk and evaluation) 37 s -> 21 s on the 2-core CPU, its training and evaluation 3-7x slower; for programs
#: that run for seconds (``RunConfig.fast_compile``; the test suite's flags are the same two, tests/xla_flags.py).
FAST_COMPILE_OPTIONS = {"xla_backend_optimization_level": 0, "xla_cpu_use_fusion_emitters": False}


def fast_compile_options(flags: str | None = None) -> dict:
    """``FAST_COMPILE_OPTIONS`` less those ``flags`` (an XLA_FLAGS value; default: this process's) names: a
    ``compiler_options`` mapping for ``jax.jit`` or ``Lowered.compile`` in which the user's XLA_FLAGS win."""
    flags = os.environ.get("XLA_FLAGS", "") if flags is None else flags
    named = {flag.split("=")[0].lstrip("-") for flag in flags.split()}
    return {name: value for name, value in FAST_COMPILE_OPTIONS.items() if name not in named}


FORCE_HOST_DEVICES = "--xla_force_host_platform_device_count"


def with_host_devices(flags: str, devices: int) -> str:
    """``flags`` (an XLA_FLAGS value) with the CPU backend forced to ``devices`` host devices (any earlier
    count replaced): for a child process that runs a multi-device program on a CPU."""
    kept = [f for f in flags.split() if not f.startswith(FORCE_HOST_DEVICES)]
    return " ".join([*kept, f"{FORCE_HOST_DEVICES}={devices}"])
