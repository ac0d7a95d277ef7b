"""A JaxMARL-style ``MultiAgentEnv`` view of the game: dicts per agent, pure JAX, no extra dependency.

    env = AutoChessMultiAgentEnv()
    obs, state = env.reset(key)                              # obs: {"seat_0": float32[obs_size], ...}
    avail = env.get_avail_actions(state)                     # {"seat_0": bool[258], ...}
    obs, state, rewards, dones, infos = env.step(key, state, actions)   # actions: {"seat_0": int32[], ...}
    jax.vmap(env.step)(keys, states, actions)                 # a batch: the combat runs only on fight steps
    env.get_world_state(state)                                # float32[STATE_SIZE], for centralised critics

``step`` follows JaxMARL's ``MultiAgentEnv.step(key, state, actions, reset_state=None)``: it splits ``key``
into (step key, reset key), steps the game (``step_env``) and, on the step a game ends, returns a new game
started from the reset key (or ``reset_state`` when given): then ``dones["__all__"]`` is True and
``infos["final_observation"]`` and ``infos["rank"]`` hold the finished game's. The step key itself is unused,
as in JaxMARL's Hanabi: a game's own randomness (shops, fights) comes from its reset key. ``dones[agent]`` is
True once that seat is knocked out (it stays in the dicts, acting as a no-op, because a batch needs static
shapes). Under ``jax.vmap`` the step runs the game's batch-level step (``jaxgame.batched_step``) and resets
only when some game ended, so it runs at ``VecEnv`` speed. ``WorldStateWrapper`` adds MAPPO's
``obs["world_state"]``. Duck-typed: JaxMARL's wrappers (``LogWrapper`` ...) take it without this module
importing ``jaxmarl``.
"""

from __future__ import annotations

import copy
import dataclasses
import functools

import jax
import jax.numpy as jnp

import jaxgame
from agents.interop.world_state import STATE_SIZE, world_state, world_state_bounds
from jaxgame import constants as C
from jaxgame import observation as observation_lib
from jaxgame import packing
from jaxgame.batched_step import select, with_batch_rule
from jaxgame.config import GameConfig
from jaxgame.validation import as_key


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
    """The 8 seats as JaxMARL agents ``seat_0`` .. ``seat_7`` (see the module docstring). Views with the same
    rules and observation kind are equal: they share their compiled programs."""

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
        self.state_size = STATE_SIZE  # SMAX's name for the size of get_world_state
        self.world_state_space = Box(*world_state_bounds(self.config), (STATE_SIZE,), jnp.float32)
        self._reset_if_done = with_batch_rule(self._reset_one, self._reset_batch)

    def __eq__(self, other):
        return type(other) is type(self) and self.game == other.game

    def __hash__(self):
        return hash((type(self), self.game))

    def observation_space(self, agent: str):
        return self.observation_spaces[agent]

    def action_space(self, agent: str):
        return self.action_spaces[agent]

    @property
    def agent_classes(self) -> dict:
        """{"seat": agents}: one class, every seat plays the same game."""
        return {"seat": list(self.agents)}

    def _by_agent(self, x) -> dict:
        return {a: x[i] for i, a in enumerate(self.agents)}

    def _stack(self, actions: dict) -> jax.Array:
        return jnp.stack([jnp.asarray(actions[a], jnp.int32) for a in self.agents])

    def reset(self, key: jax.Array):
        """(observations {agent: obs}, state) of a new game."""
        state, ts = self.game.reset(key)
        return self._by_agent(ts.observation), state

    def step(self, key: jax.Array, state, actions: dict, reset_state=None):
        """(observations, state, rewards, dones, infos), as JaxMARL's ``MultiAgentEnv.step``: ``step_env``,
        then, if the game ended, ``reset`` with the second half of ``jax.random.split(key)`` (or
        ``reset_state`` when given). Two jitted programs: the game's own step and the reset."""
        key = as_key(key, "AutoChessMultiAgentEnv.step key")
        _, ts = self.game.step(state, self._stack(actions))
        current = (ts.info["final_observation"], ts.info["final_state"])
        if reset_state is None:
            observation, state = _jitted_reset_if_done(self, key, ts.done, current)
        else:
            observation, state = _jitted_reset_to(self, ts.done, reset_state, current)
        return (self._by_agent(observation), state, *self._rewards_dones_infos(ts))

    def step_env(self, key: jax.Array, state, actions: dict):
        """JaxMARL's ``step_env``: one step without the auto-reset (observations and state of the finished
        game on its last step); ``key`` is unused (a game's randomness comes from its reset key)."""
        del key
        _, ts = self.game.step(state, self._stack(actions))
        return (self._by_agent(ts.info["final_observation"]), ts.info["final_state"], *self._rewards_dones_infos(ts))

    def _rewards_dones_infos(self, ts) -> tuple[dict, dict, dict]:
        dones = self._by_agent(ts.done | ~ts.info["alive"])
        dones["__all__"] = ts.done
        infos = {"rank": ts.info["rank"], "final_observation": ts.info["final_observation"], "alive": ts.info["alive"]}
        return self._by_agent(ts.reward), dones, infos

    def _start(self, key: jax.Array):
        state, ts = self.game.reset(key)
        return ts.observation, state

    def _reset_one(self, key: jax.Array, done: jax.Array, current):
        """(observation, state): ``current`` (the stepped game's), or a new game from the second half of
        ``jax.random.split(key)`` if ``done`` (the game's step restarted it from its own key already: that
        game is dropped, one reset more per game played)."""
        _, reset_key = jax.random.split(key)
        return jax.lax.cond(done, self._start, lambda _: current, reset_key)

    def _reset_batch(self, keys: jax.Array, done: jax.Array, current):
        """``_reset_one`` of a batch (leading [N] axis everywhere): one branch for the batch, taken only when
        some game ended (a per-game cond would be a select under vmap and reset every game on every step)."""
        reset_keys = jax.vmap(lambda key: jax.random.split(key)[1])(keys)
        return jax.lax.cond(
            jnp.any(done), lambda: select(done, jax.vmap(self._start)(reset_keys), current), lambda: current
        )

    def _reset_to(self, done: jax.Array, reset_state, current):
        """(observation, state): ``reset_state`` and its observation if ``done``, else ``current``, selected
        leaf by leaf as ``MultiAgentEnv.step`` does."""
        fresh = (self.game.observe(reset_state), reset_state)
        return jax.tree.map(lambda new, old: jax.lax.select(done, new, old), fresh, current)

    def get_obs(self, state) -> dict:
        """{agent: observation} of ``state`` (JaxMARL's ``get_obs``)."""
        return self._by_agent(self.game.observe(state))

    def get_avail_actions(self, state) -> dict:
        """{agent: bool[258]}: the legal actions of every seat."""
        return self._by_agent(self.game.action_mask(state))

    def get_world_state(self, state) -> jax.Array:
        """float32[STATE_SIZE] (``world_state_space``): every seat's vector observation, then the next PvP
        pairing (``agents.interop.world_state``; what PettingZoo's ``state()`` returns), for centralised
        critics; the name SMAX and JaxNav give it."""
        return world_state(state, self.config)

    @property
    def name(self) -> str:
        return "jaxgame_autochess"


# jitted with the view static (equal views share the programs); inlined under an outer jit or vmap
@functools.partial(jax.jit, static_argnums=0)
def _jitted_reset_if_done(env: AutoChessMultiAgentEnv, key: jax.Array, done: jax.Array, current):
    return env._reset_if_done(key, done, current)


@functools.partial(jax.jit, static_argnums=0)
def _jitted_reset_to(env: AutoChessMultiAgentEnv, done: jax.Array, reset_state, current):
    return env._reset_to(done, reset_state, current)


def with_jaxmarl_spaces(env: AutoChessMultiAgentEnv) -> AutoChessMultiAgentEnv:
    """A copy of the view (sharing its programs) whose spaces are ``jaxmarl.environments.spaces``' own ``Box``
    and ``Discrete``, for code that checks spaces by class: JaxMARL's ``CTRolloutManager`` (its Q-learning
    baselines). Needs ``jaxmarl``; the view itself does not."""
    from jaxmarl.environments import spaces  # the optional dependency, only here

    def convert(space):
        if isinstance(space, Discrete):
            return spaces.Discrete(space.n, space.dtype)
        return spaces.Box(space.low, space.high, space.shape, space.dtype)

    view = copy.copy(env)
    view.observation_spaces = {a: convert(s) for a, s in env.observation_spaces.items()}
    view.action_spaces = {a: convert(s) for a, s in env.action_spaces.items()}
    return view


class WorldStateWrapper:
    """MAPPO's world-state wrapper (JaxMARL's ``SMAXWorldStateWrapper`` convention) around the view: ``reset``
    and ``step`` add ``obs["world_state"]``, float32[8, world_state_size()], row i the critic input of agent i:
    ``get_world_state`` of the returned state, then (``agent_id=True``) the one-hot of seat i. Seats compete,
    so a shared critic needs the seat's id to tell their values apart. Wrap the view itself (as MAPPO wraps
    the env before ``LogWrapper``): the world state is read from the view's own state."""

    def __init__(self, env: AutoChessMultiAgentEnv, agent_id: bool = True):
        self._env = env
        self.agent_id = bool(agent_id)

    def __getattr__(self, name: str):
        return getattr(self._env, name)

    def world_state_size(self) -> int:
        return self._env.state_size + (self._env.num_agents if self.agent_id else 0)

    def world_state(self, state) -> jax.Array:
        """float32[8, world_state_size()] of the view's ``state``."""
        rows = jnp.tile(self._env.get_world_state(state)[None, :], (self._env.num_agents, 1))
        if self.agent_id:
            rows = jnp.concatenate([rows, jnp.eye(self._env.num_agents, dtype=jnp.float32)], axis=1)
        return rows

    def reset(self, key: jax.Array):
        obs, state = self._env.reset(key)
        return {**obs, "world_state": self.world_state(state)}, state

    def step(self, key: jax.Array, state, actions: dict, reset_state=None):
        obs, state, rewards, dones, infos = self._env.step(key, state, actions, reset_state)
        return {**obs, "world_state": self.world_state(state)}, state, rewards, dones, infos


__all__ = ["STATE_SIZE", "AutoChessMultiAgentEnv", "Box", "Discrete", "WorldStateWrapper", "with_jaxmarl_spaces"]
