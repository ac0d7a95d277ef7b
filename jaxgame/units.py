"""A player's units: bench/board slots, merging, and moving units around.

All functions work on one player's slot arrays ``species``/``stars``
(int32[32] or int32[33] with a temporary extra slot, see ``add_unit``).
"""

from __future__ import annotations

import jax.numpy as jnp

from jaxgame import constants as C
from jaxgame import species as sp

BENCH = slice(0, C.BENCH_SIZE)
BOARD = slice(C.BENCH_SIZE, C.NUM_SLOTS)


def board_count(species: jnp.ndarray) -> jnp.ndarray:
    """Units on the board. species int32[..., 32] -> int32[...]."""
    return jnp.sum(species[..., BOARD] >= 0, axis=-1).astype(jnp.int32)


def bench_count(species: jnp.ndarray) -> jnp.ndarray:
    return jnp.sum(species[..., BENCH] >= 0, axis=-1).astype(jnp.int32)


def first_free_bench_slot(species: jnp.ndarray) -> jnp.ndarray:
    """Lowest empty bench slot, or BENCH_SIZE when the bench is full."""
    free = species[BENCH] < 0
    return jnp.where(free.any(), jnp.argmax(free), C.BENCH_SIZE).astype(jnp.int32)


def owned_copies(species: jnp.ndarray, stars: jnp.ndarray) -> jnp.ndarray:
    """Base copies owned per species (a 2-star unit is 3 copies, a 3-star 9).

    species, stars: int32[..., n] -> int32[..., NUM_SPECIES]
    """
    copies = jnp.asarray(sp.COPIES_PER_STAR)[stars]
    one_hot = species[..., :, None] == jnp.arange(sp.NUM_SPECIES)
    return jnp.sum(one_hot * copies[..., :, None], axis=-2).astype(jnp.int32)


def _merge_priority(num_slots: int) -> jnp.ndarray:
    """Where a merged unit lands: the first board copy, else the first bench copy, else the extra slot."""
    idx = jnp.arange(num_slots)
    on_board = (idx >= C.BENCH_SIZE) & (idx < C.NUM_SLOTS)
    return jnp.where(on_board, idx - C.BENCH_SIZE, idx + C.BOARD_CELLS)


def merge_once(species: jnp.ndarray, stars: jnp.ndarray, star: int):
    """Merge three copies of one (species, ``star``) into one unit of ``star + 1``.

    Assumes at most one species has 3 such copies (true when merging after
    every gain of a unit). Returns (species, stars).
    """
    same = (species[:, None] == jnp.arange(sp.NUM_SPECIES)) & (stars[:, None] == star)
    merging = jnp.sum(same, axis=0) >= 3  # bool[NUM_SPECIES]
    target_species = jnp.argmax(merging)
    copies = same[:, target_species] & merging.any()
    priority = jnp.where(copies, _merge_priority(species.shape[0]), 10_000)
    keep = jnp.arange(species.shape[0]) == jnp.argmin(priority)
    upgraded = copies & keep
    removed = copies & ~keep
    stars = jnp.where(upgraded, star + 1, jnp.where(removed, 0, stars))
    species = jnp.where(removed, -1, species)
    return species, stars


def add_unit(species: jnp.ndarray, stars: jnp.ndarray, new_species: jnp.ndarray):
    """Gain a one-star unit of ``new_species`` and resolve merges.

    The unit goes to the first free bench slot; with a full bench it still
    fits when it completes a merge (the caller checks ``can_add_unit``). A
    temporary 33rd slot holds it until the merge, which never leaves a unit
    there. Returns (species int32[32], stars int32[32]).
    """
    species = jnp.concatenate([species, jnp.full((1,), -1, jnp.int32)])
    stars = jnp.concatenate([stars, jnp.zeros((1,), jnp.int32)])
    slot = first_free_bench_slot(species)
    slot = jnp.where(slot < C.BENCH_SIZE, slot, C.NUM_SLOTS)
    species = species.at[slot].set(new_species)
    stars = stars.at[slot].set(1)
    for star in range(1, sp.MAX_STARS):
        species, stars = merge_once(species, stars, star)
    return species[: C.NUM_SLOTS], stars[: C.NUM_SLOTS]


def can_add_unit(species, stars, new_species) -> jnp.ndarray:
    """bool[]: a free bench slot, or two one-star copies already owned (a merge)."""
    pairs = jnp.sum((species == new_species) & (stars == 1)) >= 2
    return (first_free_bench_slot(species) < C.BENCH_SIZE) | pairs


def swap_slots(species, stars, a, b):
    """Exchange the contents of slots a and b."""
    sa, sb = species[a], species[b]
    ta, tb = stars[a], stars[b]
    species = species.at[a].set(sb).at[b].set(sa)
    stars = stars.at[a].set(tb).at[b].set(ta)
    return species, stars


def clear_slot(species, stars, slot):
    return species.at[slot].set(-1), stars.at[slot].set(0)
