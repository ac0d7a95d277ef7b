"""Non-finite training is caught, not logged: a per-update flag computed inside the compiled chunk.

Every update of ``agents.algorithms.base.Trainer.run`` adds ``metrics[FINITE]`` (float32[] per update: 1.0
when the update's parameters and every metric, losses and gradient norm included, are finite, else 0.0).
The host reads the chunk's flags with the rest of its metrics (no extra sync inside the loop) and
``check_chunk`` raises ``NonFiniteError`` naming the first bad update and metric; ``agents.run.chunks`` then stops
the run before it logs or saves anything of that chunk, so the latest checkpoint stays the last good one.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

FINITE = "health/finite"


class NonFiniteError(RuntimeError):
    """Training produced non-finite parameters or metrics; ``update`` is the first bad update (1-based),
    ``metric`` the first non-finite metric of it (``"parameters"`` when only they are)."""

    def __init__(self, message: str, update: int, metric: str):
        super().__init__(message)
        self.update = update
        self.metric = metric


def finite_flag(params, metrics: dict) -> jax.Array:
    """float32[]: 1.0 when every leaf of ``params`` and every value of ``metrics`` is finite, else 0.0."""
    leaves = jax.tree_util.tree_leaves(params) + list(metrics.values())
    floats = [jnp.ravel(leaf) for leaf in leaves if jnp.issubdtype(jnp.asarray(leaf).dtype, jnp.floating)]
    if not floats:
        return jnp.float32(1.0)
    # one reduction over everything (a reduction per leaf costs more than the copy on small networks)
    return jnp.all(jnp.isfinite(jnp.concatenate([x.astype(jnp.float32) for x in floats]))).astype(jnp.float32)


def check_chunk(metrics: dict, updates_before: int, what: str = "") -> dict:
    """``metrics`` (host arrays [n] of one chunk, or [R, n] of a sweep's R runs) without ``FINITE``; raises
    ``NonFiniteError`` when an update's flag is 0. ``updates_before``: updates done before the chunk."""
    metrics = dict(metrics)
    flags = np.asarray(metrics.pop(FINITE, 1.0))
    if flags.all():
        return metrics
    bad = np.argwhere(flags == 0)[0]  # (update,) or (run, update)
    index, run = int(bad[-1]), (int(bad[0]) if flags.ndim == 2 else None)
    metric = "parameters"
    for name in sorted(metrics):
        value = np.asarray(metrics[name])
        value = value[run, index] if run is not None else value[index]
        if np.issubdtype(value.dtype, np.floating) and not np.isfinite(value):
            metric = name
            break
    update = updates_before + index + 1
    where = f"{what}run {run}, " if run is not None else what
    raise NonFiniteError(
        f"{where}update {update}: {metric} is not finite; the run stopped and kept nothing of this chunk (its "
        "latest checkpoint is the last good one; a resume replays the same updates, so change the config)",
        update,
        metric,
    )


__all__ = ["FINITE", "NonFiniteError", "check_chunk", "finite_flag"]
