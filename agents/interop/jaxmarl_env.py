"""A JaxMARL-style ``MultiAgentEnv`` view of the game: dicts per agent, pure JAX, no extra dependency.

    env = AutoChessMultiAgentEnv()
    obs, state = env.reset(key)                              # obs: {"seat_0": float32[obs_size], ...}
    avail = env.get_avail_actions(state)                     # {"seat_0": bool[258], ...}
    obs, state, rewards, dones, infos = env.step(key, state, actions)   # actions: {"seat_0": int32[], ...}
    jax.vmap(env.step)(keys, states, actions)                 # a batch: the combat runs only on fight steps

As in JaxMARL, ``step`` auto-resets: on the step a game ends, ``dones["__all__"]`` is True and the returned
observations and state belong to a new game (``infos["final_observation"]`` and ``infos["rank"]`` hold the
finished game's). ``dones[agent]`` is True once that seat is knocked out (it stays in the dicts, acting as a
no-op, because a batch needs static shapes). The ``key`` argument of ``step`` is accepted for the interface and
unused: a game's randomness comes from its reset key. Under ``jax.vmap`` the step runs the game's batch-level
step (``jaxgame.batched_step``), so it runs at ``VecEnv`` speed.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

import jaxgame
from jaxgame import constants as C
from jaxgame import observation as observation_lib
from jaxgame import packing
from jaxgame.config import GameConfig


@dataclasses.dataclass(frozen=True)
class Discrete:
    """Actions 0 .. n-1 (JaxMARL's ``Discrete``)."""

    n: int
    shape: tuple = ()
    dtype: object = jnp.int32

    def sample(self, key: jax.Array) -> jax.Array:
        return jax.random.randint(key, self.shape, 0, self.n, self.dtype)

    def contains(self, x) -> jax.Array:
        return jnp.logical_and(x >= 0, x < self.n)


@dataclasses.dataclass(frozen=True)
class Box:
    """Arrays of ``shape`` within [low, high] (JaxMARL's ``Box``)."""

    low: object
    high: object
    shape: tuple
    dtype: object

    def sample(self, key: jax.Array) -> jax.Array:
        if jnp.issubdtype(self.dtype, jnp.integer):
            return jax.random.randint(key, self.shape, self.low, jnp.asarray(self.high) + 1, self.dtype)
        return jax.random.uniform(key, self.shape, self.dtype, self.low, self.high)

    def contains(self, x) -> jax.Array:
        return jnp.logical_and(jnp.all(x >= self.low), jnp.all(x <= self.high))


class AutoChessMultiAgentEnv:
    """The 8 seats as JaxMARL agents ``seat_0`` .. ``seat_7`` (see the module docstring)."""

    def __init__(self, obs: str = "vector", rules: dict | None = None):
        if obs not in ("vector", "pixels"):
            raise ValueError(f"obs must be 'vector' or 'pixels', got {obs!r}")
        self.config = GameConfig.from_overrides(**(rules or {}))
        self.game = jaxgame.AutoChessEnv(self.config, obs=obs)
        self.num_agents = C.NUM_PLAYERS
        self.agents = [f"seat_{i}" for i in range(C.NUM_PLAYERS)]
        if obs == "vector":
            low, high = observation_lib.observation_bounds(self.config)
            space = Box(low, high, (self.game.obs_size,), jnp.float32)
        else:
            space = Box(0, 255, (packing.FRAME_H, packing.PACKED_W), jnp.uint8)
        self.observation_spaces = {a: space for a in self.agents}
        self.action_spaces = {a: Discrete(C.NUM_ACTIONS) for a in self.agents}

    def observation_space(self, agent: str):
        return self.observation_spaces[agent]

    def action_space(self, agent: str):
        return self.action_spaces[agent]

    def _by_agent(self, x) -> dict:
        return {a: x[i] for i, a in enumerate(self.agents)}

    def reset(self, key: jax.Array):
        """(observations {agent: obs}, state) of a new game."""
        state, ts = self.game.reset(key)
        return self._by_agent(ts.observation), state

    def step(self, key: jax.Array, state, actions: dict):
        """(observations, state, rewards, dones, infos); ``key`` is unused (see the module docstring)."""
        del key
        stacked = jnp.stack([jnp.asarray(actions[a], jnp.int32) for a in self.agents])
        state, ts = self.game.step(state, stacked)
        dones = self._by_agent(ts.done | ~ts.info["alive"])
        dones["__all__"] = ts.done
        infos = {"rank": ts.info["rank"], "final_observation": ts.info["final_observation"],
                 "alive": ts.info["alive"]}
        return self._by_agent(ts.observation), state, self._by_agent(ts.reward), dones, infos

    def get_avail_actions(self, state) -> dict:
        """{agent: bool[258]}: the legal actions of every seat."""
        return self._by_agent(self.game.action_mask(state))

    @property
    def name(self) -> str:
        return "jaxgame_autochess"


__all__ = ["AutoChessMultiAgentEnv", "Box", "Discrete"]
