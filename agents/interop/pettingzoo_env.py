"""PettingZoo: the 8 seats (agents ``seat_0`` .. ``seat_7``) in PettingZoo's two forms, made the way
PettingZoo's own environments are:

    from agents.interop import pettingzoo_env
    env = pettingzoo_env.parallel_env()            # ParallelEnv (AutoChessParallelEnv)
    observations, infos = env.reset(seed=0)
    while env.agents:
        actions = {a: env.action_space(a).sample(mask=observations[a]["action_mask"]) for a in env.agents}
        observations, rewards, terminations, truncations, infos = env.step(actions)

    aec = pettingzoo_env.env()                     # AECEnv: parallel_to_aec + AssertOutOfBoundsWrapper
    raw = pettingzoo_env.raw_env()                 # AECEnv: parallel_to_aec alone

Each agent's observation is a dict with ``observation`` (float32[obs_size], or packed uint8[72, 20] frames)
and ``action_mask`` (int8[258], 1 = legal), the common PettingZoo convention for masked actions; with
``flatten=True`` it is ``gymnasium.spaces.flatten`` of that dict, float32[258 + obs_size] (the mask first), the
Box that SuperSuit's ``black_death_v3`` and ``pettingzoo_env_to_vec_env_v1`` need (``action_masks`` reads the
mask back). A seat knocked out terminates and leaves ``agents``; when the game ends every remaining seat
terminates; the final place (1..8) of a terminated seat is ``infos[agent]["rank"]``, and its last observation and
mask are both of the game as that step left it (at the game's end the finished game's, not the next game's).
``state()`` is the game as a centralised critic may see it (``world_state``). One jitted ``env.step`` per step.
"""

from __future__ import annotations

import jax
import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.conversions import parallel_to_aec

import jaxgame
from agents.interop.world_state import STATE_SIZE as STATE_SIZE
from agents.interop.world_state import world_state as world_state
from agents.interop.world_state import world_state_bounds
from jaxgame import constants as C
from jaxgame import observation as observation_lib
from jaxgame import packing, render
from jaxgame.config import GameConfig

# STATE_SIZE and world_state (the centralised critic's state, agents.interop.world_state) are re-exported here
AGENTS = tuple(f"seat_{i}" for i in range(C.NUM_PLAYERS))
#: (env, game) -> bool[8, 258]: the seats' legal actions in a game, for a finished game's final observations (the
#: step's ``ts.action_mask`` is the next game's); equal envs share the program
_legal_masks = jax.jit(jaxgame.AutoChessEnv.action_mask, static_argnums=0)


def parallel_env(**kwargs) -> AutoChessParallelEnv:
    """The ParallelEnv; ``kwargs`` as ``AutoChessParallelEnv``."""
    return AutoChessParallelEnv(**kwargs)


def raw_env(**kwargs):
    """The AEC form as PettingZoo's converter makes it (``parallel_to_aec``, order enforced): seats act one
    after another, the game steps once the last live seat has acted; ``kwargs`` as ``AutoChessParallelEnv``."""
    return parallel_to_aec(parallel_env(**kwargs))


def env(**kwargs):
    """``raw_env`` with PettingZoo's ``AssertOutOfBoundsWrapper``: an action outside ``Discrete(258)`` fails at
    the seat's own turn (the parallel env checks actions only when the game steps, after the last seat)."""
    return wrappers.AssertOutOfBoundsWrapper(raw_env(**kwargs))


def action_masks(flat_observations) -> np.ndarray:
    """bool[..., 258]: the action masks inside ``flatten=True`` observations float32[..., 258 + obs_size]
    (all False for SuperSuit's black_death zero observation of a knocked-out seat)."""
    flat = np.asarray(flat_observations)
    if flat.shape[-1:] != (C.NUM_ACTIONS + observation_lib.OBS_SIZE,):
        raise ValueError(
            f"flat_observations: last axis must be {C.NUM_ACTIONS + observation_lib.OBS_SIZE} "
            f"(flatten=True observations), got shape {flat.shape}"
        )
    return flat[..., : C.NUM_ACTIONS] > 0.5


class AutoChessParallelEnv(ParallelEnv):
    """The game's 8 seats as PettingZoo agents. ``obs``: "vector" or "pixels"; ``render_mode``: "rgb_array"
    (the 8 seats' screens in a 2 x 4 grid, uint8[288, 640, 3]) or None; ``rules``: ``GameConfig`` overrides;
    ``flatten``: observations as float32[258 + obs_size] Boxes (``obs="vector"`` only, see the module doc)."""

    metadata = {
        "render_modes": ["rgb_array"],
        "name": "jaxgame_autochess_v0",
        "is_parallelizable": True,
        "render_fps": 4,
    }

    def __init__(
        self, obs: str = "vector", render_mode: str | None = None, rules: dict | None = None, flatten: bool = False
    ):
        if obs not in ("vector", "pixels"):
            raise ValueError(f"obs must be 'vector' or 'pixels', got {obs!r}")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        if flatten and obs != "vector":
            raise ValueError(f"flatten=True needs obs='vector', got obs={obs!r}")
        self.config = GameConfig.from_overrides(**(rules or {}))
        self.game = jaxgame.AutoChessEnv(self.config, obs=obs)
        self.render_mode = render_mode
        self.flatten = bool(flatten)
        self.possible_agents = list(AGENTS)
        self.agents = []
        if obs == "vector":
            low, high = observation_lib.observation_bounds(self.config)
            observation = spaces.Box(low, high, dtype=np.float32)
        else:
            observation = spaces.Box(0, 255, (packing.FRAME_H, packing.PACKED_W), dtype=np.uint8)
        self._dict_space = spaces.Dict(
            {"observation": observation, "action_mask": spaces.Box(0, 1, (C.NUM_ACTIONS,), dtype=np.int8)}
        )
        self._observation_space = spaces.flatten_space(self._dict_space) if self.flatten else self._dict_space
        self._action_space = spaces.Discrete(C.NUM_ACTIONS)
        self.state_space = spaces.Box(*world_state_bounds(self.config), dtype=np.float32)
        self._rng = np.random.default_rng()
        self._state = self._final = None

    def observation_space(self, agent):  # one space object for every agent, as PettingZoo's checks expect
        return self._observation_space

    def action_space(self, agent):
        return self._action_space

    def _observations(self, observation, mask, agents):
        if self.flatten:  # gymnasium.spaces.flatten's layout: the Dict's keys in sorted order, mask first
            return {
                a: np.concatenate([mask[AGENTS.index(a)].astype(np.float32), observation[AGENTS.index(a)]])
                for a in agents
            }
        return {
            a: {"observation": observation[AGENTS.index(a)], "action_mask": mask[AGENTS.index(a)].astype(np.int8)}
            for a in agents
        }

    def reset(self, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        state, ts = self.game.reset(jax.random.key(int(self._rng.integers(2**31 - 1))))
        self._state, self._final = state, None
        self.agents = list(AGENTS)
        observation, mask = jax.device_get((ts.observation, ts.action_mask))
        return self._observations(observation, mask, self.agents), {a: {} for a in self.agents}

    def step(self, actions: dict):
        if self._state is None:
            raise RuntimeError("step() before reset(): call reset() first")
        unknown = set(actions) - set(self.agents)
        if unknown:
            raise ValueError(
                f"actions for agents not in the game: {sorted(unknown)} (live: {self.agents}; "
                "after the game ended, call reset())"
            )
        if not self.agents:  # a finished game stepped with no actions: nothing happens, as in PettingZoo's
            return {}, {}, {}, {}, {}  # converters (SuperSuit 3.11's black_death_v3 ends its episode here)
        chosen = np.zeros(C.NUM_PLAYERS, np.int32)  # a seat without an action plays 0 (end turn / no-op)
        for agent, action in actions.items():
            a = np.asarray(action)
            if a.ndim != 0 or not np.issubdtype(a.dtype, np.integer) or not 0 <= int(a) < C.NUM_ACTIONS:
                raise ValueError(f"{agent}: action must be an int in [0, {C.NUM_ACTIONS}), got {action!r}")
            chosen[AGENTS.index(agent)] = int(a)
        state, ts = self.game.step(self._state, chosen)
        done, reward, alive, rank, observation, mask = jax.device_get(
            (ts.done, ts.reward, ts.info["alive"], ts.info["rank"], ts.observation, ts.action_mask)
        )
        self._state = state
        self._final = ts.info["final_state"] if done else None  # what render() and state() show once it ended
        if done:  # ts.observation and ts.action_mask are the next game's: the seats get the finished game's
            observation, mask = jax.device_get((ts.info["final_observation"], _legal_masks(self.game, self._final)))
        live = self.agents
        terminated = {a: bool(done or not alive[AGENTS.index(a)]) for a in live}
        observations = self._observations(observation, mask, live)
        rewards = {a: float(reward[AGENTS.index(a)]) for a in live}
        infos = {a: ({"rank": int(rank[AGENTS.index(a)])} if terminated[a] else {}) for a in live}
        self.agents = [a for a in live if not terminated[a]]
        return observations, rewards, terminated, dict.fromkeys(live, False), infos

    def state(self) -> np.ndarray:
        """float32[STATE_SIZE] (``state_space``): ``world_state`` of the game now, of its last state once it
        ended; for centralised critics (the hidden shops and pairing included: not a seat's observation)."""
        if self._state is None:
            raise RuntimeError("state() before reset(): call reset() first")
        game = self._final if self._final is not None else self._state
        return np.asarray(jax.device_get(world_state(game, self.config)))

    def render(self):
        if self.render_mode != "rgb_array" or self._state is None:
            return None
        game = self._final if self._final is not None else self._state
        frames = [render.render_rgb(game, seat=s, scale=2) for s in range(C.NUM_PLAYERS)]
        return np.concatenate([np.concatenate(frames[:4], axis=1), np.concatenate(frames[4:], axis=1)], axis=0)

    def close(self):
        pass
