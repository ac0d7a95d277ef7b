"""One learning seat against 7 opponents, as two jitted functions of one game (no batch axis).

The opponents are player specs (``agents.policies.load``): a scripted bot (``random``, ``greedy``, ``expert``),
``baseline:NAME`` or ``RUN_DIR[:STEP]``. The learner only sees the steps where it has a choice: after its
action, the game goes on (the opponents acting, the learner playing its only legal action) until the learner
has two or more legal actions, is knocked out, or the game ends; the rewards of those steps are summed. One
compiled call per learner decision.

    game = SingleSeatGame(["greedy"] * 7)
    state, out = game.reset(key, seat)          # out: SeatStep for the learner
    state, out = game.step(state, action)

``reset`` and ``step`` run the same compiled program (``play``, with the learner's action pending or not), the
only one with the game's step (and its combat) in it.
"""

from __future__ import annotations

import warnings
from typing import Sequence

import jax
import jax.numpy as jnp
from flax import struct

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
from jaxgame.config import GameConfig

NUM_OPPONENTS = C.NUM_PLAYERS - 1


@struct.dataclass
class SeatState:
    game: jaxgame.GameState
    timestep: jaxgame.TimeStep
    seat: jax.Array  # int32[]: the learner's seat
    key: jax.Array  # the opponents' randomness


@struct.dataclass
class SeatStep:
    """What the learner sees after a reset or a step."""

    observation: jax.Array  # float32[obs_size] or packed uint8[72, 20]: the learner's, the final one at the end
    action_mask: jax.Array  # bool[258]: the learner's legal actions now (at a game's end: in the finished game)
    reward: jax.Array  # float32[]: the learner's rewards since its last action, summed
    terminated: jax.Array  # bool[]: the learner was knocked out or the game ended
    rank: jax.Array  # int32[]: the learner's final place (1 = first) once terminated, else 0
    game_steps: jax.Array  # int32[]: env steps the call advanced


def opponent_specs(opponents: str | Sequence[str]) -> tuple[str, ...]:
    """7 player specs: one spec for every opponent, or a sequence of 7 (seats after the learner's, in order)."""
    specs = (opponents,) * NUM_OPPONENTS if isinstance(opponents, str) else tuple(opponents)
    if len(specs) != NUM_OPPONENTS or not all(isinstance(s, str) and s.strip() for s in specs):
        raise ValueError(f"opponents must be a player spec or a sequence of {NUM_OPPONENTS}; got {opponents!r}")
    return tuple(s.strip() for s in specs)


class SingleSeatGame:
    """The learner's view of one game (see the module docstring).

    ``opponents``: a player spec for all 7 opponents or one per opponent, seated clockwise after the
    learner. ``obs``: the learner's observation kind ("vector" or "pixels"). ``greedy_opponents``: policy
    opponents take their most likely legal action instead of sampling. ``rules``: ``GameConfig`` overrides
    (by default the first policy opponent's training rules, else the default rules).
    """

    def __init__(
        self,
        opponents: str | Sequence[str] = "random",
        obs: str = "vector",
        greedy_opponents: bool = False,
        rules: dict | None = None,
    ):
        if obs not in ("vector", "pixels"):
            raise ValueError(f"obs must be 'vector' or 'pixels', got {obs!r}")
        self.specs = opponent_specs(opponents)
        self.obs_kind = obs
        loaded, self.participants = {}, []  # participant per opponent: ("bot", name) or ("policy", index)
        policies = []
        for spec in self.specs:
            parsed = parse_spec(spec)
            if isinstance(parsed, str):
                self.participants.append(("bot", parsed))
                continue
            if spec not in loaded:
                policy = load_policy(*parsed)
                require_feed_forward(policy, "the opponents of the env views (Gymnasium, SB3, PettingZoo)")
                if policy.config.net.independent:  # any of its learners would do; the first, like a table's default
                    policy = seat_policies(policy)[0]
                loaded[spec] = len(policies)
                policies.append(policy)
            self.participants.append(("policy", loaded[spec]))
        self.policies = tuple(policies)
        if rules is None:
            rules = policies[0].config.rules() if policies else {}
        self.config = GameConfig.from_overrides(**rules)
        for note in rule_differences(policies, {name: getattr(self.config, name) for name in RULE_FIELDS}):
            warnings.warn(note, stacklevel=2)
        self.env = jaxgame.AutoChessEnv(self.config, obs=table_observations(policies, learner=obs))
        self.greedy_opponents = bool(greedy_opponents)
        # one program with the game's step in it, for resets and steps alike (``pending`` is traced), shared by every
        # instance of the same configuration (program_cache: only the first compiles)
        self.start, self.run = shared_jit(self.program_key(), lambda: (self.start_game, self.play))

    def program_key(self) -> tuple:
        """What this game's programs depend on: the key of ``program_cache.shared_jit``."""
        return (
            "single_seat",
            tuple(p.name for p in self.policies),
            tuple(self.participants),
            self.obs_kind,
            self.env,
            self.greedy_opponents,
        )

    # ---- pieces ----
    def _view(self, observation, kind):
        return observation if self.env.obs_kind != "both" else observation[kind]

    def _opponent_actions(self, key, state, ts, seat):
        """int32[8]: every seat's action as if each opponent sat there; the learner's seat is overwritten."""
        bot_key, policy_key = jax.random.split(key)
        by_participant = {}
        for kind, which in sorted(set(self.participants)):
            if kind == "bot":
                by_participant[(kind, which)] = all_bots.BOTS[which](bot_key, state, ts.action_mask)
            else:
                policy = self.policies[which]
                logits, _ = policy.network.apply(policy.params, self._view(ts.observation, policy.config.task.obs))
                by_participant[(kind, which)] = (
                    distributions.greedy(logits, ts.action_mask)
                    if self.greedy_opponents
                    else distributions.sample(jax.random.fold_in(policy_key, which), logits, ts.action_mask)
                )
        # opponent i sits in seat (seat + 1 + i) % 8
        stacked = jnp.stack([by_participant[p] for p in self.participants])  # [7, 8]
        offset = (jnp.arange(C.NUM_PLAYERS) - seat - 1) % C.NUM_PLAYERS  # seat s -> opponent index (7: learner)
        actions = jnp.take_along_axis(stacked, jnp.minimum(offset, NUM_OPPONENTS - 1)[None], axis=0)[0]
        return actions.astype(jnp.int32)

    def _seat_step(self, ts, seat, reward, terminated, steps):
        # at a game end ts.observation and ts.action_mask are the next game's (auto-reset): the learner gets the
        # finished game's, its final observation with that state's mask
        observation = jnp.where(
            ts.done,
            self._view(ts.info["final_observation"], self.obs_kind)[seat],
            self._view(ts.observation, self.obs_kind)[seat],
        )
        mask = jnp.where(ts.done, self.env.action_mask(ts.info["final_state"])[seat], ts.action_mask[seat])
        rank = jnp.where(terminated, ts.info["rank"][seat], 0)
        return SeatStep(observation, mask, reward, terminated, rank.astype(jnp.int32), steps)

    def learner_done(self, ts, seat):
        """bool[]: the learner in ``seat`` is knocked out or its game ended in ``ts``."""
        return ts.done | ~ts.info["alive"][seat]

    def _advance(self, carry, learner_action):
        """One env step with the learner playing ``learner_action``; rewards summed into the carry."""
        state, reward, steps = carry
        state = self.advance(state, learner_action)
        return state, reward + state.timestep.reward[state.seat], steps + 1

    def _play(self, state, learner_action, pending):
        """Play ``learner_action`` if ``pending`` (bool[]), then step on while the learner has at most one legal
        action and neither it nor the game is done: one ``env.step`` in the program, in a while loop.
        Returns (state, summed reward float32[], env steps int32[])."""

        def going(carry):
            state, _, _, pending = carry
            ts = state.timestep
            return pending | (~self.learner_done(ts, state.seat) & (ts.action_mask[state.seat].sum() <= 1))

        def one_step(carry):
            state, reward, steps, pending = carry
            forced = jnp.argmax(state.timestep.action_mask[state.seat]).astype(jnp.int32)
            state, reward, steps = self._advance((state, reward, steps), jnp.where(pending, learner_action, forced))
            return state, reward, steps, jnp.bool_(False)

        init = (state, jnp.float32(0.0), jnp.int32(0), jnp.asarray(pending, bool))
        state, reward, steps, _ = jax.lax.while_loop(going, one_step, init)
        return state, reward, steps

    # ---- the learner's view ----
    def start_game(self, key, seat) -> SeatState:
        """A new game with the learner in ``seat`` (int32[]); no step played yet (see ``reset``)."""
        game_key, opponent_key = jax.random.split(key)
        game, ts = self.env.reset(game_key)
        return SeatState(game, ts, jnp.asarray(seat, jnp.int32), opponent_key)

    def advance(self, state: SeatState, learner_action) -> SeatState:
        """One game step: the learner plays ``learner_action`` (int32[]), the opponents their choices."""
        key, act_key = jax.random.split(state.key)
        actions = self._opponent_actions(act_key, state.game, state.timestep, state.seat)
        game, ts = self.env.step(state.game, actions.at[state.seat].set(learner_action))
        return state.replace(game=game, timestep=ts, key=key)

    def outcome(self, state: SeatState, reward, steps) -> SeatStep:
        """What the learner sees in ``state`` after a call that played ``steps`` (int32[]) game steps and summed
        its rewards to ``reward`` (float32[])."""
        done = self.learner_done(state.timestep, state.seat)
        return self._seat_step(state.timestep, state.seat, reward, done, steps)

    def play(self, state: SeatState, action, pending):
        """The learner's ``action`` (int32[]; an illegal one is the env's no-op) if ``pending`` (bool[]), then
        the game on to the learner's next choice -> (SeatState, SeatStep)."""
        state, reward, steps = self._play(state, jnp.asarray(action, jnp.int32), pending)
        return state, self.outcome(state, reward, steps)

    def reset(self, key, seat):
        """A new game with the learner in ``seat``, played on to its first choice -> (SeatState, SeatStep)."""
        return self.run(self.start(key, seat), jnp.int32(0), jnp.bool_(False))

    def step(self, state: SeatState, action):
        """The learner's action, then the game on to its next choice -> (SeatState, SeatStep)."""
        return self.run(state, action, jnp.bool_(True))
