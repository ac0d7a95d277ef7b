"""Play batches of games between scripted bots and report mean placements.

    python -m experiments.evaluate --games 16
    python -m experiments.evaluate --seats greedy,random,random,random,random,random,random,random
    python -m experiments.evaluate --seats expert,greedy,greedy,greedy,greedy,greedy,greedy,greedy --games 32
    python -m experiments.evaluate --checkpoint runs/mine --vs greedy --games 16
    python -m experiments.evaluate --checkpoint runs/clone --vs greedy --games 32 --greedy-policy   # argmax play
    python -m experiments.evaluate --checkpoint runs/mine --vs baseline:ppo_small-v1 --games 32
    python -m experiments.evaluate --checkpoint runs/mine --vs runs/other:120 --vs
    greedy,greedy,random,runs/other,greedy,random,random
    python -m experiments.evaluate --compare runs/mine runs/other --games 64
    python -m experiments.evaluate --compare runs/mine baseline:ppo_small-v1 --vs greedy --games 64

With ``--checkpoint RUN_DIR`` it evaluates the trained policy of a run (its
latest good checkpoint, or ``--step``) in one seat against 7 opponents, the
policy rotated over all 8 seats for each game seed (duplicate evaluation, as
during training: ``agents.arena.tables``). Each ``--vs`` (repeatable; default:
random, then greedy) names the opponents: one player for all 7 seats, or 7
comma-separated players; a player is a bot (``random``, ``greedy``, ``expert``), a shipped
baseline policy ``baseline:NAME`` (``python -m experiments.baseline list``), or another run
``RUN_DIR[:STEP]`` (its latest good checkpoint, or checkpoint STEP). The policies
sample their actions, as in training; ``--greedy-policy`` makes them play their most
likely legal action (a behaviour-cloned policy is meant to be played so). JSON
with, per ``--vs``, the mean placement, a 95% interval over the seeds, top-1
and top-4 rates; a table of the same on stderr.

With ``--compare A B`` (two players: bots, ``baseline:NAME`` or ``RUN_DIR[:STEP]``)
it tests whether A places better than B (``agents.arena.tournament.compare_players``):
A against each ``--vs`` lineup (default: random, then greedy), then B against the
same lineup on the same game seeds, and (unless ``--no-head-to-head``) A and B at
one table: 1 A and 7 B, 7 A and 1 B, 4 and 4; every game seed in 8 rotations.
Per setting: both mean placements, A - B with its 95% interval, the p-value of a
paired t-test over the game seeds, the mean rank points (``--rank-points``,
default 90,45,0,-135 over places 1-2, 3-4, 5-6, 7-8) and the game seeds a
difference of ``--difference`` places needs (power 0.8 at p < 0.05). The table on
stderr, the JSON (per-seed placements included) on stdout.

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
from agents.arena import significance, tournament
from agents.policies.load import PolicyError
from agents.storage.checkpoints import CheckpointMismatchError, NoGoodCheckpointError
from agents.utils import memory
from agents.utils.progress import ConsoleProgress
from experiments.common import (
    DEFAULT_CACHE,
    enable_compilation_cache,
    fail,
    parse_rules,
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
    parser.add_argument("--greedy-policy", action="store_true",
                        help="with --checkpoint: the policies play their most likely legal action, not a sample")
    parser.add_argument("--vs", action="append", metavar="PLAYER[,PLAYER x7]",
                        help="with --checkpoint: the opponents, random / greedy / expert / baseline:NAME / "
                             "RUN_DIR[:STEP], one for all 7 seats or 7 comma-separated (repeatable; default: random, "
                             "then greedy)")
    parser.add_argument("--compare", nargs=2, metavar=("A", "B"),
                        help="test whether player A places better than player B (bots, baseline:NAME, RUN_DIR[:STEP])")
    parser.add_argument("--no-head-to-head", action="store_true",
                        help="with --compare: only the --vs lineups, not A and B at one table")
    parser.add_argument("--difference", type=float, default=significance.DEFAULT_DIFFERENCE,
                        help="with --compare: the difference of mean placement to size a test for "
                             f"(default {significance.DEFAULT_DIFFERENCE})")
    parser.add_argument("--rank-points", default=",".join(f"{v:g}" for v in significance.DEFAULT_RANK_POINTS),
                        help="with --compare: points per place, 1, 2, 4 or 8 comma-separated values spread over the 8 "
                             "places (default %(default)s)")
    args = parser.parse_args(argv)
    if args.compare and (args.checkpoint or args.step is not None):
        fail(parser, "--compare takes its two players as A B (RUN_DIR:STEP for a step), not --checkpoint/--step")
    if not args.checkpoint and not args.compare and (args.step is not None or args.vs):
        fail(parser, "--step and --vs need --checkpoint RUN_DIR (the policy they evaluate) or --compare A B")
    if args.greedy_policy and not args.checkpoint:
        fail(parser, "--greedy-policy needs --checkpoint RUN_DIR (the policy that plays its most likely action)")
    if args.compare:
        if args.games < 2:
            fail(parser, f"--compare needs --games >= 2 game seeds (a test needs a spread), got {args.games}")
        if not (args.difference > 0):
            fail(parser, f"--difference must be > 0 places, got {args.difference}")
        try:
            args.rank_points = significance.check_rank_points(float(v) for v in args.rank_points.split(","))
        except ValueError as err:
            fail(parser, f"--rank-points {args.rank_points!r}: {err}")
    seats = tuple(s.strip() for s in args.seats.split(","))
    if len(seats) != 8 or any(s not in BOTS for s in seats):
        fail(parser, f"--seats needs 8 names from {sorted(BOTS)}, got {args.seats!r}")
    if args.games < 1:
        fail(parser, f"--games must be >= 1, got {args.games}")
    return parser, args, seats, parse_rules(parser, args.rule)


def _opponents(spec: str) -> list[str]:
    """The 7 opponents of one ``--vs``."""
    names = [n.strip() for n in spec.split(",")]
    if len(names) == 1:
        return names * 7
    if len(names) != 7 or not all(names):
        raise PolicyError(f"--vs {spec!r}: one player for all 7 seats or 7 comma-separated players")
    return names


def _lineups(args) -> dict:
    """``--vs`` spec -> its 7 opponents, for each ``--vs`` (default: random, then greedy)."""
    return {spec: _opponents(spec) for spec in (args.vs or ["random", "greedy"])}


def evaluate_checkpoint(args) -> dict:
    """Seat-rotated evaluation of a run's saved policy against each ``--vs`` lineup (see the module docstring)."""
    lineups = _lineups(args)
    result = tournament.evaluate_checkpoint(args.checkpoint, args.step, lineups, args.games, args.seed,
                                            progress=None if args.quiet else ConsoleProgress(),
                                            greedy_policy=args.greedy_policy)
    status(tournament.placement_table([(spec, result[f"vs_{spec}"]) for spec in lineups]), not args.quiet)
    print(json.dumps(result))
    return result


def compare(args, rules) -> dict:
    """``--compare A B``: the significance tests of ``agents.arena.tournament.compare_players``, as a table and JSON."""
    lineups = _lineups(args)
    result = tournament.compare_players(*args.compare, lineups, args.games, args.seed,
                                        head_to_head=not args.no_head_to_head, rules=rules,
                                        points=args.rank_points, difference=args.difference,
                                        progress=None if args.quiet else ConsoleProgress())
    status(tournament.comparison_table(result), not args.quiet)
    print(json.dumps(result))
    return result


def main(argv=None):
    quiet_logs()
    parser, args, seats, rules = parse_args(argv)
    enable_compilation_cache(None if args.no_cache else args.cache_dir)
    if args.compare:
        try:
            return compare(args, rules)
        except (NoGoodCheckpointError, CheckpointMismatchError) as err:
            fail(parser, err, status=1)
        except (PolicyError, FileNotFoundError, MemoryError, ValueError) as err:
            fail(parser, err)
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
