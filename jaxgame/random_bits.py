"""JAX's own random bits, hashed inline: the same numbers as ``jax.random``, in fusible code.

JAX lowers Threefry-2x32 on a CPU as a rolled loop of small kernels; unrolled, XLA fuses the hash into its
consumers (the combat's crits, ``combat._unit_crits``). With threefry keys whose bits are partitionable (JAX's
default, ``jax_threefry_partitionable``), bit ``i`` of ``jax.random.bits(key, shape)`` is a function of
(key, i) alone: the Threefry-2x32 hash of the counter pair (0, i) under the key's two words, its two output
words xor'ed (a test).

Not used for the bots' draws: in the evaluation program (bots of every kind under one vmap) the unrolled
hash sent XLA:CPU's algebraic simplifier into a loop it reports on stderr ("likely stuck in a circular
simplification loop").
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

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
    # a flag jax's types do not declare
    partitionable = jax.config.jax_threefry_partitionable  # type: ignore[attr-defined]
    return bool(partitionable) and str(jax.random.key_impl(keys)) == "threefry2x32"
