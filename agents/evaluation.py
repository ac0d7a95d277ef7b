"""Evaluation of a policy on the game: one learner seat vs 7 scripted bots, seat-rotated.

For each of ``num_games`` game seeds the same game (same reset key, same
bot and game randomness) is played 8 times, with the policy in seat 0, 1,
..., 7 in turn, so the luck of the draw is shared between rotations. All
``8 x num_games`` games run as one batch in one jitted ``lax.while_loop``
that stops when every game has finished.

    evaluate = make_evaluator(game, network, num_games=8)
    ranks = evaluate(params, key, "greedy")   # int32[num_games, 8]: the policy's rank per (seed, seat)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

import jaxgame
from agents import distributions
from jaxgame import bots
from jaxgame import constants as C
from jaxgame.validation import as_key

#: ``fold_in(master_key, EVAL_STREAM)`` is a run's evaluation stream; the evaluation after update ``u``
#: uses ``fold_in`` of that with ``u`` (docs/training.md).
EVAL_STREAM = 3

#: Opponent bots by index (the index is traced, so both share one compiled program).
OPPONENTS = ("random", "greedy")


def make_evaluator(
    game: jaxgame.AutoChessEnv, network, num_games: int, greedy_policy: bool = False, sync_axes: tuple[str, ...] = ()
):
    """Jitted ``evaluate(params, key, opponent) -> int32[num_games, 8]`` (see the module docstring).

    ``opponent`` is "random" or "greedy". ``greedy_policy``: the policy takes
    its most likely legal action instead of sampling. ``sync_axes``: vmapped
    axes around ``evaluate.run`` (a sweep's) sharing the game's branches.
    """
    if isinstance(num_games, bool) or not isinstance(num_games, int) or num_games < 1:
        raise ValueError(f"num_games must be a positive int, got {num_games!r}")
    seats = C.NUM_PLAYERS
    num_envs = num_games * seats
    venv = jaxgame.VecEnv(game, num_envs, sync_axes)
    learner_seat = jnp.arange(num_envs) % seats  # env e: game e // 8, policy in seat e % 8
    is_learner = learner_seat[:, None] == jnp.arange(seats)[None, :]  # bool[E, 8]
    max_steps = game.config.max_rounds * game.config.steps_per_round + 1

    def per_game(key):
        """num_games keys, each repeated for the game's 8 rotations."""
        return jnp.repeat(jax.random.split(key, num_games), seats, axis=0)

    def policy_actions(params, key, obs, mask):
        logits, _ = network.apply(params, obs)
        if greedy_policy:
            return distributions.greedy(logits, mask)
        return distributions.sample(key, logits, mask)

    @jax.jit
    def run(params, key, opponent_index):
        reset_key, loop_key = jax.random.split(key)
        states, ts = jax.vmap(game.reset)(per_game(reset_key))

        def cond(carry):
            _, _, finished, _, t, _ = carry
            return ~finished.all() & (t < max_steps)

        def body(carry):
            states, ts, finished, rank, t, key = carry
            key, policy_key, bot_key = jax.random.split(key, 3)
            bot_keys = per_game(bot_key)
            by_bot = [jax.vmap(bots.BOTS[name])(bot_keys, states, ts.action_mask) for name in OPPONENTS]
            bot = jnp.stack(by_bot)[opponent_index]
            mine = policy_actions(params, policy_key, ts.observation, ts.action_mask)
            actions = jnp.where(is_learner, mine, bot).astype(jnp.int32)
            states, ts = venv.step(states, actions)
            my_rank = jnp.sum(jnp.where(is_learner, ts.info["rank"], 0), axis=-1)
            new = ts.done & ~finished
            return states, ts, finished | new, jnp.where(new, my_rank, rank), t + 1, key

        init = (states, ts, jnp.zeros(num_envs, bool), jnp.zeros(num_envs, jnp.int32), jnp.int32(0), loop_key)
        *_, finished, rank, _, _ = jax.lax.while_loop(cond, body, init)
        return jnp.where(finished, rank, 0).reshape(num_games, seats)

    def evaluate(params, key, opponent: str = "greedy"):
        if opponent not in OPPONENTS:
            raise ValueError(f"opponent must be one of {OPPONENTS}, got {opponent!r}")
        return run(params, as_key(key, "evaluate key"), jnp.int32(OPPONENTS.index(opponent)))

    evaluate.run = run
    evaluate.num_games = num_games
    return evaluate


def placement_summary(ranks) -> dict:
    """Mean placement with a 95% interval (half-width over game seeds; None with one seed), top-1 and
    top-4 rates, from int ranks[G, 8]."""
    import numpy as np

    ranks = np.asarray(ranks, np.float64)
    per_seed = ranks.mean(axis=1)
    half = float(1.96 * per_seed.std(ddof=1) / np.sqrt(len(per_seed))) if len(per_seed) > 1 else None
    return {
        "mean_placement": float(ranks.mean()),
        "ci95": half,
        "top1": float((ranks == 1).mean()),
        "top4": float((ranks <= 4).mean()),
        "games": int(ranks.size),
    }
