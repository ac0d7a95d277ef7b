"""Packed 2bpp frames (jaxgame.packing) and tile art (jaxgame.tiles)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxgame import packing as P
from jaxgame import species as S
from jaxgame import tiles as T


def _frames(seed, *lead):
    return np.random.default_rng(seed).integers(0, 4, size=(*lead, P.FRAME_H, P.FRAME_W), dtype=np.uint8)


def _packed(seed, *lead):
    return np.random.default_rng(seed).integers(0, 256, size=(*lead, P.FRAME_H, P.PACKED_W), dtype=np.uint8)


# ---------------------------------------------------------------- bit order


@pytest.mark.parametrize(
    "pixels, byte",
    [([1, 2, 3, 0], 0b00111001), ([3, 0, 0, 0], 3), ([0, 0, 0, 3], 192), ([0, 1, 0, 0], 4), ([2, 2, 2, 2], 170)],
)
def test_bit_order_hand_built(pixels, byte):
    px = np.array([pixels], np.uint8)
    assert P.pack_reference(px).tolist() == [[byte]]
    assert np.asarray(P.pack(px)).tolist() == [[byte]]
    assert P.unpack_reference(np.array([[byte]], np.uint8)).tolist() == [pixels]
    assert np.asarray(P.unpack(np.array([[byte]], np.uint8))).tolist() == [pixels]


def test_bit_order_position_in_frame():
    px = np.zeros((P.FRAME_H, P.FRAME_W), np.uint8)
    px[5, 4 * 7 + 2] = 3  # row 5, byte 7, pixel 2 -> bits 4..5
    packed = P.pack_reference(px)
    assert packed.shape == (P.FRAME_H, P.PACKED_W) and packed.dtype == np.uint8
    assert packed[5, 7] == 3 << 4
    assert np.count_nonzero(packed) == 1
    np.testing.assert_array_equal(np.asarray(P.pack(px)), packed)


def test_pack_reference_rejects_bad_input():
    with pytest.raises(ValueError):
        P.pack_reference(np.zeros((2, 6), np.uint8))
    with pytest.raises(ValueError):
        P.pack_reference(np.full((2, 4), 4, np.uint8))


# ---------------------------------------------------------------- round trips


def test_pack_matches_reference_and_round_trips():
    px = _frames(0, 2)
    ref = P.pack_reference(px)
    fast = np.asarray(P.pack(px))
    assert fast.shape == (2, P.FRAME_H, P.PACKED_W) and fast.dtype == np.uint8
    np.testing.assert_array_equal(fast, ref)
    np.testing.assert_array_equal(P.unpack_reference(ref), px)
    back = np.asarray(P.unpack(fast))
    assert back.shape == px.shape and back.dtype == np.uint8
    np.testing.assert_array_equal(back, px)


def test_unpack_matches_reference_on_random_bytes():
    packed = _packed(1)
    np.testing.assert_array_equal(np.asarray(P.unpack(packed)), P.unpack_reference(packed))
    np.testing.assert_array_equal(np.asarray(P.pack(P.unpack(packed))), packed)
    np.testing.assert_array_equal(P.unpack_np(packed), P.unpack_reference(packed))
    np.testing.assert_array_equal(P.pack_np(P.unpack_reference(packed)), packed)


def test_jit_and_vmap():
    px = _frames(2, 2, 3)  # two leading batch dims
    ref = P.pack_reference(px)
    np.testing.assert_array_equal(np.asarray(jax.jit(P.pack)(px)), ref)
    np.testing.assert_array_equal(np.asarray(jax.vmap(jax.vmap(P.pack))(px)), ref)
    np.testing.assert_array_equal(np.asarray(jax.jit(P.unpack)(ref)), px)
    np.testing.assert_array_equal(
        np.asarray(jax.vmap(P.unpack)(ref.reshape(6, P.FRAME_H, P.PACKED_W))), px.reshape(6, P.FRAME_H, P.FRAME_W)
    )


def test_unpack_lut():
    assert P.UNPACK_LUT.shape == (256, 4) and P.UNPACK_LUT.dtype == np.uint8
    for b in range(256):
        assert P.pack_reference(P.UNPACK_LUT[b][None])[0, 0] == b
        assert P.UNPACK_LUT[b].tolist() == [(b >> (2 * i)) & 3 for i in range(4)]


# ---------------------------------------------------------------- distances


def test_diff_lut():
    assert P.DIFF_LUT.shape == (256, 256) and P.DIFF_LUT.dtype == np.uint8
    u = P.UNPACK_LUT.astype(int)
    for a, b in [(0, 0), (0, 255), (57, 0), (57, 198), (170, 85), (255, 255)]:
        assert P.DIFF_LUT[a, b] == np.abs(u[a] - u[b]).sum()
    full = np.abs(u[:, None] - u[None]).sum(-1)
    np.testing.assert_array_equal(P.DIFF_LUT, full)
    assert P.DIFF_LUT[0, 255] == 12


def test_packed_l1_matches_unpacked():
    a, b = _frames(3, 4), _frames(4, 4)
    pa, pb = P.pack_reference(a), P.pack_reference(b)
    want = np.abs(a.astype(int) - b.astype(int)).sum(axis=(-2, -1))
    got = np.asarray(jax.jit(P.packed_l1)(pa, pb))
    assert got.shape == (4,) and got.dtype == np.int32
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.asarray(jax.vmap(P.packed_l1)(pa, pb)), want)
    # single frames, identity, extremes, broadcasting one frame against a batch
    assert int(P.packed_l1(pa[0], pb[0])) == want[0]
    assert int(P.packed_l1(pa[0], pa[0])) == 0
    zeros = np.zeros((P.FRAME_H, P.PACKED_W), np.uint8)
    assert int(P.packed_l1(zeros, np.full_like(zeros, 255))) == 3 * P.FRAME_H * P.FRAME_W
    np.testing.assert_array_equal(
        np.asarray(P.packed_l1(pa[0], pb)), np.abs(a[0].astype(int) - b.astype(int)).sum(axis=(-2, -1))
    )


def test_overlay_packed():
    base, over = _frames(5), _frames(6)
    over[:, :40] = 0  # a transparent half
    got = np.asarray(P.unpack(P.overlay_packed(P.pack_reference(base), P.pack_reference(over))))
    np.testing.assert_array_equal(got, np.where(over != 0, over, base))


# ---------------------------------------------------------------- blitting


def test_blit_tile_packed():
    frame = _packed(7)
    tile = np.random.default_rng(8).integers(0, 4, size=(8, 8), dtype=np.uint8)
    tile_packed = P.pack_tile(tile)
    blit = jax.jit(P.blit_tile_packed)
    for ty, tx in [(0, 0), (3, 7), (8, 9)]:
        out = np.asarray(blit(frame, tile_packed, ty, tx))
        want = P.unpack_reference(frame)
        want[8 * ty : 8 * ty + 8, 8 * tx : 8 * tx + 8] = tile
        np.testing.assert_array_equal(P.unpack_reference(out), want)
    # vmapped over positions
    tys, txs = jnp.array([1, 2]), jnp.array([4, 5])
    outs = np.asarray(jax.vmap(P.blit_tile_packed, in_axes=(None, None, 0, 0))(frame, tile_packed, tys, txs))
    np.testing.assert_array_equal(outs[1], np.asarray(P.blit_tile_packed(frame, tile_packed, 2, 5)))
    assert not np.array_equal(outs[0], outs[1])


def test_tilemap_to_frame_matches_blits():
    rng = np.random.default_rng(9)
    tilemap = rng.integers(0, T.NUM_ATLAS_TILES, size=(P.TILES_H, P.TILES_W))
    got = np.asarray(jax.jit(P.tilemap_to_frame)(tilemap, T.ATLAS_PACKED))
    assert got.shape == (P.FRAME_H, P.PACKED_W)
    frame = P.empty_frame()
    for ty in range(P.TILES_H):
        for tx in range(P.TILES_W):
            frame = P.blit_tile_packed(frame, T.ATLAS_PACKED[tilemap[ty, tx]], ty, tx)
    np.testing.assert_array_equal(got, np.asarray(frame))
    np.testing.assert_array_equal(P.unpack_np(got)[8:16, 24:32], T.ATLAS[tilemap[1, 3]])


def test_pack_tile():
    tile = np.arange(64, dtype=np.uint8).reshape(8, 8) % 4
    packed = P.pack_tile(tile)
    assert packed.shape == (8, 2) and packed.dtype == np.uint8
    np.testing.assert_array_equal(packed, P.pack_reference(tile))
    np.testing.assert_array_equal(P.unpack_tile(packed), tile)
    assert packed[0].tolist() == [0b11100100, 0b11100100]


# ---------------------------------------------------------------- palette


def test_to_rgb():
    px = _frames(10)
    rgb = P.to_rgb(P.pack_reference(px))
    assert rgb.shape == (72, 80, 3) and rgb.dtype == np.uint8
    np.testing.assert_array_equal(rgb, P.PALETTE[px])
    big = P.to_rgb(jnp.asarray(P.pack_reference(px)), scale=3)
    assert big.shape == (216, 240, 3)
    np.testing.assert_array_equal(big[3 * 10 + 2, 3 * 17 + 1], P.PALETTE[px[10, 17]])
    np.testing.assert_array_equal(big[::3, ::3], rgb)
    assert P.PALETTE.shape == (4, 3) and P.PALETTE.dtype == np.uint8
    assert len({tuple(c) for c in P.PALETTE}) == 4
    assert np.all(np.diff(P.PALETTE.astype(int).sum(1)) < 0)  # 0 lightest .. 3 darkest


# ---------------------------------------------------------------- tiles


def _check_tileset(unpacked, packed, n):
    assert unpacked.shape == (n, 8, 8) and unpacked.dtype == np.uint8
    assert packed.shape == (n, 8, 2) and packed.dtype == np.uint8
    assert unpacked.max() <= 3
    np.testing.assert_array_equal(packed, P.pack_reference(unpacked))


def test_tile_sets_shapes_and_packing():
    _check_tileset(T.SPECIES_TILES, T.SPECIES_TILES_PACKED, S.NUM_SPECIES)
    _check_tileset(T.GLYPH_TILES, T.GLYPH_TILES_PACKED, len(T.GLYPH_CHARS))
    _check_tileset(T.NUMBER_TILES, T.NUMBER_TILES_PACKED, 100)
    _check_tileset(T.STAR_PIPS, T.STAR_PIPS_PACKED, 4)
    _check_tileset(T.ATLAS, T.ATLAS_PACKED, T.NUM_ATLAS_TILES)
    assert not T.EMPTY.any() and not T.EMPTY_PACKED.any()
    np.testing.assert_array_equal(T.EMPTY_CELL_PACKED, P.pack_reference(T.EMPTY_CELL))
    assert T.EMPTY_CELL.any() and T.EMPTY_CELL.max() == 1  # faint
    np.testing.assert_array_equal(T.ATLAS[T.ATLAS_EMPTY], T.EMPTY)
    np.testing.assert_array_equal(T.ATLAS[T.ATLAS_EMPTY_CELL], T.EMPTY_CELL)
    np.testing.assert_array_equal(T.ATLAS[T.ATLAS_STAR0 : T.ATLAS_STAR0 + 4], T.STAR_PIPS)
    np.testing.assert_array_equal(T.ATLAS[T.ATLAS_SPECIES0 : T.ATLAS_SPECIES0 + S.NUM_SPECIES], T.SPECIES_TILES)
    np.testing.assert_array_equal(T.ATLAS[T.ATLAS_NUMBER0 + 42], T.NUMBER_TILES[42])


def test_species_tiles_distinct():
    flat = T.SPECIES_TILES.reshape(S.NUM_SPECIES, -1)
    assert len({r.tobytes() for r in flat}) == S.NUM_SPECIES
    others = np.concatenate([T.EMPTY[None], T.EMPTY_CELL[None], T.STAR_PIPS, T.GLYPH_TILES, T.NUMBER_TILES])
    other_set = {t.tobytes() for t in others}
    for s in range(S.NUM_SPECIES):
        assert T.SPECIES_TILES[s].tobytes() not in other_set, S.SPECIES_NAMES[s]
        assert (T.SPECIES_TILES[s] != 0).sum() >= 24  # a real sprite, not a speck
    # the silhouette (non-background mask) is shared exactly by species with the same first type
    masks = T.SPECIES_TILES != 0
    pad = np.pad(masks, ((0, 0), (1, 1), (1, 1)))
    holes = pad[:, :-2, 1:-1] & pad[:, 2:, 1:-1] & pad[:, 1:-1, :-2] & pad[:, 1:-1, 2:]
    masks = masks | holes  # light (shade 0) eyes count as body
    for a in range(S.NUM_SPECIES):
        for b in range(S.NUM_SPECIES):
            same_type = S.SPECIES_TYPES[a, 0] == S.SPECIES_TYPES[b, 0]
            assert np.array_equal(masks[a], masks[b]) == same_type


def test_glyph_lookup():
    assert T.glyph_index("0") == 0 and T.glyph_index("9") == 9
    assert T.glyph_index("A") == 10 and T.glyph_index("Z") == 35
    assert T.glyph_index("a") == T.glyph_index("A")
    assert T.glyph_index("<") == T.glyph_index(T.HEART)
    for c in ":/-+ " + T.HEART + T.COIN:
        assert T.GLYPH_CHARS[T.glyph_index(c)] == c
    with pytest.raises(KeyError):
        T.glyph_index("~")
    with pytest.raises(ValueError):
        T.glyph_index("AB")
    idx = T.text_tiles("Hp 7")
    assert idx.dtype == np.int32 and idx.tolist() == [17, 25, T.glyph_index(" "), 7]
    np.testing.assert_array_equal(T.ATLAS[T.text_tiles("GOLD$", atlas=True)], T.GLYPH_TILES[T.text_tiles("GOLD$")])
    assert not T.GLYPH_TILES[T.glyph_index(" ")].any()
    # every glyph is different; only the space is blank
    assert len({t.tobytes() for t in T.GLYPH_TILES}) == len(T.GLYPH_CHARS)
    assert sum(not t.any() for t in T.GLYPH_TILES) == 1
    # 5x7 cell: columns 1..5, rows 0..6
    assert not T.GLYPH_TILES[:, 7].any() and not T.GLYPH_TILES[:, :, [0, 6, 7]].any()
    # spot-check a glyph's shape: '1' has a full-height vertical stem in column 3
    assert T.GLYPH_TILES[1][:7, 3].tolist() == [3] * 7


def test_number_and_star_tiles():
    assert len({t.tobytes() for t in T.NUMBER_TILES}) == 100
    # 7 is right-aligned: same pixels as the units digit of 17
    np.testing.assert_array_equal(T.NUMBER_TILES[7][:, 4:], T.NUMBER_TILES[17][:, 4:])
    assert not T.NUMBER_TILES[7][:, :4].any()
    for k in range(4):
        assert (T.STAR_PIPS[k] == 3).sum() == 4 * k and (T.STAR_PIPS[k] != 0).sum() == 4 * k
    assert T.STAR_PIP is T.STAR_PIPS
