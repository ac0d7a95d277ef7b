"""The game's state transitions as pure functions of (state, inputs, config).

``step`` = ``apply_actions`` then ``reroll_shops`` (every step), then
``fight_phase`` (only on the last decision step of a round). The env API in
``jaxgame.env`` composes them; ``jaxgame.vec_env.VecEnv`` composes them so that
a batch skips the rerolls and the fight phase entirely on steps where no env
needs them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxgame import actions as actions_lib
from jaxgame import constants as C
from jaxgame import rounds
from jaxgame import shop as shop_lib
from jaxgame.config import GameConfig
from jaxgame.state import RESULT_NONE, GameState, Players


def new_game(key: jax.Array, config: GameConfig) -> GameState:
    """A fresh game: every seat at starting life/gold/level with a rolled shop."""
    order_key, shop_key, game_key = jax.random.split(key, 3)
    n = C.NUM_PLAYERS

    def full(value, dtype=jnp.int32, shape=()):
        return jnp.full((n,) + shape, value, dtype)

    players = Players(
        life=full(config.starting_life),
        gold=full(config.starting_gold),
        level=full(config.starting_level),
        xp=full(0),
        streak=full(0),
        alive=full(True, bool),
        rank=full(0),
        species=full(-1, shape=(C.NUM_SLOTS,)),
        stars=full(0, shape=(C.NUM_SLOTS,)),
        shop=full(-1, shape=(C.SHOP_SIZE,)),
        shop_locked=full(False, bool),
        turn_ended=full(False, bool),
        actions_this_turn=full(0),
        last_opponent=full(-1),
        last_result=full(RESULT_NONE),
    )
    shops, pool = shop_lib.refill_shops(
        players.shop, players.level, shop_lib.initial_pool(), full(True, bool), shop_key
    )
    return GameState(
        players=players.replace(shop=shops),
        pool=pool,
        round=jnp.asarray(1, jnp.int32),
        step_in_round=jnp.asarray(0, jnp.int32),
        pvp_round=jnp.asarray(0, jnp.int32),
        seat_order=jax.random.permutation(order_key, n).astype(jnp.int32),
        done=jnp.asarray(False),
        key=game_key,
    )


def fight_due(state: GameState, config: GameConfig) -> jnp.ndarray:
    """bool[]: this step is the last decision step of the round, so the fights follow it."""
    return state.step_in_round == config.steps_per_round - 1


def apply_actions(state: GameState, actions: jnp.ndarray) -> tuple[GameState, jnp.ndarray]:
    """Apply every seat's action (int32[8]) 'simultaneously', all but the new shops: (state, needs_refill
    bool[8]), the rerolling seats' shops emptied and their copies back in the pool.

    Per-seat effects are independent except through the shared pool: sold copies go back first, then
    ``reroll_shops`` draws the rerolling seats' new shops one after another in a random order.
    """
    actions = jnp.asarray(actions, jnp.int32)
    players, pool_delta, needs_refill = jax.vmap(actions_lib.apply_action)(state.players, actions)
    pool = state.pool + pool_delta.sum(axis=0)
    return state.replace(players=players, pool=pool, step_in_round=state.step_in_round + 1), needs_refill


def reroll_shops(state: GameState, needs_refill: jnp.ndarray, key: jax.Array) -> GameState:
    """New shops for the seats in ``needs_refill`` (bool[8]); the state unchanged where none is."""
    players = state.players
    shops, pool = shop_lib.refill_shops(players.shop, players.level, state.pool, needs_refill, key)
    return state.replace(players=players.replace(shop=shops), pool=pool)


# rank 1 -> +1 ... rank 8 -> -1, linear, as float32 arithmetic gives it; a table, so that every backend and
# codegen gives the same float32 for a rank (XLA:CPU's elemental emitters compile a vectorised division by 7 as
# a multiplication by the reciprocal, which moved jit's and vmap's rewards apart in the last bit)
_RANKS = np.arange(C.NUM_PLAYERS, dtype=np.float32)
PLACEMENT_REWARDS = np.float32(1.0) - np.float32(2.0) * _RANKS / np.float32(C.NUM_PLAYERS - 1)


def placement_reward(rank: jnp.ndarray) -> jnp.ndarray:
    """float32, the shape of ``rank`` (int, 1..8): rank 1 -> +1 ... rank 8 -> -1, linear (``PLACEMENT_REWARDS``)."""
    return jnp.asarray(PLACEMENT_REWARDS)[jnp.clip(rank - 1, 0, C.NUM_PLAYERS - 1)]


def prepare_fights(state: GameState, key: jax.Array, config: GameConfig) -> rounds.FightPlan:
    """Pairings and boards of this round's fights (the cheap part of the fight phase)."""
    return rounds.plan_fights(state, config, jax.random.fold_in(key, 0))


def finish_fights(state: GameState, plan: rounds.FightPlan, result, key: jax.Array, config: GameConfig):
    """Damage, eliminations and ranks from the fight results, then the next round's start.

    Returns (state, reward float32[8]): the placement reward for seats that
    finished this round, plus the configured shaping terms.
    """
    state, outcome = rounds.settle_fights(state, plan, result)
    state, life_lost = rounds.apply_fight_results(state, outcome)
    state, finished = rounds.eliminate_and_rank(state, config)
    reward = jnp.where(finished, placement_reward(state.players.rank), 0.0)
    reward = reward + config.reward_win * outcome["won"] + config.reward_life * life_lost
    next_round = rounds.start_next_round(state, jax.random.fold_in(key, 1))
    # a finished game keeps its final round for the terminal step's info
    state = jax.tree_util.tree_map(lambda end, nxt: jnp.where(state.done, end, nxt), state, next_round)
    return state, reward.astype(jnp.float32)


def fight_phase(state: GameState, key: jax.Array, config: GameConfig):
    """Fights, damage, eliminations and ranks, then the next round's start.

    ``prepare_fights`` -> ``rounds.run_fights`` -> ``finish_fights``; VecEnv
    runs the same three pieces with the combat batched across games.
    Returns (state, reward float32[8]).
    """
    plan = prepare_fights(state, key, config)
    result = rounds.run_fights(plan, config.max_combat_ticks)
    return finish_fights(state, plan, result, key, config)
