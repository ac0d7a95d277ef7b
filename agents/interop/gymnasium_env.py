"""Gymnasium: one learning seat against 7 opponents (``jaxgame/AutoChess-v0``).

    import gymnasium, jaxgame   # importing jaxgame registers the id (where Gymnasium is installed)
    env = gymnasium.make("jaxgame/AutoChess-v0", opponents="greedy")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.unwrapped.action_masks().argmax())

Each ``step`` is one compiled call (``agents.interop.single_seat``): the learner acts, then the game goes on
until it has a choice again, is knocked out or the game ends. ``action_masks()`` gives sb3-contrib's
``MaskablePPO`` the legal actions; the same mask is in ``info["action_mask"]``. An illegal action is the
game's no-op (it changes nothing). ``info["rank"]`` is the learner's final place (1..8) once terminated; the
final observation and its mask are both of the game as it ended (not of the next game).
"""

from __future__ import annotations

from typing import Sequence

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
from gymnasium import spaces

from agents.interop.program_cache import shared_jit
from agents.interop.sb3_vec_env import play_in_step  # the lock-step loop (that module imports no SB3)
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

    def __init__(
        self,
        opponents: str | Sequence[str] = "random",
        seat: int | None = None,
        obs: str = "vector",
        greedy_opponents: bool = False,
        render_mode: str | None = None,
        rules: dict | None = None,
    ):
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


_MERGE = jax.jit(select)


class AutoChessVectorEnv(gymnasium.vector.VectorEnv):
    """``num_envs`` single-seat games stepped as one batch (one compiled program for steps and resets), for
    batched host-side learners; ``gymnasium.make_vec("jaxgame/AutoChess-v0", num_envs=N)`` builds one.

    The games stay in step (``play_in_step``, the loop of the SB3 VecEnv, ``agents.interop.sb3_vec_env``): a step
    plays every env's action, then, while no env's learner has a choice (two or more legal actions), every game
    steps on together; so all games play the same game steps and their fights run together, once a round. Hence,
    unlike ``AutoChessSingleSeatEnv``, an env may be at a step where its learner has exactly one legal action (its
    turn ended while another env's learner still decides): its action there changes nothing (the only legal
    action, end turn, and every illegal one are the same no-op) and its reward is that of the step's game steps.
    An env's learner makes the same decisions as in the single env: the steps where ``infos["action_mask"][i]``
    has two or more legal actions are the single env's steps, the game in between is the same (the one-action
    steps play what the single env plays inside its own step) and the rewards sum to the same; with
    ``num_envs=1`` every step is a decision, as in the single env.

    Same-step autoreset: a terminated game (the learner knocked out or the game over, which happens only on a
    round's fight step) is replaced by a new game within the step, not played on (the others are at a round's
    start too, so it starts in step with them); its last observation is ``infos["final_obs"]`` and its place
    ``infos["rank"]``. Every info key ``k`` comes with Gymnasium's per-env mask ``infos["_k"]`` (bool[num_envs]: which
    envs have it): ``action_mask`` (bool[num_envs, 258]) and ``seat`` (int32[num_envs]) for every env, ``final_obs``
    and ``rank`` for the envs whose game ended in this step. ``reset(seed=)`` takes an int (env ``i`` gets
    ``seed + i``, as Gymnasium's ``SyncVectorEnv`` seeds its envs), a list of ``num_envs`` ints or Nones (None:
    that env's own generator goes on), or None; env ``i`` seeded with ``s`` starts the game that
    ``AutoChessSingleSeatEnv.reset(seed=s)`` starts, and each env's next games come from its own generator as
    the single env's next ``reset()``s do. Other arguments as ``AutoChessSingleSeatEnv``."""

    metadata = {"render_modes": [], "autoreset_mode": gymnasium.vector.AutoresetMode.SAME_STEP}

    def __init__(
        self,
        num_envs: int = 8,
        opponents: str | Sequence[str] = "random",
        seat: int | None = None,
        obs: str = "vector",
        greedy_opponents: bool = False,
        rules: dict | None = None,
    ):
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        single = AutoChessSingleSeatEnv(opponents, seat, obs, greedy_opponents, None, rules)
        self.game, self.fixed_seat, self.num_envs = single.game, seat, num_envs
        self.single_observation_space, self.single_action_space = single.observation_space, single.action_space
        self.observation_space = gymnasium.vector.utils.batch_space(self.single_observation_space, num_envs)
        self.action_space = gymnasium.vector.utils.batch_space(self.single_action_space, num_envs)
        # one program with the game's step for steps and resets (pending True / False), as the single env, shared by
        # every vector env of the same game (program_cache)
        self._start_all, self._play_all = shared_jit(
            ("gymnasium_vector", *self.game.program_key()), lambda: (self._start_games, self._play_games)
        )
        self._merge = _MERGE
        self._states, self._env_rngs = None, None

    def _start_games(self, key_data, seats):
        """New games from key data uint32[N, 2] and seats int32[N], no step played -> (SeatState, SeatStep) [N]."""
        keys = jax.vmap(lambda k: jax.random.wrap_key_data(k, impl="threefry2x32"))(key_data)
        states = jax.vmap(self.game.start_game)(keys, seats)
        zero = jnp.zeros(seats.shape, jnp.float32), jnp.zeros(seats.shape, jnp.int32)
        return states, jax.vmap(self.game.outcome)(states, *zero)

    def _play_games(self, states, actions, pending):
        """The N games in step (``play_in_step``): ``actions`` int32[N] played if ``pending`` (bool[]), then on while
        no learner has a choice, up to the step where some learner's episode ends -> (SeatState, SeatStep) [N]."""
        game, rows = self.game, jnp.arange(actions.shape[0])

        def record(states, reward):
            ts = states.timestep
            ended = jax.vmap(game.learner_done)(ts, states.seat)
            return states, reward + ts.reward[rows, states.seat], ended.any()

        states, reward, steps = play_in_step(
            jax.vmap(lambda state, action: game.advance(state, action[0])),
            lambda states: states.timestep.action_mask[rows, states.seat][:, None],
            record,
            states,
            actions[:, None],
            pending,
            jnp.zeros(actions.shape, jnp.float32),
        )
        return states, jax.vmap(game.outcome, in_axes=(0, 0, None))(states, reward, steps)

    def _reset_all(self):
        states, _ = self._start_all(*self._draw(np.ones(self.num_envs, bool)))
        return self._play_all(states, np.zeros(self.num_envs, np.int32), np.False_)

    def _draw(self, which):
        """Reset keys (uint32[N, 2]) and seats (int32[N]) of the envs in ``which`` (bool[N]; the others' are zeros),
        each env from its own generator in the order ``AutoChessSingleSeatEnv.reset`` draws them (the seat, then the
        key), so a seed starts the same game."""
        if self._env_rngs is None:
            self._draw_generators()
        seats, key_data = np.zeros(self.num_envs, np.int32), np.zeros((self.num_envs, 2), np.uint32)
        for i in np.flatnonzero(which):
            rng = self._env_rngs[i]
            seats[i] = self.fixed_seat if self.fixed_seat is not None else rng.integers(C.NUM_PLAYERS)
            key_data[i] = jax.random.key_data(jax.random.key(int(rng.integers(2**31 - 1))))
        return key_data, seats

    def _seed(self, seed):
        """``reset(seed=)``: an int, a list of ``num_envs`` ints or Nones, or None (see the class docstring)."""
        if seed is None:
            return
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            seed = [int(seed) + i for i in range(self.num_envs)]
        if (
            not isinstance(seed, (list, tuple))
            or len(seed) != self.num_envs
            or any(
                s is not None and (isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 0) for s in seed
            )
        ):
            raise ValueError(
                f"seed must be None, a non-negative int or a list of {self.num_envs} non-negative ints "
                f"or Nones, got {seed!r}"
            )
        if self._env_rngs is None:
            self._draw_generators()
        for i, s in enumerate(seed):
            if s is not None:
                self._env_rngs[i] = gymnasium.utils.seeding.np_random(int(s))[0]

    def _draw_generators(self):
        """One generator per env, seeded from the vector env's own (``np_random``)."""
        self._env_rngs = [np.random.default_rng(s) for s in self.np_random.integers(0, 2**63, self.num_envs)]

    def _infos(self, out, fresh, done):
        every = np.ones(self.num_envs, bool)
        infos = {
            "action_mask": np.asarray(fresh.action_mask),
            "_action_mask": every,
            "seat": np.asarray(self._states.seat),
            "_seat": every,
        }
        if done is not None:
            infos.update(
                {
                    "final_obs": np.asarray(out.observation),
                    "_final_obs": done,
                    "rank": np.asarray(out.rank),
                    "_rank": done,
                }
            )
        return infos

    def reset(self, *, seed: int | list | None = None, options: dict | None = None):
        self._seed(seed)
        self._states, out = self._reset_all()
        out = jax.device_get(out)
        return np.asarray(out.observation), self._infos(out, out, None)

    def step(self, actions):
        if self._states is None:
            raise RuntimeError("step() before reset()")
        actions = np.asarray(actions)
        if (
            actions.shape != (self.num_envs,)
            or not np.issubdtype(actions.dtype, np.integer)
            or (actions.min() < 0 or actions.max() >= C.NUM_ACTIONS)
        ):
            raise ValueError(
                f"actions must be ints in [0, {C.NUM_ACTIONS}) of shape ({self.num_envs},), got "
                f"{actions.dtype}{list(actions.shape)}"
            )
        states, step_out = self._play_all(self._states, actions.astype(np.int32), np.True_)
        out = jax.device_get(step_out)  # the step's view: a finished game's last observation and place
        done = np.asarray(out.terminated)
        fresh = out
        if done.any():  # same-step autoreset: new games in the finished slots, at their start (in step)
            states, fresh = self._merge(done, self._start_all(*self._draw(done)), (states, step_out))
            fresh = jax.device_get(fresh)
        self._states = states
        infos = self._infos(out, fresh, done)
        return (
            np.asarray(fresh.observation),
            np.asarray(out.reward, np.float32),
            done,
            np.zeros(self.num_envs, bool),
            infos,
        )
