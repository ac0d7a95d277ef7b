"""Stable-Baselines3: N games x their learning seats as one SB3 ``VecEnv``, all games stepped in one compiled call.

    from sb3_contrib import MaskablePPO
    from agents.interop.sb3_vec_env import make_sb3_vec_env

    venv = make_sb3_vec_env(num_games=16)                           # 16 games x 8 seats = 128 envs: self-play
    venv = make_sb3_vec_env(16, learners=[0], opponents="greedy")   # 16 envs: seat 0 learns, 7 greedy bots
    model = MaskablePPO("MlpPolicy", venv).learn(100_000)

Seat-env ``g * L + j`` is the ``j``-th learner seat (``learners``, ascending) of game ``g``; the other seats are
played inside the same compiled call by ``opponents`` (scripted bots or saved policies, named as everywhere:
``random``, ``greedy``, ``expert``, ``expert_public``, ``baseline:NAME``, ``RUN_DIR[:STEP]``). Observations are
float32[N*L, obs_size] vectors, ``action_masks()`` bool[N*L, 258] (sb3-contrib's ``MaskablePPO`` reads it through
``env_method("action_masks")``), rewards the game's own, the reward the project's training uses (the placement
reward when a seat finishes, +1 first .. -1 last, plus the rules' optional shaping).

One ``step`` is one compiled call (``SeatTable.play``): the learners' actions are played in every game, then, while
no learner seat of any game has a choice (two or more legal actions), every game steps on (learners playing their
only legal action); each seat's rewards of those game steps are summed. The games stay in step (the same game steps
for all: their fights run together, once a round; games stepped on one by one would fall out of step and run the
fight at nearly every step). So with one game and one learner a seat-env sees exactly its decisions, as the
Gymnasium env does; with many games, a learner whose turn ended while others decide gets steps with one legal
action (below).

Episodes and knocked-out seats (SB3 needs a transition from every env at every step):

* A seat-env's episode is its seat's part of one game. It ends (``done``) on the step its seat is knocked out or its
  game ends: ``infos[i]["terminal_observation"]`` is the seat's view right then, ``infos[i]["rank"]`` its place
  (1 = first) and ``infos[i]["TimeLimit.truncated"]`` is False: a game always ends with every place given, so no
  episode is cut short and SB3 never bootstraps past an end.
* A seat knocked out while another learner seat of its game plays on *waits*: its steps show the seat's own view of
  the ongoing game (the game's observation of an eliminated seat), its mask allows only the no-op (action 0), its
  action is ignored and its reward is 0, without ``done``; when the game ends, the seat-env goes on into the seat's
  next game, again without ``done``. The wait is thus the start of the seat-env's next episode.
* A game whose learner seats are all out is over for the learners: it is replaced by a new game on that same step
  (knock-outs happen on fight steps, after which a round starts, so the new game starts in step with the others);
  its opponents' remaining places are never played. So no seat waits in a game without learners.

Why: SB3 trains on every transition, so the waiting ones must be true to some MDP and carry no wrong signal. Here
the knock-out is a real terminal (the placement transition is not bootstrapped from a dead seat's value, as it
would be if the episode ran on to the game's end, SuperSuit's "black death"); a waiting step has exactly one legal
action, so under MaskablePPO's masking its log-probability is 0 whatever the parameters (no policy gradient, no
entropy), and its value target, the discounted value of the next game's start, is a true value of that state; and
no episode is invented: VecMonitor counts one episode per seat and game, whose return is the seat's own and whose
length includes the wait before it. Ending the wait with a ``done`` would add a zero-return episode per knock-out
to ``ep_rew_mean``. The cost is the waiting steps themselves, samples that teach only the value function
(``waiting`` tells them apart); an alive learner whose turn ended while another learner still decides also has one
legal action: same story.

``seed``: the generator of the game keys; SB3's ``venv.seed(s)`` (``MaskablePPO(..., seed=s)`` calls it) reseeds
the whole batch from ``s`` at the next ``reset`` (the games are shared by their seats: they cannot be seeded one
seat-env at a time). A game's next game comes from its own key.

``SeatVecEnv`` is the batched logic with numpy in and out and no SB3 import (the default tests check it);
``make_sb3_vec_env`` wraps it in a ``stable_baselines3`` ``VecEnv`` (``pip install "jaxgame[sb3]"``).
"""

from __future__ import annotations

import functools
import warnings
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnasium import spaces

import jaxgame
from agents.config import RULE_FIELDS
from agents.core import distributions
from agents.interop.program_cache import shared_jit
from agents.policies.load import (
    load_policy,
    parse_spec,
    require_feed_forward,
    rule_differences,
    seat_policies,
    table_observations,
)
from jaxgame import all_bots
from jaxgame import constants as C
from jaxgame import observation as observation_lib
from jaxgame.batched_step import select
from jaxgame.config import GameConfig

ALL_SEATS = tuple(range(C.NUM_PLAYERS))


@struct.dataclass
class TableState:
    game: jaxgame.GameState
    timestep: jaxgame.TimeStep  # the last step's (after a game end: the finished game's info, the new game's obs)
    key: jax.Array  # the opponents' randomness


@struct.dataclass
class SeatsStep:
    """What the learner seats see after a call, [N games, L learner seats] (SB3's view before flattening)."""

    observation: jax.Array  # float32[N, L, obs_size]: each seat's view now (a new game's after its game ended)
    final_observation: jax.Array  # float32[N, L, obs_size]: the view when the seat's episode ended (where done)
    action_mask: jax.Array  # bool[N, L, 258]: legal actions now
    reward: jax.Array  # float32[N, L]: rewards of the call's game steps, summed
    done: jax.Array  # bool[N, L]: the seat's episode ended in this call (knocked out or its game ended)
    rank: jax.Array  # int32[N, L]: the seat's place where done, else 0
    waiting: jax.Array  # bool[N, L]: knocked out while its game goes on (its next episode has begun)
    game_steps: jax.Array  # int32[]: game steps the call played (the same in every game)


def learner_seats(learners) -> tuple[int, ...]:
    """The learner seats, ascending: None -> all 8; else distinct ints in [0, 8), at least one."""
    if learners is None:
        return ALL_SEATS
    seats = list(learners) if isinstance(learners, (list, tuple, range, np.ndarray)) else None
    if (
        not seats
        or any(isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)) for s in seats)
        or len(set(seats)) != len(seats)
        or not all(0 <= s < C.NUM_PLAYERS for s in seats)
    ):
        raise ValueError(
            f"learners must be None (all 8 seats) or distinct seats in [0, {C.NUM_PLAYERS}), at least "
            f"one; got {learners!r}"
        )
    return tuple(sorted(int(s) for s in seats))


def opponent_seat_specs(opponents, learners: tuple[int, ...]) -> dict[int, str]:
    """{seat: player spec} of the seats not in ``learners``: one spec for all, or a sequence of one per such seat
    in seat order."""
    seats = [s for s in ALL_SEATS if s not in learners]
    specs = [opponents] * len(seats) if isinstance(opponents, str) else list(opponents)
    if len(specs) != len(seats) or not all(isinstance(s, str) and s.strip() for s in specs):
        raise ValueError(
            f"opponents must be a player spec or a sequence of {len(seats)} (one per non-learner seat "
            f"{seats}, in seat order); got {opponents!r}"
        )
    return {seat: spec.strip() for seat, spec in zip(seats, specs)}


def play_in_step(advance, learner_masks, record, states, actions, pending, tally):
    """The lock-step loop of N games with L learner seats each (``SeatTable.play``, the Gymnasium
    ``AutoChessVectorEnv``): ``actions`` (int32[N, L]) played if ``pending`` (bool[]), then, while no learner seat of
    any game has a choice (two or more legal actions) and ``record`` did not stop, every game steps on, each learner
    seat playing its only legal action. All games play the same game steps, so their fights run together, once a
    round (games stepped on one by one would fall out of step and run the fight at nearly every step).

    ``advance(states, actions int32[N, L]) -> states``: one game step of every game. ``learner_masks(states)`` ->
    bool[N, L, 258]: the learner seats' legal actions. ``record(states, tally) -> (states, tally, stop bool[])``:
    after each game step, fold it into ``tally`` (any pytree) and adjust ``states``; ``stop`` ends the call.
    -> (states, tally, steps int32[]: the game steps played). One ``advance`` in the program, in a while loop."""

    def going(c):
        states, _, _, stop, pending = c
        return pending | (~stop & ~(learner_masks(states).sum(-1) >= 2).any())

    def one_step(c):
        states, tally, steps, _, pending = c
        forced = jnp.argmax(learner_masks(states), axis=-1).astype(jnp.int32)
        states = advance(states, jnp.where(pending, actions, forced))
        states, tally, stop = record(states, tally)
        return states, tally, steps + 1, stop, jnp.bool_(False)

    init = (states, tally, jnp.int32(0), jnp.bool_(False), jnp.asarray(pending, bool))
    states, tally, steps, _, _ = jax.lax.while_loop(going, one_step, init)
    return states, tally, steps


class SeatTable:
    """Games with L learner seats and the other seats played by bots or saved policies: ``start`` (one game) and
    ``play`` (N games in step, the program ``SeatVecEnv`` jits). ``opponents``: {seat: spec} of the non-learner
    seats."""

    def __init__(
        self,
        learners: tuple[int, ...],
        opponents: dict[int, str],
        greedy_opponents: bool = False,
        rules: dict | None = None,
    ):
        self.learners = np.asarray(learners, np.int32)
        loaded, policies, participant = {}, [], {}  # participant per opponent seat: ("bot", name) / ("policy", i)
        for seat, spec in opponents.items():
            parsed = parse_spec(spec)
            if isinstance(parsed, str):
                participant[seat] = ("bot", parsed)
                continue
            if spec not in loaded:
                policy = load_policy(*parsed)
                require_feed_forward(policy, "the opponents of the env views (Gymnasium, SB3, PettingZoo)")
                if (
                    policy.config.net.independent
                ):  # as the Gymnasium env: an independent run plays as its seat-0 learner
                    policy = seat_policies(policy)[0]
                loaded[spec] = len(policies)
                policies.append(policy)
            participant[seat] = ("policy", loaded[spec])
        self.policies, self.participant = tuple(policies), participant
        if rules is None:
            rules = policies[0].config.rules() if policies else {}
        self.config = GameConfig.from_overrides(**rules)
        self.rule_notes = rule_differences(policies, {n: getattr(self.config, n) for n in RULE_FIELDS})
        self.env = jaxgame.AutoChessEnv(self.config, obs=table_observations(policies, learner="vector"))
        self.greedy_opponents = bool(greedy_opponents)
        self.kinds = sorted(set(participant.values()))
        # row of each seat in the stacked per-participant actions (learner seats: any row, overwritten)
        self._rows = np.asarray([self.kinds.index(participant[s]) if s in participant else 0 for s in ALL_SEATS])

    def program_key(self) -> tuple:
        """What this table's programs depend on: the key of ``program_cache.shared_jit``."""
        return (
            "seat_table",
            tuple(int(s) for s in self.learners),
            tuple(sorted(self.participant.items())),
            tuple(p.name for p in self.policies),
            self.env,
            self.greedy_opponents,
        )

    def _view(self, observation, kind="vector"):
        return observation if self.env.obs_kind != "both" else observation[kind]

    def _actions(self, key, game, ts, learner_actions):
        """int32[8]: the opponents' actions, and ``learner_actions`` (int32[L]) in the learner seats."""
        if not self.kinds:
            return jnp.zeros(C.NUM_PLAYERS, jnp.int32).at[self.learners].set(learner_actions)
        bot_key, policy_key = jax.random.split(key)
        rows = []
        for kind, which in self.kinds:
            if kind == "bot":
                rows.append(all_bots.BOTS[which](bot_key, game, ts.action_mask))
                continue
            policy = self.policies[which]
            logits, _ = policy.network.apply(policy.params, self._view(ts.observation, policy.config.task.obs))
            rows.append(
                distributions.greedy(logits, ts.action_mask)
                if self.greedy_opponents
                else distributions.sample(jax.random.fold_in(policy_key, which), logits, ts.action_mask)
            )
        actions = jnp.stack(rows)[self._rows, jnp.arange(C.NUM_PLAYERS)]  # seat s plays its participant's row
        return actions.astype(jnp.int32).at[self.learners].set(learner_actions)

    def _waiting(self, ts):
        """bool[N, L]: the learner seat is knocked out and its game goes on."""
        return ~ts.done[:, None] & ~ts.info["alive"][:, self.learners]

    def start(self, key) -> TableState:
        """A new game from ``key`` (one game, no batch axis); no step played yet."""
        game_key, opponent_key = jax.random.split(key)
        game, ts = self.env.reset(game_key)
        return TableState(game, ts, opponent_key)

    def _advance(self, state: TableState, learner_actions) -> TableState:
        """One game step of one game: ``learner_actions`` int32[L] in the learner seats, the opponents' choices in
        the others."""
        key, act_key = jax.random.split(state.key)
        game, ts = self.env.step(state.game, self._actions(act_key, state.game, state.timestep, learner_actions))
        return TableState(game, ts, key)

    def _restart_abandoned(self, states: TableState) -> TableState:
        """Games (leading [N] axis) whose learner seats are all out, and that did not just end, replaced by new
        games from their keys (their step is a fight step: the new games start in step with the others)."""
        ts = states.timestep
        abandoned = ~ts.done & ~ts.info["alive"][:, self.learners].any(-1)

        def restart(states):
            keys = jax.vmap(jax.random.split)(states.key)
            fresh = jax.vmap(self.start)(keys[:, 0])
            return select(abandoned, fresh.replace(key=keys[:, 1]), states)

        return jax.lax.cond(abandoned.any(), restart, lambda states: states, states)

    def play(self, states: TableState, actions, pending):
        """``states``: N games (leading [N] axis); ``actions`` int32[N, L] (an illegal one is the game's no-op),
        played if ``pending`` (bool[]); then every game steps on while no learner seat has a choice (an eliminated
        seat has one legal action) and no game ended (``play_in_step``) -> (TableState, SeatsStep)."""
        before = self._waiting(states.timestep)
        shape = before.shape
        tally = dict(
            reward=jnp.zeros(shape, jnp.float32),
            over=jnp.zeros(shape, bool),
            rank=jnp.zeros(shape, jnp.int32),
            final=jnp.zeros(shape + (self.env.obs_size,), jnp.float32),
        )

        def record(states, t):
            ts = states.timestep
            # the step that ends a seat's episode: its knock-out or its game's end (not again while it waits)
            ends = ~before & ~t["over"] & (ts.done[:, None] | ~ts.info["alive"][:, self.learners])
            seen = self._view(ts.info["final_observation"])[:, self.learners]
            t = dict(
                reward=t["reward"] + ts.reward[:, self.learners],
                over=t["over"] | ends,
                rank=jnp.where(ends, ts.info["rank"][:, self.learners], t["rank"]),
                final=jnp.where(ends[..., None], seen, t["final"]),
            )
            return self._restart_abandoned(states), t, ts.done.any()

        states, t, steps = play_in_step(
            jax.vmap(self._advance),
            lambda s: s.timestep.action_mask[:, self.learners],
            record,
            states,
            jnp.asarray(actions, jnp.int32),
            pending,
            tally,
        )
        ts = states.timestep
        out = SeatsStep(
            self._view(ts.observation)[:, self.learners],
            t["final"],
            ts.action_mask[:, self.learners],
            t["reward"],
            t["over"],
            t["rank"],
            self._waiting(ts),
            steps,
        )
        return states, out


class SeatVecEnv:
    """``num_games`` games x their learner seats as ``num_envs = num_games * len(learners)`` seat-envs with SB3's
    ``VecEnv`` semantics, numpy in and out, without SB3 (see the module docstring; ``make_sb3_vec_env`` wraps it).

    ``learners``: the seats the learner plays (default all 8: self-play). ``opponents``: a player spec for every
    other seat, or a sequence of one per other seat in seat order. ``greedy_opponents``: policy opponents play their
    most likely legal action. ``rules``: ``GameConfig`` overrides (default: the first policy opponent's training
    rules, else the default rules). ``seed``: the game keys' generator (None: fresh entropy).

    ``reset(seed=None)`` -> obs float32[num_envs, obs_size]; ``step(actions int[num_envs])`` -> (obs, rewards
    float32[num_envs], dones bool[num_envs], infos: a list of num_envs dicts, ``terminal_observation``, ``rank`` and
    ``TimeLimit.truncated`` in those of the done envs); ``action_masks()`` -> bool[num_envs, 258]; ``waiting``
    bool[num_envs]: the seat is knocked out and its game goes on; ``game_steps`` int: the game steps the last call
    played in each game. A policy opponent trained with other rules plays with a warning.
    """

    render_mode = None

    def __init__(
        self,
        num_games: int = 8,
        learners: Sequence[int] | None = None,
        opponents: str | Sequence[str] = "random",
        greedy_opponents: bool = False,
        rules: dict | None = None,
        seed: int | None = None,
    ):
        if isinstance(num_games, bool) or not isinstance(num_games, (int, np.integer)) or num_games < 1:
            raise ValueError(f"num_games must be an int >= 1, got {num_games!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
            raise ValueError(f"seed must be None or an int, got {seed!r}")
        if rules is not None and not isinstance(rules, dict):
            raise ValueError(f"rules must be None or a dict of GameConfig overrides, got {rules!r}")
        self.learners = learner_seats(learners)
        self.opponents = opponent_seat_specs(opponents, self.learners)
        self.table = SeatTable(self.learners, self.opponents, greedy_opponents, rules)
        self.config = self.table.config
        for note in self.table.rule_notes:  # a policy opponent trained with other rules
            warnings.warn(note, stacklevel=3)
        self.num_games = int(num_games)
        self.num_envs = self.num_games * len(self.learners)
        low, high = observation_lib.observation_bounds(self.config)
        self.observation_space = spaces.Box(low, high, dtype=np.float32)
        self.action_space = spaces.Discrete(C.NUM_ACTIONS)
        table = self.table

        def start_all(key_data):
            keys = jax.vmap(lambda k: jax.random.wrap_key_data(k, impl="threefry2x32"))(key_data)
            return jax.vmap(table.start)(keys)

        # one program with the game's step in it, for resets (pending False) and steps alike, shared by every
        # VecEnv of the same table (program_cache: only the first compiles)
        self._start_all, self._play_all = shared_jit(table.program_key(), lambda: (start_all, table.play))
        self._rng = np.random.default_rng(seed)
        self._states = None
        self._mask = np.zeros((self.num_envs, C.NUM_ACTIONS), bool)
        self.waiting = np.zeros(self.num_envs, bool)
        self.game_steps = 0

    def __repr__(self):
        return (
            f"SeatVecEnv(num_games={self.num_games}, learners={self.learners}, opponents={self.opponents}, "
            f"config={self.config})"
        )

    @property
    def states(self) -> TableState | None:
        """The games in play with their last step and opponents' keys (leading [num_games] axis); None before
        ``reset``."""
        return self._states

    @property
    def games(self):
        """The games in play (a ``jaxgame.GameState`` with a leading [num_games] axis), None before ``reset``."""
        return None if self._states is None else self._states.game

    def _flat(self, x):
        """[N, L, ...] -> [N * L, ...] (seat-env g * L + j: game g's j-th learner seat)."""
        return np.asarray(x).reshape((self.num_envs,) + np.shape(x)[2:])

    def _take(self, out) -> SeatsStep:
        """The step on the host (numpy leaves); keeps its masks, waiting flags and game steps."""
        out = jax.device_get(out)
        self._mask = self._flat(out.action_mask).astype(bool)
        self.waiting = self._flat(out.waiting).astype(bool)
        self.game_steps = int(out.game_steps)
        return out

    def reset(self, seed: int | None = None) -> np.ndarray:
        """New games (keys from the generator, reseeded from ``seed`` if given) -> obs float32[num_envs, obs_size]."""
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        key_data = self._rng.integers(0, 2**32, (self.num_games, 2), dtype=np.uint32)
        actions = np.zeros((self.num_games, len(self.learners)), np.int32)
        self._states, out = self._play_all(self._start_all(key_data), actions, np.bool_(False))
        return self._flat(self._take(out).observation).astype(np.float32)

    def check_actions(self, actions) -> np.ndarray:
        """int32[num_games, L] from ``actions`` (ints in [0, 258), shape [num_envs]); ValueError otherwise."""
        a = np.asarray(actions)
        if (
            a.shape != (self.num_envs,)
            or not np.issubdtype(a.dtype, np.integer)
            or (a.size and (a.min() < 0 or a.max() >= C.NUM_ACTIONS))
        ):
            raise ValueError(
                f"actions must be ints in [0, {C.NUM_ACTIONS}) of shape ({self.num_envs},), got "
                f"{a.dtype}{list(a.shape)}"
            )
        return a.astype(np.int32).reshape(self.num_games, len(self.learners))

    def dispatch(self, actions):
        """Start the step (JAX runs it asynchronously) -> the SeatsStep on the device; ``collect`` turns it into
        SB3's return."""
        if self._states is None:
            raise RuntimeError("step() before reset()")
        actions = self.check_actions(actions)
        self._states, out = self._play_all(self._states, actions, np.bool_(True))
        return out

    def collect(self, out):
        """(obs float32[num_envs, obs_size], rewards float32[num_envs], dones bool[num_envs], infos) of a step."""
        out = self._take(out)
        dones = self._flat(out.done).astype(bool)
        final, rank = self._flat(out.final_observation), self._flat(out.rank)
        infos = [{} for _ in range(self.num_envs)]
        for i in np.flatnonzero(dones):
            infos[i] = {
                "terminal_observation": final[i].astype(np.float32),
                "TimeLimit.truncated": False,
                "rank": int(rank[i]),
            }
        return (self._flat(out.observation).astype(np.float32), self._flat(out.reward).astype(np.float32), dones, infos)

    def step(self, actions):
        """The learners' actions (int[num_envs]) -> (obs, rewards, dones, infos); see the class docstring."""
        return self.collect(self.dispatch(actions))

    def action_masks(self) -> np.ndarray:
        """bool[num_envs, 258]: each seat-env's legal actions now (a copy)."""
        return self._mask.copy()

    def mask_rows(self, indices=None) -> list[np.ndarray]:
        """The masks of ``indices`` (None: all), one bool[258] per seat-env (``env_method("action_masks")``)."""
        rows = range(self.num_envs) if indices is None else indices
        return [self._mask[i] for i in rows]


@functools.cache
def sb3_vec_env_class():
    """The ``stable_baselines3`` ``VecEnv`` subclass over a ``SeatVecEnv`` (SB3 imported on first use)."""
    from stable_baselines3.common.vec_env import VecEnv

    class AutoChessSB3VecEnv(VecEnv):
        """SB3 ``VecEnv`` of a ``SeatVecEnv`` (``self.seats``): see ``agents.interop.sb3_vec_env``.

        The seat-envs share their games, so: ``get_attr(name)`` gives the batch's attribute (``seats.NAME``, else
        this env's) once per index; ``set_attr`` sets it on the batch for all indices only; ``env_method`` knows
        ``action_masks`` (one bool[258] per index); ``env_is_wrapped`` is False (no Gymnasium env inside);
        ``seed(s)`` reseeds the whole batch from ``s`` at the next ``reset``. No rendering (``render_mode`` None).
        """

        def __init__(self, seats: SeatVecEnv):
            self.seats = seats
            self._pending = None
            super().__init__(seats.num_envs, seats.observation_space, seats.action_space)

        def __repr__(self):
            return f"AutoChessSB3VecEnv({self.seats!r})"

        def reset(self):
            seed = next((s for s in self._seeds if s is not None), None)
            self._pending = None
            obs = self.seats.reset(seed)
            self.reset_infos = [{} for _ in range(self.num_envs)]
            self._reset_seeds()
            self._reset_options()
            return obs

        def step_async(self, actions):
            self._pending = self.seats.dispatch(actions)

        def step_wait(self):
            if self._pending is None:
                raise RuntimeError("step_wait() without step_async()")
            out, self._pending = self._pending, None
            return self.seats.collect(out)

        def action_masks(self) -> np.ndarray:
            """bool[num_envs, 258] (``get_action_masks`` of sb3-contrib goes through ``env_method``)."""
            return self.seats.action_masks()

        def close(self):
            self._pending = None

        def _indices(self, indices):
            return list(self._get_indices(indices))

        def get_attr(self, attr_name, indices=None):
            value = getattr(self.seats, attr_name) if hasattr(self.seats, attr_name) else getattr(self, attr_name)
            return [value] * len(self._indices(indices))

        def set_attr(self, attr_name, value, indices=None):
            if sorted(self._indices(indices)) != list(range(self.num_envs)):
                raise ValueError(f"set_attr({attr_name!r}): the seat-envs share one batch; set it for all indices")
            setattr(self.seats, attr_name, value)

        def env_method(self, method_name, *method_args, indices=None, **method_kwargs):
            if method_name != "action_masks":
                raise AttributeError(
                    f"env_method: the seat-envs have the method 'action_masks' only, not {method_name!r}"
                )
            return self.seats.mask_rows(self._indices(indices))

        def env_is_wrapped(self, wrapper_class, indices=None):
            return [False] * len(self._indices(indices))

    AutoChessSB3VecEnv.__module__ = __name__
    return AutoChessSB3VecEnv


def make_sb3_vec_env(
    num_games: int = 8,
    learners: Sequence[int] | None = None,
    opponents: str | Sequence[str] = "random",
    greedy_opponents: bool = False,
    rules: dict | None = None,
    seed: int | None = None,
):
    """A ``stable_baselines3`` ``VecEnv`` of ``num_games`` games x ``learners`` (arguments as ``SeatVecEnv``); needs
    stable-baselines3 (``pip install "jaxgame[sb3]"``)."""
    return sb3_vec_env_class()(SeatVecEnv(num_games, learners, opponents, greedy_opponents, rules, seed))


__all__ = [
    "SeatTable",
    "SeatVecEnv",
    "SeatsStep",
    "TableState",
    "make_sb3_vec_env",
    "play_in_step",
    "sb3_vec_env_class",
]
