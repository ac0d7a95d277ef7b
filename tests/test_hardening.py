"""The game's edges: out-of-range actions, bad dtypes and shapes, both kinds of
PRNG keys, every accepted config playable, no hidden information in the
observation, life rewards capped at the life lost, and the finished game
visible on the step that ends it."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jaxgame
from jaxgame import bots, observation, render, rounds, units
from jaxgame import constants as C
from jaxgame import species as sp
from jaxgame.validation import check_actions
from tests import tiny_games

TINY = tiny_games.TINY
INT32_MIN, INT32_MAX, EXTREMES = tiny_games.INT32_MIN, tiny_games.INT32_MAX, tiny_games.EXTREMES


@pytest.fixture(scope="module")
def tiny_env():
    return tiny_games.tiny_env()


def _assert_trees_equal(a, b):
    chex.assert_trees_all_equal(tiny_games.host_tree(a), tiny_games.host_tree(b))


def _check_invariants(state):
    """Pool conservation and board invariants of one game (numpy)."""
    p = state.players
    shop_copies = (np.asarray(p.shop)[..., None] == np.arange(sp.NUM_SPECIES)).sum(axis=(-2, -3))
    species, stars = np.asarray(p.species), np.asarray(p.stars)
    owned = ((species[..., None] == np.arange(sp.NUM_SPECIES)) * sp.COPIES_PER_STAR[stars][..., None]).sum(
        axis=(-2, -3)
    )
    np.testing.assert_array_equal(
        np.asarray(state.pool) + shop_copies + owned, np.broadcast_to(sp.SPECIES_POOL_COPIES, np.shape(state.pool))
    )
    assert np.all(np.asarray(p.gold) >= 0)
    assert np.all(np.asarray(units.board_count(p.species)) <= np.asarray(p.level))
    assert np.all((species >= 0) == (stars > 0))


@pytest.fixture(scope="module")
def mid_game(tiny_env):
    """A game a few random steps in (units bought, shops partly empty), on a non-fight step."""
    state, ts = tiny_env.reset(jax.random.key(11))
    step = tiny_env.step
    for t in range(5):
        state, ts = step(state, bots.random_policy(jax.random.key(100 + t), state, ts.action_mask))
    if int(state.step_in_round) == TINY["steps_per_round"] - 1:
        state, ts = step(state, jnp.zeros(8, jnp.int32) + C.ACTION_LOCK)
    return state, ts


def _first_illegal(mask):
    """int32[8]: the lowest illegal action of each seat (a documented no-op)."""
    return np.argmin(np.asarray(mask), axis=-1).astype(np.int32)


# ---------------------------------------------------------------- out-of-range actions


@pytest.fixture(scope="module")
def jit_tiny_step(tiny_env):
    return tiny_env.step


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.one_of(st.integers(INT32_MIN, -1), st.integers(C.NUM_ACTIONS, INT32_MAX), st.sampled_from(EXTREMES)),
        min_size=8,
        max_size=8,
    ),
    st.lists(st.booleans(), min_size=8, max_size=8),
)
def test_out_of_range_actions_are_the_illegal_no_op(mid_game, jit_tiny_step, bad, which):
    state, ts = mid_game
    illegal = _first_illegal(ts.action_mask)
    legal_random = np.asarray(bots.random_policy(jax.random.key(5), state, ts.action_mask))
    # seats in ``which`` play an out-of-range value, the others a random legal action
    with_bad = np.where(which, np.asarray(bad, np.int64), legal_random).astype(np.int32)
    with_illegal = np.where(which, illegal, legal_random).astype(np.int32)
    a, _ = jit_tiny_step(state, with_bad)
    b, _ = jit_tiny_step(state, with_illegal)
    _assert_trees_equal(a, b)
    _check_invariants(a)
    for seat in np.flatnonzero(which):  # nothing changed for those seats, their turn goes on
        assert not bool(a.players.turn_ended[seat])
        assert int(a.players.actions_this_turn[seat]) == int(state.players.actions_this_turn[seat])


@pytest.mark.xdist_group(tiny_games.group)
def test_out_of_range_actions_in_whole_games():
    """The shared random games (a quarter of the seat-steps send random int32 garbage; VecEnv ==
    vmap(env.step) is tests/test_env.py's): the invariants hold at every step, and a seat's garbage
    action never counts as one of its actions."""
    states, _, actions, bad = tiny_games.games("vec")
    assert bad.mean() > 0.15 and np.any((actions < 0) | (actions >= C.NUM_ACTIONS))
    for t in range(tiny_games.STEPS):
        _check_invariants(tiny_games.at(states, t))
    counted = states.players.actions_this_turn[1:] - states.players.actions_this_turn[:-1]
    same_turn = counted >= 0  # not reset by a new round or game
    assert np.all(counted[bad[1:] & same_turn] == 0)


# ---------------------------------------------------------------- dtypes and shapes


def test_bad_action_dtype_and_shape_fail_clearly(tiny_env):
    state, _ = tiny_env.reset(jax.random.key(0))
    venv = jaxgame.VecEnv(tiny_env, 2)
    states, _ = venv.reset(jax.random.key(0))
    with pytest.raises(TypeError, match=r"int32\[8\].*float32\[8\]"):
        tiny_env.step(state, jnp.zeros(8, jnp.float32))
    with pytest.raises(TypeError, match=r"int32\[8\].*float32\[8\]"):
        jax.jit(tiny_env.step)(state, jnp.zeros(8, jnp.float32))
    with pytest.raises(TypeError, match=r"int32\[8\].*bool\[8\]"):
        tiny_env.step(state, np.zeros(8, bool))
    with pytest.raises(ValueError, match=r"shape int32\[8\].*int32\[8, 1\]"):
        tiny_env.step(state, jnp.zeros((8, 1), jnp.int32))
    with pytest.raises(ValueError, match=r"VecEnv.step.*int32\[2, 8\].*int32\[8\]"):
        venv.step(states, jnp.zeros(8, jnp.int32))
    with pytest.raises(TypeError, match=r"VecEnv.step.*float64\[2, 8\]"):
        venv.step(states, np.zeros((2, 8)))
    # any integer dtype and plain lists are converted to int32; values beyond int32 stay out of range
    for actions in ([C.ACTION_LOCK] * 8, np.full(8, C.ACTION_LOCK, np.int64), np.full(8, C.ACTION_LOCK, np.uint8)):
        converted = check_actions(actions, (8,), "test")
        assert converted.dtype == jnp.int32
        np.testing.assert_array_equal(converted, C.ACTION_LOCK)
    huge = check_actions(np.full(8, 2**40 + C.ACTION_LOCK, np.int64), (8,), "test")  # would wrap to 9
    wrapped = check_actions(np.full(8, np.iinfo(np.uint32).max, np.uint32), (8,), "test")
    np.testing.assert_array_equal(huge, INT32_MAX)
    np.testing.assert_array_equal(wrapped, INT32_MAX)
    after, _ = tiny_env.step(state, huge)
    assert not bool(after.players.shop_locked.any()) and not bool(after.players.turn_ended.any())


#: Per action dtype: out-of-range values it can hold (each must act as its int32 clip: an illegal no-op).
#: The +ACTION_LOCK ones wrap to ACTION_LOCK if truncated to 32 bits instead of clipped; uint8 holds no
#: value >= NUM_ACTIONS (all of 0..255 are action ids).
_DTYPE_GARBAGE = {
    np.int8: [-128, -1],
    np.int16: [-(2**15), -1, C.NUM_ACTIONS, 2**15 - 1],
    np.int64: [-(2**63), -(2**40) + C.ACTION_LOCK, 2**40 + C.ACTION_LOCK, 2**63 - 1],
    np.uint8: [],
    np.uint16: [C.NUM_ACTIONS, 2**16 - 1],
    np.uint32: [2**31 + C.ACTION_LOCK, 2**32 - 1],
    np.uint64: [2**32 + C.ACTION_LOCK, 2**64 - 1],
}


def test_every_integer_action_dtype_plays_like_int32(tiny_env):
    """Whole rounds (two fights) stepped through env.step with int8 / int16 / int64 / uint8 / uint16 /
    uint32 / uint64 actions (numpy arrays, and jax arrays for the dtypes jax holds without x64) give,
    step by step, the same states and TimeSteps as the same actions as int32: random legal actions the
    dtype can hold, and on about a third of the seat-steps an out-of-range value of the dtype, played by
    the int32 run as its int32 clip (docs/env.md, "Bad input"). The step takes int32 whatever it is given,
    so this costs no compile."""
    steps = 2 * TINY["steps_per_round"] + 1
    rng = np.random.default_rng(0)
    start = tiny_env.reset(jax.random.key(31))
    for dtype, garbage in _DTYPE_GARBAGE.items():
        largest = min(np.iinfo(dtype).max, C.NUM_ACTIONS - 1)
        kinds = ("int32", "numpy", "jax") if np.dtype(dtype).itemsize < 8 else ("int32", "numpy")
        runs = dict.fromkeys(kinds, start)
        sent_garbage = 0
        for t in range(steps):
            mask = np.asarray(runs["int32"][1].action_mask)[:, : largest + 1]
            values = [int(rng.choice(np.flatnonzero(m))) for m in mask]
            for seat in range(8):
                if garbage and rng.random() < 1 / 3:
                    values[seat] = garbage[rng.integers(len(garbage))]
                    sent_garbage += 1
            given = {
                "int32": np.asarray([np.clip(v, INT32_MIN, INT32_MAX) for v in values], np.int32),
                "numpy": np.asarray(values, dtype),
            }
            if "jax" in runs:
                given["jax"] = jnp.asarray(given["numpy"])
                assert given["jax"].dtype == dtype
            runs = {kind: tiny_env.step(runs[kind][0], given[kind]) for kind in kinds}
            expected = jax.tree_util.tree_leaves(tiny_games.host_tree(runs["int32"]))
            for kind in kinds[1:]:
                got = jax.tree_util.tree_leaves(tiny_games.host_tree(runs[kind]))
                assert len(got) == len(expected)
                for x, y in zip(got, expected):
                    np.testing.assert_array_equal(x, y, err_msg=f"{np.dtype(dtype).name} ({kind}) step {t}: {values}")
        assert int(runs["int32"][0].round) == 3  # two fights played
        assert sent_garbage > 0 or not garbage


# ---------------------------------------------------------------- PRNG keys


def test_typed_and_legacy_keys_everywhere(tiny_env, jit_tiny_step):
    """Legacy uint32[2] keys work wherever typed keys do (reset, VecEnv.reset, the bots, jitted and
    vmapped) and give the same games. The step takes no key (the state holds a typed one), so games
    from either kind are played by the same compiled step."""
    typed, legacy = jax.random.key(4), jax.random.PRNGKey(4)
    s1, ts1 = tiny_env.reset(typed)
    s2, ts2 = tiny_env.reset(legacy)
    _assert_trees_equal((s1, ts1.observation), (s2, ts2.observation))

    # jit(vmap(reset)) and jit(vmap(bot)) with batches of both kinds
    reset = jax.jit(jax.vmap(tiny_env.reset))
    greedy = jax.jit(jax.vmap(bots.greedy_policy))
    vs_typed, vts_typed = reset(jax.random.split(typed, 3))
    vs_legacy, vts_legacy = reset(jax.random.split(legacy, 3))
    _assert_trees_equal((vs_typed, vts_typed.observation), (vs_legacy, vts_legacy.observation))
    a_typed = greedy(jax.random.split(jax.random.key(9), 3), vs_typed, vts_typed.action_mask)
    a_legacy = greedy(jax.random.split(jax.random.PRNGKey(9), 3), vs_legacy, vts_legacy.action_mask)
    np.testing.assert_array_equal(a_typed, a_legacy)

    # whole rounds with fights stepped through the env, each bot keyed by legacy vs typed keys (the game
    # from the legacy-key reset vs the typed one): the same actions, states and TimeSteps at every step
    # (mixed_policy, which only splits its key between these two, is compared under jit(vmap) below)
    steps = 2 * TINY["steps_per_round"] + 1
    for name, bot in (("random", bots.random_policy), ("greedy", bots.greedy_policy)):
        games = {jax.random.key: (s1, ts1), jax.random.PRNGKey: (s2, ts2)}
        for t in range(steps):
            actions = {
                make_key: bot(make_key(100 + t), game[0], game[1].action_mask) for make_key, game in games.items()
            }
            legacy_actions = np.asarray(actions[jax.random.PRNGKey])
            np.testing.assert_array_equal(legacy_actions, actions[jax.random.key], err_msg=f"{name} step {t}")
            mask = np.asarray(games[jax.random.PRNGKey][1].action_mask)
            assert mask[np.arange(8), legacy_actions].all(), f"{name} step {t}: illegal action"
            games = {make_key: jit_tiny_step(game[0], actions[make_key]) for make_key, game in games.items()}
            _assert_trees_equal(games[jax.random.key], games[jax.random.PRNGKey])
        assert int(games[jax.random.PRNGKey][0].round) == 3, name  # two fights played

    # batches of keys under jit(vmap(bot)): a batch of legacy keys acts as the typed batch of the same seeds
    venv = jaxgame.VecEnv(tiny_env, 3)
    vs_legacy, vts_legacy = jax.jit(venv.reset)(legacy)
    vs_typed, vts_typed = venv.reset(typed)
    _assert_trees_equal((vs_legacy, vts_legacy), (vs_typed, vts_typed))
    batched = jax.jit(jax.vmap(bots.mixed_policy(("greedy", "random") * 4)))
    a = batched(jax.random.split(jax.random.PRNGKey(0), 3), vs_legacy, vts_legacy.action_mask)
    np.testing.assert_array_equal(a, batched(jax.random.split(jax.random.key(0), 3), vs_typed, vts_typed.action_mask))
    assert bool(jnp.take_along_axis(vts_legacy.action_mask, a[..., None], -1).all())


def test_bad_keys_fail_clearly(tiny_env):
    with pytest.raises(TypeError, match="PRNG key"):
        tiny_env.reset(0)
    with pytest.raises(TypeError, match="PRNG key"):
        jaxgame.VecEnv(tiny_env, 2).reset(np.zeros(2, np.float32))


# ---------------------------------------------------------------- configs


def test_every_starting_level_can_reach_max_level():
    """Every accepted starting_level gives a player who can buy XP up to the max level.

    starting_level is read only by ``new_game``, so one jitted step (one compile) plays every start.
    """

    def make(start):
        return jaxgame.make("autochess", starting_level=start, starting_gold=300, steps_per_round=64)

    stepper = make(2)

    @jax.jit
    def buy_xp_many(state):  # the decision phase only (no fight within 64 steps): no combat to compile
        def body(state, _):
            state, _, _, due = stepper.decision_step(state, jnp.full(8, C.ACTION_BUY_XP, jnp.int32))
            return state, (state.players.level, due)

        return jax.lax.scan(body, state, None, length=60)

    for start in range(1, C.MAX_LEVEL + 1):
        state = make(start).new_game(jax.random.key(start))  # eager: no compile per config
        np.testing.assert_array_equal(state.players.level, start)
        state, (levels, due) = buy_xp_many(state)
        assert not np.any(due), "the test must stay inside one shop phase"
        np.testing.assert_array_equal(state.players.level, C.MAX_LEVEL, err_msg=f"starting_level={start}")
        assert np.all(np.diff(np.asarray(levels), axis=0) >= 0)


# ---------------------------------------------------------------- hidden information


def _swap_shop_copy(state, seat):
    """Replace one offered species in ``seat``'s shop by another one taken from the pool (pool conserved)."""
    shop = np.asarray(state.players.shop[seat])
    pool = np.asarray(state.pool)
    slot = int(np.flatnonzero(shop >= 0)[0])
    old = int(shop[slot])
    new = int(next(s for s in range(sp.NUM_SPECIES) if s != old and pool[s] > 0 and sp.SPECIES_RARITY[s] == 0))
    players = state.players.replace(shop=state.players.shop.at[seat, slot].set(new))
    return state.replace(players=players, pool=state.pool.at[old].add(1).at[new].add(-1))


# jitted: op by op they took ~15 s a case
_vector_observation = jax.jit(observation.vector_observation, static_argnums=1)
_render_seat = jax.jit(render.render_seat)


@pytest.mark.parametrize("seat,other", [(0, 5), (3, 4)])
def test_other_seats_shops_are_hidden(tiny_env, mid_game, seat, other):
    state, _ = mid_game
    changed = _swap_shop_copy(state, other)
    before, after = (_vector_observation(s, tiny_env.config) for s in (state, changed))
    np.testing.assert_array_equal(before[seat], after[seat])
    assert not np.array_equal(before[other], after[other])  # the owner sees its own shop change
    np.testing.assert_array_equal(_render_seat(state, seat), _render_seat(changed, seat))


def test_visible_pool_counts(mid_game):
    state, _ = mid_game
    shops = np.asarray(state.players.shop)
    for seat in range(8):
        others = np.delete(shops, seat, axis=0).reshape(-1)
        expected = np.asarray(state.pool) + np.bincount(others[others >= 0], minlength=sp.NUM_SPECIES)
        np.testing.assert_array_equal(observation.visible_pool(state, seat), expected)


# ---------------------------------------------------------------- life reward


def test_life_lost_never_exceeds_life(mid_game):
    state, _ = mid_game
    life = jnp.asarray([1, 3, 0, 50, 2, 100, 7, 12], jnp.int32)
    state = state.replace(players=state.players.replace(life=life))
    lost = jnp.asarray([True, True, False, True, True, False, False, True])
    outcome = dict(
        won=~lost, lost=lost, drew=jnp.zeros(8, bool), enemy_survivors=jnp.full(8, 9), is_pve=jnp.asarray(False)
    )
    new_state, life_lost = rounds.apply_fight_results(state.replace(round=jnp.asarray(9)), outcome)
    damage = np.where(np.asarray(lost), 5 + 9, 0)
    np.testing.assert_array_equal(life_lost, np.minimum(damage, np.asarray(life)))
    np.testing.assert_array_equal(new_state.players.life, np.asarray(life) - damage)  # ranks use the depth


def test_reward_life_sums_to_the_life_a_seat_had():
    """Over whole games, the life shaping of each seat adds up to reward_life x (starting life - final life)."""
    env = jaxgame.make(
        "autochess", steps_per_round=2, max_rounds=12, starting_life=4, max_combat_ticks=150, reward_life=-0.25
    )
    n, steps = 4, 30
    venv = jaxgame.VecEnv(env, n)

    @jax.jit
    def run(key):
        states, ts = venv.reset(key)

        def body(carry, k):
            states, ts = carry
            a = jax.vmap(bots.greedy_policy)(jax.random.split(k, n), states, ts.action_mask)
            states, ts = venv.step(states, a)
            return (states, ts), (ts.reward, ts.done, ts.info["rank"], ts.info["life"])

        return jax.lax.scan(body, (states, ts), jax.random.split(key, steps))[1]

    reward, done, rank, life = (np.asarray(x) for x in run(jax.random.key(2)))
    games = 0
    for e in range(n):
        start = 0
        for t in np.flatnonzero(done[:, e]):
            total = reward[start : t + 1, e].sum(0)
            placement = 1 - 2 * (rank[t, e] - 1) / 7
            np.testing.assert_allclose(total - placement, -0.25 * (4 - life[t, e]), atol=1e-5)
            games, start = games + 1, t + 1
    assert games >= n


# ---------------------------------------------------------------- the finished game


def test_final_observation_and_state_on_the_ending_step(tiny_env):
    """The ending step carries what a step without auto-reset would have returned."""
    state, ts = tiny_env.reset(jax.random.key(21))
    step = tiny_env.step

    @jax.jit
    def step_without_reset(state, actions):
        state, fight_key, _, due = tiny_env.decision_step(state, actions)
        state, _ = jax.lax.cond(due, tiny_env.fight_step, tiny_env.no_fight, state, fight_key)
        return state

    for t in range(200):
        actions = bots.greedy_policy(jax.random.key(t), state, ts.action_mask)
        expected = step_without_reset(state, actions)
        state, ts = step(state, actions)
        if bool(ts.done):
            break
        np.testing.assert_array_equal(ts.info["final_observation"], ts.observation)
    assert bool(ts.done), "the game did not end"
    final = ts.info["final_state"]
    _assert_trees_equal(final, expected)
    np.testing.assert_array_equal(ts.info["final_observation"], tiny_env.observe(expected))
    np.testing.assert_array_equal(ts.observation, tiny_env.observe(state))  # the new game
    assert sorted(np.asarray(ts.info["rank"]).tolist()) == list(range(1, 9))
    np.testing.assert_array_equal(final.players.rank, ts.info["rank"])
    assert int(state.round) == 1 and int(final.round) > 1
    assert render.render_rgb(final, seat=0).shape == (288, 320, 3)


@pytest.mark.xdist_group(tiny_games.group)
def test_vecenv_final_observation_matches_env():
    """VecEnv's final observations equal those of jax.vmap(env.step) (nested; tests/test_env.py checks both
    against a loop of the single-game step), and on steps that did not end a game they equal the observation."""
    _, vec, _, _ = tiny_games.games("vec")
    _, ref, _, _ = tiny_games.games("vmap")
    for a, b in (
        (vec.info["final_observation"], ref.info["final_observation"]),
        (vec.info["final_state"].round, ref.info["final_state"].round),
    ):
        np.testing.assert_array_equal(a, b)
    obs, final_obs, done = vec.observation, vec.info["final_observation"], vec.done
    assert done.any()
    np.testing.assert_array_equal(obs[~done], final_obs[~done])
    assert not np.array_equal(obs[done], final_obs[done])
