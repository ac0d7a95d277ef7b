"""Branch decisions shared by a whole batch, including vmapped axes around it.

``VecEnv`` takes ONE ``lax.cond`` per batch (fight or skip, reset or not) and
the fight loop (``combat.simulate_fights``) refills its lanes in a ``lax.cond``
and stops when the whole batch is done. When the caller vmaps them again (a
sweep vmaps whole training runs), a predicate computed per member would be
batched and the cond would turn into a select that runs the combat on every
step. Reducing the predicate with ``lax.pmax`` over the named outer axes keeps
it unbatched, so the cond stays a branch: the expensive side runs when any
member of the whole batch needs it, and is skipped when none does.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def check_sync_axes(sync_axes) -> tuple[str, ...]:
    """Validate a tuple of axis names (``()`` for none)."""
    if isinstance(sync_axes, str):
        sync_axes = (sync_axes,)
    sync_axes = tuple(sync_axes)
    if not all(isinstance(name, str) and name for name in sync_axes):
        raise ValueError(f"sync_axes must be a tuple of axis names (non-empty str), got {sync_axes!r}")
    return sync_axes


def any_in_batch(x: jax.Array, sync_axes: tuple[str, ...] = ()) -> jax.Array:
    """bool[]: whether any element of ``x`` is true, here or in any member of the named vmapped axes.

    The result is unbatched along ``sync_axes`` (they must be bound by an
    enclosing ``vmap(..., axis_name=...)``), so a ``lax.cond`` on it stays a cond.
    """
    out = jnp.asarray(x).any()
    if sync_axes:
        out = jax.lax.pmax(out, sync_axes)
    return out
