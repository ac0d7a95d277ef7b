"""gymnax environments behind the trainers' batched-env contract (``agents.envs.api.BatchedEnv``).

The trainers in ``agents`` step any env with that interface (N envs, P seats, A actions; see
``agents.envs.api`` for every field, ``agents.envs.api.check_env`` to check an env):

- attributes ``num_envs`` (N), ``num_players`` (P), ``num_actions`` (A),
  ``obs_shape`` (per-seat observation shape) and ``learner_seats`` (numpy bool[P]); this adapter
  also has a ``name`` ("gymnax:<EnvName>");
- ``reset(key) -> (state, TimeStep)`` and ``step(state, actions int32[N, P]) -> (state, TimeStep)``,
  auto-resetting finished episodes;
- ``TimeStep`` (``jaxgame.env.TimeStep``) with ``observation`` float32[N, P, *obs_shape],
  ``action_mask`` bool[N, P, A], ``reward`` float32[N, P], ``done`` bool[N] and ``info`` holding at
  least ``seat_done`` bool[N, P].

``GymnaxVecEnv`` maps a single-agent gymnax env onto it:

- P = 1: every per-seat array gets a seat axis of size 1; ``actions[:, 0]`` goes to gymnax; the one
  seat is the learner's (``learner_seats == [True]``).
- Only ``Discrete`` action spaces are supported; A = ``action_space.n`` and the mask is all True.
  Actions outside ``[0, A)`` are clipped into it (gymnax envs do not check their actions).
- Observations are flattened to float32[D] per seat, so ``obs_shape == (D,)``.
- gymnax's ``env.step(key, state, action, params)`` already auto-resets on ``terminated | truncated``;
  it is vmapped over N. As in ``jaxgame``, on the step where ``done`` is True ``reward`` and ``done``
  belong to the finished episode while ``observation`` and ``action_mask`` belong to the fresh one.
- ``info``: ``seat_done`` bool[N, 1] (= ``done[:, None]``), ``terminated`` and ``truncated`` bool[N]
  (``done = terminated | truncated``; bootstrap from ``final_observation`` on truncation) and
  ``final_observation`` float32[N, 1, D], the last observation of the finished episode (equal to
  ``observation`` where ``done`` is False).
- The state (``GymnaxVecState``) holds the vmapped gymnax env states and a typed PRNG key that is
  split on every step; ``reset`` takes a typed (``jax.random.key``) or legacy
  (``jax.random.PRNGKey``) key, so both give the same trajectory.

>>> env = make_gymnax_env("gymnax:CartPole-v1", num_envs=8)
>>> state, ts = env.reset(jax.random.key(0))           # ts.observation: float32[8, 1, 4]
>>> state, ts = jax.jit(env.step)(state, actions)      # actions int32[8, 1]

gymnax is an optional dependency: ``pip install -e ".[gymnax]"``.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxgame.env import TimeStep
from jaxgame.validation import as_key, check_actions

GYMNAX_PREFIX = "gymnax:"


def _import_gymnax():
    try:
        import gymnax
    except ImportError as error:  # also a missing dependency of gymnax itself
        raise ImportError(
            f'GymnaxVecEnv needs gymnax; install it with: pip install -e ".[gymnax]" (import failed: {error})'
        ) from error
    return gymnax


@struct.dataclass
class GymnaxVecState:
    env_state: object  # the gymnax env states, a leading [num_envs] axis on every leaf
    key: jax.Array  # typed PRNG key, split on every step


class GymnaxVecEnv:
    """``num_envs`` copies of a gymnax env with a single seat each (see the module docstring)."""

    num_players = 1
    #: the mask is all True on every step (``agents.envs.api.BatchedEnv``): the trainers skip the masking
    all_actions_legal = True

    def __init__(self, env_name: str, num_envs: int, **env_kwargs):
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        gymnax = _import_gymnax()
        if not isinstance(env_name, str) or env_name not in gymnax.registered_envs:
            raise ValueError(f"unknown gymnax env {env_name!r}; registered: {', '.join(gymnax.registered_envs)}")
        env, env_params = gymnax.make(env_name, **env_kwargs)
        space = env.action_space(env_params)
        if not isinstance(space, gymnax.environments.spaces.Discrete):
            raise TypeError(
                f"GymnaxVecEnv supports only Discrete action spaces; {env_name!r} has {type(space).__name__}"
            )
        self.env, self.env_params = env, env_params
        self.env_name = env_name
        self.name = GYMNAX_PREFIX + env_name
        self.num_envs = num_envs
        self.learner_seats = np.ones(self.num_players, bool)
        self.num_actions = int(space.n)
        obs, _ = jax.eval_shape(env.reset, jax.random.key(0), env_params)
        self.obs_size = math.prod(obs.shape)
        self.obs_shape = (self.obs_size,)

    def __repr__(self):
        return f"GymnaxVecEnv({self.env_name!r}, num_envs={self.num_envs})"

    def _obs(self, obs):
        """Batched gymnax observations [N, ...] -> float32[N, 1, D]."""
        return obs.reshape(self.num_envs, 1, self.obs_size).astype(jnp.float32)

    def _mask(self):
        return jnp.ones((self.num_envs, 1, self.num_actions), bool)

    def reset(self, key: jax.Array):
        """One typed or legacy PRNG key -> (GymnaxVecState, TimeStep), N fresh episodes."""
        key, reset_key = jax.random.split(as_key(key, "GymnaxVecEnv.reset key"))
        obs, env_state = jax.vmap(self.env.reset, in_axes=(0, None))(
            jax.random.split(reset_key, self.num_envs), self.env_params
        )
        obs = self._obs(obs)
        no = jnp.zeros(self.num_envs, bool)
        info = {"seat_done": no[:, None], "terminated": no, "truncated": no, "final_observation": obs}
        ts = TimeStep(
            observation=obs,
            action_mask=self._mask(),
            reward=jnp.zeros((self.num_envs, 1), jnp.float32),
            done=no,
            info=info,
        )
        return GymnaxVecState(env_state=env_state, key=key), ts

    def step(self, state: GymnaxVecState, actions):
        """actions int32[num_envs, 1] -> (GymnaxVecState, TimeStep); finished episodes auto-reset."""
        actions = check_actions(actions, (self.num_envs, 1), "GymnaxVecEnv.step")
        actions = jnp.clip(actions[:, 0], 0, self.num_actions - 1)
        key, step_key = jax.random.split(state.key)
        out = jax.vmap(self.env.step, in_axes=(0, 0, 0, None))(
            jax.random.split(step_key, self.num_envs), state.env_state, actions, self.env_params
        )
        if len(out) == 6:  # gymnax >= 0.0.9: (obs, state, reward, terminated, truncated, info)
            obs, env_state, reward, terminated, truncated, info = out
            terminated, truncated = terminated.astype(bool), truncated.astype(bool)
            done = terminated | truncated
        else:  # older gymnax: (obs, state, reward, done, info)
            obs, env_state, reward, done, info = out
            done = terminated = done.astype(bool)
            truncated = jnp.zeros_like(done)
        obs = self._obs(obs)
        final_obs = self._obs(info["final_observation"]) if "final_observation" in info else obs
        ts = TimeStep(
            observation=obs,
            action_mask=self._mask(),
            reward=reward.astype(jnp.float32).reshape(self.num_envs, 1),
            done=done,
            info={
                "seat_done": done[:, None],
                "terminated": terminated,
                "truncated": truncated,
                "final_observation": final_obs,
            },
        )
        return GymnaxVecState(env_state=env_state, key=key), ts


def check_spec(spec: str) -> None:
    """A one-line ``ValueError`` (before anything is built) when ``"gymnax:<EnvName>"`` cannot be made: gymnax
    is not installed, or no such env is registered."""
    name = spec[len(GYMNAX_PREFIX) :] if isinstance(spec, str) and spec.startswith(GYMNAX_PREFIX) else None
    if not name:
        raise ValueError(f"unknown env spec {spec!r}; expected 'gymnax:<EnvName>', e.g. 'gymnax:CartPole-v1'")
    try:
        gymnax = _import_gymnax()
    except ImportError as err:
        raise ValueError(f"env {spec!r}: {err}") from None
    if name not in gymnax.registered_envs:
        raise ValueError(f"unknown gymnax env {name!r}; registered: {', '.join(gymnax.registered_envs)}")


def make_gymnax_env(spec: str, num_envs: int) -> GymnaxVecEnv:
    """``"gymnax:<EnvName>"`` (e.g. ``"gymnax:CartPole-v1"``) -> ``GymnaxVecEnv(<EnvName>, num_envs)``."""
    if not isinstance(spec, str) or not spec.startswith(GYMNAX_PREFIX):
        raise ValueError(
            f"unknown env spec {spec!r}; this helper handles 'gymnax:<EnvName>', e.g. 'gymnax:CartPole-v1'"
        )
    return GymnaxVecEnv(spec[len(GYMNAX_PREFIX) :], num_envs)
