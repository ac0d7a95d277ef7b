"""Play batches of games between scripted bots and report mean placements.

    python -m experiments.evaluate --games 16
    python -m experiments.evaluate --seats greedy,random,random,random,random,random,random,random

Tells stderr what it is doing (compiling the rollout, ~20-30 s on a 2-core CPU; then
the compile time and a progress bar while playing), then prints one JSON object
as the last line of stdout. ``--quiet`` silences the messages and the bar.
"""

from __future__ import annotations

import argparse
import json

import jaxgame
from experiments.common import placement_by_bot, play_games
from jaxgame.bots import BOTS

DEFAULT_SEATS = "greedy,random,greedy,random,greedy,random,greedy,random"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=16, help="games played in parallel (one per env); default 16")
    parser.add_argument("--seats", default=DEFAULT_SEATS, help=f"8 comma-separated bots from {sorted(BOTS)}")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rule", action="append", default=[], metavar="NAME=INT",
                        help="rule override, e.g. --rule max_rounds=20 (repeatable)")
    parser.add_argument("--quiet", action="store_true", help="no progress messages or bar on stderr")
    args = parser.parse_args(argv)
    seats = tuple(s.strip() for s in args.seats.split(","))
    if len(seats) != 8 or any(s not in BOTS for s in seats):
        parser.error(f"--seats needs 8 names from {sorted(BOTS)}, got {args.seats!r}")
    if args.games < 1:
        parser.error(f"--games must be >= 1, got {args.games}")
    rules = {}
    for item in args.rule:
        name, _, value = item.partition("=")
        try:
            rules[name] = int(value)
        except ValueError:
            parser.error(f"--rule {item!r}: expected NAME=INT")
    return args, seats, rules


def main(argv=None):
    args, seats, rules = parse_args(argv)
    env = jaxgame.make("autochess", **rules)
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
