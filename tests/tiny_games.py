"""Short random games shared by tests/test_env.py and tests/test_hardening.py.

One rollout program per stepping path (``VecEnv.step`` and ``jax.vmap`` of ``env.step`` nested two deep)
serves every test that needs whole games, so the suite compiles each once (the tests using it share an
xdist group, and the persistent compilation cache of conftest.py covers the rest). The actions are random
legal ones, except that about a quarter of the seat-steps send an out-of-range int32 (``garbage_or_legal``), which
the env treats as the illegal no-op: the same games exercise the rules and the input hardening.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

import jaxgame
from jaxgame import bots
from jaxgame import constants as C

#: Short, deadly games: eliminations, game ends and auto-resets within a few dozen steps.
TINY = dict(steps_per_round=2, max_rounds=10, starting_life=12, max_combat_ticks=150)
NUM_ENVS = 4
STEPS = 40
KINDS = ("vec", "vmap")
INT32_MIN, INT32_MAX = np.iinfo(np.int32).min, np.iinfo(np.int32).max
EXTREMES = [
    INT32_MIN,
    INT32_MIN + 1,
    -(2**16),
    -C.NUM_ACTIONS - 1,
    -C.NUM_ACTIONS,
    -1,
    C.NUM_ACTIONS,
    C.NUM_ACTIONS + 1,
    2**16,
    INT32_MAX - 1,
    INT32_MAX,
]

group = "tiny_games"  # pytest.mark.xdist_group of the tests that use the rollouts


@functools.cache
def tiny_env():
    return jaxgame.make("autochess", **TINY)


def garbage_or_legal(key, state, mask):
    """int32[8] for one env: a random legal action per seat, or (probability 1/4 a seat) an out-of-range
    value: uniform over int32 or one of EXTREMES."""
    k1, k2, k3, k4, k5 = jax.random.split(key, 5)
    legal = bots.random_policy(k1, state, mask)
    garbage = jax.random.randint(k2, (8,), INT32_MIN, INT32_MAX, dtype=jnp.int32)
    extremes = jnp.asarray(EXTREMES, jnp.int32)[jax.random.randint(k3, (8,), 0, len(EXTREMES))]
    garbage = jnp.where(jax.random.bernoulli(k4, 0.5, (8,)), garbage, extremes)
    out_of_range = jax.random.bernoulli(k5, 0.25, (8,))
    return jnp.where(out_of_range, garbage, legal), out_of_range


def action_key(policy_key, t, e):
    """The key of env ``e`` at step ``t``: the same in the batched rollouts and the per-env loop."""
    return jax.random.fold_in(jax.random.fold_in(policy_key, t), e)


def host_tree(tree):
    """numpy copy of a pytree, typed PRNG keys as their key data."""
    return jax.tree_util.tree_map(
        lambda x: np.asarray(jax.random.key_data(x) if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key) else x), tree
    )


@functools.cache
def rollout(kind: str, num_envs: int = NUM_ENVS, steps: int = STEPS):
    """Jitted ``(reset_key, policy_key) -> per-step outputs`` of ``num_envs`` games for ``steps`` steps through
    ``kind``: "vec" (VecEnv.step) or "vmap" (``jax.vmap(jax.vmap(env.step))`` over the envs as
    [2, num_envs/2]: env.step's vmap rule, nested); the games start from ``jax.vmap(env.reset)`` of split
    keys. Returns (states, ts, actions, out_of_range): states [T, E, ...] after each step (PRNG keys as key
    data), the TimeSteps with ``info["final_state"]`` likewise."""
    env = tiny_env()
    if kind == "vec":
        step = jaxgame.VecEnv(env, num_envs).step
    elif kind == "vmap":

        def step(states, actions):
            split = jax.tree_util.tree_map(lambda x: x.reshape(2, num_envs // 2, *x.shape[1:]), (states, actions))
            out = jax.vmap(jax.vmap(env.step))(*split)
            return jax.tree_util.tree_map(lambda x: x.reshape(num_envs, *x.shape[2:]), out)
    else:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")

    @jax.jit
    def run(reset_key, policy_key):
        states, ts = jax.vmap(env.reset)(jax.random.split(reset_key, num_envs))

        def body(carry, t):
            states, ts = carry
            keys = jax.vmap(lambda e: action_key(policy_key, t, e))(jnp.arange(num_envs))
            actions, bad = jax.vmap(garbage_or_legal)(keys, states, ts.action_mask)
            states, ts = step(states, actions)
            final = ts.info["final_state"]
            data = ts.replace(info={**ts.info, "final_state": final.replace(key=jax.random.key_data(final.key))})
            return (states, ts), (states.replace(key=jax.random.key_data(states.key)), data, actions, bad)

        return jax.lax.scan(body, (states, ts), jnp.arange(steps))[1]

    return run


@functools.cache
def games(kind: str = "vec", seed: int = 7, num_envs: int = NUM_ENVS, steps: int = STEPS):
    """numpy (states, ts, actions, out_of_range) of :func:`rollout` with reset key ``seed`` and policy key 3."""
    return host_tree(rollout(kind, num_envs, steps)(jax.random.key(seed), jax.random.key(3)))


def at(tree, t, e=None):
    """The step-``t`` (and env-``e``) slice of a [T, E, ...] numpy tree."""
    return jax.tree_util.tree_map(lambda x: x[t] if e is None else x[t, e], tree)
