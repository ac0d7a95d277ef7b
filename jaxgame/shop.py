"""The shared pool and the shops.

Shop slots hold copies taken *out of* the pool: rolling a shop removes its
copies from the pool, rerolling (or a new round) puts the unbought ones back,
buying moves a copy from the shop to the player. So at every moment
``pool + shops + owned copies`` equals the initial pool.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxgame import constants as C
from jaxgame import species as sp

#: Shop odds in percent by level (row = level 0..9, row 0 unused) and rarity.
SHOP_ODDS = np.array(
    [
        [100, 0, 0, 0, 0],
        [100, 0, 0, 0, 0],
        [100, 0, 0, 0, 0],
        [70, 30, 0, 0, 0],
        [50, 40, 10, 0, 0],
        [36, 42, 20, 2, 0],
        [25, 40, 30, 5, 0],
        [16, 33, 35, 15, 1],
        [11, 27, 35, 22, 5],
        [5, 20, 35, 30, 10],
    ],
    dtype=np.int32,
)
REROLL_COST = 1

assert np.all(SHOP_ODDS.sum(axis=1) == 100)


def initial_pool() -> jnp.ndarray:
    """int32[NUM_SPECIES]: the full pool at game start."""
    return jnp.asarray(sp.SPECIES_POOL_COPIES, dtype=jnp.int32)


def species_weights(pool: jnp.ndarray, level: jnp.ndarray) -> jnp.ndarray:
    """Probability weights of drawing each species for one shop slot.

    A rarity is picked with the level's odds, then a copy uniformly among the
    copies of that rarity left in the pool; rarities with no copies left drop
    out and the rest is renormalised. Returns float32[NUM_SPECIES] summing to
    1 (or all zeros when the pool offers nothing at this level).
    """
    rarity = jnp.asarray(sp.SPECIES_RARITY)
    copies_by_rarity = jnp.zeros(sp.NUM_RARITIES, jnp.int32).at[rarity].add(pool)
    odds = jnp.asarray(SHOP_ODDS, jnp.float32)[level]
    odds = jnp.where(copies_by_rarity > 0, odds, 0.0)
    weights = odds[rarity] * pool / jnp.maximum(copies_by_rarity[rarity], 1)
    total = weights.sum()
    return jnp.where(total > 0, weights / jnp.maximum(total, 1e-9), 0.0)


def pick_species(weights: jnp.ndarray, u: jnp.ndarray) -> jnp.ndarray:
    """Inverse-CDF draw: weights float32[NUM_SPECIES] (>= 0), u float32[] uniform in [0, 1).

    Returns int32[]: a species with positive weight, with probability
    proportional to its weight, or -1 when all weights are 0. One uniform per
    draw (``jax.random.categorical`` would draw one Gumbel per species).
    """
    cdf = jnp.cumsum(weights)
    total = cdf[-1]
    below = jnp.sum(cdf <= u * total, dtype=jnp.int32)  # cdf[below - 1] <= u * total < cdf[below]
    # u * total may round up to total: stop at the last species that can be drawn
    last_drawable = jnp.max(jnp.where(weights > 0, jnp.arange(weights.shape[-1]), -1))
    return jnp.where(total > 0, jnp.minimum(below, last_drawable), -1).astype(jnp.int32)


def draw_shop_from_uniforms(pool: jnp.ndarray, level: jnp.ndarray, u: jnp.ndarray):
    """Fill all 6 slots of one shop, one after another, taking each copy out of the pool.

    ``u`` float32[6] are the slots' uniforms in [0, 1). Returns (shop int32[6], pool int32[NUM_SPECIES]).
    """
    shop = []
    for slot in range(C.SHOP_SIZE):  # unrolled: 6 tiny draws, cheaper than a loop
        choice = pick_species(species_weights(pool, level), u[slot])
        pool = pool - (jnp.arange(sp.NUM_SPECIES) == choice).astype(pool.dtype)
        shop.append(choice)
    return jnp.stack(shop), pool


def draw_shop(pool: jnp.ndarray, level: jnp.ndarray, key: jax.Array):
    """Fill all 6 slots of one shop, taking each copy out of the pool.

    Returns (shop int32[6], pool int32[NUM_SPECIES]).
    """
    return draw_shop_from_uniforms(pool, level, jax.random.uniform(key, (C.SHOP_SIZE,)))


def return_to_pool(pool: jnp.ndarray, shop: jnp.ndarray) -> jnp.ndarray:
    """Put every copy still offered in ``shop`` (int32[..., 6]) back into the pool."""
    counts = jnp.sum(shop.reshape(-1)[:, None] == jnp.arange(sp.NUM_SPECIES), axis=0)
    return pool + counts.astype(jnp.int32)


def refill_shops(shops, levels, pool, needs_refill, key):
    """Draw new shops for the seats in ``needs_refill``, one seat after another.

    The seats draw in a random order (from ``key``) so no seat is always first
    at a scarce pool. ``shops`` must already be emptied (and returned) for the
    refilled seats.

    Args: shops int32[8, 6], levels int32[8], pool int32[28], needs_refill bool[8].
    Returns (shops, pool).
    """
    order_key, draw_key = jax.random.split(key)
    order = jax.random.permutation(order_key, C.NUM_PLAYERS)
    uniforms = jax.random.uniform(draw_key, (C.NUM_PLAYERS, C.SHOP_SIZE))  # one draw for all 48 slots

    def refill_seat(carry, seat):
        shops, pool = carry
        new_shop, new_pool = draw_shop_from_uniforms(pool, levels[seat], uniforms[seat])
        refill = needs_refill[seat]
        shops = shops.at[seat].set(jnp.where(refill, new_shop, shops[seat]))
        pool = jnp.where(refill, new_pool, pool)
        return (shops, pool), None

    (shops, pool), _ = jax.lax.scan(refill_seat, (shops, pool), order)
    return shops, pool
