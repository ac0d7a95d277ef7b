"""Will it fit? A rough estimate of the memory a run, a sweep or an evaluation needs, checked before any of it
is compiled, so a size that cannot fit fails at once with the estimate instead of dying minutes later.

The estimate is built from the abstract shapes (``jax.eval_shape``, nothing is computed): the runner (the
checkpointed state: parameters, optimizer state, env states, ...), what one update holds at once (PPO: the
rollout's transitions, and the minibatch activations; streaming A2C: one step's samples) and, for the game,
the combat's per-fight working set. It is meant to catch sizes that are off by a large factor (``num_envs``
a hundred times what the machine can hold), not to predict the peak to the byte: XLA's buffers and
temporaries add more, so ``check_fits`` refuses only what exceeds the available memory by itself.
"""

from __future__ import annotations

import math
import os
import re

import jax
import numpy as np

from agents.config import TrainConfig

GIB = float(1 << 30)
#: What XLA adds on top of the live state (temporaries, double buffers, the compiled program): the estimate
#: is multiplied by this before it is compared with the available memory.
OVERHEAD = 2.0


def tree_bytes(tree) -> int:
    """Bytes of every leaf of a pytree of arrays or ``ShapeDtypeStruct`` (typed keys count as their data)."""
    total = 0
    for leaf in jax.tree_util.tree_leaves(tree):
        dtype = leaf.dtype
        itemsize = 8 if jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key) else np.dtype(dtype).itemsize
        total += int(math.prod(leaf.shape)) * itemsize
    return total


def available_bytes(device=None) -> int | None:
    """Free memory of ``device`` (default: the first device): an accelerator's ``bytes_limit - bytes_in_use``,
    the host's ``MemAvailable`` for a CPU device; None when unknown."""
    device = device or jax.local_devices()[0]
    stats = device.memory_stats() if hasattr(device, "memory_stats") else None
    if stats and "bytes_limit" in stats:
        return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def train_bytes(config: TrainConfig, runner) -> dict:
    """``{"runner", "update", "total"}`` bytes of one training run of ``config``; ``runner``: its abstract
    runner (``jax.eval_shape`` of the trainer's ``init``)."""
    per_step = tree_bytes(runner.obs) + tree_bytes(runner.mask) + 6 * 4 * math.prod(runner.mask.shape[:-1])
    # A2C: this step's samples and the pending ones; a recurrent network's A2C: its window of update_every steps
    steps = config.ppo.num_steps if config.has_rollout else config.a2c.update_every if config.a2c_windows else 2
    widths = sum(config.net.hidden) + runner.mask.shape[-1] + 1
    samples = math.prod(runner.mask.shape[:-1]) * steps // (config.ppo.num_minibatches if config.has_rollout else 1)
    update = steps * per_step + 3 * samples * widths * 4  # transitions + forward/backward activations
    total = tree_bytes(runner) + update
    return {"runner": tree_bytes(runner), "update": update, "total": total}


def table_bytes(game, num_games: int) -> int:
    """Bytes of the game states of ``num_games`` seat-rotated games (8 rotations each, ``agents.arena.tables``)."""
    state, ts = jax.eval_shape(game.reset, jax.random.key(0))
    return num_games * 8 * (tree_bytes(state) + tree_bytes(ts))


def compiled_bytes(compiled) -> dict:
    """Per-device bytes of a compiled program (``jax.jit(f).lower(...).compile()``) from XLA's buffer assignment:
    ``{"arguments", "outputs", "temporaries", "peak"}``; ``peak`` = arguments + outputs + temporaries - aliased
    (donated) bytes, everything the program holds at once on one device: an upper bound of its live memory (XLA:CPU
    reports no peak of its own; its temporaries are the GPU's up to the fusion choices of each backend)."""
    stats = compiled.memory_analysis()
    arguments, outputs = int(stats.argument_size_in_bytes), int(stats.output_size_in_bytes)
    temporaries, aliased = int(stats.temp_size_in_bytes), int(stats.alias_size_in_bytes)
    return {
        "arguments": arguments,
        "outputs": outputs,
        "temporaries": temporaries,
        "peak": arguments + outputs + temporaries - aliased,
    }


_ALL_GATHER = re.compile(r"= ([a-z]+[0-9]*)\[([0-9,]*)\][^ ]* all-gather(?:-start)?\(")


def all_gathers(compiled) -> list[int]:
    """Bytes per device of every all-gather result in a compiled SPMD program (its optimized HLO), largest first:
    what each device receives from the others."""
    sizes = []
    for dtype, dims in _ALL_GATHER.findall(compiled.as_text()):
        bits = re.sub(r"[a-z]", "", dtype)  # HLO types name their width: f32, s8, bf16, c64 (pred: 1 byte)
        itemsize = max(int(bits) // 8, 1) if bits else 1
        sizes.append(itemsize * math.prod(int(d) for d in dims.split(",") if d))
    return sorted(sizes, reverse=True)


def check_fits(what: str, needed: int, device=None) -> None:
    """``MemoryError`` with the estimate when ``OVERHEAD x needed`` exceeds the available memory."""
    free = available_bytes(device)
    if free is not None and needed * OVERHEAD > free:
        raise MemoryError(
            f"{what} needs about {needed * OVERHEAD / GIB:.1f} GiB ({needed / GIB:.2f} GiB of state and buffers, "
            f"x{OVERHEAD:g} for XLA's temporaries) but {free / GIB:.1f} GiB is available on "
            f"{(device or jax.local_devices()[0]).platform}; make it smaller"
        )


__all__ = [
    "OVERHEAD",
    "all_gathers",
    "available_bytes",
    "check_fits",
    "compiled_bytes",
    "table_bytes",
    "train_bytes",
    "tree_bytes",
]
