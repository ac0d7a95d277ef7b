"""Packed 2bpp frames: the canonical pixel format of jaxgame.

A frame is ``FRAME_W x FRAME_H = 80 x 72`` pixels with 4 shades ``0..3``
(0 = lightest / background, 3 = darkest). It is stored packed, 4 pixels per
byte: ``uint8[72, 20]``. Pixel ``x = 4 * xb + i`` of row ``y`` lives in byte
``[y, xb]`` at bits ``2i .. 2i+1``::

    byte = p0 | p1 << 2 | p2 << 4 | p3 << 6      # p0 = leftmost pixel

Example: pixels ``[1, 2, 3, 0]`` -> ``1 | 2<<2 | 3<<4 | 0<<6 = 57 = 0b00_11_10_01``.

The same layout works for any width divisible by 4; an 8x8 tile packs to
``uint8[8, 2]`` and a tile row is 2 consecutive bytes of a frame row.

Host (numpy) reference: ``pack_reference``, ``unpack_reference``, ``to_rgb``.
Device (jnp, jit/vmap-able, any leading batch dims): ``pack``, ``unpack``,
``packed_l1``, ``overlay_packed``, ``blit_tile_packed``, ``tilemap_to_frame``.
The lookup tables are numpy constants; the jnp functions embed them as
compile-time constants.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

FRAME_W = 80
FRAME_H = 72
PACKED_W = FRAME_W // 4  # 20 bytes per row
TILE = 8  # tiles are 8x8 pixels
TILE_PACKED_W = TILE // 4  # 2 bytes per tile row
TILES_W = FRAME_W // TILE  # 10 tile columns per frame
TILES_H = FRAME_H // TILE  # 9 tile rows per frame
NUM_SHADES = 4

#: RGB of shades 0..3 (Game Boy greens, light to dark).
PALETTE = np.array([[224, 248, 208], [136, 192, 112], [52, 104, 86], [8, 24, 32]], dtype=np.uint8)

_SHIFTS = np.array([0, 2, 4, 6], dtype=np.uint8)

#: uint8[256, 4]: UNPACK_LUT[b, i] = pixel i (0 = leftmost) of packed byte b.
UNPACK_LUT = ((np.arange(256, dtype=np.uint8)[:, None] >> _SHIFTS[None, :]) & 3).astype(np.uint8)

#: uint8[256, 256]: DIFF_LUT[a, b] = sum_i |pixel_i(a) - pixel_i(b)| (0..12).
DIFF_LUT = (
    np.abs(UNPACK_LUT[:, None, :].astype(np.int16) - UNPACK_LUT[None, :, :].astype(np.int16)).sum(-1).astype(np.uint8)
)

#: uint8[256]: for each byte, 0b11 over every non-zero (opaque) pixel.
OPAQUE_MASK_LUT = ((UNPACK_LUT != 0).astype(np.uint8) * 3 << _SHIFTS[None, :]).sum(-1).astype(np.uint8)


# --------------------------------------------------------------------------
# host reference (plain python loops; obviously correct, slow)
# --------------------------------------------------------------------------


def pack_reference(pixels: np.ndarray) -> np.ndarray:
    """uint8[..., H, W] shades 0..3 -> uint8[..., H, W // 4]. W must be divisible by 4."""
    pixels = np.asarray(pixels)
    *lead, h, w = pixels.shape
    if w % 4:
        raise ValueError(f"width {w} is not divisible by 4")
    if pixels.size and (pixels.min() < 0 or pixels.max() > 3):
        raise ValueError("pixel values must be in 0..3")
    out = np.zeros((*lead, h, w // 4), dtype=np.uint8)
    for idx in np.ndindex(*lead):
        for y in range(h):
            for xb in range(w // 4):
                byte = 0
                for i in range(4):
                    byte |= int(pixels[idx + (y, 4 * xb + i)]) << (2 * i)
                out[idx + (y, xb)] = byte
    return out


def unpack_reference(packed: np.ndarray) -> np.ndarray:
    """uint8[..., H, W4] -> uint8[..., H, 4 * W4] shades 0..3."""
    packed = np.asarray(packed)
    *lead, h, w4 = packed.shape
    out = np.zeros((*lead, h, 4 * w4), dtype=np.uint8)
    for idx in np.ndindex(*lead):
        for y in range(h):
            for xb in range(w4):
                byte = int(packed[idx + (y, xb)])
                for i in range(4):
                    out[idx + (y, 4 * xb + i)] = (byte >> (2 * i)) & 3
    return out


def pack_np(pixels: np.ndarray) -> np.ndarray:
    """Vectorised numpy ``pack`` (host side; used for tile tables)."""
    p = np.asarray(pixels).astype(np.uint8) & 3
    *lead, h, w = p.shape
    p = p.reshape(*lead, h, w // 4, 4)
    return (p[..., 0] | p[..., 1] << 2 | p[..., 2] << 4 | p[..., 3] << 6).astype(np.uint8)


def unpack_np(packed: np.ndarray) -> np.ndarray:
    """Vectorised numpy ``unpack`` (host side)."""
    packed = np.asarray(packed, dtype=np.uint8)
    return UNPACK_LUT[packed].reshape(*packed.shape[:-1], packed.shape[-1] * 4)


def pack_tile(tile: np.ndarray) -> np.ndarray:
    """uint8[8, 8] tile (shades 0..3) -> uint8[8, 2] packed (same bit order as frames)."""
    tile = np.asarray(tile)
    if tile.shape[-2:] != (TILE, TILE):
        raise ValueError(f"tile must be [..., 8, 8], got {tile.shape}")
    return pack_np(tile)


def unpack_tile(tile_packed: np.ndarray) -> np.ndarray:
    """uint8[8, 2] -> uint8[8, 8] (host side)."""
    return unpack_np(tile_packed)


def to_rgb(packed, scale: int = 1) -> np.ndarray:
    """Packed frame(s) uint8[..., H, W4] -> numpy uint8[..., H*scale, 4*W4*scale, 3].

    Host-side (numpy) only; accepts numpy or jax arrays. For a standard frame
    the result is ``uint8[72 * scale, 80 * scale, 3]``.
    """
    pixels = unpack_np(np.asarray(packed))
    rgb = PALETTE[pixels]
    if scale != 1:
        rgb = np.repeat(np.repeat(rgb, scale, axis=-3), scale, axis=-2)
    return rgb


# --------------------------------------------------------------------------
# device (jnp): jit / vmap-able, any leading batch dims
# --------------------------------------------------------------------------


def pack(pixels: jax.Array) -> jax.Array:
    """uint8[..., H, W] (shades 0..3; higher bits are masked off) -> uint8[..., H, W // 4]."""
    p = jnp.asarray(pixels).astype(jnp.uint8) & jnp.uint8(3)
    *lead, h, w = p.shape
    p = p.reshape(*lead, h, w // 4, 4)
    return p[..., 0] | (p[..., 1] << 2) | (p[..., 2] << 4) | (p[..., 3] << 6)


def unpack(packed: jax.Array) -> jax.Array:
    """uint8[..., H, W4] -> uint8[..., H, 4 * W4] via a gather from ``UNPACK_LUT``."""
    packed = jnp.asarray(packed).astype(jnp.uint8)
    pixels = jnp.asarray(UNPACK_LUT)[packed.astype(jnp.int32)]  # [..., H, W4, 4]
    return pixels.reshape(*packed.shape[:-1], packed.shape[-1] * 4)


def packed_l1(a: jax.Array, b: jax.Array) -> jax.Array:
    """L1 distance of packed frames, summed over the last two axes -> int32[...].

    ``sum |unpack(a) - unpack(b)|`` computed without unpacking (one gather
    from ``DIFF_LUT`` per byte). Leading dims broadcast.
    """
    a = jnp.asarray(a).astype(jnp.int32)
    b = jnp.asarray(b).astype(jnp.int32)
    d = jnp.asarray(DIFF_LUT).reshape(-1)[a * 256 + b]
    return d.astype(jnp.int32).sum(axis=(-2, -1))


def overlay_packed(base: jax.Array, over: jax.Array) -> jax.Array:
    """Per pixel: ``over`` where it is non-zero, else ``base`` (shade 0 = transparent).

    Works on packed bytes of any (broadcastable) shape, e.g. a star-pip tile
    over a species tile, both uint8[8, 2].
    """
    base = jnp.asarray(base).astype(jnp.uint8)
    over = jnp.asarray(over).astype(jnp.uint8)
    mask = jnp.asarray(OPAQUE_MASK_LUT)[over.astype(jnp.int32)]
    return (base & ~mask) | over


def blit_tile_packed(frame: jax.Array, tile_packed: jax.Array, ty, tx) -> jax.Array:
    """Write a packed tile uint8[8, 2] at tile row ``ty``, tile column ``tx`` of frame uint8[H, W4].

    Pixel rows ``8*ty .. 8*ty+7``, bytes ``2*tx, 2*tx+1`` (pixels ``8*tx .. 8*tx+7``)
    are replaced. ``ty``/``tx`` may be traced ints; like ``lax.dynamic_update_slice``
    out-of-range positions are clamped into the frame. vmap for batches.
    """
    frame = jnp.asarray(frame)
    tile_packed = jnp.asarray(tile_packed).astype(frame.dtype)
    y0 = jnp.asarray(ty, jnp.int32) * TILE
    x0 = jnp.asarray(tx, jnp.int32) * TILE_PACKED_W
    return jax.lax.dynamic_update_slice(frame, tile_packed, (y0, x0))


def tilemap_to_frame(tilemap: jax.Array, tiles_packed: jax.Array) -> jax.Array:
    """Render a whole tile map in one gather.

    tilemap int[..., R, C] (indices into ``tiles_packed``), tiles_packed uint8[N, 8, 2]
    -> uint8[..., 8R, 2C]. A 9x10 map gives a full 72x20 packed frame.
    """
    tilemap = jnp.asarray(tilemap).astype(jnp.int32)
    t = jnp.asarray(tiles_packed)[tilemap]  # [..., R, C, 8, 2]
    *lead, r, c, _, _ = t.shape
    t = jnp.swapaxes(t, -3, -2)  # [..., R, 8, C, 2]
    return t.reshape(*lead, r * TILE, c * TILE_PACKED_W)


def empty_frame(shade: int = 0) -> jax.Array:
    """A packed frame filled with one shade."""
    byte = (shade & 3) * 0b01010101
    return jnp.full((FRAME_H, PACKED_W), byte, dtype=jnp.uint8)
