"""GymnaxVecEnv: gymnax envs behind the batched VecEnv protocol."""

import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("gymnax")

from agents.envs.gymnax_env import GymnaxVecEnv, GymnaxVecState, make_gymnax_env
from jaxgame.env import TimeStep

N = 4
STEPS = 300


@pytest.fixture(scope="module")
def venv():
    return GymnaxVecEnv("CartPole-v1", N)


@pytest.fixture(scope="module")
def jit_step(venv):
    return jax.jit(venv.step)


def _rollout(venv, key, steps=STEPS):
    """Uniform random policy under lax.scan; returns the stacked TimeSteps (leading [steps] axis)."""

    def body(carry, _):
        state, key = carry
        key, sub = jax.random.split(key)
        actions = jax.random.randint(sub, (venv.num_envs, venv.num_players), 0, venv.num_actions, jnp.int32)
        state, ts = venv.step(state, actions)
        return (state, key), ts

    state, _ = venv.reset(key)
    _, tss = jax.lax.scan(body, (state, jax.random.key(1)), None, length=steps)
    return tss


@pytest.fixture(scope="module")
def rollout(venv):
    return jax.jit(lambda key: _rollout(venv, key))


def _check_timestep(ts, venv):
    n, p, a, d = venv.num_envs, venv.num_players, venv.num_actions, venv.obs_shape[0]
    assert isinstance(ts, TimeStep)
    assert ts.observation.shape == (n, p, d) and ts.observation.dtype == jnp.float32
    assert ts.action_mask.shape == (n, p, a) and ts.action_mask.dtype == jnp.bool_
    assert bool(ts.action_mask.all())
    assert ts.reward.shape == (n, p) and ts.reward.dtype == jnp.float32
    assert ts.done.shape == (n,) and ts.done.dtype == jnp.bool_
    assert ts.info["seat_done"].shape == (n, p) and ts.info["seat_done"].dtype == jnp.bool_
    np.testing.assert_array_equal(ts.info["seat_done"], ts.done[:, None])
    assert ts.info["final_observation"].shape == (n, p, d)


def test_attributes(venv):
    assert (venv.num_envs, venv.num_players, venv.num_actions, venv.obs_shape) == (N, 1, 2, (4,))
    assert venv.name == "gymnax:CartPole-v1"
    assert isinstance(make_gymnax_env("gymnax:CartPole-v1", 3), GymnaxVecEnv)
    assert make_gymnax_env(venv.name, 2).num_envs == 2


def test_reset_and_step_shapes(venv, jit_step):
    state, ts = venv.reset(jax.random.key(0))
    assert isinstance(state, GymnaxVecState)
    assert jax.dtypes.issubdtype(state.key.dtype, jax.dtypes.prng_key)
    _check_timestep(ts, venv)
    assert not bool(ts.done.any()) and bool((ts.reward == 0).all())
    state2, ts2 = jit_step(state, jnp.zeros((N, 1), jnp.int32))
    _check_timestep(ts2, venv)
    assert bool((ts2.reward == 1).all()) and not bool(ts2.done.any())
    assert not np.array_equal(ts2.observation, ts.observation)
    assert not np.array_equal(jax.random.key_data(state2.key), jax.random.key_data(state.key))
    # the step is a pure function of (state, actions)
    np.testing.assert_array_equal(jit_step(state, jnp.zeros((N, 1), jnp.int32))[1].observation, ts2.observation)


def test_legacy_and_typed_keys_same_trajectory(venv, jit_step):
    # reset turns the key into the state's typed key, so equal reset outputs mean equal trajectories
    (s_typed, ts_typed), (s_legacy, ts_legacy) = venv.reset(jax.random.key(7)), venv.reset(jax.random.PRNGKey(7))
    for x, y in zip(
        jax.tree_util.tree_leaves((s_typed.env_state, ts_typed)),
        jax.tree_util.tree_leaves((s_legacy.env_state, ts_legacy)),
    ):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(jax.random.key_data(s_typed.key), jax.random.key_data(s_legacy.key))
    actions = jnp.ones((N, 1), jnp.int32)
    for _ in range(3):
        (s_typed, ts_typed), (s_legacy, ts_legacy) = jit_step(s_typed, actions), jit_step(s_legacy, actions)
        np.testing.assert_array_equal(ts_typed.observation, ts_legacy.observation)


def test_same_seed_same_rollout_other_seed_differs(rollout):
    a, b, c = rollout(jax.random.key(3)), rollout(jax.random.key(3)), rollout(jax.random.key(4))
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a.observation, c.observation)


def test_random_rollout_cartpole_returns(venv, rollout):
    tss = rollout(jax.random.key(0))
    _check_timestep(jax.tree_util.tree_map(lambda x: x[0], tss), venv)
    reward, done = np.asarray(tss.reward[..., 0]), np.asarray(tss.done)
    np.testing.assert_array_equal(tss.info["seat_done"], tss.done[..., None])
    assert done.sum() >= N  # random CartPole episodes last ~10-60 steps
    returns = []
    for e in range(N):
        total = 0.0
        for t in range(STEPS):
            total += reward[t, e]
            if done[t, e]:
                returns.append(total)
                total = 0.0
    assert len(returns) == done.sum()
    assert all(8 <= r <= 500 for r in returns), returns
    # the episode after a done starts fresh: |obs| of a new CartPole episode is <= 0.05
    t, e = np.nonzero(done)
    assert np.all(np.abs(np.asarray(tss.observation)[t, e]) <= 0.05)
    assert not np.any(np.asarray(tss.info["truncated"]))  # random play never lasts 500 steps


def test_bad_num_envs():
    for bad in (0, -1, 2.0, True, "4", None):
        with pytest.raises(ValueError, match="num_envs must be a positive int"):
            GymnaxVecEnv("CartPole-v1", bad)


def test_unknown_env_and_spec():
    with pytest.raises(ValueError, match="unknown gymnax env 'NoSuchEnv-v0'.*CartPole-v1"):
        GymnaxVecEnv("NoSuchEnv-v0", 2)
    with pytest.raises(ValueError, match="gymnax:<EnvName>"):
        make_gymnax_env("autochess", 2)
    with pytest.raises(ValueError, match="unknown gymnax env"):
        make_gymnax_env("gymnax:", 2)


def test_continuous_action_space_rejected():
    with pytest.raises(TypeError, match="only Discrete action spaces.*Box"):
        GymnaxVecEnv("Pendulum-v1", 2)


def test_bad_actions(venv):
    state, _ = venv.reset(jax.random.key(0))
    with pytest.raises(TypeError, match=r"integer array int32\[4, 1\], got float32\[4, 1\]"):
        venv.step(state, jnp.zeros((N, 1), jnp.float32))
    with pytest.raises(ValueError, match=r"shape int32\[4, 1\], got int32\[4\]"):
        venv.step(state, jnp.zeros((N,), jnp.int32))
    with pytest.raises(TypeError, match="PRNG key"):
        venv.reset(0)


def test_missing_gymnax_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "gymnax", None)  # makes `import gymnax` raise ImportError
    with pytest.raises(ImportError, match=r'pip install -e "\.\[gymnax\]"'):
        GymnaxVecEnv("CartPole-v1", 2)
