"""JAX's own random bits, hashed inline: the same numbers as ``jax.random``, in fusible code.

JAX lowers Threefry-2x32 on a CPU as a rolled loop of small kernels; unrolled, XLA fuses the hash into its
consumers. With threefry keys whose bits are partitionable (JAX's default, ``jax_threefry_partitionable``),
bit ``i`` of ``jax.random.bits(key, shape)`` is a function of (key, i) alone: the Threefry-2x32 hash of the
counter pair (0, i) under the key's two words, its two output words xor'ed. :func:`uniform` reproduces
``jax.random.uniform`` from those bits bit for bit (a test), and falls back to it for other keys.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def threefry2x32(k0, k1, x0, x1):
    """The Threefry-2x32 hash (20 rounds) of counters (x0, x1) under key (k0, k1), uint32 arrays that
    broadcast; unrolled, so that XLA fuses it."""
    ks = (k0, k1, k0 ^ k1 ^ jnp.uint32(0x1BD11BDA))
    x0, x1 = x0 + ks[0], x1 + ks[1]
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 = x0 + x1
            x1 = (x1 << jnp.uint32(r)) | (x1 >> jnp.uint32(32 - r))
            x1 = x0 ^ x1
        x0 = x0 + ks[(i + 1) % 3]
        x1 = x1 + ks[(i + 2) % 3] + jnp.uint32(i + 1)
    return x0, x1


def hashable(keys) -> bool:
    """Whether the bits of typed ``keys`` can be hashed inline: threefry keys with partitionable bits."""
    return bool(jax.config.jax_threefry_partitionable) and str(jax.random.key_impl(keys)) == "threefry2x32"


def uniform(key, shape: tuple[int, ...], maxval: float = 1.0) -> jax.Array:
    """``jax.random.uniform(key, shape, maxval=maxval)`` (float32, minval 0) for one typed key, bit for bit."""
    if not hashable(key) or math.prod(shape) >= 2**32:
        return jax.random.uniform(key, shape, maxval=maxval)
    data = jax.random.key_data(key)  # uint32[2]
    counter = jnp.arange(math.prod(shape), dtype=jnp.uint32).reshape(shape)
    bits = threefry2x32(data[0], data[1], jnp.uint32(0), counter)
    mantissa = ((bits[0] ^ bits[1]) >> jnp.uint32(9)) | jnp.uint32(np.float32(1.0).view(np.uint32))
    floats = jax.lax.bitcast_convert_type(mantissa, jnp.float32) - jnp.float32(1.0)
    maxval = jnp.float32(maxval)
    return jnp.maximum(jnp.float32(0.0), floats * (maxval - jnp.float32(0.0)) + jnp.float32(0.0))
