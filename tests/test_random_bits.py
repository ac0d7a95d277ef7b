"""jaxgame.random_bits: JAX's random numbers, hashed inline, bit for bit."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxgame import random_bits


def test_only_threefry_keys_with_partitionable_bits_are_hashable():
    assert random_bits.hashable(jax.random.key(3)) and not random_bits.hashable(jax.random.key(3, impl="rbg"))


def test_threefry_matches_jax_for_the_documented_counter_layout():
    """bit i of jax.random.bits(key, (n,)) is the xor of the hash of counters (0, i)."""
    key = jax.random.key(5)
    data = jax.random.key_data(key)
    b0, b1 = random_bits.threefry2x32(data[0], data[1], jnp.uint32(0), jnp.arange(100, dtype=jnp.uint32))
    np.testing.assert_array_equal(np.asarray(b0 ^ b1), np.asarray(jax.random.bits(key, (100,))))
