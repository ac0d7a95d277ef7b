"""Evaluation of a policy on the game: one learner seat vs 7 scripted bots, seat-rotated.

For each of ``num_games`` game seeds the same game (same reset key, same
bot and game randomness) is played 8 times, with the policy in seat 0, 1,
..., 7 in turn, so the luck of the draw is shared between rotations: a
lineup of ``agents.arena.tables`` (the policy, then 7 copies of the bot).

    evaluate = make_evaluator(game, network, num_games=8)
    ranks = evaluate(params, key, "greedy")   # int32[num_games, 8]: the policy's rank per (seed, seat)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import jaxgame
from agents.arena.ratings import Ratings
from agents.arena.significance import t_interval
from agents.arena.tables import TABLE_BOTS, draw_lineups, make_table_runner
from agents.league.pool import snapshot_name
from jaxgame import constants as C
from jaxgame.validation import as_key

#: ``fold_in(master_key, EVAL_STREAM)`` is a run's evaluation stream; the evaluation after update ``u``
#: uses ``fold_in`` of that with ``u`` (docs/training.md).
EVAL_STREAM = 3

#: Opponent bots by index (the index is traced, so all share one compiled program): every table bot, so a run
#: logs ``eval/placement_vs_random``, ``_greedy`` and ``_expert``.
OPPONENTS = TABLE_BOTS


def make_evaluator(
    game: jaxgame.AutoChessEnv, network, num_games: int, greedy_policy: bool = False, sync_axes: tuple[str, ...] = ()
):
    """Jitted ``evaluate(params, key, opponent) -> int32[num_games, 8]`` (see the module docstring).

    ``opponent`` is "random" or "greedy". ``greedy_policy``: the policy takes
    its most likely legal action instead of sampling. ``sync_axes``: vmapped
    axes around ``evaluate.run`` (a sweep's) sharing the game's branches.
    ``evaluate.run(params, key, opponent_index)`` is the jitted function (the index into ``OPPONENTS``).
    """
    table = make_table_runner(game, (network,), num_games, greedy_policy, sync_axes, bot_names=OPPONENTS)

    @jax.jit
    def run(params, key, opponent_index):
        lineup = jnp.full((num_games, C.NUM_PLAYERS), 1 + opponent_index, jnp.int32).at[:, 0].set(0)
        return table.jitted((params,), lineup, key)[:, :, 0]  # rotation r: the policy in seat r

    def evaluate(params, key, opponent: str = "greedy"):
        if opponent not in OPPONENTS:
            raise ValueError(f"opponent must be one of {OPPONENTS}, got {opponent!r}")
        return run(params, as_key(key, "evaluate key"), jnp.int32(OPPONENTS.index(opponent)))

    evaluate.run = run
    evaluate.num_games = num_games
    return evaluate


def make_rating_evaluator(game: jaxgame.AutoChessEnv, network, num_games: int, pool_size: int):
    """``rate(params, pool, key, seed) -> table``: the learner rated against a league's snapshots and the bots.

    The players are the learner, every filled slot of the pool (``agents.league.pool.Pool``, ``pool_size`` slots;
    named ``snapshot@UPDATE``, ``agents.league.pool.snapshot_name``) and the bots. ``num_games`` lineups put the
    learner in one seat and fill the other 7 from the other players (``agents.arena.tables.draw_lineups``, numpy
    generator seeded with ``seed``); each is played in 8 rotations and every game is rated (``agents.arena.ratings``,
    fresh ratings each call, so the bots anchor the scale). Returns ``Ratings.table()`` rows; the learner's
    row is named "learner".
    """
    table = make_table_runner(game, (network,) * (1 + pool_size), num_games, bot_names=OPPONENTS)

    def rate(params, pool, key, seed):
        update = np.asarray(pool.update)
        filled = [int(k) for k in np.flatnonzero(update >= 0)]
        others = [1 + k for k in filled] + [1 + pool_size + i for i in range(len(OPPONENTS))]
        names = {
            0: "learner",
            **{1 + k: snapshot_name(update[k]) for k in filled},
            **{1 + pool_size + i: bot for i, bot in enumerate(OPPONENTS)},
        }
        picks = draw_lineups(len(others), num_games, np.random.default_rng(seed), seats=C.NUM_PLAYERS - 1)
        lineups = np.concatenate([np.zeros((num_games, 1), np.int64), np.asarray(others)[picks]], axis=1)
        snapshots = tuple(jax.tree_util.tree_map(lambda x, k=k: x[k], pool.params) for k in range(pool_size))
        ranks = np.asarray(table((params, *snapshots), lineups, key))
        ratings = Ratings()
        for lineup, game_ranks in zip(lineups, ranks):
            for rotation in game_ranks:
                if (rotation > 0).all():
                    ratings.rate([names[int(i)] for i in lineup], rotation.tolist())
        return ratings.table()

    return rate


def placement_summary(ranks) -> dict:
    """Mean placement with a 95% interval (the t interval over the G game seeds' mean placements,
    ``agents.arena.significance.t_interval``: its half-width, None with one seed), top-1 and top-4 rates,
    from int ranks[G, 8] of finished games (a rank outside 1..8, an unfinished game's 0, is a
    ``ValueError``: it must never count as a placement)."""
    ranks = np.asarray(ranks, np.float64)
    if ranks.size == 0 or not ((ranks >= 1) & (ranks <= C.NUM_PLAYERS)).all():
        unfinished = int((ranks < 1).sum())
        raise ValueError(
            f"placements need finished games with ranks 1..{C.NUM_PLAYERS}; got {ranks.size} ranks, "
            f"{unfinished} of them unfinished (0)"
        )
    _, half = t_interval(ranks.mean(axis=1))  # per seed: its rotations share the deal, so they are one draw
    return {
        "mean_placement": float(ranks.mean()),
        "ci95": half,
        "top1": float((ranks == 1).mean()),
        "top4": float((ranks <= 4).mean()),
        "games": int(ranks.size),
    }
