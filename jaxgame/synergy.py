"""Type counts and synergy levels of a board.

Each species counts once per type, however many copies are on the board;
bench units never count.
"""

from __future__ import annotations

import jax.numpy as jnp

from jaxgame import species as sp


def type_counts(board_species: jnp.ndarray) -> jnp.ndarray:
    """Distinct species per type on a board.

    Args:
      board_species: int32[..., n] species id per cell, -1 for empty.
    Returns:
      int32[..., NUM_TYPES]
    """
    present = jnp.any(
        board_species[..., :, None] == jnp.arange(sp.NUM_SPECIES, dtype=jnp.int32), axis=-2
    )  # bool[..., NUM_SPECIES]
    type_mask = jnp.asarray(sp.SPECIES_TYPE_MASK, dtype=jnp.int32)
    return present.astype(jnp.int32) @ type_mask


def synergy_levels(counts: jnp.ndarray) -> jnp.ndarray:
    """Active level 0..3 per type. counts: int32[..., NUM_TYPES] -> int32[..., NUM_TYPES]."""
    thresholds = jnp.asarray(sp.SYNERGY_THRESHOLDS)
    return jnp.sum(counts[..., :, None] >= thresholds, axis=-1).astype(jnp.int32)
