"""A pixel torso that names each 8x8 tile of a frame: the ``tile_ids`` network.

The game's frames are drawn from a fixed set of 8x8 tiles (``jaxgame.render.RENDER_ATLAS_PACKED``, docs/pixels.md),
only the two synergy-bar tiles are computed. ``tile_ids`` looks each of a frame's 90 tiles up in that atlas (an
exact match of its 16 packed bytes) and gives the network the tile's index, so what it must learn is what the
frame shows, not how to see it. Next to the ``tiles`` network, which must learn to tell the atlas's tiles apart
from their pixels, it separates the two halves of learning from pixels: perception and the game (record
``pixels_gap``).
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from agents.core.layers import HIDDEN_SCALE, MLP, dense
from jaxgame.packing import FRAME_H, PACKED_W, TILE, TILE_PACKED_W, TILES_H, TILES_W, unpack
from jaxgame.render import RENDER_ATLAS_PACKED

NUM_TILES = TILES_H * TILES_W  # 90 tiles a frame
TILE_BYTES = TILE * TILE_PACKED_W  # 16 packed bytes a tile
_HASH_MULTIPLIERS = np.array([0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F], np.uint32)


def frame_tiles(packed: jax.Array) -> jax.Array:
    """Packed frames uint8[B, 72, 20] -> their tiles uint8[B, 90, 16]: tile (ty, tx) at ``ty * 10 + tx``, its 8 rows
    of 2 bytes in order."""
    batch = packed.shape[0]
    tiles = packed.reshape(batch, TILES_H, TILE, TILES_W, TILE_PACKED_W).transpose(0, 1, 3, 2, 4)
    return tiles.reshape(batch, NUM_TILES, TILE_BYTES)


def _words(tiles):
    """uint8[..., 16] -> uint32[..., 4] (little-endian groups of 4 bytes); numpy or jnp by the input."""
    xp = jnp if isinstance(tiles, jax.Array) else np
    b = tiles.reshape(*tiles.shape[:-1], 4, 4).astype(xp.uint32)
    return b[..., 0] | b[..., 1] << 8 | b[..., 2] << 16 | b[..., 3] << 24


def _hash(words):
    """uint32[..., 4] -> uint32[...]: a multiplicative hash (wrapping), distinct over the atlas's distinct tiles."""
    xp = jnp if isinstance(words, jax.Array) else np
    return (words * xp.asarray(_HASH_MULTIPLIERS)).sum(axis=-1, dtype=xp.uint32)


def _atlas_table():
    """The atlas's distinct tiles (first index of each), their words, and their hashes sorted with the order."""
    flat = RENDER_ATLAS_PACKED.reshape(len(RENDER_ATLAS_PACKED), TILE_BYTES)
    _, first = np.unique(flat, axis=0, return_index=True)
    first = np.sort(first)  # identical tiles (EMPTY and zero star pips) name the lower index
    words = _words(flat[first])
    with np.errstate(over="ignore"):
        hashes = _hash(words)
    if len(np.unique(hashes)) != len(hashes):
        raise AssertionError("two distinct atlas tiles share a hash: change _HASH_MULTIPLIERS")
    order = np.argsort(hashes)
    return first[order].astype(np.int32), words[order], hashes[order]


_ATLAS_INDEX, _ATLAS_WORDS, _ATLAS_HASHES = _atlas_table()
#: the index ``tile_ids`` gives a tile that is not in the atlas (the computed synergy bars)
UNKNOWN_TILE = len(RENDER_ATLAS_PACKED)


def tile_ids(packed: jax.Array) -> jax.Array:
    """Packed frames uint8[B, 72, 20] -> int32[B, 90]: each tile's index in ``RENDER_ATLAS_PACKED`` (the lowest of
    identical tiles), ``UNKNOWN_TILE`` for a tile not in the atlas."""
    return atlas_ids(frame_tiles(jnp.asarray(packed, jnp.uint8)))


def atlas_ids(tiles: jax.Array) -> jax.Array:
    """Packed tiles uint8[..., 16] (``frame_tiles``) -> int32[...]: ``tile_ids`` of tiles already cut out. Exact: a
    hash finds the candidate, its 16 bytes are then compared."""
    words = _words(tiles)
    hashes = _hash(words)
    pos = jnp.clip(jnp.searchsorted(jnp.asarray(_ATLAS_HASHES), hashes), 0, len(_ATLAS_HASHES) - 1)
    exact = jnp.all(jnp.asarray(_ATLAS_WORDS)[pos] == words, axis=-1)
    return jnp.where(exact, jnp.asarray(_ATLAS_INDEX)[pos], UNKNOWN_TILE)


class TileIdTorso(nn.Module):
    """Packed frames uint8[B, 72, 20] -> float32[B, hidden[-1]] features.

    Each tile: relu(an embedding of its atlas index (``tile_ids``) + a dense layer of its 64 pixels in [0, 1]) of
    ``features`` values (the pixels carry the tiles the atlas lacks); the 90 tiles flattened, then an
    ``MLP(hidden, activation)``.
    """

    hidden: Sequence[int] = (256,)
    activation: str = "relu"
    features: int = 16

    @nn.compact
    def __call__(self, packed: jax.Array) -> jax.Array:
        if tuple(packed.shape[1:]) != (FRAME_H, PACKED_W):
            raise ValueError(f"expected packed frames [B, {FRAME_H}, {PACKED_W}], got {packed.shape}")
        batch = packed.shape[0]
        tiles = frame_tiles(jnp.asarray(packed, jnp.uint8))
        pixels = unpack(tiles).astype(jnp.float32) / 3  # [B, 90, 64]
        embedded = nn.Embed(UNKNOWN_TILE + 1, self.features, name="tile_id_embed")(atlas_ids(tiles))
        x = nn.relu(embedded + dense(self.features, HIDDEN_SCALE, name="tile_embed")(pixels))
        return MLP(self.hidden, self.activation)(x.reshape(batch, -1))
