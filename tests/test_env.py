"""Env API, determinism, jit == vmap == Python loop == VecEnv, and rule
invariants over many random games."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgame
from jaxgame import bots
from jaxgame import constants as C
from jaxgame import species as sp
from jaxgame import units

# Short, deadly games so that eliminations, game ends and auto-resets happen
# within a few dozen steps.
TINY = dict(steps_per_round=2, max_rounds=10, starting_life=12, max_combat_ticks=150)
NUM_ENVS = 6
STEPS = 40


@pytest.fixture(scope="module")
def tiny_env():
    return jaxgame.make("autochess", **TINY)


def test_api_shapes_and_dtypes(env, jit_step):
    state, ts = env.reset(jax.random.key(0))
    assert env.num_players == 8 and env.num_actions == 258 and env.obs_size == ts.observation.shape[1]
    assert ts.observation.shape == (8, env.obs_size) and ts.observation.dtype == jnp.float32
    assert ts.action_mask.shape == (8, 258) and ts.action_mask.dtype == jnp.bool_
    assert ts.reward.shape == (8,) and ts.reward.dtype == jnp.float32
    assert ts.done.shape == () and ts.done.dtype == jnp.bool_
    expected_info = {"life", "gold", "level", "round", "rank", "alive", "board_size", "synergy_count", "actions_this_turn"}
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


def test_end_turn_makes_remaining_steps_noops(env, jit_step):
    state, ts = env.reset(jax.random.key(1))
    state, ts = jit_step(state, jnp.zeros(8, jnp.int32))
    mask = np.asarray(ts.action_mask)
    assert np.all(mask.sum(1) == 1) and np.all(mask[:, 0])
    before = np.asarray(state.players.gold)
    state, ts = jit_step(state, jnp.full(8, C.ACTION_REROLL, jnp.int32))  # illegal now
    np.testing.assert_array_equal(state.players.gold, before)


def _rollout_loop(env, keys, steps, policy_key):
    """Reference: a Python loop over envs and steps with a jitted single-env step."""
    step = jax.jit(env.step)
    trajs = []
    for e, k in enumerate(keys):
        state, ts = env.reset(k)
        rewards, dones, lives = [], [], []
        for t in range(steps):
            a = bots.random_policy(jax.random.fold_in(jax.random.fold_in(policy_key, t), e), state, ts.action_mask)
            state, ts = step(state, a)
            rewards.append(np.asarray(ts.reward))
            dones.append(bool(ts.done))
            lives.append(np.asarray(ts.info["life"]))
        trajs.append((np.stack(rewards), np.array(dones), np.stack(lives), np.asarray(state.players.species)))
    return trajs


def _rollout_batched(step_fn, reset_fn, keys, steps, policy_key):
    @jax.jit
    def run(keys):
        states, ts = reset_fn(keys)

        def body(carry, t):
            states, ts = carry
            env_keys = jax.vmap(lambda e: jax.random.fold_in(jax.random.fold_in(policy_key, t), e))(
                jnp.arange(keys.shape[0])
            )
            a = jax.vmap(bots.random_policy)(env_keys, states, ts.action_mask)
            states, ts = step_fn(states, a)
            return (states, ts), (ts.reward, ts.done, ts.info["life"])

        (states, _), out = jax.lax.scan(body, (states, ts), jnp.arange(steps))
        return out, states.players.species

    (rewards, dones, lives), species = run(keys)
    return [
        (np.asarray(rewards[:, e]), np.asarray(dones[:, e]), np.asarray(lives[:, e]), np.asarray(species[e]))
        for e in range(keys.shape[0])
    ]


def test_jit_vmap_loop_and_vecenv_agree(tiny_env):
    keys = jax.random.split(jax.random.key(2), 3)
    policy_key = jax.random.key(3)
    steps = 24  # crosses fights, eliminations and at least one game end + auto-reset
    loop = _rollout_loop(tiny_env, keys, steps, policy_key)
    vmapped = _rollout_batched(jax.vmap(tiny_env.step), jax.vmap(tiny_env.reset), keys, steps, policy_key)
    venv = jaxgame.VecEnv(tiny_env, 3)
    vec = _rollout_batched(venv.step, jax.vmap(tiny_env.reset), keys, steps, policy_key)
    assert any(t[1].any() for t in loop), "no game ended: the test would not cover auto-reset"
    for a, b, c in zip(loop, vmapped, vec):
        for x, y, z in zip(a, b, c):
            np.testing.assert_array_equal(x, y)
            np.testing.assert_array_equal(x, z)


@pytest.fixture(scope="module")
def random_games(tiny_env):
    """Many random games through VecEnv: per-step states and timesteps (numpy)."""
    venv = jaxgame.VecEnv(tiny_env, NUM_ENVS)

    @jax.jit
    def run(key):
        states, ts = venv.reset(key)

        def body(carry, k):
            states, ts = carry
            a = jax.vmap(bots.random_policy)(jax.random.split(k, NUM_ENVS), states, ts.action_mask)
            states, ts = venv.step(states, a)
            info = {k: v for k, v in ts.info.items() if k != "final_state"}  # holds a typed key
            return (states, ts), (states.replace(key=jax.random.key_data(states.key)), ts.replace(info=info))

        _, out = jax.lax.scan(body, (states, ts), jax.random.split(key, STEPS))
        return out

    out = run(jax.random.key(7))
    again = run(jax.random.key(7))
    other = run(jax.random.key(8))
    return jax.tree_util.tree_map(np.asarray, out), again, other


def test_same_key_same_games_different_key_different(random_games):
    out, again, other = random_games
    for a, b in zip(jax.tree_util.tree_leaves(out[0]), jax.tree_util.tree_leaves(again[0])):
        if a.dtype != object and np.issubdtype(a.dtype, np.number):
            np.testing.assert_array_equal(a, np.asarray(b))
    assert not np.array_equal(out[0].players.species, np.asarray(other[0].players.species))


def test_invariants_over_random_games(random_games):
    (states, ts), _, _ = random_games
    p = states.players
    assert ts.done.sum() >= NUM_ENVS, "too few finished games to check end-of-game invariants"
    # pool conservation: pool + shops + owned copies == initial pool, always
    shop_copies = (p.shop[..., None] == np.arange(sp.NUM_SPECIES)).sum(axis=(-2, -3))
    owned = (
        (p.species[..., None] == np.arange(sp.NUM_SPECIES)) * sp.COPIES_PER_STAR[p.stars][..., None]
    ).sum(axis=(-2, -3))
    np.testing.assert_array_equal(states.pool + shop_copies + owned, np.broadcast_to(sp.SPECIES_POOL_COPIES, states.pool.shape))
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


def test_eliminated_seats_get_rewarded_once(random_games):
    (states, ts), _, _ = random_games
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
