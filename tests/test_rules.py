"""One test (or a few) per rule: shop odds, XP, merges, income, streaks,
selling, action legality, pairing and placement."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxgame import actions as A
from jaxgame import combat, economy, game, rounds, shop, units
from jaxgame import constants as C
from jaxgame import species as sp
from jaxgame.config import GameConfig
from jaxgame.state import GameState

CONFIG = GameConfig()
# compiled once and shared: eager dispatch of these would recompile per call
apply_action = jax.jit(A.apply_action)
legal_mask = jax.jit(A.legal_mask)


def seat(state: GameState, i: int):
    return jax.tree_util.tree_map(lambda x: x[i], state.players)


def fresh_player(**fields):
    state = game.new_game(jax.random.key(0), CONFIG)
    return seat(state, 0).replace(**fields)


# ---------------- shop odds ----------------
@pytest.mark.parametrize("level", range(1, 10))
def test_species_weights_follow_level_odds(level):
    w = np.asarray(shop.species_weights(shop.initial_pool(), jnp.int32(level)))
    by_rarity = np.bincount(sp.SPECIES_RARITY, weights=w, minlength=5)
    np.testing.assert_allclose(by_rarity * 100, shop.SHOP_ODDS[level], atol=1e-4)
    # within a rarity, proportional to copies left (all equal in a full pool)
    for r in range(5):
        ws = w[sp.SPECIES_RARITY == r]
        np.testing.assert_allclose(ws, ws.mean(), atol=1e-6)


def test_species_weights_drop_exhausted_rarity_and_follow_copies():
    pool = np.array(sp.SPECIES_POOL_COPIES)
    pool[sp.SPECIES_RARITY == 1] = 0  # no uncommons left
    pool[0] = 1  # one rattata left among commons
    w = np.asarray(shop.species_weights(jnp.asarray(pool), jnp.int32(3)))  # odds 70/30
    assert np.all(w[sp.SPECIES_RARITY == 1] == 0)
    np.testing.assert_allclose(w.sum(), 1.0, atol=1e-6)
    commons = pool[:8]
    np.testing.assert_allclose(w[:8], commons / commons.sum(), atol=1e-6)


def test_empty_pool_gives_empty_shop():
    shop_, pool = shop.draw_shop(jnp.zeros(sp.NUM_SPECIES, jnp.int32), jnp.int32(5), jax.random.key(0))
    assert np.all(np.asarray(shop_) == -1) and np.all(np.asarray(pool) == 0)


def test_shop_draw_empirical_rarity_frequencies():
    keys = jax.random.split(jax.random.key(1), 3000)
    shops, _ = jax.vmap(lambda k: shop.draw_shop(shop.initial_pool(), jnp.int32(7), k))(keys)
    rar = sp.SPECIES_RARITY[np.asarray(shops).reshape(-1)]
    freq = np.bincount(rar, minlength=5) / rar.size
    np.testing.assert_allclose(freq * 100, shop.SHOP_ODDS[7], atol=1.5)


def test_pick_species_draws_only_positive_weights_in_proportion():
    weights = np.zeros(sp.NUM_SPECIES, np.float32)
    weights[[2, 3, 11, 27]] = [0.1, 0.4, 0.2, 0.3]
    grid = (np.arange(10_000) + 0.5) / 10_000  # evenly spread uniforms: frequencies = weights up to 1e-4
    picks = np.asarray(jax.vmap(lambda u: shop.pick_species(jnp.asarray(weights), u))(jnp.asarray(grid, jnp.float32)))
    np.testing.assert_allclose(np.bincount(picks, minlength=sp.NUM_SPECIES) / grid.size, weights, atol=2e-4)
    # the extremes of [0, 1): the first and the last species that can be drawn, never a zero-weight one
    largest_below_one = np.nextafter(np.float32(1), np.float32(0))
    assert int(shop.pick_species(jnp.asarray(weights), jnp.float32(0))) == 2
    assert int(shop.pick_species(jnp.asarray(weights), jnp.float32(largest_below_one))) == 27
    weights[27] = 0.0  # trailing zeros after the last drawable species
    assert int(shop.pick_species(jnp.asarray(weights), jnp.float32(largest_below_one))) == 11
    assert int(shop.pick_species(jnp.zeros(sp.NUM_SPECIES), jnp.float32(0.5))) == -1


def test_shop_draws_never_take_a_missing_copy():
    # a scarce pool: a shop of 6 takes every copy there is, one slot after another
    pool = np.zeros(sp.NUM_SPECIES, np.int32)
    pool[[0, 5, 9]] = [2, 1, 3]
    shops, left = jax.vmap(lambda k: shop.draw_shop(jnp.asarray(pool), jnp.int32(4), k))(
        jax.random.split(jax.random.key(3), 200)
    )
    assert np.all(np.asarray(left) == 0)
    np.testing.assert_array_equal(np.sort(np.asarray(shops), axis=1), np.tile([0, 0, 5, 9, 9, 9], (200, 1)))


def test_draw_takes_copies_from_pool():
    shop_, pool = shop.draw_shop(shop.initial_pool(), jnp.int32(9), jax.random.key(2))
    back = shop.return_to_pool(pool, shop_)
    np.testing.assert_array_equal(back, sp.SPECIES_POOL_COPIES)


# ---------------- XP and levels ----------------
def test_level_thresholds():
    # from level 2: 2 XP -> 3, then 6 -> 4, 10 -> 5, 22 -> 6, 34 -> 7, 52 -> 8, 72 -> 9
    level, xp = jnp.int32(2), jnp.int32(0)
    for need, expected in zip([2, 6, 10, 22, 34, 52, 72], range(3, 10)):
        level, xp = economy.add_xp(level, xp, need - 1)
        assert int(level) == expected - 1
        level, xp = economy.add_xp(level, xp, 1)
        assert int(level) == expected and int(xp) == 0
    level, xp = economy.add_xp(level, xp, 100)
    assert int(level) == 9 and int(xp) == 0


def test_xp_overflow_carries_and_multi_level():
    level, xp = economy.add_xp(jnp.int32(2), jnp.int32(0), 10)  # 2 -> 3 (2), 3 -> 4 (6), 2 left
    assert (int(level), int(xp)) == (4, 2)


def test_buy_xp_action():
    p = fresh_player(gold=jnp.int32(9), level=jnp.int32(3), xp=jnp.int32(3))
    p2, _, _ = apply_action(p, jnp.int32(C.ACTION_BUY_XP))
    assert (int(p2.gold), int(p2.level), int(p2.xp)) == (5, 4, 1)
    poor = fresh_player(gold=jnp.int32(3))
    assert not bool(legal_mask(poor)[C.ACTION_BUY_XP])
    maxed = fresh_player(gold=jnp.int32(50), level=jnp.int32(9))
    assert not bool(legal_mask(maxed)[C.ACTION_BUY_XP])


# ---------------- income and streaks ----------------
@pytest.mark.parametrize(
    "gold,streak,expected",
    [(0, 0, 5), (9, 0, 5), (10, 0, 6), (49, 0, 9), (50, 0, 10), (120, 0, 10), (0, 3, 8), (0, -2, 7), (60, -9, 15)],
)
def test_round_income(gold, streak, expected):
    assert int(economy.round_income(jnp.int32(gold), jnp.int32(streak))) == expected


def test_streak_update():
    def f(s, w, lost):
        return int(economy.update_streak(jnp.int32(s), jnp.bool_(w), jnp.bool_(lost)))

    assert f(2, True, False) == 3 and f(-2, True, False) == 1
    assert f(2, False, True) == -1 and f(-2, False, True) == -3
    assert f(4, False, False) == 0


# ---------------- units: buying, merging, selling, moving ----------------
def give(p, slot, species, star):
    return p.replace(species=p.species.at[slot].set(species), stars=p.stars.at[slot].set(star))


def test_three_copies_merge_with_board_priority():
    p = fresh_player(gold=jnp.int32(10), shop=jnp.array([5, -1, -1, -1, -1, -1]))
    p = give(give(p, 2, 5, 1), C.BENCH_SIZE + 7, 5, 1)  # one on the bench, one on the board
    p2, _, _ = apply_action(p, jnp.int32(C.ACTION_BUY + 0))
    sp_, st = np.asarray(p2.species), np.asarray(p2.stars)
    assert np.sum(sp_ == 5) == 1
    assert sp_[C.BENCH_SIZE + 7] == 5 and st[C.BENCH_SIZE + 7] == 2  # merged where the board copy was
    assert int(p2.gold) == 10 - 1


def test_cascading_merge_to_three_stars():
    s = 3
    p = fresh_player(gold=jnp.int32(10), shop=jnp.array([s, -1, -1, -1, -1, -1]))
    p = give(give(p, 0, s, 2), 1, s, 2)
    p = give(give(p, 2, s, 1), 3, s, 1)
    p2, _, _ = apply_action(p, jnp.int32(C.ACTION_BUY))
    sp_, st = np.asarray(p2.species), np.asarray(p2.stars)
    assert np.sum(sp_ == s) == 1 and st[sp_ == s][0] == 3
    assert np.sum(st > 0) == 1


def test_buy_with_full_bench_only_when_it_merges():
    p = fresh_player(gold=jnp.int32(10), shop=jnp.array([6, 7, -1, -1, -1, -1]))
    for b in range(C.BENCH_SIZE):
        p = give(p, b, 6 if b < 2 else 0, 1 if b < 2 else 2)
    mask = np.asarray(legal_mask(p))
    assert mask[C.ACTION_BUY + 0] and not mask[C.ACTION_BUY + 1]
    p2, _, _ = apply_action(p, jnp.int32(C.ACTION_BUY + 0))
    assert np.sum(np.asarray(p2.species) == 6) == 1 and int(p2.stars[0]) == 2


def test_cannot_buy_without_gold():
    p = fresh_player(gold=jnp.int32(2), shop=jnp.array([25, 0, -1, -1, -1, -1]))  # mewtwo costs 5
    mask = np.asarray(legal_mask(p))
    assert not mask[C.ACTION_BUY] and mask[C.ACTION_BUY + 1] and not mask[C.ACTION_BUY + 2]


@pytest.mark.parametrize("species,star", [(0, 1), (9, 2), (26, 3)])
def test_sell_price_and_pool_return(species, star):
    p = give(fresh_player(gold=jnp.int32(0)), C.BENCH_SIZE + 3, species, star)
    p2, delta, _ = apply_action(p, jnp.int32(C.ACTION_SELL + C.BENCH_SIZE + 3))
    assert int(p2.gold) == sp.SPECIES_COST[species] * star
    assert int(delta[species]) == [0, 1, 3, 9][star] and int(delta.sum()) == [0, 1, 3, 9][star]
    assert int(p2.species[C.BENCH_SIZE + 3]) == -1


def test_place_respects_level_cap_and_swaps():
    p = fresh_player(level=jnp.int32(1))
    p = give(give(p, 0, 1, 1), 1, 2, 1)

    def place(b, c):
        return jnp.int32(C.ACTION_PLACE + b * C.BOARD_CELLS + c)

    p, _, _ = apply_action(p, place(0, 5))
    assert int(p.species[C.BENCH_SIZE + 5]) == 1
    mask = np.asarray(legal_mask(p))
    assert not mask[place(1, 6)]  # board full at level 1
    assert mask[place(1, 5)]  # swap is fine
    p, _, _ = apply_action(p, place(1, 5))
    assert int(p.species[C.BENCH_SIZE + 5]) == 2 and int(p.species[1]) == 1
    p, _, _ = apply_action(p, jnp.int32(C.ACTION_RECALL + 5))
    assert int(p.species[0]) == 2 and units.board_count(p.species) == 0


def test_reroll_costs_one_and_returns_shop():
    p = fresh_player(gold=jnp.int32(3))
    shop_before = np.asarray(p.shop)
    p2, delta, refill = apply_action(p, jnp.int32(C.ACTION_REROLL))
    assert int(p2.gold) == 2 and bool(refill) and np.all(np.asarray(p2.shop) == -1)
    assert int(delta.sum()) == np.sum(shop_before >= 0)


@pytest.mark.xdist_group("default_step")  # one worker compiles the default env's step (conftest.jit_step)
def test_lock_toggles_and_keeps_shop_next_round(env, jit_step):
    state, _ = env.reset(jax.random.key(3))
    actions = jnp.zeros(8, jnp.int32).at[0].set(C.ACTION_LOCK)
    shop0 = np.asarray(state.players.shop)
    state, ts = jit_step(state, actions)
    assert bool(state.players.shop_locked[0])
    for _ in range(CONFIG.steps_per_round - 1):
        state, ts = jit_step(state, jnp.zeros(8, jnp.int32))
    assert int(state.round) == 2
    np.testing.assert_array_equal(np.asarray(state.players.shop[0]), shop0[0])
    assert not bool(state.players.shop_locked[0])


# ---------------- legality ----------------
def test_illegal_action_is_a_noop_and_dead_or_ended_seats_only_noop():
    p = fresh_player(gold=jnp.int32(0))
    illegal = jnp.int32(C.ACTION_SELL + 4)  # empty slot
    p2, delta, refill = apply_action(p, illegal)
    for a, b in zip(jax.tree_util.tree_leaves(p), jax.tree_util.tree_leaves(p2)):
        np.testing.assert_array_equal(a, b)
    assert int(delta.sum()) == 0 and not bool(refill)
    for dead in [p.replace(alive=jnp.bool_(False)), p.replace(turn_ended=jnp.bool_(True))]:
        mask = np.asarray(legal_mask(dead))
        assert mask.sum() == 1 and mask[0]


def test_action_kind_table():
    kinds = np.asarray(A.action_kind(jnp.arange(C.NUM_ACTIONS)))
    assert C.NUM_ACTIONS == 258
    assert kinds[0] == A.KIND_END and set(kinds[1:7]) == {A.KIND_BUY}
    assert kinds[7] == A.KIND_REROLL and kinds[8] == A.KIND_XP and kinds[9] == A.KIND_LOCK
    assert set(kinds[10:42]) == {A.KIND_SELL} and set(kinds[42:234]) == {A.KIND_PLACE}
    assert set(kinds[234:]) == {A.KIND_RECALL}


# ---------------- pairing ----------------
def test_round_robin_pairing_has_no_repeats_over_seven_rounds():
    alive = jnp.ones(8, bool)
    order = jax.random.permutation(jax.random.key(4), 8)
    seen = set()
    for r in range(7):
        opp, ghost = rounds.pvp_pairing(alive, order, jnp.int32(r), jax.random.key(r))
        opp = np.asarray(opp)
        assert np.all(np.asarray(ghost) == -1)
        assert np.all(opp[opp] == np.arange(8)) and np.all(opp != np.arange(8))  # a perfect matching
        pairs = {tuple(sorted((i, int(opp[i])))) for i in range(8)}
        assert not pairs & seen
        seen |= pairs
    assert len(seen) == 28  # everyone met everyone once


@pytest.mark.parametrize("alive_count", [3, 5, 7])
def test_odd_count_gives_one_ghost_fight(alive_count):
    alive = jnp.arange(8) < alive_count
    order = jnp.arange(8)
    for r in range(alive_count):
        opp, ghost = rounds.pvp_pairing(alive, order, jnp.int32(r), jax.random.key(r))
        opp, ghost = np.asarray(opp), np.asarray(ghost)
        ghosts = np.nonzero(ghost >= 0)[0]
        assert len(ghosts) == 1
        g = ghosts[0]
        assert opp[g] == -1 and ghost[g] != g and alive[ghost[g]]
        paired = [i for i in range(alive_count) if i != g]
        assert all(opp[opp[i]] == i for i in paired)
        assert np.all(opp[alive_count:] == -1)


# ---------------- damage and placement ----------------
def test_loser_damage_is_half_round_plus_survivors():
    state = game.new_game(jax.random.key(5), CONFIG).replace(round=jnp.int32(7))
    outcome = dict(
        won=jnp.arange(8) == 0,
        lost=jnp.arange(8) == 1,
        drew=(jnp.arange(8) == 2) | (jnp.arange(8) == 3),
        enemy_survivors=jnp.array([0, 3, 0, 2, 0, 0, 0, 0]),
        is_pve=jnp.bool_(False),
    )
    state, lost = rounds.apply_fight_results(state, outcome)
    np.testing.assert_array_equal(lost, [0, 4 + 3, 4, 4 + 2, 0, 0, 0, 0])
    assert int(state.players.gold[0]) == CONFIG.starting_gold + 1
    np.testing.assert_array_equal(state.players.streak[:4], [1, -1, 0, 0])


def test_ranks_at_elimination_and_game_end():
    state = game.new_game(jax.random.key(6), CONFIG)
    life = jnp.array([10, -5, 3, -1, 20, -5, 7, 9])
    level = jnp.array([2, 3, 2, 2, 2, 4, 2, 2])
    state = state.replace(players=state.players.replace(life=life, level=level))
    state, finished = rounds.eliminate_and_rank(state, CONFIG)
    # out together: seat 3 (life -1) best, then seats 5 and 1 (life -5; seat 5 has the higher level)
    np.testing.assert_array_equal(state.players.rank, [0, 8, 0, 6, 0, 7, 0, 0])
    np.testing.assert_array_equal(finished, [False, True, False, True, False, True, False, False])
    assert not bool(state.done) and np.all(np.asarray(state.players.life) >= 0)
    # round cap: the survivors are ranked by life
    capped = state.replace(round=jnp.int32(CONFIG.max_rounds))
    capped, finished = rounds.eliminate_and_rank(capped, CONFIG)
    np.testing.assert_array_equal(capped.players.rank, [2, 8, 5, 6, 1, 7, 4, 3])
    assert bool(capped.done)


def test_knocked_out_units_return_to_pool():
    state = game.new_game(jax.random.key(7), CONFIG)
    p = state.players
    p = p.replace(species=p.species.at[2, 9].set(4), stars=p.stars.at[2, 9].set(2), life=p.life.at[2].set(-3))
    pool = state.pool.at[4].add(-3)
    state = state.replace(players=p, pool=pool)
    shop2 = np.asarray(p.shop[2])
    state, _ = rounds.eliminate_and_rank(state, CONFIG)
    expected = np.asarray(pool) + np.bincount(shop2[shop2 >= 0], minlength=sp.NUM_SPECIES)
    expected[4] += 3
    np.testing.assert_array_equal(state.pool, expected)
    assert np.all(np.asarray(state.players.species[2]) == -1)


def test_placement_reward_range():
    r = np.asarray(game.placement_reward(jnp.arange(1, 9)))
    assert r.dtype == np.float32 and r[0] == 1.0 and r[-1] == -1.0 and np.all(np.diff(r) < 0)
    ranks = np.arange(8, dtype=np.float32)  # linear: 1 - 2 (rank - 1) / 7 in float32 arithmetic, bitwise
    np.testing.assert_array_equal(r, np.float32(1) - np.float32(2) * ranks / np.float32(7))
    np.testing.assert_allclose(r, -r[::-1], atol=1e-7)  # symmetric: a finished game's rewards sum to 0


# ---------------- fight batching ----------------
run_fights = jax.jit(rounds.run_fights, static_argnums=1)
simulate_fight = jax.jit(combat.simulate_fight, static_argnames="max_ticks")


def _plan_with_active(active, key):
    state = game.new_game(key, CONFIG)
    k1, k2, k3 = jax.random.split(key, 3)
    species = jax.random.randint(k1, (8, C.BOARD_CELLS), -6, sp.NUM_SPECIES)
    # at most MAX_LEVEL units a board, as the rules allow (board_count <= level): keep the first ones
    species = jnp.where(jnp.cumsum(species >= 0, axis=1) <= C.MAX_LEVEL, species, -1)
    stars = jnp.where(species >= 0, jax.random.randint(k2, (8, C.BOARD_CELLS), 1, 4), 0)
    plan = rounds.plan_fights(state, CONFIG, k3)
    return plan.replace(
        home_species=species,
        home_stars=stars,
        away_species=species[::-1],
        away_stars=stars[::-1],
        active=jnp.asarray(active),
    )


@pytest.mark.parametrize(
    "active",
    [
        [True, False, True, False, False, True, True, False],  # PvP-like: 4 fights
        [True] * 8,  # PvE: all 8 slots, more fights than lanes
        [False, True, True, True, True, True, False, False],  # 5 active
    ],
)
def test_run_fights_matches_per_slot_simulation(active):
    plan = _plan_with_active(active, jax.random.key(11))
    result = run_fights(plan, 120)
    for slot in range(8):
        if not active[slot]:
            assert int(result.winner[slot]) == 2 and int(result.ticks[slot]) == 0
            continue
        expected = simulate_fight(
            plan.home_species[slot],
            plan.home_stars[slot],
            plan.away_species[slot],
            plan.away_stars[slot],
            jax.random.fold_in(plan.key, slot),
            max_ticks=120,
        )
        for field in ("winner", "home_survivors", "away_survivors", "home_damage", "away_damage", "ticks"):
            assert int(getattr(result, field)[slot]) == int(getattr(expected, field)), (slot, field)
