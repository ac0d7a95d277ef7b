"""Combat: JAX vs plain-Python reference conformance, replays and hand-checked numbers.

Compiled functions are module-level and shared so the file pays for a few
compiles only (vmapped simulate, unbatched simulate, unbatched record, and
one crit-free variant for the symmetry test).
"""

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxgame import combat
from jaxgame import combat_reference as ref
from jaxgame import species as sp

SPECIES = {name: i for i, name in enumerate(sp.SPECIES_NAMES)}
FIELDS = ("winner", "home_survivors", "away_survivors", "home_damage", "away_damage", "ticks")
N_RANDOM = 256
MAX_TICKS = 400

sim_batch = jax.jit(jax.vmap(combat.simulate_fight))
sim_one = jax.jit(combat.simulate_fight)
rec_one = jax.jit(combat.record_fight)


# ---------------- board helpers ----------------
def empty_board():
    return np.full(24, -1, np.int32), np.zeros(24, np.int32)


def board(units):
    """units: {cell: (species name or id, stars)} -> (species int32[24], stars int32[24])."""
    s, k = empty_board()
    for cell, (spc, stars) in units.items():
        s[cell] = SPECIES[spc] if isinstance(spc, str) else spc
        k[cell] = stars
    return s, k


def random_board(rng, n, species_pool=None):
    s, k = empty_board()
    cells = rng.choice(24, n, replace=False)
    pool = np.arange(sp.NUM_SPECIES) if species_pool is None else species_pool
    s[cells] = rng.choice(pool, n)
    k[cells] = rng.choice([1, 2, 3], n, p=[0.6, 0.3, 0.1])
    return s, k


def random_fights(seed, n):
    """A mix of small, lopsided, large, empty and synergy-heavy boards."""
    rng = np.random.RandomState(seed)
    boards = []
    for i in range(n):
        kind = i % 10
        if kind < 5:
            sides = [random_board(rng, rng.randint(0, 9)) for _ in range(2)]
        elif kind == 5:  # lopsided
            sides = [random_board(rng, rng.randint(0, 2)), random_board(rng, rng.randint(4, 13))]
            if rng.rand() < 0.5:
                sides = sides[::-1]
        elif kind == 6:  # large
            sides = [random_board(rng, rng.randint(8, 17)) for _ in range(2)]
        else:  # synergy-heavy: species drawn from two types
            sides = []
            for _ in range(2):
                types = rng.choice(sp.NUM_TYPES, 2, replace=False)
                pool = np.flatnonzero(sp.SPECIES_TYPE_MASK[:, types].any(axis=1))
                sides.append(random_board(rng, rng.randint(3, 11), pool))
        boards.append((*sides[0], *sides[1]))
    arrays = [np.stack([b[j] for b in boards]) for j in range(4)]
    keys = jax.random.split(jax.random.PRNGKey(seed), n)
    return arrays, keys


def as_dict(result, i=None):
    return {f: int(np.asarray(getattr(result, f)) if i is None else np.asarray(getattr(result, f))[i]) for f in FIELDS}


def no_crit_key(fighters, tick=0):
    for k in range(1000):
        key = jax.random.PRNGKey(k)
        u = np.asarray(combat.tick_uniforms(key, tick))
        if all(u[i] >= np.float32(0.1) for i in fighters):
            return key
    raise AssertionError


def crit_key(fighter, others=(), tick=0):
    for k in range(1000):
        key = jax.random.PRNGKey(k)
        u = np.asarray(combat.tick_uniforms(key, tick))
        if u[fighter] < np.float32(0.1) and all(u[i] >= np.float32(0.1) for i in others):
            return key
    raise AssertionError


@functools.lru_cache(maxsize=None)
def random_batch():
    arrays, keys = random_fights(1234, N_RANDOM)
    return arrays, keys, jax.tree.map(np.asarray, sim_batch(*arrays, keys))


# ---------------- tables ----------------
def test_interval_tables():
    for s in range(sp.NUM_SPECIES):
        speed = int(sp.SPECIES_SPEED[s])
        assert combat.ATTACK_INTERVAL_MS[s] == round(1000 / (0.4 + 0.007 * speed))
        assert combat.MOVE_INTERVAL_MS[s] == 40000 // speed
    assert combat.ATTACK_INTERVAL_MS[SPECIES["rattata"]] == 1220  # speed 60


def test_reference_draws_are_tick_uniforms():
    key = jax.random.PRNGKey(7)
    d = ref.draws(key, 50)
    assert d.shape == (50, 48) and d.dtype == np.float32
    for t in (0, 1, 17, 49):
        np.testing.assert_array_equal(d[t], np.asarray(combat.tick_uniforms(key, t)))
    assert not np.array_equal(d[0], d[1])


def test_division_helpers_are_exact():
    # special damage: every potency power * (100 + ap) up to the asserted bound, every spdef 0..10
    p = np.arange(combat._MAX_POTENCY + 1, dtype=np.int32)
    for spdef in range(11):
        d = 100 + 5 * spdef
        got = jax.jit(combat._div_spell)(p.astype(np.float32), np.float32(1.0) / np.float32(d))
        np.testing.assert_array_equal(np.asarray(got), p // d)
    # generic division: random and near-multiple numerators below 2**24
    rng = np.random.RandomState(0)
    b = rng.randint(1, 7000, 200_000).astype(np.int32)
    q = rng.randint(0, (1 << 24) // b).astype(np.int32)
    a = np.concatenate([q * b, np.maximum(q * b - 1, 0), rng.randint(0, 1 << 24, 200_000)]).astype(np.int32)
    bb = np.concatenate([b, b, b])
    np.testing.assert_array_equal(np.asarray(jax.jit(combat._div)(a, bb)), a // bb)


# ---------------- conformance ----------------
def test_conformance_with_reference():
    arrays, keys, res = random_batch()
    agg = {"casts": np.zeros(5, int), "crits": 0, "moves": 0, "kills": 0}
    mismatches = []
    for i in range(N_RANDOM):
        expected, stats = ref._run(*(a[i] for a in arrays), keys[i], MAX_TICKS)
        for name in ("casts", "crits", "moves", "kills"):
            agg[name] += np.asarray(stats[name])
        got = as_dict(res, i)
        if got != expected:
            mismatches.append((i, expected, got))
    assert not mismatches, mismatches[:5]
    # the sample exercises every rule path
    assert np.all(agg["casts"] > 0), agg
    assert agg["crits"] > 0 and agg["moves"] > 0 and agg["kills"] > 0
    winners = np.bincount(res.winner, minlength=3)
    assert np.all(winners > 0), winners
    assert np.any(res.ticks == 0) and np.any(res.ticks == MAX_TICKS)
    # the batch runs in 256 lanes, then the fights still going in 128, then 64: the timeouts run in all three
    assert combat.lane_stages(N_RANDOM) == (256, 128, 64)


def test_conformance_short_fights_and_typed_keys():
    """Timeout draws at a small max_ticks, jax.random.key keys, on the reference too."""
    arrays, _ = random_fights(99, 24)
    keys = jax.random.split(jax.random.key(5), 24)
    fight = jax.jit(jax.vmap(functools.partial(combat.simulate_fight, max_ticks=40)))
    res = jax.tree.map(np.asarray, fight(*arrays, keys))
    for i in range(24):
        assert as_dict(res, i) == ref.reference_fight(*(a[i] for a in arrays), keys[i], max_ticks=40)
    assert np.any((res.ticks == 40) & (res.winner == 2))


def test_jit_matches_vmap_and_is_deterministic():
    arrays, keys, res = random_batch()
    for i in range(6):
        one = as_dict(sim_one(*(a[i] for a in arrays), keys[i]))
        assert one == as_dict(res, i)
        assert one == as_dict(sim_one(*(a[i] for a in arrays), keys[i]))


# ---------------- replays ----------------
def check_replay(result, replay, max_ticks=MAX_TICKS):
    x, y, hp, alive = (np.asarray(v) for v in (replay.x, replay.y, replay.hp, replay.alive))
    max_hp, team = np.asarray(replay.max_hp), np.asarray(replay.team)
    assert x.shape == (max_ticks + 1, 48)
    assert np.all(hp <= max_hp) and np.all(hp >= 0)
    assert np.all(hp[alive] > 0) and np.all(hp[~alive] == 0)
    assert not np.any(alive[1:] & ~alive[:-1]), "dead units stay dead"
    assert np.all((x >= 0) & (x < 8) & (y >= 0) & (y < 6))
    for f in range(max_ticks + 1):
        cells = y[f][alive[f]] * 8 + x[f][alive[f]]
        assert len(set(cells.tolist())) == len(cells), f"two units share a cell at frame {f}"
    step = np.maximum(np.abs(np.diff(x, axis=0)), np.abs(np.diff(y, axis=0)))
    assert np.all(step[alive[1:]] <= 1)
    t = int(result.ticks)
    for f in range(t, max_ticks + 1):  # frames after the end repeat the final state
        np.testing.assert_array_equal(hp[f], hp[t])
        np.testing.assert_array_equal(alive[f], alive[t])
    assert alive[t][team == 0].sum() == result.home_survivors
    assert alive[t][team == 1].sum() == result.away_survivors
    np.testing.assert_array_equal(np.asarray(replay.species) >= 0, alive[0])


def recorded_events(replay) -> list[tuple]:
    """A replay's actions as the reference's ``events``: (tick, fighter, kind, target fighter), tick then fighter."""
    action, target = np.asarray(replay.action), np.asarray(replay.target)
    ticks, fighters = np.nonzero(action)
    return [(int(t), int(u), int(action[t, u]), int(target[t, u])) for t, u in zip(ticks, fighters)]


def test_record_matches_simulate_and_replay_invariants():
    arrays, keys, res = random_batch()
    kinds = set()
    for i in range(10):
        result, replay = rec_one(*(a[i] for a in arrays), keys[i])
        assert as_dict(result) == as_dict(res, i)
        check_replay(result, replay)
        # every basic attack and cast with its target, as the plain-Python reference makes them
        _, stats = ref._run(*(a[i] for a in arrays), keys[i], MAX_TICKS)
        events = recorded_events(replay)
        assert events == stats["events"]
        kinds |= {kind for _, _, kind, _ in events}
        mana, max_mana, alive = (np.asarray(v) for v in (replay.mana, replay.max_mana, replay.alive))
        assert (mana >= 0).all() and (mana[~alive] == 0).all()
        for t, u, kind, _ in events:  # a cast spends a full bar of mana
            assert (mana[t, u] >= max_mana[u]) == (kind == combat.ACT_CAST)
        assert (np.asarray(replay.target)[np.asarray(replay.action) == combat.ACT_NONE] == -1).all()
    assert kinds == {combat.ACT_BASIC, combat.ACT_CAST}


# ---------------- hand-checked numbers ----------------
# home cell 3 = fighter 3 at (x=3, y=2); away cell 3 = fighter 27 at (x=4, y=3): diagonal neighbours.
def first_tick_hp(home, away, key):
    result, replay = rec_one(*board(home), *board(away), key)
    check_replay(result, replay)
    return np.asarray(replay.hp[1]), np.asarray(replay.max_hp)


def test_basic_attack_damage_formula():
    key = no_crit_key([3, 27])
    hp, max_hp = first_tick_hp({3: ("rattata", 1)}, {3: ("machop", 1)}, key)
    assert max_hp[3] == 450 and max_hp[27] == 520
    assert max_hp[27] - hp[27] == 45 * 100 // (100 + 5 * 3)  # rattata atk 45 vs machop def 3 -> 39
    assert max_hp[3] - hp[3] == 48 * 100 // (100 + 5 * 2)  # machop atk 48 vs rattata def 2 -> 43


def test_crit_doubles_attack():
    key = crit_key(3, others=[27])
    hp, max_hp = first_tick_hp({3: ("rattata", 1)}, {3: ("machop", 1)}, key)
    assert max_hp[27] - hp[27] == 2 * 45 * 100 // 115  # 78
    assert max_hp[3] - hp[3] == 43


@pytest.mark.parametrize("stars", [1, 2, 3])
def test_stars_scale_hp_and_attack(stars):
    key = no_crit_key([3, 27])
    hp, max_hp = first_tick_hp({3: ("rattata", stars)}, {3: ("onix", 1)}, key)
    assert max_hp[3] == 450 * [0, 10, 18, 32][stars] // 10
    atk = 45 * [0, 1, 2, 4][stars]
    assert max_hp[27] - hp[27] == atk * 100 // (100 + 5 * 8)  # onix def 8


def test_fighting_block():
    key = no_crit_key([3, 27])
    # machop + poliwhirl: 2 fighting species -> block 4 for both; poliwhirl far back and out of range
    hp, max_hp = first_tick_hp({3: ("rattata", 1)}, {3: ("machop", 1), 23: ("poliwhirl", 1)}, key)
    assert max_hp[27] - hp[27] == 39 - 4


def test_normal_shield_absorbs_first():
    key = no_crit_key([3, 27])
    # away: machop, rattata, abra = 3 normal species -> 30 shield each; only machop is in range at tick 0
    away = {3: ("machop", 1), 16: ("abra", 1), 23: ("rattata", 1)}
    hp, max_hp = first_tick_hp({3: ("rattata", 1)}, away, key)
    assert max_hp[27] - hp[27] == 39 - 30
    assert hp[24 + 16] == max_hp[24 + 16] and hp[24 + 23] == max_hp[24 + 23]


def test_steel_true_damage():
    key = no_crit_key([3, 27])
    # scyther + magnemite: 2 steel species -> +20% atk true damage; magnemite at the back is out of range
    hp, max_hp = first_tick_hp({3: ("scyther", 1), 20: ("magnemite", 1)}, {3: ("rattata", 1)}, key)
    assert max_hp[27] - hp[27] == 66 * 100 // 110 + 66 * 20 // 100  # 60 + 13


def test_nuke_damage_and_casting():
    # lone abra (range 3, nuke power 110, 70 mana) shoots a lone machop (def 3, spdef 1) walking at it
    home, away = board({20: ("abra", 1)}), board({20: ("machop", 1)})
    result, replay = rec_one(*home, *away, jax.random.PRNGKey(11))
    check_replay(result, replay)
    hp = np.asarray(replay.hp)[:, 24 + 20]
    drops = set((hp[:-1] - hp[1:])[hp[1:] > 0].tolist()) - {0}
    basic, crit, nuke = 40 * 100 // 115, 80 * 100 // 115, 110 * 100 // (100 + 5 * 1)
    assert drops <= {basic, crit, nuke} and nuke in drops and basic in drops, drops


def test_units_walk_to_each_other():
    # opposite back corners: home cell 16 -> (0, 0), away cell 16 -> (7, 5)
    home, away = board({16: ("onix", 3)}), board({16: ("rattata", 1)})
    result, replay = rec_one(*home, *away, jax.random.PRNGKey(3))
    check_replay(result, replay)
    x, y = np.asarray(replay.x), np.asarray(replay.y)
    assert (x[0, 16], y[0, 16], x[0, 40], y[0, 40]) == (0, 0, 7, 5)
    assert int(result.winner) == 0 and 0 < int(result.ticks) < MAX_TICKS
    assert as_dict(result) == ref.reference_fight(*home, *away, jax.random.PRNGKey(3))


# ---------------- edge cases ----------------
def test_empty_boards():
    e = empty_board()
    one = board({5: ("abra", 2), 9: ("onix", 1)})
    key = jax.random.PRNGKey(0)
    assert as_dict(sim_one(*e, *e, key)) == dict(
        winner=2, home_survivors=0, away_survivors=0, home_damage=0, away_damage=0, ticks=0
    )
    assert as_dict(sim_one(*one, *e, key)) == dict(
        winner=0, home_survivors=2, away_survivors=0, home_damage=0, away_damage=0, ticks=0
    )
    assert as_dict(sim_one(*e, *one, key)) == dict(
        winner=1, home_survivors=0, away_survivors=2, home_damage=0, away_damage=0, ticks=0
    )
    assert ref.reference_fight(*one, *e, key) == as_dict(sim_one(*one, *e, key))
    # a species with 0 stars is no unit
    ghost = (one[0], np.zeros(24, np.int32))
    assert as_dict(sim_one(*ghost, *one, key))["winner"] == 1


def test_symmetric_boards_draw_without_crits(monkeypatch):
    """Mirrored 1v1 of every species with crits disabled: identical units, identical fate."""
    monkeypatch.setattr(combat, "tick_uniforms", lambda key, tick: jnp.ones(48, jnp.float32))
    n = sp.NUM_SPECIES
    hs, hk = np.full((n, 24), -1, np.int32), np.zeros((n, 24), np.int32)
    hs[:, 3], hk[:, 3] = np.arange(n), 1 + np.arange(n) % 3
    fight = jax.jit(jax.vmap(combat.simulate_fight))
    res = jax.tree.map(np.asarray, fight(hs, hk, hs, hk, jax.random.split(jax.random.PRNGKey(0), n)))
    assert np.all(res.winner == 2)
    np.testing.assert_array_equal(res.home_damage, res.away_damage)
    np.testing.assert_array_equal(res.home_survivors, res.away_survivors)
    # most die together (mutual wipe-out) rather than time out
    assert np.sum((res.ticks < MAX_TICKS) & (res.home_survivors == 0)) > n // 2


# ---------------- compact units and hashed draws ----------------
def test_unit_crits_are_tick_uniforms_draws(monkeypatch):
    """The crit of unit u is tick_uniforms(key, t)[index[u]] < 0.1: hashed per unit, and via tick_uniforms."""
    keys = jax.random.split(jax.random.key(3), 64)
    index = np.stack([np.random.RandomState(t).permutation(48)[:18] for t in range(64)], axis=1)  # [18, 64]
    crits = jax.jit(combat._unit_crits)
    for t in (0, 9, 399, 1999):
        expected = np.stack([np.asarray(combat.tick_uniforms(k, t))[index[:, b]] for b, k in enumerate(keys)], 1) < 0.1
        np.testing.assert_array_equal(np.asarray(crits(keys, t, index)), expected)
        assert expected.any() and not expected.all()
    per_fight = np.arange(64, dtype=np.int32) * 7  # every fight at its own tick (lanes)
    expected = np.stack([np.asarray(combat.tick_uniforms(k, per_fight[b]))[index[:, b]] for b, k in enumerate(keys)], 1)
    np.testing.assert_array_equal(np.asarray(crits(keys, per_fight, index)), expected < 0.1)
    tick_uniforms = combat.tick_uniforms
    monkeypatch.setattr(combat, "tick_uniforms", lambda key, tick: tick_uniforms(key, tick))  # the generic path
    generic = jax.jit(combat._unit_crits)
    np.testing.assert_array_equal(np.asarray(generic(keys, 5, index)), np.asarray(crits(keys, 5, index)))
    np.testing.assert_array_equal(np.asarray(generic(keys, per_fight, index)), expected < 0.1)


def test_max_level_units_match_all_cells():
    """Boards of at most MAX_LEVEL units a side: the compact simulation (as the game runs it) gives the
    results of the 24-cell one, which the reference checks."""
    arrays, keys, res = random_batch()
    hs, hk, as_, ak = arrays
    units = np.maximum(np.sum((hs >= 0) & (hk > 0), axis=1), np.sum((as_ >= 0) & (ak > 0), axis=1))
    small = np.flatnonzero(units <= combat.C.MAX_LEVEL)
    assert len(small) > 100
    fight = jax.jit(jax.vmap(functools.partial(combat.simulate_fight, max_units=combat.C.MAX_LEVEL)))
    got = jax.tree.map(np.asarray, fight(*(a[small] for a in arrays), keys[small]))
    for field in FIELDS:
        np.testing.assert_array_equal(getattr(got, field), getattr(res, field)[small], err_msg=field)


def test_fight_lanes_do_not_change_outcomes():
    """simulate_fights with fewer lanes than fights (a queue, as the game runs it): every fight has the
    result of the one-fight-per-lane simulation, empty boards (decided at tick 0) included."""
    arrays, keys, res = random_batch()
    hs, hk, as_, ak = arrays
    units = np.maximum(np.sum((hs >= 0) & (hk > 0), axis=1), np.sum((as_ >= 0) & (ak > 0), axis=1))
    small = np.flatnonzero(units <= combat.C.MAX_LEVEL)[:120]
    boards = [a[small] for a in arrays]
    empty = np.arange(0, len(small), 5)  # every 5th fight: no units at all
    for b, value in zip(boards, (-1, 0, -1, 0)):
        b[empty] = value
    expected = {field: getattr(res, field)[small] for field in FIELDS}
    for field, value in zip(FIELDS, (2, 0, 0, 0, 0, 0)):
        expected[field][empty] = value
    # 13 lanes: a lane runs ~8 fights one after the other; 128 lanes for the fights twice over: a queue, then
    # the busy lanes packed into 64 (combat.lane_stages) while the longest fights go on
    assert combat.lane_stages(13) == (13,) and combat.lane_stages(128) == (128, 64)
    for lanes, copies in ((13, 1), (128, 2)):
        fight = jax.jit(
            functools.partial(combat.simulate_fights, max_ticks=MAX_TICKS, max_units=combat.C.MAX_LEVEL, lanes=lanes)
        )
        got = jax.tree.map(
            np.asarray, fight(*(np.concatenate([b] * copies) for b in boards), np.concatenate([keys[small]] * copies))
        )
        for field in FIELDS:
            np.testing.assert_array_equal(getattr(got, field), np.tile(expected[field], copies), err_msg=field)
        assert np.any(got.ticks == MAX_TICKS) and np.all(got.ticks[empty] == 0)


def test_the_games_fights_on_a_cpu_queue_for_at_most_cpu_max_lanes(monkeypatch):
    """``rounds.run_fights`` gives a batch of games ``LANES_PER_GAME`` lanes a game, but at most ``CPU_MAX_LANES``
    on a CPU (``platform_dependent``): the same results whether the cap applies or not, and a capped program runs
    a loop of that many lanes."""
    from jaxgame import rounds

    arrays, keys, res = random_batch()
    units = np.maximum(*(np.sum((arrays[i] >= 0) & (arrays[i + 1] > 0), axis=1) for i in (0, 2)))
    small = np.flatnonzero(units <= combat.C.MAX_LEVEL)[:48]  # 6 games of 8 fights: 24 lanes uncapped
    slots = lambda a: jnp.asarray(a[small].reshape(6, 8, *a.shape[1:]))  # noqa: E731
    plan = rounds.FightPlan(
        home_species=slots(arrays[0]),
        home_stars=slots(arrays[1]),
        away_species=slots(arrays[2]),
        away_stars=slots(arrays[3]),
        active=jnp.ones((6, 8), bool),
        opponent=jnp.full((6, 8), -1, jnp.int32),
        ghost_source=jnp.full((6, 8), -1, jnp.int32),
        is_pve=jnp.zeros(6, bool),
        key=jax.random.split(jax.random.key(3), 6),
    )
    results = {}
    for cap in (1000, 7):
        monkeypatch.setattr(rounds, "CPU_MAX_LANES", cap)
        fights = jax.jit(lambda p: rounds.run_fights(p, MAX_TICKS))
        results[cap] = jax.tree.map(np.asarray, fights(plan))
        widths = {int(w) for w in re.findall(r"s32\[18,(\d+)\]", fights.lower(plan).compile().as_text())}
        assert max(widths & {24, 7}) == min(cap, 24), widths
    for field in FIELDS:
        np.testing.assert_array_equal(getattr(results[7], field), getattr(results[1000], field), err_msg=field)
    assert np.count_nonzero(results[7].ticks) > 24  # more fights than lanes: the capped loop queued them


@jax.jit
def _ticks_with_skips(f, s0, keys):
    """Every tick's start state (``[T + 1, 2K, B]`` fields) of B fights ticked one by one for MAX_TICKS ticks,
    with the idle-tick count at each tick (int32[T, B]) and the state :func:`combat.skip_ticks` jumps to."""

    def body(carry, t):
        s, stuck = carry
        idle = combat.idle_ticks(f, s, jnp.full(s.hp.shape[1:], t), MAX_TICKS, stuck)
        skipped = combat.skip_ticks(f, s, t, idle)
        w = combat._tick_record(f, s, t, keys, t)
        return (combat._end_tick(w), combat.stuck_units(w)), (s, idle, skipped)

    stuck0 = jnp.zeros_like(s0.alive)
    _, (states, idle, skipped) = jax.lax.scan(body, (s0, stuck0), jnp.arange(MAX_TICKS, dtype=jnp.int32))
    return states, idle, skipped


def test_skipped_ticks_are_idle_and_skip_to_the_same_state():
    """The fight loop jumps over the ticks ``idle_ticks`` counts with ``skip_ticks``: on random fights at every
    tick, those ticks move, damage and stun nobody, the jump lands on the state the ticks themselves reach
    (targets aside, which are re-picked before any use), and one more tick from there equals the real one."""
    arrays, keys = random_fights(77, 64)
    f, s0 = combat.init_fights(*arrays, 9)
    keys = combat._typed_keys(keys)
    states, idle, skipped = jax.tree.map(np.asarray, _ticks_with_skips(f, s0, keys))
    t_idx, b_idx = np.nonzero(idle > 0)
    assert idle.sum() > MAX_TICKS * 64 // 4, "the fights should have many idle ticks to skip"
    fields = [n for n in ("x", "y", "hp", "shield", "mana", "atk", "atk_cd", "move_cd", "stun", "alive")]
    landed = t_idx + idle[t_idx, b_idx]
    inside = landed < MAX_TICKS  # the trajectory holds the landing tick's start state
    for name in fields:
        real = getattr(states, name)[landed[inside], :, b_idx[inside]]
        jumped = getattr(skipped, name)[t_idx[inside], :, b_idx[inside]]
        np.testing.assert_array_equal(jumped, real, err_msg=name)
    for name in ("home_damage", "away_damage"):
        np.testing.assert_array_equal(
            getattr(skipped, name)[t_idx[inside], b_idx[inside]],
            getattr(states, name)[landed[inside], b_idx[inside]],
            err_msg=name,
        )
    # one real tick from each landing state equals the trajectory's next state, stored targets included
    sample = np.flatnonzero(inside & (landed + 1 < MAX_TICKS))[:256]
    t_s, b_s, l_s = t_idx[sample], b_idx[sample], landed[sample]

    def take(tree, ts, bs):
        return jax.tree.map(lambda a: jnp.asarray(a[ts, ..., bs]).T if a.ndim == 3 else jnp.asarray(a[ts, bs]), tree)

    f_s = jax.tree.map(lambda a: jnp.asarray(np.asarray(a)[:, b_s]), f)
    after = jax.jit(combat.tick)(f_s, take(skipped, t_s, b_s), jnp.asarray(l_s, jnp.int32), keys[b_s], jnp.int32(0))
    expected = take(states, l_s + 1, b_s)
    for name in fields + ["target"]:
        np.testing.assert_array_equal(
            np.asarray(getattr(after, name)), np.asarray(getattr(expected, name)), err_msg=name
        )
