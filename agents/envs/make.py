"""Env adapters: everything the trainers step keeps the batched-env contract of ``agents.envs.api``.

The contract (``agents.envs.api.BatchedEnv``; N envs, P seats per env, A actions)::

    env.num_envs, env.num_players (P), env.num_actions (A), env.obs_shape (per seat), env.learner_seats
    env.reset(key)            -> (state, TimeStep)
    env.step(state, actions)  -> (state, TimeStep)     actions int32[N, P], auto-reset

with ``TimeStep.observation`` [N, P, *obs_shape], ``action_mask`` bool[N, P, A], ``reward``
float32[N, P], ``done`` bool[N] and an ``info`` dict holding ``seat_done`` bool[N, P] (required) and
``rank`` int32[N, P] (optional); ``agents.envs.api`` documents every field, and
``agents.envs.api.check_env(env)`` checks an env against it.

- ``AutoChessTask``: the game, with optional scripted bots in some seats
  (``opponents``); the bot seats' actions replace whatever the learner sent.
- ``LeagueTask``: the game for a league (``agents.league.pool``).
- ``agents.envs.gymnax_env.GymnaxVecEnv``: any gymnax env, one seat.
- ``make_env(config)`` builds the right one from a ``TrainConfig``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

import jaxgame
from agents.config import TrainConfig
from agents.envs.gymnax_env import make_gymnax_env
from agents.league import pool as league
from jaxgame import all_bots
from jaxgame.validation import as_key


@struct.dataclass
class TaskState:
    games: object  # GameState with a leading [N] axis
    key: jax.Array  # typed PRNG key for the bots' choices


class _GameTask:
    """What the game's batched env adapters share: the VecEnv and the protocol's sizes."""

    name = "autochess"

    def __init__(self, env: jaxgame.AutoChessEnv, num_envs: int, sync_axes=()):
        self.game = env
        self.venv = jaxgame.VecEnv(env, num_envs, sync_axes)
        self.num_envs = num_envs
        self.num_players = env.num_players
        self.num_actions = env.num_actions
        self.obs_shape = env.obs_shape


class AutoChessTask(_GameTask):
    """``VecEnv`` over the game with bots in the seats whose kind is not "self".

    ``seat_kinds``: 8 names from "self" and the bots (``jaxgame.all_bots.BOTS``). ``learner_seats``
    (numpy bool[8]) marks the "self" seats, whose steps are training data.
    ``sync_axes``: names of vmapped axes around the task (a sweep's) that share
    the fight/reset branches (``jaxgame.batching``).
    """

    def __init__(self, env: jaxgame.AutoChessEnv, num_envs: int, seat_kinds=("self",) * 8, sync_axes=()):
        seat_kinds = tuple(seat_kinds)
        if len(seat_kinds) != env.num_players or any(k not in ("self", *all_bots.BOTS) for k in seat_kinds):
            raise ValueError(
                f"seat_kinds must be {env.num_players} names from self/{'/'.join(all_bots.BOTS)}, got {seat_kinds!r}"
            )
        super().__init__(env, num_envs, sync_axes)
        self.seat_kinds = seat_kinds
        self.learner_seats = np.array([k == "self" for k in seat_kinds])

    def __repr__(self):
        return f"AutoChessTask(num_envs={self.num_envs}, seats={self.seat_kinds}, game={self.game!r})"

    def reset(self, key):
        key = as_key(key, "AutoChessTask.reset key")
        game_key, bot_key = jax.random.split(key)
        games, ts = self.venv.reset(game_key)
        return TaskState(games, bot_key), _with_seat_done(ts)

    def step(self, state: TaskState, actions):
        actions = jnp.asarray(actions)
        key = state.key
        if not self.learner_seats.all():
            key, bot_key = jax.random.split(key)
            actions = self.bot_actions(bot_key, state.games, actions)
        games, ts = self.venv.step(state.games, actions)
        return TaskState(games, key), _with_seat_done(ts)

    def bot_actions(self, key, games, actions):
        """int32[N, 8]: ``actions`` with every bot seat's action replaced by its bot's choice."""
        masks = jax.vmap(self.game.action_mask)(games)
        out = actions
        kinds = sorted({k for k in self.seat_kinds if k != "self"})
        for name, k in zip(kinds, jax.random.split(key, len(kinds))):
            seats = jnp.asarray([kind == name for kind in self.seat_kinds])
            chosen = jax.vmap(all_bots.BOTS[name])(
                jax.random.split(k, self.num_envs), games, all_bots.decision_masks(name, masks, seats[None, :])
            )
            out = jnp.where(seats[None, :], chosen, out)
        return out.astype(jnp.int32)


@struct.dataclass
class LeagueTaskState:
    games: object  # GameState with a leading [N] axis
    key: jax.Array  # typed PRNG key: the bots' choices and the roles of new games
    roles: jax.Array  # int32[N, 8]: each seat's role in the current game (agents.league.pool ROLE_*)
    game: jax.Array  # int32[N]: games started in each env since the reset (0 for the first; +1 at every new game)


class LeagueTask(_GameTask):
    """``VecEnv`` over the game for a league (``agents.league.pool``): every game start draws the seats' roles
    (learner, pool snapshot or bot); the bot seats' actions replace whatever was sent, the trainer fills
    the pool seats'. ``state.roles`` are the roles of the games being played; ``ts.info["roles"]`` those
    the step's games were played with (the finished game's, on its last step). ``state.game`` counts each env's
    games, so the league can tell which game an env is playing (the snapshot its pool seats play)."""

    def __init__(
        self,
        env: jaxgame.AutoChessEnv,
        num_envs: int,
        learner_seats: int,
        pool_prob: float,
        bot: str,
        sync_axes=(),
        self_share: float = 0.0,
    ):
        super().__init__(env, num_envs, sync_axes)
        self.num_learner_seats = learner_seats
        self.pool_prob = pool_prob
        self.self_share = self_share
        self.bot = bot
        self.learner_seats = np.ones(env.num_players, bool)  # any seat may be the learner's: see state.roles

    def __repr__(self):
        return (
            f"LeagueTask(num_envs={self.num_envs}, learner_seats={self.num_learner_seats}, "
            f"pool_prob={self.pool_prob}, self_share={self.self_share}, bot={self.bot!r}, game={self.game!r})"
        )

    def roles(self, key):
        return league.assign_roles(key, self.num_envs, self.num_learner_seats, self.pool_prob, self.self_share)

    def reset(self, key):
        game_key, role_key, key = jax.random.split(as_key(key, "LeagueTask.reset key"), 3)
        games, ts = self.venv.reset(game_key)
        roles = self.roles(role_key)
        state = LeagueTaskState(games, key, roles, jnp.zeros(self.num_envs, jnp.int32))
        return state, _with_seat_done(ts, roles=roles)

    def step(self, state: LeagueTaskState, actions):
        key, bot_key, role_key = jax.random.split(state.key, 3)
        masks = jax.vmap(self.game.action_mask)(state.games)
        chosen = league.bot_actions(self.bot, bot_key, state.games, masks)
        actions = jnp.where(state.roles == league.ROLE_BOT, chosen, jnp.asarray(actions)).astype(jnp.int32)
        games, ts = self.venv.step(state.games, actions)
        roles = jnp.where(ts.done[:, None], self.roles(role_key), state.roles)
        game = state.game + ts.done.astype(jnp.int32)
        return LeagueTaskState(games, key, roles, game), _with_seat_done(ts, roles=state.roles)


def seat_done(ts) -> jax.Array:
    """bool[N, P]: the contract's ``info["seat_done"]`` of the game's batched ``TimeStep`` (``info["rank"]`` int32[N,
    P], ``done`` bool[N]): a seat is finished once ranked (eliminated, or the game ended). What resets a recurrent
    policy's carry at the seat's next step, in training (``agents.core.rollout.Memory``) and at the tables
    (``agents.arena.tables``)."""
    return (ts.info["rank"] > 0) | ts.done[:, None]


def _with_seat_done(ts, **extra):
    """``ts`` with the contract's ``info["seat_done"]`` (``seat_done``) and ``extra`` in its info."""
    return ts.replace(info={**ts.info, "seat_done": seat_done(ts), **extra})


def make_game(config: TrainConfig, obs: str | None = None) -> jaxgame.AutoChessEnv:
    """The game env of a config (observation kind and rules); ``obs`` overrides the observation kind."""
    return jaxgame.make("autochess", obs=config.task.obs if obs is None else obs, **config.rules())


def make_env(config: TrainConfig, num_envs: int | None = None, sync_axes: tuple[str, ...] = ()):
    """The batched env of a config (an ``agents.envs.api.BatchedEnv``): ``AutoChessTask`` (the game, its seats as
    ``config.task.opponents`` says), ``LeagueTask`` (a league's) or a ``GymnaxVecEnv``. ``num_envs``: default
    ``config.run.num_envs``. ``sync_axes``: the vmapped axes the game's branches are shared over (see
    ``jaxgame.batching``; gymnax envs have none).

    Example::

        env = agents.make_env(agents.preset("smoke"))
        state, ts = env.reset(jax.random.key(0))  # observation float32[N, 8, OBS_SIZE], action_mask bool[N, 8, A]
    """
    num_envs = config.run.num_envs if num_envs is None else num_envs
    if config.is_gymnax:
        return make_gymnax_env(config.task.env, num_envs)
    if config.league.league_size:
        return LeagueTask(
            make_game(config),
            num_envs,
            config.league.league_learner_seats,
            config.league.league_pool_prob,
            config.league.league_bot,
            sync_axes,
            config.league.league_self_share,
        )
    return AutoChessTask(make_game(config, config.env_obs), num_envs, config.seat_kinds, sync_axes)


def learner_seats(env) -> np.ndarray:
    """numpy bool[P]: the seats whose steps are training data (``env.learner_seats``, see ``agents.envs.api``)."""
    return np.asarray(env.learner_seats)
