"""Play batches of games between scripted bots and report mean placements.

    python -m experiments.evaluate --games 16
    python -m experiments.evaluate --seats greedy,random,random,random,random,random,random,random
    python -m experiments.evaluate --seats expert,greedy,greedy,greedy,greedy,greedy,greedy,greedy --games 32
    python -m experiments.evaluate --checkpoint runs/mine --vs greedy --games 16
    python -m experiments.evaluate --checkpoint runs/mine --vs baseline:ppo_small-v1 --games 32
    python -m experiments.evaluate --checkpoint runs/mine --vs runs/other:120 --vs greedy,greedy,random,runs/other,greedy,random,random

With ``--checkpoint RUN_DIR`` it evaluates the trained policy of a run (its
latest good checkpoint, or ``--step``) in one seat against 7 opponents, the
policy rotated over all 8 seats for each game seed (duplicate evaluation, as
during training: ``agents.tables``). Each ``--vs`` (repeatable; default:
random, then greedy) names the opponents: one player for all 7 seats, or 7
comma-separated players; a player is a bot (``random``, ``greedy``, ``expert``), a shipped
baseline policy ``baseline:NAME`` (``python -m experiments.baseline list``), or another run
``RUN_DIR[:STEP]`` (its latest good checkpoint, or checkpoint STEP). JSON
with, per ``--vs``, the mean placement, a 95% interval over the seeds, top-1
and top-4 rates; a table of the same on stderr.

Tells stderr what it is doing (compiling the rollout, ~20-30 s on a 2-core CPU; then
the compile time and a progress bar while playing), then prints one JSON object
(the persistent compilation cache, as in ``experiments.train``, makes later runs start in seconds)
as the last line of stdout. ``--quiet`` silences the messages and the bar.
"""

from __future__ import annotations

import argparse
import json

import jax

import jaxgame
from agents import memory, tournament
from agents.checkpoints import CheckpointMismatchError, NoGoodCheckpointError
from agents.policies import PolicyError
from agents.progress import ConsoleProgress
from experiments.common import (
    DEFAULT_CACHE,
    enable_compilation_cache,
    fail,
    placement_by_bot,
    play_games,
    quiet_logs,
    status,
)
from jaxgame.bots import BOTS

DEFAULT_SEATS = "greedy,random,greedy,random,greedy,random,greedy,random"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m experiments.evaluate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=16, help="games played in parallel (one per env); default 16")
    parser.add_argument("--seats", default=DEFAULT_SEATS, help=f"8 comma-separated bots from {sorted(BOTS)}")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rule", action="append", default=[], metavar="NAME=INT",
                        help="rule override, e.g. --rule max_rounds=20 (repeatable)")
    parser.add_argument("--quiet", action="store_true", help="no progress messages or bar on stderr")
    parser.add_argument("--cache-dir", default=DEFAULT_CACHE, help=f"JAX compilation cache (default {DEFAULT_CACHE})")
    parser.add_argument("--no-cache", action="store_true", help="do not use the persistent compilation cache")
    parser.add_argument("--checkpoint", metavar="RUN_DIR", help="evaluate the policy of a training run")
    parser.add_argument("--step", type=int, help="with --checkpoint: this checkpoint step (default: latest good)")
    parser.add_argument("--vs", action="append", metavar="PLAYER[,PLAYER x7]",
                        help="with --checkpoint: the opponents, random / greedy / expert / baseline:NAME / "
                             "RUN_DIR[:STEP], one for all 7 seats or 7 comma-separated (repeatable; default: random, "
                             "then greedy)")
    args = parser.parse_args(argv)
    if not args.checkpoint and (args.step is not None or args.vs):
        fail(parser, "--step and --vs need --checkpoint RUN_DIR (the policy they evaluate)")
    seats = tuple(s.strip() for s in args.seats.split(","))
    if len(seats) != 8 or any(s not in BOTS for s in seats):
        fail(parser, f"--seats needs 8 names from {sorted(BOTS)}, got {args.seats!r}")
    if args.games < 1:
        fail(parser, f"--games must be >= 1, got {args.games}")
    rules = {}
    for item in args.rule:
        name, _, value = item.partition("=")
        try:
            rules[name] = int(value)
        except ValueError:
            fail(parser, f"--rule {item!r}: expected NAME=INT")
    return parser, args, seats, rules


def _opponents(spec: str) -> list[str]:
    """The 7 opponents of one ``--vs``."""
    names = [n.strip() for n in spec.split(",")]
    if len(names) == 1:
        return names * 7
    if len(names) != 7 or not all(names):
        raise PolicyError(f"--vs {spec!r}: one player for all 7 seats or 7 comma-separated players")
    return names


def evaluate_checkpoint(args) -> dict:
    """Seat-rotated evaluation of a run's saved policy against each ``--vs`` lineup (see the module docstring)."""
    lineups = {spec: _opponents(spec) for spec in (args.vs or ["random", "greedy"])}
    result = tournament.evaluate_checkpoint(args.checkpoint, args.step, lineups, args.games, args.seed,
                                            progress=None if args.quiet else ConsoleProgress())
    status(tournament.placement_table([(spec, result[f"vs_{spec}"]) for spec in lineups]), not args.quiet)
    print(json.dumps(result))
    return result


def main(argv=None):
    quiet_logs()
    parser, args, seats, rules = parse_args(argv)
    enable_compilation_cache(None if args.no_cache else args.cache_dir)
    if args.checkpoint:
        if rules:
            fail(parser, "--rule applies to bot games; a checkpoint plays with the rules it trained with")
        try:
            return evaluate_checkpoint(args)
        except (PolicyError, FileNotFoundError, MemoryError) as err:
            fail(parser, err)
        except (NoGoodCheckpointError, CheckpointMismatchError) as err:
            fail(parser, err, status=1)
    try:
        env = jaxgame.make("autochess", **rules)
    except (TypeError, ValueError) as err:
        fail(parser, f"--rule: {err}")
    state_bytes = memory.tree_bytes(jax.eval_shape(env.reset, jax.random.key(0)))
    try:
        memory.check_fits(f"--games {args.games}", args.games * state_bytes)
    except MemoryError as err:
        fail(parser, err)
    ranks, stats = play_games(env, seats, args.games, args.seed, progress=not args.quiet)
    result = {
        "games": args.games,
        "seats": list(seats),
        "mean_placement": placement_by_bot(ranks, seats),
        "ranks": ranks.tolist(),
        **{k: round(v, 2) if isinstance(v, float) else v for k, v in stats.items()},
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
