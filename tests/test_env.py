"""Env API, determinism, jit == vmap == Python loop == VecEnv, and rule
invariants over many random games."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgame
from jaxgame import constants as C
from jaxgame import observation, units
from jaxgame import species as sp
from jaxgame.batched_step import with_batch_rule
from tests import tiny_games
from tests.jaxprs import cond_count
from tests.tiny_games import NUM_ENVS, STEPS


@pytest.fixture(scope="module")
def tiny_env():
    return tiny_games.tiny_env()


@pytest.mark.xdist_group("default_step")  # one worker compiles the default env's step (conftest.jit_step)
def test_api_shapes_and_dtypes(env, jit_step):
    state, ts = env.reset(jax.random.key(0))
    assert env.num_players == 8 and env.num_actions == 258 and env.obs_size == ts.observation.shape[1]
    assert ts.observation.shape == (8, env.obs_size) and ts.observation.dtype == jnp.float32
    assert ts.action_mask.shape == (8, 258) and ts.action_mask.dtype == jnp.bool_
    assert ts.reward.shape == (8,) and ts.reward.dtype == jnp.float32
    assert ts.done.shape == () and ts.done.dtype == jnp.bool_
    expected_info = {
        "life",
        "gold",
        "level",
        "round",
        "rank",
        "alive",
        "board_size",
        "synergy_count",
        "actions_this_turn",
    }
    assert set(ts.info) == expected_info | {"final_observation", "final_state"}
    np.testing.assert_array_equal(ts.info["final_observation"], ts.observation)
    for k in expected_info - {"round"}:
        assert ts.info[k].shape == (8,), k
    assert np.all(np.asarray(ts.info["life"]) == 100) and np.all(np.asarray(ts.info["gold"]) == 5)
    assert np.all(np.asarray(ts.info["level"]) == 2) and int(ts.info["round"]) == 1
    assert np.all(np.isfinite(np.asarray(ts.observation)))
    state, ts = jit_step(state, jnp.zeros(8, jnp.int32))
    assert int(state.step_in_round) == 1


def test_make_validates_input():
    with pytest.raises(ValueError, match="obs must be one of"):
        jaxgame.make("autochess", obs="rgb")
    with pytest.raises(TypeError, match="unknown rule override"):
        jaxgame.make("autochess", steps_per_rnd=3)
    with pytest.raises(ValueError, match=r"steps_per_round must be an int in \[1, 64\]"):
        jaxgame.make("autochess", steps_per_round=0)
    with pytest.raises(ValueError, match="starting_level"):
        jaxgame.make("autochess", starting_level=10)
    with pytest.raises(ValueError, match="pve_rounds must be strictly increasing"):
        jaxgame.make("autochess", pve_rounds=(3, 2))
    with pytest.raises(ValueError, match="unknown env"):
        jaxgame.make("chess")
    with pytest.raises(ValueError, match="num_envs"):
        jaxgame.VecEnv(jaxgame.make("autochess"), 0)


@pytest.mark.xdist_group("default_step")  # one worker compiles the default env's step (conftest.jit_step)
def test_end_turn_makes_remaining_steps_noops(env, jit_step):
    state, ts = env.reset(jax.random.key(1))
    state, ts = jit_step(state, jnp.zeros(8, jnp.int32))
    mask = np.asarray(ts.action_mask)
    assert np.all(mask.sum(1) == 1) and np.all(mask[:, 0])
    before = np.asarray(state.players.gold)
    state, ts = jit_step(state, jnp.full(8, C.ACTION_REROLL, jnp.int32))  # illegal now
    np.testing.assert_array_equal(state.players.gold, before)


@pytest.mark.xdist_group(tiny_games.group)
def test_jit_vmap_loop_and_vecenv_agree(tiny_env):
    """VecEnv.step == jax.vmap(jax.vmap(env.step)) (the env's batch rule, nested) == a Python loop of
    jit(env.step) per env (the per-game step, its fight and reset conds real branches), on every leaf of every
    step (games cross fights, eliminations, game ends and auto-resets), for every env of the batch: the envs
    are at different points of their games on a step (one fights or resets while another does not), which is
    what the batch-level branches must get right. 16 envs x 200 steps: the opt-in test below."""
    states, ts, actions, _ = vec = tiny_games.games("vec")
    for x, y in zip(jax.tree_util.tree_leaves(vec), jax.tree_util.tree_leaves(tiny_games.games("vmap")), strict=True):
        np.testing.assert_array_equal(x, y)
    assert ts.done.any(), "no game ended: the test would not cover auto-reset"
    assert not np.all(ts.done == ts.done[:, :1]), "the envs' games all ended together: no mixed batch covered"
    step, act = tiny_env.step, jax.jit(tiny_games.garbage_or_legal)
    keys = jax.random.split(jax.random.key(7), NUM_ENVS)  # the rollouts' reset keys (tiny_games.games)
    for e in range(NUM_ENVS):
        state, t_s = tiny_env.reset(keys[e])
        for t in range(STEPS):
            a, _ = act(tiny_games.action_key(jax.random.key(3), t, e), state, t_s.action_mask)
            np.testing.assert_array_equal(a, actions[t, e], err_msg=f"env {e} step {t}")
            state, t_s = step(state, a)
            # the whole TimeStep too: observation, mask, reward, done, info with the final state
            got = jax.tree_util.tree_leaves(tiny_games.host_tree((state, t_s)))
            want = jax.tree_util.tree_leaves(tiny_games.at((states, ts), t, e))
            assert len(got) == len(want)
            for x, y in zip(got, want):
                np.testing.assert_array_equal(x, y, err_msg=f"env {e} step {t}")


@pytest.mark.slow(reason="~2 min")
@pytest.mark.xdist_group(tiny_games.group)
def test_vmapped_env_step_equals_vecenv_over_16_envs_and_200_steps():
    """The same leaf-by-leaf equality as above for jax.vmap(jax.vmap(env.step)) and VecEnv.step on a 16-env
    batch over 200 steps (the default suite checks 4 envs x 40 steps: the same programs at other sizes)."""
    vec = tiny_games.games("vec", num_envs=16, steps=200)
    for x, y in zip(
        jax.tree_util.tree_leaves(vec),
        jax.tree_util.tree_leaves(tiny_games.games("vmap", num_envs=16, steps=200)),
        strict=True,
    ):
        np.testing.assert_array_equal(x, y)
    assert vec[1].done.sum() >= 16


def test_batch_rule_runs_the_batch_function_at_any_vmap_depth():
    """with_batch_rule: one call of the batch function on the batch flattened to one axis, whatever the
    nesting; unbatched arguments broadcast to it; unvmapped calls run the per-game function."""
    calls = []

    def per_game(x, y):
        return {"sum": x + y, "tag": jnp.int32(0)}

    def batch(xs, ys):
        calls.append(xs.shape)
        ys = ys.reshape(-1, *([1] * (xs.ndim - 1)))
        return {"sum": xs + ys, "tag": jnp.full(xs.shape[:1], xs.shape[0], jnp.int32)}  # tag: the batch size

    f = with_batch_rule(per_game, batch)
    x, y = jnp.arange(24.0).reshape(2, 3, 4), jnp.float32(100.0)
    assert int(f(x[0, 0], y)["tag"]) == 0 and calls == []
    out = jax.vmap(f, in_axes=(0, None))(x[0], y)
    np.testing.assert_array_equal(out["sum"], x[0] + y)
    np.testing.assert_array_equal(out["tag"], [3, 3, 3])
    out = jax.jit(jax.vmap(jax.vmap(f, in_axes=(0, None)), in_axes=(0, None)))(x, y)
    np.testing.assert_array_equal(out["sum"], x + y)
    np.testing.assert_array_equal(out["tag"], np.full((2, 3), 6))  # one call on the 2 x 3 batch as 6
    assert calls[-1] == (6, 4)  # the last trace is the one that runs (earlier ones build the inner rule)
    ys = jnp.arange(6.0).reshape(2, 3)
    out = jax.vmap(jax.vmap(f, in_axes=(None, 0)), in_axes=(None, 0))(x[0, 0], ys)  # batched on y only
    np.testing.assert_array_equal(out["sum"], x[0, 0] + ys[..., None])
    np.testing.assert_array_equal(out["tag"], np.full((2, 3), 6))


def test_vmapped_env_step_keeps_the_fight_and_reset_branches(tiny_env):
    """Under jax.vmap (one or two deep) env.step's program branches like VecEnv.step's: the fight and the
    reset stay conds on the whole batch, so the combat runs only on fight steps. The per-game step vmapped
    without the batch rule turns them into selects (the trap the rule avoids)."""
    states, _ = jax.eval_shape(jaxgame.VecEnv(tiny_env, 4).reset, jax.random.key(0))
    actions = jax.ShapeDtypeStruct((4, C.NUM_PLAYERS), jnp.int32)
    vec = cond_count(jax.make_jaxpr(jaxgame.VecEnv(tiny_env, 4).step)(states, actions).jaxpr)
    assert vec >= 2  # at least: fight or not, reset or not
    assert cond_count(jax.make_jaxpr(jax.vmap(tiny_env.step))(states, actions).jaxpr) == vec
    nested = jax.tree_util.tree_map(lambda x: jax.ShapeDtypeStruct((2, 2, *x.shape[1:]), x.dtype), (states, actions))
    assert cond_count(jax.make_jaxpr(jax.vmap(jax.vmap(tiny_env.step)))(*nested).jaxpr) == vec
    assert cond_count(jax.make_jaxpr(jax.vmap(tiny_env._step_impl))(states, actions).jaxpr) < vec


@pytest.fixture(scope="module")
def random_games():
    """The shared random games through VecEnv (numpy): (states, ts) per step."""
    return tiny_games.games("vec")[:2]


@pytest.mark.xdist_group(tiny_games.group)
def test_same_key_same_games_different_key_different(random_games):
    states, _ = random_games
    run = tiny_games.rollout("vec")
    again = tiny_games.host_tree(run(jax.random.key(7), jax.random.key(3))[0])
    for a, b in zip(jax.tree_util.tree_leaves(states), jax.tree_util.tree_leaves(again)):
        np.testing.assert_array_equal(a, b)
    other = run(jax.random.key(8), jax.random.key(3))[0]
    assert not np.array_equal(states.players.species, np.asarray(other.players.species))


@pytest.mark.xdist_group(tiny_games.group)
def test_invariants_over_random_games(random_games):
    states, ts = random_games
    p = states.players
    assert ts.done.sum() >= NUM_ENVS, "too few finished games to check end-of-game invariants"
    # pool conservation: pool + shops + owned copies == initial pool, always
    shop_copies = (p.shop[..., None] == np.arange(sp.NUM_SPECIES)).sum(axis=(-2, -3))
    owned = ((p.species[..., None] == np.arange(sp.NUM_SPECIES)) * sp.COPIES_PER_STAR[p.stars][..., None]).sum(
        axis=(-2, -3)
    )
    np.testing.assert_array_equal(
        states.pool + shop_copies + owned, np.broadcast_to(sp.SPECIES_POOL_COPIES, states.pool.shape)
    )
    assert np.all(p.gold >= 0)
    assert np.all(units.board_count(jnp.asarray(p.species)) <= p.level)
    assert np.all((p.level >= 1) & (p.level <= 9))
    assert np.all((p.species >= 0) == (p.stars > 0)) and np.all(p.stars <= 3)
    assert np.all(p.alive == (p.rank == 0))
    assert np.all(p.life >= 0) and np.all((p.life > 0) | ~p.alive)
    # life never increases within a game (ts.info holds the pre-reset values)
    life = ts.info["life"]  # [T, E, 8]
    same_game = ~ts.done[:-1]  # step t+1 continues the game of step t unless t ended it
    increase = (life[1:] > life[:-1]) & same_game[..., None]
    assert not increase.any()
    # at every game end the ranks are a permutation of 1..8 and rewards match them
    ranks = ts.info["rank"][ts.done]
    assert ranks.shape[0] >= NUM_ENVS
    assert np.all(np.sort(ranks, axis=-1) == np.arange(1, 9))
    # the rank-1 seat gets +1 at the end; every seat gets its placement reward exactly once per game
    final_reward = ts.reward[ts.done]
    np.testing.assert_allclose(final_reward[ranks == 1], 1.0)
    # placements fill from the bottom and never change: the seats placed on a step (knocked out, or the
    # survivors at the game's end) take exactly the ranks 8 - n, 8 - n - 1, ... where n seats were placed before
    rank = ts.info["final_state"].players.rank  # [T, E, 8], the game before any auto-reset
    before = np.concatenate([np.zeros_like(rank[:1]), np.where(ts.done[:-1, :, None], 0, rank[:-1])])
    knocked_out_mid_game = 0
    for t, e in np.ndindex(ts.done.shape):
        placed, new = before[t, e] > 0, (rank[t, e] > 0) & (before[t, e] == 0)
        np.testing.assert_array_equal(rank[t, e][placed], before[t, e][placed])
        n, m = int(placed.sum()), int(new.sum())
        np.testing.assert_array_equal(np.sort(rank[t, e][new]), np.arange(8 - n - m + 1, 8 - n + 1), err_msg=f"{t} {e}")
        assert ts.done[t, e] == (n + m == 8)
        knocked_out_mid_game += 0 if ts.done[t, e] else m
    assert knocked_out_mid_game > 0, "no seat was knocked out before its game's end"


@pytest.mark.xdist_group(tiny_games.group)
def test_eliminated_seats_get_rewarded_once(random_games):
    states, ts = random_games
    T, E = ts.done.shape
    for e in range(E):
        start = 0
        for t in range(T):
            if ts.done[t, e]:
                r = ts.reward[start : t + 1, e]  # [steps, 8]
                ranks = ts.info["rank"][t, e]
                expected = 1 - 2 * (ranks - 1) / 7
                np.testing.assert_allclose(r.sum(0), expected, atol=1e-6)
                assert np.all((r != 0).sum(0) == 1)
                start = t + 1


@pytest.mark.xdist_group(tiny_games.group)
def test_observations_lie_within_the_declared_bounds(random_games, tiny_env):
    """observation_bounds (what the Gymnasium and PettingZoo spaces declare) holds for every observation of
    the random games, final observations included; the bounds are finite."""
    low, high = observation.observation_bounds(tiny_env.config)
    assert low.shape == high.shape == (tiny_env.obs_size,) and np.isfinite(low).all() and np.isfinite(high).all()
    _, ts = random_games
    for obs in (ts.observation, ts.info["final_observation"]):
        below, above = np.nonzero((obs < low).any(axis=(0, 1, 2)))[0], np.nonzero((obs > high).any(axis=(0, 1, 2)))[0]
        assert below.size == 0 and above.size == 0, f"outside the bounds at features {below} / {above}"
