"""Checks at the public API boundary: PRNG keys and action arrays.

They run in Python on shapes and dtypes only (also on tracers, at trace
time), so they cost nothing inside a jitted step.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

INT32_MIN, INT32_MAX = np.iinfo(np.int32).min, np.iinfo(np.int32).max


def as_key(key, where: str = "key") -> jax.Array:
    """A typed PRNG key from ONE typed key (``jax.random.key``, shape ()) or legacy key (``jax.random.PRNGKey``,
    uint32[2]); anything else (a batch of keys, another shape or dtype) is a ``TypeError`` naming ``where``.

    Works on concrete arrays and on tracers (under jit/vmap a batch of legacy
    keys uint32[N, 2] is seen per element as uint32[2]).
    """
    dtype = getattr(key, "dtype", None)
    shape = getattr(key, "shape", None)
    if dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key) and shape == ():
        return key
    if dtype is not None and dtype == np.uint32 and shape == (2,):
        return jax.random.wrap_key_data(key)
    raise TypeError(
        f"{where} must be one PRNG key from jax.random.key(seed) (shape ()) or jax.random.PRNGKey(seed) "
        f"(uint32[2]); got {type(key).__name__} with dtype {dtype} and shape {shape} (split a batch of keys "
        "with jax.vmap)"
    )


def check_actions(actions, shape: tuple, where: str) -> jax.Array:
    """int32 actions of exactly ``shape``; any integer dtype is accepted.

    Values outside the int32 range are clipped into it (they stay out of the
    action range, so they are still no-ops); floats, bools and wrong shapes
    raise an error naming the expected and the given shape and dtype.
    """
    if not hasattr(actions, "dtype"):
        actions = np.asarray(actions)
    dtype, given = np.dtype(actions.dtype), tuple(actions.shape)
    expected = f"int32{list(shape)}"
    if dtype == np.bool_ or not np.issubdtype(dtype, np.integer):
        raise TypeError(f"{where}: actions must be an integer array {expected}, got {dtype}{list(given)}")
    if given != tuple(shape):
        raise ValueError(f"{where}: actions must have shape {expected}, got {dtype}{list(given)}")
    xp = np if isinstance(actions, np.ndarray) else jnp
    if np.issubdtype(dtype, np.unsignedinteger) and dtype.itemsize >= 4:
        actions = xp.minimum(actions, INT32_MAX)
    elif dtype.itemsize > 4:
        actions = xp.clip(actions, INT32_MIN, INT32_MAX)
    if xp is np:
        return jnp.asarray(actions.astype(np.int32))
    return actions.astype(jnp.int32)
