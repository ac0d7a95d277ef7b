"""jaxgame.random_bits: JAX's random numbers, hashed inline, bit for bit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxgame import random_bits


@pytest.mark.parametrize("shape", [(1,), (48,), (8, 258), (3, 5, 7)])
def test_uniform_is_jax_random_uniform_bit_for_bit(shape):
    keys = jax.random.split(jax.random.key(11), 6)
    for maxval in (1.0, 1e-3):
        got = jax.jit(jax.vmap(lambda k: random_bits.uniform(k, shape, maxval=maxval)))(keys)
        expected = jax.vmap(lambda k: jax.random.uniform(k, shape, maxval=maxval))(keys)
        assert got.dtype == jnp.float32 and got.shape == (6, *shape)
        np.testing.assert_array_equal(np.asarray(got).view(np.uint32), np.asarray(expected).view(np.uint32))


def test_other_keys_fall_back_to_jax_random():
    key = jax.random.key(3, impl="rbg")
    assert random_bits.hashable(jax.random.key(3)) and not random_bits.hashable(key)
    np.testing.assert_array_equal(np.asarray(random_bits.uniform(key, (8, 9))),
                                  np.asarray(jax.random.uniform(key, (8, 9))))


def test_threefry_matches_jax_for_the_documented_counter_layout():
    """bit i of jax.random.bits(key, (n,)) is the xor of the hash of counters (0, i)."""
    key = jax.random.key(5)
    data = jax.random.key_data(key)
    b0, b1 = random_bits.threefry2x32(data[0], data[1], jnp.uint32(0), jnp.arange(100, dtype=jnp.uint32))
    np.testing.assert_array_equal(np.asarray(b0 ^ b1), np.asarray(jax.random.bits(key, (100,))))
