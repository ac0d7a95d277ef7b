"""Rendering: packed per-seat views, pixel observations, RGB pictures and fight GIFs.

The views are checked against a plain-numpy composition of the documented
layout (docs/pixels.md, "Rendered view") built from the unpacked tiles.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from PIL import Image

import jaxgame
from jaxgame import bots, combat, packing, render
from jaxgame import constants as C
from jaxgame import species as sp
from jaxgame import tiles as T
from jaxgame.state import RESULT_DRAW, RESULT_LOSS, RESULT_WIN

# tiny games with PvP from round 2 on, so that seats have a last opponent after 2 rounds
CFG = dict(steps_per_round=2, max_rounds=4, max_combat_ticks=100, pve_rounds=(1,))

render_seat = jax.jit(render.render_seat)
render_all = jax.jit(render.render_all)


@pytest.fixture(scope="module")
def pixel_env():
    return jaxgame.make("autochess", obs="pixels", **CFG)


@pytest.fixture(scope="module")
def played(pixel_env):
    """(states, timesteps) of 5 greedy steps (2 fights) through jax.jit(env.step) with obs="pixels"."""
    env = pixel_env

    @jax.jit
    def step(state, ts, key):
        return env.step(state, bots.greedy_policy(key, state, ts.action_mask))

    state, ts = jax.jit(env.reset)(jax.random.key(0))
    states, tss = [state], [ts]
    for i in range(5):
        state, ts = step(state, ts, jax.random.key(100 + i))
        states.append(state)
        tss.append(ts)
    return states, tss


@pytest.fixture(scope="module")
def crafted(played):
    """The last played state with hand-set fields on seats 0 and 1 (big lives, streaks, stars, lock, ...)."""
    state = played[0][-1]
    p = jax.tree_util.tree_map(lambda a: np.array(a), state.players)
    p.species[0] = -1
    p.stars[0] = 0
    # board: fire x4 (charmander 1, growlithe 7, ponyta 11, arcanine 15) -> fire level 2, monster 1 (with rattata 0)
    for cell, (s, k) in {0: (1, 1), 1: (7, 2), 7: (11, 3), 9: (15, 1), 23: (0, 2)}.items():
        p.species[0, C.BENCH_SIZE + cell], p.stars[0, C.BENCH_SIZE + cell] = s, k
    for slot, (s, k) in {0: (27, 3), 5: (3, 1), 7: (17, 2)}.items():
        p.species[0, slot], p.stars[0, slot] = s, k
    p.shop[0] = [23, -1, 4, 17, -1, 0]
    p.life[0], p.gold[0], p.level[0], p.xp[0], p.streak[0] = 123, 7, 5, 4, -3
    p.shop_locked[0], p.turn_ended[0], p.last_opponent[0], p.last_result[0] = True, True, 3, RESULT_WIN
    p.species[3, C.BENCH_SIZE :] = -1
    p.stars[3, C.BENCH_SIZE :] = 0
    p.species[3, C.BENCH_SIZE + 2], p.stars[3, C.BENCH_SIZE + 2] = 23, 3  # opponent row 0, col 2
    p.species[3, C.BENCH_SIZE + 17], p.stars[3, C.BENCH_SIZE + 17] = 9, 1  # opponent row 2, col 1
    p.life[3], p.level[3] = 100, 6
    p.life[1], p.streak[1], p.rank[1], p.alive[1], p.last_opponent[1], p.last_result[1] = (
        105,
        2,
        5,
        False,
        -1,
        RESULT_DRAW,
    )
    p.gold[1] = 250
    p.life[2], p.last_result[2] = 0, RESULT_LOSS
    return state.replace(players=jax.tree_util.tree_map(jnp.asarray, p))


# --------------------------------------------------------------------------
# the reference: a plain-numpy composition of the documented layout
# --------------------------------------------------------------------------

PIPS_BOTTOM = np.roll(T.STAR_PIPS, 6, axis=1)  # pips on the bottom two rows


def _glyph(c):
    return T.GLYPH_TILES[T.glyph_index(c)]


def _num(n):
    return T.NUMBER_TILES[int(np.clip(n, 0, 99))]


def _unit(s, k):
    pip = PIPS_BOTTOM[int(np.clip(k, 1, 3))]
    return np.where(pip != 0, pip, T.SPECIES_TILES[s])


def _life(life):
    life = int(np.clip(life, 0, 999))
    if life < 100:
        return [_glyph("♥"), _num(life)]
    lo = _num(life % 100).copy()
    if life % 100 < 10:
        lo[:, 0:3] = T.NUMBER_TILES[0][:, 4:7]  # leading zero
    return [_num(life // 100), lo]


def reference_view(state, seat):
    p = jax.tree_util.tree_map(np.asarray, state.players)
    img = np.zeros((72, 80), np.uint8)
    blank = T.EMPTY

    def put(ty, tx, tile):
        img[8 * ty : 8 * ty + 8, 8 * tx : 8 * tx + 8] = tile

    sign = "+" if p.streak[seat] > 0 else "-" if p.streak[seat] < 0 else " "
    hud = _life(p.life[seat]) + [_glyph("$"), _num(p.gold[seat]), _glyph("L"), _num(p.level[seat])]
    hud += [_glyph("R"), _num(state.round), _glyph(sign), _num(abs(p.streak[seat]))]
    for tx, tile in enumerate(hud):
        put(0, tx, tile)
    o = int(p.last_opponent[seat])
    if o >= 0:
        for cell in range(C.BOARD_CELLS):
            r, c = divmod(cell, C.BOARD_COLS)
            s = p.species[o, C.BENCH_SIZE + cell]
            put(3 - r, 7 - c, _unit(s, p.stars[o, C.BENCH_SIZE + cell]) if s >= 0 else blank)
        put(1, 8, _life(p.life[o])[0]), put(1, 9, _life(p.life[o])[1])
        put(2, 8, _glyph("L")), put(2, 9, _num(p.level[o]))
    res = {RESULT_WIN: "W", RESULT_LOSS: "L", RESULT_DRAW: "D"}.get(int(p.last_result[seat]), " ")
    put(3, 8, _glyph(res)), put(3, 9, _num(p.alive.sum()))
    board = p.species[seat, C.BENCH_SIZE :]
    for cell in range(C.BOARD_CELLS):
        r, c = divmod(cell, C.BOARD_COLS)
        s = board[cell]
        put(4 + r, c, _unit(s, p.stars[seat, C.BENCH_SIZE + cell]) if s >= 0 else T.EMPTY_CELL)
    put(4, 8, _glyph("X")), put(4, 9, _num(p.xp[seat]))
    put(5, 8, _glyph("U")), put(5, 9, _num((board >= 0).sum()))
    # synergy bars
    present = np.zeros(sp.NUM_SPECIES, bool)
    present[board[board >= 0]] = True
    counts = present.astype(int) @ sp.SPECIES_TYPE_MASK.astype(int)
    levels = (counts[:, None] >= sp.SYNERGY_THRESHOLDS).sum(-1)
    for t in range(sp.NUM_TYPES):
        tile_x, k = 8 + t // 4, t % 4
        col = 8 * tile_x + 2 * k
        img[6 * 8 + 7, col] = 1
        img[6 * 8 + 8 - 2 * levels[t] : 6 * 8 + 8, col] = 3
    for b in range(C.BENCH_SIZE):
        s = p.species[seat, b]
        put(7, b, _unit(s, p.stars[seat, b]) if s >= 0 else T.EMPTY_CELL)
    put(7, 8, _glyph("T")), put(7, 9, _num(state.step_in_round))
    for i, s in enumerate(p.shop[seat]):
        put(8, i, T.SPECIES_TILES[s] if s >= 0 else T.EMPTY_CELL)
    if p.shop_locked[seat]:
        put(8, 6, render.RENDER_ATLAS[render.RENDER_PADLOCK])
    if p.turn_ended[seat]:
        put(8, 7, _glyph("E"))
    if p.rank[seat] > 0:
        put(8, 8, _glyph("P")), put(8, 9, _num(p.rank[seat]))
    return img


def _cell(frame_px, ty, tx):
    return frame_px[8 * ty : 8 * ty + 8, 8 * tx : 8 * tx + 8]


# --------------------------------------------------------------------------
# tests
# --------------------------------------------------------------------------


def test_shapes_and_dtypes(crafted):
    f = render_seat(crafted, 0)
    assert f.shape == (72, 20) and f.dtype == jnp.uint8
    a = render_all(crafted)
    assert a.shape == (8, 72, 20) and a.dtype == jnp.uint8
    assert render.seat_tilemap(crafted, 0).shape == (9, 10)
    assert int(render.seat_tilemap(crafted, 0).max()) < render.NUM_RENDER_TILES


def test_matches_reference_composition(played, crafted):
    states = [played[0][0], played[0][3], played[0][-1], crafted]
    assert any(int(s.players.last_opponent.max()) >= 0 for s in states[:3]), "no PvP fight was played"
    for state in states:
        frames = np.asarray(render_all(state))
        for seat in range(C.NUM_PLAYERS):
            np.testing.assert_array_equal(
                packing.unpack_np(frames[seat]), reference_view(state, seat), err_msg=f"seat {seat}"
            )


def test_spot_checks(crafted):
    px = packing.unpack_np(np.asarray(render_seat(crafted, 0)))
    # HUD: life 123 -> "1" "23", gold 7, level 5, streak -3
    np.testing.assert_array_equal(_cell(px, 0, 0), T.NUMBER_TILES[1])
    np.testing.assert_array_equal(_cell(px, 0, 1), T.NUMBER_TILES[23])
    np.testing.assert_array_equal(_cell(px, 0, 3), T.NUMBER_TILES[7])
    np.testing.assert_array_equal(_cell(px, 0, 5), T.NUMBER_TILES[5])
    np.testing.assert_array_equal(_cell(px, 0, 8), _glyph("-"))
    np.testing.assert_array_equal(_cell(px, 0, 9), T.NUMBER_TILES[3])
    # own board: cell 7 (row 0, col 7) holds a 3-star ponyta; cell 23 (row 2, col 7) a 2-star rattata
    np.testing.assert_array_equal(_cell(px, 4, 7), _unit(11, 3))
    np.testing.assert_array_equal(_cell(px, 6, 7), _unit(0, 2))
    np.testing.assert_array_equal(_cell(px, 4, 2), T.EMPTY_CELL)
    # opponent (seat 3), mirrored: its cell (0, 2) at tile (3, 5), its cell (2, 1) at tile (1, 6)
    np.testing.assert_array_equal(_cell(px, 3, 5), _unit(23, 3))
    np.testing.assert_array_equal(_cell(px, 1, 6), _unit(9, 1))
    np.testing.assert_array_equal(_cell(px, 1, 9), render.RENDER_ATLAS[render.RENDER_PADDED0 + 0])  # life 100
    # bench, shop, lock
    np.testing.assert_array_equal(_cell(px, 7, 0), _unit(27, 3))
    np.testing.assert_array_equal(_cell(px, 8, 0), T.SPECIES_TILES[23])
    np.testing.assert_array_equal(_cell(px, 8, 1), T.EMPTY_CELL)
    assert _cell(px, 8, 6).any()  # padlock
    # every unit tile is distinct (sprite x stars), pips never hide a sprite difference
    units = np.array([_unit(s, k) for s in range(sp.NUM_SPECIES) for k in (1, 2, 3)])
    assert len({u.tobytes() for u in units}) == 3 * sp.NUM_SPECIES
    # seat 1: out (rank 5), life 105 -> "1" "05", no opponent -> the opponent area is blank
    px1 = packing.unpack_np(np.asarray(render_seat(crafted, 1)))
    np.testing.assert_array_equal(_cell(px1, 0, 0), T.NUMBER_TILES[1])
    lo = _cell(px1, 0, 1)
    np.testing.assert_array_equal(lo[:, 4:], T.NUMBER_TILES[5][:, 4:])
    np.testing.assert_array_equal(lo[:, :3], T.NUMBER_TILES[0][:, 4:7])
    np.testing.assert_array_equal(_cell(px1, 0, 3), T.NUMBER_TILES[99])  # gold 250 clipped
    assert not px1[8:24].any() and not px1[24:32, :64].any()
    np.testing.assert_array_equal(_cell(px1, 8, 9), T.NUMBER_TILES[5])


def test_jit_equals_vmap_equals_loop(played, crafted):
    states = [played[0][-1], crafted]
    batch = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *states)
    batched = np.asarray(jax.jit(jax.vmap(render.render_all))(batch))
    assert batched.shape == (2, 8, 72, 20)
    for b, state in enumerate(states):
        all_seats = np.asarray(render_all(state))
        loop = np.stack([np.asarray(render_seat(state, s)) for s in range(C.NUM_PLAYERS)])
        eager = np.asarray(render.render_seat(state, 3))
        np.testing.assert_array_equal(all_seats, loop)
        np.testing.assert_array_equal(batched[b], all_seats)
        np.testing.assert_array_equal(eager, loop[3])


def test_seats_differ(played):
    frames = np.asarray(render_all(played[0][-1]))
    assert len({f.tobytes() for f in frames}) == C.NUM_PLAYERS


def test_no_unpacked_frame_in_the_renderer(crafted):
    """No intermediate of render_seat is as large as an unpacked frame (72 * 80 values)."""
    jaxpr = jax.make_jaxpr(render.render_seat)(crafted, 0)

    def sizes(jx):
        for eqn in jx.eqns:
            for v in eqn.outvars:
                yield int(np.prod(v.aval.shape))
            for param in eqn.params.values():
                for sub in param if isinstance(param, (tuple, list)) else [param]:
                    inner = getattr(sub, "jaxpr", sub)
                    if hasattr(inner, "eqns"):
                        yield from sizes(inner)

    assert max(sizes(jaxpr.jaxpr)) < packing.FRAME_H * packing.FRAME_W


def test_pixel_observations_through_step(pixel_env, played):
    env = pixel_env
    assert env.obs_shape == (72, 20) and env.obs_size == 582
    states, tss = played
    for state, ts in zip(states, tss):
        assert ts.observation.shape == (8, 72, 20) and ts.observation.dtype == jnp.uint8
        np.testing.assert_array_equal(np.asarray(ts.observation), np.asarray(render_all(state)))


def test_both_observations(played):
    env = jaxgame.make("autochess", obs="both", **CFG)
    assert env.obs_shape == {"vector": (582,), "pixels": (72, 20)} and env.obs_size == 582
    assert jaxgame.make("autochess").obs_shape == (582,)
    with pytest.raises(ValueError):
        jaxgame.make("autochess", obs="rgb")
    state = played[0][-1]
    # shapes through step without compiling it a second time
    _, ts = jax.eval_shape(env.step, state, jnp.zeros(8, jnp.int32))
    assert set(ts.observation) == {"vector", "pixels"}
    assert ts.observation["vector"].shape == (8, 582) and ts.observation["vector"].dtype == jnp.float32
    assert ts.observation["pixels"].shape == (8, 72, 20) and ts.observation["pixels"].dtype == jnp.uint8
    vector_env = jaxgame.make("autochess", **CFG)
    obs, vec = jax.jit(lambda s: (env.observe(s), vector_env.observe(s)))(state)
    np.testing.assert_array_equal(np.asarray(obs["pixels"]), np.asarray(render_all(state)))
    np.testing.assert_array_equal(np.asarray(obs["vector"]), np.asarray(vec))


def test_render_rgb(crafted):
    rgb = render.render_rgb(crafted, seat=0, scale=2)
    assert rgb.shape == (144, 160, 3) and rgb.dtype == np.uint8
    colours = {tuple(c) for c in rgb.reshape(-1, 3)}
    assert colours <= {tuple(c) for c in packing.PALETTE} and len(colours) == 4
    np.testing.assert_array_equal(rgb, packing.to_rgb(render_seat(crafted, 0), scale=2))
    with pytest.raises(ValueError):
        render.render_rgb(crafted, seat=8)


def test_replay_gif(tmp_path):
    hs = np.full(24, -1, np.int32)
    hs[[0, 1, 2, 9]] = [0, 5, 12, 21]
    ht = np.where(hs >= 0, 1, 0).astype(np.int32)
    ht[1] = 2
    as_ = np.full(24, -1, np.int32)
    as_[[0, 3, 4]] = [3, 20, 27]
    at = np.where(as_ >= 0, 2, 0).astype(np.int32)
    result, replay = jax.jit(combat.record_fight, static_argnames="max_ticks")(
        hs, ht, as_, at, jax.random.key(0), max_ticks=30
    )
    assert replay.x.shape == (31, 48)
    ticks = render.replay_frame_ticks(replay, every=4, ticks=int(result.ticks))
    assert ticks[0] == 0 and ticks[-1] == int(result.ticks)
    frames = render.render_replay_frames(replay, every=4, scale=2, ticks=int(result.ticks))
    assert frames.shape == (len(ticks), 120, 160, 3) and frames.dtype == np.uint8
    assert {tuple(c) for c in frames.reshape(-1, 3)} <= {tuple(c) for c in packing.PALETTE}
    # frame 0: every unit stands on its start cell (home at the bottom, away at the top)
    shades = render.replay_shades(replay, every=4, ticks=int(result.ticks))
    # home cell (row 0, col 0): grid x=0, y=2 -> drawn row 3 (pixel rows 30..37), 1-star species 0
    np.testing.assert_array_equal(shades[0, 30:38, 0:8], _unit(0, 1))
    np.testing.assert_array_equal(shades[0, 38, 0:8], 3)  # full hp bar
    away = _unit(3, 2)  # away cell (0, 0): x=7, y=3 -> drawn row 2, on a shade-1 background
    np.testing.assert_array_equal(shades[0, 20:28, 56:64], np.where(away == 0, 1, away))
    path = tmp_path / "fight.gif"
    n = render.replay_to_gif(path, replay, every=4, scale=2, ticks=int(result.ticks))
    assert n == len(ticks)
    with Image.open(path) as im:
        assert im.format == "GIF" and im.size == (160, 120) and im.n_frames == n
        im.seek(0)
        np.testing.assert_array_equal(np.asarray(im.convert("RGB")), frames[0])


def test_the_tile_ids_network_names_each_tile_the_renderer_drew(played, crafted):
    """``agents.core.tile_ids.tile_ids`` on rendered frames is the renderer's own tile map (identical atlas tiles
    named by their lowest index), except the two computed synergy-bar tiles; bytes that are no atlas tile are
    ``UNKNOWN_TILE``."""
    from agents.core import tile_ids as TI

    flat = render.RENDER_ATLAS_PACKED.reshape(render.NUM_RENDER_TILES, -1)
    lowest = np.array([next(j for j in range(len(flat)) if (flat[j] == flat[i]).all()) for i in range(len(flat))])
    assert (lowest != np.arange(len(flat))).any()  # the atlas has identical tiles: the lowest index names them
    states = [played[0][0], played[0][3], played[0][-1], crafted]
    frames = np.stack([np.asarray(render_all(s)) for s in states]).reshape(-1, 72, 20)
    maps = np.stack([np.asarray(render.seat_tilemap(s, seat)) for s in states for seat in range(C.NUM_PLAYERS)])
    got = np.asarray(jax.jit(TI.tile_ids)(frames)).reshape(-1, 9, 10)
    synergy = np.zeros((9, 10), bool)
    synergy[6, 8:] = True
    np.testing.assert_array_equal(got[:, ~synergy], lowest[maps][:, ~synergy])
    assert len(np.unique(got[:, ~synergy])) > 30  # many different tiles were drawn and named
    noise = np.random.default_rng(0).integers(0, 256, size=(4, 72, 20), dtype=np.uint8)
    assert (np.asarray(TI.tile_ids(noise)) == TI.UNKNOWN_TILE).all()
