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


def draw_shop(pool: jnp.ndarray, level: jnp.ndarray, key: jax.Array):
    """Fill all 6 slots of one shop, taking each copy out of the pool.

    Returns (shop int32[6], pool int32[NUM_SPECIES]).
    """

    def draw_slot(pool, slot_key):
        weights = species_weights(pool, level)
        logits = jnp.where(weights > 0, jnp.log(jnp.maximum(weights, 1e-30)), -jnp.inf)
        choice = jax.random.categorical(slot_key, logits)
        choice = jnp.where(weights.sum() > 0, choice, -1).astype(jnp.int32)
        pool = pool.at[choice].add(jnp.where(choice >= 0, -1, 0))
        return pool, choice

    pool, shop = jax.lax.scan(draw_slot, pool, jax.random.split(key, C.SHOP_SIZE))
    return shop, pool


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
    draw_keys = jax.random.split(draw_key, C.NUM_PLAYERS)

    def refill_seat(carry, seat):
        shops, pool = carry
        new_shop, new_pool = draw_shop(pool, levels[seat], draw_keys[seat])
        refill = needs_refill[seat]
        shops = shops.at[seat].set(jnp.where(refill, new_shop, shops[seat]))
        pool = jnp.where(refill, new_pool, pool)
        return (shops, pool), None

    (shops, pool), _ = jax.lax.scan(refill_seat, (shops, pool), order)
    return shops, pool
