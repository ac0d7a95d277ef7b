"""PettingZoo: the 8 seats as a ``ParallelEnv`` (agents ``seat_0`` .. ``seat_7``).

    from agents.interop.pettingzoo_env import AutoChessParallelEnv
    env = AutoChessParallelEnv()
    observations, infos = env.reset(seed=0)
    while env.agents:
        actions = {a: env.action_space(a).sample(mask=observations[a]["action_mask"]) for a in env.agents}
        observations, rewards, terminations, truncations, infos = env.step(actions)

Each agent's observation is a dict with ``observation`` (float32[obs_size], or packed uint8[72, 20] frames)
and ``action_mask`` (int8[258], 1 = legal), the common PettingZoo convention for masked actions. A seat
knocked out terminates and leaves ``agents``; when the game ends every remaining seat terminates; the
final place (1..8) of a terminated seat is ``infos[agent]["rank"]``. One jitted ``env.step`` per step.
"""

from __future__ import annotations

import jax
import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

import jaxgame
from jaxgame import constants as C
from jaxgame import observation as observation_lib
from jaxgame import packing, render
from jaxgame.config import GameConfig

AGENTS = tuple(f"seat_{i}" for i in range(C.NUM_PLAYERS))


class AutoChessParallelEnv(ParallelEnv):
    """The game's 8 seats as PettingZoo agents. ``obs``: "vector" or "pixels"; ``render_mode``: "rgb_array"
    (the 8 seats' screens in a 2 x 4 grid, uint8[288, 640, 3]) or None; ``rules``: ``GameConfig`` overrides."""

    metadata = {"render_modes": ["rgb_array"], "name": "jaxgame_autochess_v0", "is_parallelizable": True,
                "render_fps": 4}

    def __init__(self, obs: str = "vector", render_mode: str | None = None, rules: dict | None = None):
        if obs not in ("vector", "pixels"):
            raise ValueError(f"obs must be 'vector' or 'pixels', got {obs!r}")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.config = GameConfig.from_overrides(**(rules or {}))
        self.game = jaxgame.AutoChessEnv(self.config, obs=obs)
        self.render_mode = render_mode
        self.possible_agents = list(AGENTS)
        self.agents = []
        if obs == "vector":
            low, high = observation_lib.observation_bounds(self.config)
            observation = spaces.Box(low, high, dtype=np.float32)
        else:
            observation = spaces.Box(0, 255, (packing.FRAME_H, packing.PACKED_W), dtype=np.uint8)
        self._observation_space = spaces.Dict(
            {"observation": observation, "action_mask": spaces.Box(0, 1, (C.NUM_ACTIONS,), dtype=np.int8)})
        self._action_space = spaces.Discrete(C.NUM_ACTIONS)
        self._rng = np.random.default_rng()
        self._state = self._final = None

    def observation_space(self, agent):  # one space object for every agent, as PettingZoo's checks expect
        return self._observation_space

    def action_space(self, agent):
        return self._action_space

    def _observations(self, observation, mask, agents):
        return {a: {"observation": observation[AGENTS.index(a)], "action_mask": mask[AGENTS.index(a)].astype(np.int8)}
                for a in agents}

    def reset(self, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        state, ts = self.game.reset(jax.random.key(int(self._rng.integers(2**31 - 1))))
        self._state, self._final = state, None
        self.agents = list(AGENTS)
        observation, mask = jax.device_get((ts.observation, ts.action_mask))
        return self._observations(observation, mask, self.agents), {a: {} for a in self.agents}

    def step(self, actions: dict):
        if not self.agents:
            raise RuntimeError("step() after the game ended: call reset() first")
        unknown = set(actions) - set(self.agents)
        if unknown:
            raise ValueError(f"actions for agents not in the game: {sorted(unknown)} (live: {self.agents})")
        chosen = np.zeros(C.NUM_PLAYERS, np.int32)  # a seat without an action plays 0 (end turn / no-op)
        for agent, action in actions.items():
            a = np.asarray(action)
            if a.ndim != 0 or not np.issubdtype(a.dtype, np.integer) or not 0 <= int(a) < C.NUM_ACTIONS:
                raise ValueError(f"{agent}: action must be an int in [0, {C.NUM_ACTIONS}), got {action!r}")
            chosen[AGENTS.index(agent)] = int(a)
        state, ts = self.game.step(self._state, chosen)
        done, reward, alive, rank, observation, final_observation, mask = jax.device_get(
            (ts.done, ts.reward, ts.info["alive"], ts.info["rank"], ts.observation, ts.info["final_observation"],
             ts.action_mask))
        self._state = state
        self._final = ts.info["final_state"] if done else None  # what render() shows once the game ended
        live = self.agents
        terminated = {a: bool(done or not alive[AGENTS.index(a)]) for a in live}
        observations = self._observations(final_observation if done else observation, mask, live)
        rewards = {a: float(reward[AGENTS.index(a)]) for a in live}
        infos = {a: ({"rank": int(rank[AGENTS.index(a)])} if terminated[a] else {}) for a in live}
        self.agents = [a for a in live if not terminated[a]]
        return observations, rewards, terminated, dict.fromkeys(live, False), infos

    def render(self):
        if self.render_mode != "rgb_array" or self._state is None:
            return None
        game = self._final if self._final is not None else self._state
        frames = [render.render_rgb(game, seat=s, scale=2) for s in range(C.NUM_PLAYERS)]
        return np.concatenate([np.concatenate(frames[:4], axis=1), np.concatenate(frames[4:], axis=1)], axis=0)

    def close(self):
        pass
