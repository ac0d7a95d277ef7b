"""Rendering: per-seat packed 2bpp views, RGB pictures and fight-replay GIFs.

Device side (pure jnp, jit/vmap-able)
-------------------------------------
``render_seat(state, seat) -> uint8[72, 20]``   one seat's 80x72 view, packed 2bpp
``render_all(state) -> uint8[8, 72, 20]``       every seat (the pixel observation)
``seat_tilemap(state, seat) -> int32[9, 10]``   the tile map behind a view

A view is a 9 x 10 map of indices into ``RENDER_ATLAS_PACKED`` (the tile atlas
of ``jaxgame.tiles`` plus every species sprite with its star pips already laid
over it, plus a padlock), turned into packed bytes with one gather
(``packing.tilemap_to_frame``); the two synergy tiles are computed directly in
packed form and blitted. No unpacked frame is ever built. The layout is in
docs/pixels.md ("Rendered view").

Host side (numpy / pillow, for people)
--------------------------------------
``render_rgb(state, seat, scale=4) -> uint8[72*s, 80*s, 3]``
``render_replay_frames(replay, every=1, scale=3) -> uint8[F, 60*s, 80*s, 3]``
``replay_to_gif(path, replay, every=1, scale=3) -> number of frames``
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxgame import constants as C
from jaxgame import packing, synergy
from jaxgame import species as sp
from jaxgame import tiles as T
from jaxgame.state import RESULT_DRAW, RESULT_LOSS, RESULT_WIN, GameState

# --------------------------------------------------------------------------
# render atlas: the tiles atlas + species-with-star-pips + padlock
# --------------------------------------------------------------------------


def _overlay_np(base: np.ndarray, over: np.ndarray) -> np.ndarray:
    """numpy twin of ``packing.overlay_packed`` (same LUT), for import-time tables."""
    mask = packing.OPAQUE_MASK_LUT[over]
    return (base & ~mask) | over


_PADLOCK = np.array(
    [
        [int(c) for c in row]
        for row in ["00333000", "03000300", "03000300", "33333330", "32222230", "32232230", "32222230", "33333330"]
    ],
    dtype=np.uint8,
)

#: uint8[3, 8, 2]: ``tiles.STAR_PIPS_PACKED[1:]`` moved from the top two rows to the bottom two
#: (at the top they would hide the eyes of the fighting sprites: machamp and lucario would collide).
PIPS_BOTTOM_PACKED = np.roll(T.STAR_PIPS_PACKED[1:], packing.TILE - 2, axis=-2)
#: uint8[28, 3, 8, 2]: species sprite with k+1 star pips laid over its bottom rows (packed).
UNIT_TILES_PACKED = _overlay_np(T.SPECIES_TILES_PACKED[:, None], PIPS_BOTTOM_PACKED[None])
#: uint8[10, 8, 8]: "00" .. "09" (``NUMBER_TILES`` with a leading zero), for the last two digits of 100..999.
PADDED_NUMBER_TILES = T.NUMBER_TILES[:10].copy()
PADDED_NUMBER_TILES[:, :, 0:3] = T.NUMBER_TILES[0][:, 4:7]

RENDER_UNIT0 = T.NUM_ATLAS_TILES  # + 3 * species + (stars - 1)
RENDER_PADLOCK = RENDER_UNIT0 + 3 * sp.NUM_SPECIES
RENDER_PADDED0 = RENDER_PADLOCK + 1  # + n (0..9): "0n"
RENDER_ATLAS_PACKED = np.concatenate(
    [
        T.ATLAS_PACKED,
        UNIT_TILES_PACKED.reshape(-1, packing.TILE, packing.TILE_PACKED_W),
        packing.pack_tile(_PADLOCK)[None],
        packing.pack_tile(PADDED_NUMBER_TILES),
    ]
)
#: unpacked twin (host; used by the replay renderer and by tests)
RENDER_ATLAS = packing.unpack_np(RENDER_ATLAS_PACKED)
NUM_RENDER_TILES = len(RENDER_ATLAS_PACKED)
# every (species, stars) tile is distinct from every other one and from the plain sprites
assert len({t.tobytes() for t in np.concatenate([T.SPECIES_TILES_PACKED, UNIT_TILES_PACKED.reshape(-1, 8, 2)])}) == (
    4 * sp.NUM_SPECIES
)

VIEW_ROWS, VIEW_COLS = packing.TILES_H, packing.TILES_W  # 9, 10
SYNERGY_TILE_POS = ((6, 8), (6, 9))  # types 0..3, types 4..7


def _g(c: str) -> int:
    return int(T.ATLAS_GLYPH0 + T.glyph_index(c))


_HEART, _COIN = _g(T.HEART), _g(T.COIN)
_BLANK = T.ATLAS_EMPTY
_RESULT_GLYPHS = np.full(4, _BLANK, np.int32)
_RESULT_GLYPHS[RESULT_WIN], _RESULT_GLYPHS[RESULT_LOSS], _RESULT_GLYPHS[RESULT_DRAW] = _g("W"), _g("L"), _g("D")


def _num(n):
    """Atlas index of the number tile of ``clip(n, 0, 99)``."""
    return T.ATLAS_NUMBER0 + jnp.clip(n, 0, 99).astype(jnp.int32)


def _life_tiles(life):
    """Two atlas indices for a life total: heart + number for 0..99; for 100..999 the
    hundreds digit replaces the heart and the second tile shows two digits ("07")."""
    life = jnp.clip(life, 0, 999).astype(jnp.int32)
    hi, lo = life // 100, life % 100
    big = life >= 100
    first = jnp.where(big, T.ATLAS_NUMBER0 + hi, _HEART)
    second = jnp.where(big & (lo < 10), RENDER_PADDED0 + lo, T.ATLAS_NUMBER0 + lo)
    return jnp.stack([first, second]).astype(jnp.int32)


def _unit_tiles(species, stars, empty=T.ATLAS_EMPTY_CELL):
    """Atlas indices of unit slots: sprite + star pips, or ``empty`` (default: an empty-cell outline)."""
    idx = RENDER_UNIT0 + 3 * jnp.maximum(species, 0) + jnp.clip(stars, 1, 3) - 1
    return jnp.where(species >= 0, idx, empty).astype(jnp.int32)


def synergy_tiles_packed(levels) -> jax.Array:
    """int[8] synergy levels (0..3) -> uint8[2, 8, 2]: two bar-chart tiles, built in packed form.

    Tile ``j`` shows types ``4j .. 4j+3``; type ``4j + k`` is a 1-pixel-wide bar in
    pixel column ``2k`` over a shade-1 baseline on row 7; level ``l`` fills rows
    ``8 - 2l .. 7`` with shade 3.
    """
    lv = jnp.clip(jnp.asarray(levels, jnp.int32), 0, 3).reshape(2, 4)  # [tile, k]
    rows = jnp.arange(packing.TILE, dtype=jnp.int32)[:, None, None]  # [r, 1, 1]
    shade = jnp.where(rows >= 8 - 2 * lv[None], 3, jnp.where(rows == 7, 1, 0))  # [r, tile, k]
    # pixel 2k -> byte k // 2, bit pair 2 * (2k % 4) = 0 or 4
    shade = shade.reshape(packing.TILE, 2, 2, 2)  # [r, tile, byte, k%2]
    packed = (shade[..., 0] | (shade[..., 1] << 4)).astype(jnp.uint8)  # [r, tile, byte]
    return jnp.transpose(packed, (1, 0, 2))


def seat_tilemap(state: GameState, seat) -> jax.Array:
    """int32[9, 10] indices into ``RENDER_ATLAS_PACKED`` of one seat's view (see docs/pixels.md)."""
    p = state.players
    seat = jnp.asarray(seat, jnp.int32)
    i32 = jnp.int32
    life, gold, level, xp, streak = p.life[seat], p.gold[seat], p.level[seat], p.xp[seat], p.streak[seat]
    species, stars, shop = p.species[seat], p.stars[seat], p.shop[seat]
    opp = p.last_opponent[seat]
    has_opp = opp >= 0
    o = jnp.maximum(opp, 0)
    blank = jnp.int32(_BLANK)

    def c(v):
        return jnp.asarray(v, i32)

    streak_sign = jnp.where(streak > 0, _g("+"), jnp.where(streak < 0, _g("-"), _BLANK))
    hud = jnp.concatenate(
        [_life_tiles(life),
         jnp.stack([c(_COIN), _num(gold), c(_g("L")), _num(level), c(_g("R")), _num(state.round),
                    c(streak_sign), _num(jnp.abs(streak))])]
    )  # fmt: skip

    # last opponent's board, mirrored: opponent cell (r, c) -> tile (3 - r, 7 - c), i.e. the 24 cells reversed
    opp_board = _unit_tiles(p.species[o, C.BENCH_SIZE :], p.stars[o, C.BENCH_SIZE :], _BLANK)[::-1]
    opp_board = jnp.where(has_opp, opp_board, blank).reshape(C.BOARD_ROWS, C.BOARD_COLS)
    result = jnp.asarray(_RESULT_GLYPHS)[jnp.clip(p.last_result[seat], 0, 3)]
    opp_side = jnp.stack(
        [
            jnp.where(has_opp, _life_tiles(p.life[o]), blank),
            jnp.where(has_opp, jnp.stack([c(_g("L")), _num(p.level[o])]), blank),
            jnp.stack([result, _num(jnp.sum(p.alive))]),
        ]
    )  # [3, 2]

    board = species[C.BENCH_SIZE :]
    own_board = _unit_tiles(board, stars[C.BENCH_SIZE :]).reshape(C.BOARD_ROWS, C.BOARD_COLS)
    own_side = jnp.stack(
        [
            jnp.stack([c(_g("X")), _num(xp)]),
            jnp.stack([c(_g("U")), _num(jnp.sum(board >= 0))]),
            jnp.stack([blank, blank]),  # synergy bars, blitted below
        ]
    )  # [3, 2]
    bench = _unit_tiles(species[: C.BENCH_SIZE], stars[: C.BENCH_SIZE])
    bench_row = jnp.concatenate([bench, jnp.stack([c(_g("T")), _num(state.step_in_round)])])
    shop_tiles = jnp.where(shop >= 0, T.ATLAS_SPECIES0 + shop, T.ATLAS_EMPTY_CELL).astype(i32)
    out = p.rank[seat] > 0
    shop_row = jnp.concatenate(
        [
            shop_tiles,
            jnp.stack(
                [
                    jnp.where(p.shop_locked[seat], RENDER_PADLOCK, _BLANK),
                    jnp.where(p.turn_ended[seat], _g("E"), _BLANK),
                    jnp.where(out, _g("P"), _BLANK),
                    jnp.where(out, _num(p.rank[seat]), blank),
                ]
            ).astype(i32),
        ]
    )
    middle = jnp.concatenate(
        [jnp.concatenate([opp_board, opp_side], axis=1), jnp.concatenate([own_board, own_side], axis=1)], axis=0
    )  # [6, 10]
    return jnp.concatenate([hud[None], middle, bench_row[None], shop_row[None]], axis=0).astype(i32)


def render_seat(state: GameState, seat) -> jax.Array:
    """uint8[72, 20]: one seat's view, packed 2bpp (pure jnp; jit/vmap over ``state`` and ``seat``)."""
    frame = packing.tilemap_to_frame(seat_tilemap(state, seat), jnp.asarray(RENDER_ATLAS_PACKED))
    p = state.players
    seat = jnp.asarray(seat, jnp.int32)
    levels = synergy.synergy_levels(synergy.type_counts(p.species[seat, C.BENCH_SIZE :]))
    syn = synergy_tiles_packed(levels)
    for j, (ty, tx) in enumerate(SYNERGY_TILE_POS):
        frame = packing.blit_tile_packed(frame, syn[j], ty, tx)
    return frame


def render_all(state: GameState) -> jax.Array:
    """uint8[8, 72, 20]: the packed views of all seats (``ts.observation`` for obs="pixels")."""
    return jax.vmap(render_seat, in_axes=(None, 0))(state, jnp.arange(C.NUM_PLAYERS, dtype=jnp.int32))


_render_seat_jit = jax.jit(render_seat)


def render_shades(state: GameState, seat: int = 0) -> np.ndarray:
    """Host: one seat's view as numpy uint8[72, 80] shades 0..3 (``render_rgb`` before the palette)."""
    if not 0 <= int(seat) < C.NUM_PLAYERS:
        raise ValueError(f"seat must be in 0..{C.NUM_PLAYERS - 1}, got {seat}")
    if np.ndim(state.round) != 0:
        raise ValueError("render_shades takes one game state (no batch axis); index the batch first")
    return packing.unpack_np(np.asarray(_render_seat_jit(state, jnp.int32(seat))))


def render_rgb(state: GameState, seat: int = 0, scale: int = 4) -> np.ndarray:
    """Host: one seat's view as numpy uint8[72*scale, 80*scale, 3] in ``packing.PALETTE`` colours."""
    if scale < 1:
        raise ValueError(f"scale must be >= 1, got {scale}")
    if not 0 <= int(seat) < C.NUM_PLAYERS:
        raise ValueError(f"seat must be in 0..{C.NUM_PLAYERS - 1}, got {seat}")
    if np.ndim(state.round) != 0:
        raise ValueError("render_rgb takes one game state (no batch axis); index the batch first")
    return packing.to_rgb(_render_seat_jit(state, jnp.int32(seat)), scale=scale)


def _pillow():
    """PIL.Image, imported on first use: writing image files is the one thing here that needs pillow."""
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("writing PNG/GIF files needs pillow: pip install pillow (or jaxgame[train])") from None
    return Image


def save_png(path, state: GameState, seat: int = 0, scale: int = 4) -> None:
    """Write ``render_rgb(state, seat, scale)`` as a PNG (needs pillow)."""
    _pillow().fromarray(render_rgb(state, seat, scale)).save(path)


# --------------------------------------------------------------------------
# fight replays (host side)
# --------------------------------------------------------------------------

REPLAY_CELL_H = 10  # 8 px sprite, 1 px hp bar, 1 px gap
REPLAY_H = C.GRID_ROWS * REPLAY_CELL_H  # 60
REPLAY_W = packing.FRAME_W  # 80: 64 px grid + 16 px panel
_GRID_W = C.GRID_COLS * packing.TILE  # 64


def replay_length(replay) -> int:
    """Index of the last frame that differs from its predecessor (the fight's end; 0 if nothing happens)."""
    arrs = [np.asarray(a) for a in (replay.x, replay.y, replay.hp, replay.alive)]
    changed = np.zeros(arrs[0].shape[0], bool)
    for a in arrs:
        changed[1:] |= np.any(a[1:] != a[:-1], axis=-1)
    idx = np.nonzero(changed)[0]
    return int(idx[-1]) if len(idx) else 0


def replay_frame_ticks(replay, every: int = 1, ticks: int | None = None) -> np.ndarray:
    """The frame indices drawn: 0, every, 2*every, ... and always the last one (``ticks``, default the fight's end)."""
    if every < 1:
        raise ValueError(f"every must be >= 1, got {every}")
    n_frames = np.asarray(replay.x).shape[0]
    end = replay_length(replay) if ticks is None else int(ticks)
    end = min(max(end, 0), n_frames - 1)
    sel = np.arange(0, end + 1, every)
    if sel[-1] != end:
        sel = np.append(sel, end)
    return sel


def _panel_tile(n: int) -> np.ndarray:
    return T.NUMBER_TILES[int(np.clip(n, 0, 99))]


def replay_shades(replay, every: int = 1, ticks: int | None = None) -> np.ndarray:
    """Host: uint8[F, 60, 80] shades (0..3) of a fight replay, one frame per drawn tick.

    Grid: 8 columns x 6 rows of 8 x 10 px cells (sprite with star pips, then a
    1 px hp bar, shade 3, proportional to hp / max_hp, then a 1 px gap). The
    replay's home side is drawn at the bottom and the away side at the top
    (combat row ``y`` is drawn at row ``5 - y``), like a seat's view. Away
    units sit on a shade-1 background. Right panel (16 px): 'A' + away units
    alive, the time in seconds ('12 .3'), 'H' + home units alive.
    """
    x, y, hp, alive = (np.asarray(a) for a in (replay.x, replay.y, replay.hp, replay.alive))
    max_hp = np.maximum(np.asarray(replay.max_hp), 1)
    species, stars, team = (np.asarray(a) for a in (replay.species, replay.stars, replay.team))
    sel = replay_frame_ticks(replay, every, ticks)
    half = C.BOARD_CELLS
    unit_tile = RENDER_ATLAS[RENDER_UNIT0 + 3 * np.maximum(species, 0) + np.clip(stars, 1, 3) - 1]  # [48, 8, 8]
    away_tile = np.where(unit_tile == 0, 1, unit_tile)
    sprite = np.where((team == 1)[:, None, None], away_tile, unit_tile).astype(np.uint8)
    cols = np.arange(packing.TILE)
    frames = np.zeros((len(sel), REPLAY_H, REPLAY_W), np.uint8)
    frames[:, :, _GRID_W] = 1  # panel separator
    for f, t in enumerate(sel):
        img = frames[f]
        for i in np.nonzero(alive[t] & (species >= 0))[0]:
            px, py = int(x[t, i]) * packing.TILE, (C.GRID_ROWS - 1 - int(y[t, i])) * REPLAY_CELL_H
            img[py : py + 8, px : px + 8] = sprite[i]
            filled = int(np.ceil(8 * max(int(hp[t, i]), 0) / max_hp[i]))
            img[py + 8, px : px + 8] = np.where(cols < min(filled, 8), 3, 1)
        secs, tenths = divmod(int(t), 10)
        n_home, n_away = int(alive[t, :half].sum()), int(alive[t, half:].sum())
        tenth_tile = _panel_tile(tenths).copy()
        tenth_tile[5, 1] = 3  # decimal point
        px = _GRID_W + 1
        for row, (a, b) in zip(
            (2, 26, 50),
            ((T.GLYPH_TILES[T.glyph_index("A")], _panel_tile(n_away)), (_panel_tile(secs), tenth_tile),
             (T.GLYPH_TILES[T.glyph_index("H")], _panel_tile(n_home))),
        ):  # fmt: skip
            img[row : row + 8, px : px + 7] = a[:, :7]
            img[row : row + 8, px + 7 : px + 15] = b
    return frames


def render_replay_frames(replay, every: int = 1, scale: int = 3, ticks: int | None = None) -> np.ndarray:
    """Host: uint8[F, 60*scale, 80*scale, 3] RGB frames of a ``combat.FightReplay`` (see ``replay_shades``)."""
    if scale < 1:
        raise ValueError(f"scale must be >= 1, got {scale}")
    shades = replay_shades(replay, every, ticks)
    if scale != 1:
        shades = np.repeat(np.repeat(shades, scale, axis=1), scale, axis=2)
    return packing.PALETTE[shades]


def replay_to_gif(
    path, replay, every: int = 1, scale: int = 3, ticks: int | None = None, frame_ms: int = 50, hold_ms: int = 1500
) -> int:
    """Write a fight replay as an animated GIF (4-colour palette, needs pillow); returns the number of frames.

    Every drawn frame shows a different time, so no two consecutive frames are equal
    (pillow would merge them). ``frame_ms`` per frame, ``hold_ms`` on the last one.
    """
    shades = replay_shades(replay, every, ticks)
    if scale != 1:
        shades = np.repeat(np.repeat(shades, scale, axis=1), scale, axis=2)
    save_gif(path, shades, [frame_ms] * (len(shades) - 1) + [hold_ms])
    return len(shades)


def save_gif(path, shades, durations_ms) -> None:
    """Write frames of shades uint8[F, H, W] (0..3) as an animated GIF in ``packing.PALETTE``, frame ``f`` shown
    ``durations_ms[f]`` ms, looping (needs pillow)."""
    palette = packing.PALETTE.reshape(-1).tolist() + [0] * (768 - packing.PALETTE.size)
    images, image = [], _pillow()
    for s in shades:
        im = image.fromarray(np.ascontiguousarray(s, dtype=np.uint8))  # mode "L"; putpalette makes it "P"
        im.putpalette(palette)
        images.append(im)
    images[0].save(
        path, save_all=True, append_images=images[1:], duration=list(durations_ms), loop=0, optimize=False, disposal=1
    )


__all__ = [
    "NUM_RENDER_TILES",
    "RENDER_ATLAS",
    "RENDER_ATLAS_PACKED",
    "render_all",
    "render_replay_frames",
    "render_rgb",
    "render_seat",
    "render_shades",
    "replay_shades",
    "replay_to_gif",
    "save_gif",
    "save_png",
    "seat_tilemap",
    "synergy_tiles_packed",
]
