"""Shared helpers of the benchmarks: default sizes per backend, compiling with progress, best-of-N timing.

Measures nothing itself and reports no JSON fields of its own; ``default_sweep`` picks the sizes that
every mode reports as ``sweep`` ("quick" or "full").
"""

from __future__ import annotations

import math
import time

import jax

from experiments.common import status

#: Default sizes per sweep; ``default_sweep`` picks one for the backend.
SWEEPS = {
    "full": {
        "num_envs": [1, 64, 1024, 4096],  # --what env
        "fights": 1024,
        "skip_envs": 256,
        "render_batch": [1, 64, 256],  # --what render
        "render_num_envs": [16],
        "train_presets": ["smoke", "ppo_small", "ppo_large"],  # --what train
        "train_steps": 128,
    },
    "quick": {
        "num_envs": [1, 64],
        "fights": 256,
        "skip_envs": 64,
        "render_batch": [1, 64, 256],  # --what render is ~1 min on a 2-core CPU: the same sizes
        "render_num_envs": [16],
        "train_presets": ["smoke", "ppo_small"],  # --what train is ~3 min on a 2-core CPU (mostly compiling)
        "train_steps": 64,
    },
}


def default_sweep(backend: str, full: bool = False) -> dict:
    """The default sizes for ``backend`` (``jax.default_backend()``): the quick sweep on "cpu",
    the full one on an accelerator or with ``full=True``. Returns a fresh dict with ``name`` and the sizes."""
    name = "full" if full or backend != "cpu" else "quick"
    sizes = SWEEPS[name]
    return {"name": name, **{k: list(v) if isinstance(v, list) else v for k, v in sizes.items()}}


def aot_compile(fn, *args, progress: bool, what: str = "", then: str = "; timing ..."):
    """``fn.lower(*args).compile()``, telling stderr (on the current line) how long it took."""
    status(f"{what}compiling ...", progress, end="")
    start = time.perf_counter()
    compiled = fn.lower(*args).compile()
    status(f" {time.perf_counter() - start:.1f} s{then}", progress, end="")
    return compiled


def best_time(fn, *args, repeats: int = 3) -> float:
    """Best wall time of ``fn(*args)`` in seconds, after one warm-up call."""
    jax.block_until_ready(fn(*args))
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - start)
    return best


def time_interleaved(fns: dict, args, repeats: int) -> dict:
    """Best wall time (s) of each ``fns[name](*args)``, after a warm-up call each, timing the functions
    in turn ``repeats`` times."""
    for fn in fns.values():
        jax.block_until_ready(fn(*args))
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            jax.block_until_ready(fn(*args))
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def time_chunks(chunk, runner, repeats: int = 2, return_runner: bool = False):
    """Best wall time of one jitted training chunk, after one warm-up chunk; the runner is carried along
    (``return_runner``: returns (seconds, the last runner))."""
    runner, _ = jax.block_until_ready(chunk(runner))
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        runner, _ = jax.block_until_ready(chunk(runner))
        best = min(best, time.perf_counter() - start)
    return (best, runner) if return_runner else best


def rounded(x, digits=1):
    """``round(x, digits)`` as a float, or None where ``x`` is not finite (JSON has no NaN)."""
    x = float(x)
    return round(x, digits) if math.isfinite(x) else None
