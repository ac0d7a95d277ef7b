"""Gymnasium: one learning seat against 7 opponents (``jaxgame/AutoChess-v0``).

    import gymnasium, agents.interop   # importing agents.interop registers the id
    env = gymnasium.make("jaxgame/AutoChess-v0", opponents="greedy")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.unwrapped.action_masks().argmax())

Each ``step`` is one compiled call (``agents.interop.single_seat``): the learner acts, then the game goes on
until it has a choice again, is knocked out or the game ends. ``action_masks()`` gives sb3-contrib's
``MaskablePPO`` the legal actions; the same mask is in ``info["action_mask"]``. An illegal action is the
game's no-op (it changes nothing). ``info["rank"]`` is the learner's final place (1..8) once terminated.
"""

from __future__ import annotations

from typing import Sequence

import gymnasium
import jax
import numpy as np
from gymnasium import spaces

from agents.interop.single_seat import SingleSeatGame
from jaxgame import constants as C
from jaxgame import observation as observation_lib
from jaxgame import packing, render
from jaxgame.batched_step import select


class AutoChessSingleSeatEnv(gymnasium.Env):
    """One seat of the 8-player game (see the module docstring).

    ``opponents``: a player spec (``random``, ``greedy``, ``expert``, ``baseline:NAME``, ``RUN_DIR[:STEP]``) for
    all 7 opponents, or a sequence of 7. ``seat``: the learner's seat, or None to draw it at every reset.
    ``obs``: "vector" (float32[obs_size]) or "pixels" (packed 2bpp frames, uint8[72, 20]).
    ``greedy_opponents``: policy opponents play their most likely action. ``render_mode``: "rgb_array" (the
    learner's screen, uint8[288, 320, 3]) or None. ``rules``: ``GameConfig`` overrides.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(self, opponents: str | Sequence[str] = "random", seat: int | None = None, obs: str = "vector",
                 greedy_opponents: bool = False, render_mode: str | None = None, rules: dict | None = None):
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        if seat is not None and (isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < 8):
            raise ValueError(f"seat must be None or an int in [0, 8), got {seat!r}")
        self.game = SingleSeatGame(opponents, obs, greedy_opponents, rules)
        self.render_mode = render_mode
        self.fixed_seat = seat
        self.action_space = spaces.Discrete(C.NUM_ACTIONS)
        if obs == "vector":
            low, high = observation_lib.observation_bounds(self.game.config)
            self.observation_space = spaces.Box(low, high, dtype=np.float32)
        else:
            self.observation_space = spaces.Box(0, 255, (packing.FRAME_H, packing.PACKED_W), dtype=np.uint8)
        self._state = None
        self._mask = np.zeros(C.NUM_ACTIONS, bool)
        self._done = True

    def _out(self, state, out):
        self._state = state
        self._mask = np.asarray(out.action_mask)
        self._done = bool(out.terminated)
        info = {"action_mask": self._mask.copy(), "seat": int(state.seat), "game_steps": int(out.game_steps)}
        if self._done:
            info["rank"] = int(out.rank)
        return np.asarray(out.observation), info

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """``options={"seat": s}`` seats the learner at ``s`` for this game (else the constructor's ``seat``, else
        a seat drawn from the seed)."""
        super().reset(seed=seed)
        seat = (options or {}).get("seat", self.fixed_seat)
        if seat is None:
            seat = int(self.np_random.integers(C.NUM_PLAYERS))
        elif isinstance(seat, bool) or not isinstance(seat, (int, np.integer)) or not 0 <= seat < C.NUM_PLAYERS:
            raise ValueError(f"seat must be an int in [0, 8), got {seat!r}")
        key = jax.random.key(int(self.np_random.integers(2**31 - 1)))
        return self._out(*self.game.reset(key, np.int32(seat)))

    def step(self, action):
        if self._state is None or self._done:
            raise RuntimeError("step() after the episode ended: call reset() first")
        a = np.asarray(action)
        if a.ndim != 0 or not np.issubdtype(a.dtype, np.integer) or not 0 <= int(a) < C.NUM_ACTIONS:
            raise ValueError(f"action must be an int in [0, {C.NUM_ACTIONS}), got {action!r}")
        state, out = self.game.step(self._state, np.int32(a))
        obs, info = self._out(state, out)
        return obs, float(out.reward), self._done, False, info

    def action_masks(self) -> np.ndarray:
        """bool[258]: the learner's legal actions now (sb3-contrib's MaskablePPO calls this)."""
        return self._mask.copy()

    def render(self):
        if self.render_mode != "rgb_array" or self._state is None:
            return None
        ts = self._state.timestep
        game = ts.info["final_state"] if bool(ts.done) else self._state.game  # a finished game, not the next one
        return np.asarray(render.render_rgb(game, seat=int(self._state.seat)))


class AutoChessVectorEnv(gymnasium.vector.VectorEnv):
    """``num_envs`` single-seat games stepped as one batch (one compiled program for steps and resets), for
    batched host-side learners; ``gymnasium.make_vec("jaxgame/AutoChess-v0", num_envs=N)`` builds one.
    Same-step autoreset: a terminated game is replaced by a new one within the step; its last observation is
    ``infos["final_obs"]`` and its place ``infos["rank"]`` (masks ``infos["_final_obs"]``, ``infos["_rank"]``).
    Other arguments as ``AutoChessSingleSeatEnv``; ``infos["action_mask"]`` is bool[num_envs, 258]."""

    metadata = {"render_modes": [], "autoreset_mode": gymnasium.vector.AutoresetMode.SAME_STEP}

    def __init__(self, num_envs: int = 8, opponents: str | Sequence[str] = "random", seat: int | None = None,
                 obs: str = "vector", greedy_opponents: bool = False, rules: dict | None = None):
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        single = AutoChessSingleSeatEnv(opponents, seat, obs, greedy_opponents, None, rules)
        self.game, self.fixed_seat, self.num_envs = single.game, seat, num_envs
        self.single_observation_space, self.single_action_space = single.observation_space, single.action_space
        self.observation_space = gymnasium.vector.utils.batch_space(self.single_observation_space, num_envs)
        self.action_space = gymnasium.vector.utils.batch_space(self.single_action_space, num_envs)
        game = self.game

        def start_all(key_data, seats):
            keys = jax.vmap(lambda k: jax.random.wrap_key_data(k, impl="threefry2x32"))(key_data)
            return jax.vmap(game.start_game)(keys, seats)

        # one program with the game's step for steps and resets (pending True / False), as the single env
        self._start_all, self._play_all = jax.jit(start_all), jax.jit(jax.vmap(game.play))
        self._merge = jax.jit(select)
        self._states = None

    def _reset_all(self):
        states = self._start_all(*self._draw())
        return self._play_all(states, np.zeros(self.num_envs, np.int32), np.zeros(self.num_envs, bool))

    def _draw(self):
        """Reset keys (uint32[N, 2]) and seats (int32[N]) from the vector env's generator."""
        key_data = self.np_random.integers(0, 2**32, (self.num_envs, 2), dtype=np.uint32)
        seats = (np.full(self.num_envs, self.fixed_seat, np.int32) if self.fixed_seat is not None
                 else self.np_random.integers(0, C.NUM_PLAYERS, self.num_envs, dtype=np.int32))
        return key_data, seats

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._np_random, self._np_random_seed = gymnasium.utils.seeding.np_random(seed)
        self._states, out = self._reset_all()
        out = jax.device_get(out)
        return np.asarray(out.observation), {"action_mask": np.asarray(out.action_mask),
                                             "seat": np.asarray(self._states.seat)}

    def step(self, actions):
        if self._states is None:
            raise RuntimeError("step() before reset()")
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,) or not np.issubdtype(actions.dtype, np.integer) or (
                actions.min() < 0 or actions.max() >= C.NUM_ACTIONS):
            raise ValueError(f"actions must be ints in [0, {C.NUM_ACTIONS}) of shape ({self.num_envs},), got "
                             f"{actions.dtype}{list(actions.shape)}")
        states, step_out = self._play_all(self._states, actions.astype(np.int32), np.ones(self.num_envs, bool))
        out = jax.device_get(step_out)  # the step's view: a finished game's last observation and place
        done = np.asarray(out.terminated)
        fresh = out
        if done.any():  # same-step autoreset: new games in the finished slots, played on to their first choice
            states, fresh = self._merge(done, self._reset_all(), (states, step_out))
            fresh = jax.device_get(fresh)
        self._states = states
        infos = {"action_mask": np.asarray(fresh.action_mask), "seat": np.asarray(self._states.seat),
                 "final_obs": np.asarray(out.observation), "_final_obs": done,
                 "rank": np.asarray(out.rank), "_rank": done}
        return (np.asarray(fresh.observation), np.asarray(out.reward, np.float32), done,
                np.zeros(self.num_envs, bool), infos)

