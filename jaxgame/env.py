"""The env API: ``jaxgame.make("autochess")`` -> ``AutoChessEnv``.

>>> env = jaxgame.make("autochess", obs="vector")
>>> state, ts = env.reset(jax.random.key(0))
>>> state, ts = env.step(state, actions)        # actions int32[8]

All 8 seats act at once, one action each per step. ``step`` auto-resets:
on the step where ``ts.done`` is True, ``ts.reward`` and ``ts.info`` belong
to the finished game (final ranks in ``info["rank"]``, its last observation
in ``info["final_observation"]`` and its last state, for rendering, in
``info["final_state"]``), while the returned state, ``ts.observation`` and
``ts.action_mask`` already belong to a fresh game.

Keys may be typed (``jax.random.key``) or legacy (``jax.random.PRNGKey``);
actions must be an integer array of shape [8] (checked before tracing).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from flax import struct

from jaxgame import actions as actions_lib
from jaxgame import constants as C
from jaxgame import game, observation, packing, render, rounds, synergy, units
from jaxgame.batched_step import step_batch, with_batch_rule
from jaxgame.config import GameConfig
from jaxgame.state import GameState
from jaxgame.validation import as_key, check_actions

OBS_KINDS = ("vector", "pixels", "both", "oracle")


@struct.dataclass
class TimeStep:
    observation: object  # float32[8, obs_size] / uint8[8, 72, 20] / dict; see AutoChessEnv.observe
    action_mask: jax.Array  # bool[8, num_actions]
    reward: jax.Array  # float32[8]
    done: jax.Array  # bool[]  the game ended on this step
    info: dict  # see AutoChessEnv.info


class AutoChessEnv:
    """8-seat auto-battler. Stateless: all state lives in ``GameState``.

    ``reset`` and ``step`` are pure and jitted (compiled once per rules and
    observation kind when called directly: equal envs share the program;
    inlined under an outer ``jax.jit`` or ``jax.vmap``).
    ``jax.vmap(env.step)`` (at any depth of nesting) runs the combat only on
    fight steps, as ``jaxgame.VecEnv`` does: the step carries the batch-level
    step (``jaxgame.batched_step``) as its vmap rule. It is not differentiable
    (nothing in a game step is).
    """

    num_players = C.NUM_PLAYERS
    num_actions = C.NUM_ACTIONS

    def __init__(self, config: GameConfig | None = None, obs: str = "vector"):
        if obs not in OBS_KINDS:
            raise ValueError(f"obs must be one of {OBS_KINDS}, got {obs!r}")
        self.config = config if config is not None else GameConfig()
        self.obs_kind = obs
        self.obs_size = observation.OBS_SIZE  # the vector size, whatever the obs kind
        # per-seat observation shape: (obs_size,), (72, 20) (packed 2bpp) or a dict of both
        vector, pixels = (self.obs_size,), (packing.FRAME_H, packing.PACKED_W)
        oracle = (self.obs_size + observation.ORACLE_SIZE,)  # the vector, then what it does not show (oracle_block)
        self.obs_shape = {
            "vector": vector,
            "pixels": pixels,
            "both": {"vector": vector, "pixels": pixels},
            "oracle": oracle,
        }[obs]
        # under jax.vmap (any depth) the step runs batched_step.step_batch: one fight-or-skip branch for the
        # whole batch instead of a per-game cond that vmap would turn into a select running every fight
        self._step_with_rule = with_batch_rule(self._step_impl, functools.partial(step_batch, self))

    def __repr__(self):
        return f"AutoChessEnv(obs={self.obs_kind!r}, config={self.config})"

    # envs with the same rules and observations are equal: the jitted reset and step (static in the env) then
    # share their compiled programs, however many env objects are made
    def __eq__(self, other):
        return type(other) is type(self) and (self.config, self.obs_kind) == (other.config, other.obs_kind)

    def __hash__(self):
        return hash((type(self), self.config, self.obs_kind))

    # ---- pieces, composed by step() here and by VecEnv ----
    def new_game(self, key: jax.Array) -> GameState:
        return game.new_game(key, self.config)

    def decision_step(self, state: GameState, actions):
        """Actions of one step. Returns (state, fight_key, reset_key, fight_due bool[])."""
        state, needs_refill, reroll_key, fight_key, reset_key, due = self.apply_actions(state, actions)
        return game.reroll_shops(state, needs_refill, reroll_key), fight_key, reset_key, due

    def apply_actions(self, state: GameState, actions):
        """``decision_step`` before the rerolled shops are drawn: (state, needs_refill bool[8], reroll_key,
        fight_key, reset_key, fight_due bool[]); ``game.reroll_shops(state, needs_refill, reroll_key)``
        finishes it (VecEnv draws them only when some seat of the batch rerolled)."""
        due = game.fight_due(state, self.config)
        next_key, act_key, fight_key, reset_key = jax.random.split(state.key, 4)
        state, needs_refill = game.apply_actions(state.replace(key=next_key), actions)
        return state, needs_refill, act_key, fight_key, reset_key, due

    def fight_step(self, state: GameState, fight_key: jax.Array):
        """Returns (state, reward float32[8])."""
        return game.fight_phase(state, fight_key, self.config)

    def prepare_fights(self, state: GameState, fight_key: jax.Array):
        return game.prepare_fights(state, fight_key, self.config)

    def run_fights(self, plan, sync_axes: tuple[str, ...] = ()):
        """Combat of a plan or a batch of plans (leading axes) -> FightResult [..., 8]; ``sync_axes``:
        see ``jaxgame.batching``."""
        return rounds.run_fights(plan, self.config.max_combat_ticks, sync_axes)

    def finish_fights(self, state: GameState, plan, result, fight_key: jax.Array):
        return game.finish_fights(state, plan, result, fight_key, self.config)

    def no_fight(self, state: GameState, fight_key: jax.Array):
        return state, jnp.zeros(C.NUM_PLAYERS, jnp.float32)

    def start(self, key: jax.Array):
        """A new game with its observation and mask: (state, observation, action_mask)."""
        state = self.new_game(key)
        return state, self.observe(state), self.action_mask(state)

    def timestep(self, final: GameState, final_obs, obs, mask, reward) -> TimeStep:
        """TimeStep with info/done from ``final`` (pre-reset) and obs/mask of the state returned."""
        info = {**self.info(final), "final_observation": final_obs, "final_state": final}
        return TimeStep(observation=obs, action_mask=mask, reward=reward, done=final.done, info=info)

    # ---- public API ----
    def reset(self, key: jax.Array):
        """Start a game from a typed or legacy PRNG key: (state, TimeStep)."""
        return _jitted_reset(self, as_key(key, "AutoChessEnv.reset key"))

    def step(self, state: GameState, actions):
        """Advance every seat by one decision step (actions int32[8]); resolves the fights after
        the round's last one and auto-resets a finished game."""
        return _jitted_step(self, state, check_actions(actions, (C.NUM_PLAYERS,), "AutoChessEnv.step"))

    def _reset_impl(self, key: jax.Array):
        state, obs, mask = self.start(key)
        return state, self.timestep(state, obs, obs, mask, jnp.zeros(C.NUM_PLAYERS, jnp.float32))

    def _step_impl(self, state: GameState, actions: jax.Array):
        state, fight_key, reset_key, due = self.decision_step(state, actions)
        state, reward = jax.lax.cond(due, self.fight_step, self.no_fight, state, fight_key)
        final_obs, final_mask = self.observe(state), self.action_mask(state)
        fresh, obs, mask = jax.lax.cond(state.done, self.start, lambda _: (state, final_obs, final_mask), reset_key)
        return fresh, self.timestep(state, final_obs, obs, mask, reward)

    def observe(self, state: GameState):
        """float32[8, obs_size] ("vector"), packed uint8[8, 72, 20] ("pixels", see jaxgame.render),
        {"vector": ..., "pixels": ...} ("both"), or float32[8, obs_size + ORACLE_SIZE] ("oracle": the vector,
        then what the vector does not show, ``jaxgame.observation.oracle_block``; for an oracle teacher)."""
        if self.obs_kind == "pixels":
            return render.render_all(state)
        if self.obs_kind == "oracle":
            return observation.oracle_observation(state, self.config)
        vector = observation.vector_observation(state, self.config)
        if self.obs_kind == "both":
            return {"vector": vector, "pixels": render.render_all(state)}
        return vector

    def action_mask(self, state: GameState) -> jax.Array:
        """bool[8, num_actions]: the legal actions of every seat."""
        return jax.vmap(actions_lib.legal_mask)(state.players)

    def info(self, state: GameState) -> dict:
        """Per-seat facts of ``state`` (see docs/env.md); ``timestep`` adds ``final_observation``
        and ``final_state``."""
        p = state.players
        board = p.species[:, C.BENCH_SIZE :]
        return {
            "life": p.life,
            "gold": p.gold,
            "level": p.level,
            "round": state.round,
            "rank": p.rank,
            "alive": p.alive,
            "board_size": units.board_count(p.species),
            "synergy_count": jnp.sum(synergy.synergy_levels(synergy.type_counts(board)) > 0, axis=-1).astype(jnp.int32),
            "actions_this_turn": p.actions_this_turn,
        }


# reset and step are jitted (inlined under an outer jit or vmap): called eagerly, e.g. in a notebook, they would
# otherwise dispatch op by op (~10 s for the first reset on a 2-core CPU); the env is a static argument, so equal
# envs share one compiled program
@functools.partial(jax.jit, static_argnums=0)
def _jitted_reset(env: AutoChessEnv, key: jax.Array):
    return env._reset_impl(key)


@functools.partial(jax.jit, static_argnums=0)
def _jitted_step(env: AutoChessEnv, state: GameState, actions: jax.Array):
    return env._step_with_rule(state, actions)


def make(name: str = "autochess", obs: str = "vector", **rule_overrides) -> AutoChessEnv:
    """Create an env. Rule overrides are ``GameConfig`` fields, validated."""
    if name != "autochess":
        raise ValueError(f"unknown env {name!r}; available: 'autochess'")
    return AutoChessEnv(GameConfig.from_overrides(**rule_overrides), obs=obs)
