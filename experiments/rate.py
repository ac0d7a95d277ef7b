"""Rate checkpoints and the scripted bots against each other: ``python -m experiments.rate``.

    python -m experiments.rate runs/a runs/b --games 16
    python -m experiments.rate runs/a:40 runs/a:120 runs/b --bots greedy --games 32 --out runs/ratings-ab
    python -m experiments.rate runs/a --all-checkpoints --games 16      # rating over training updates

The players are the runs' policies (``RUN_DIR``: the latest good checkpoint,
``RUN_DIR:STEP``: checkpoint STEP, ``--all-checkpoints``: every checkpoint a
run kept; a run of independent learners enters as 8 players, ``...#seatP``
for seat P's learner) and the scripted bots (``--bots``, default ``random,greedy``;
``expert`` may join too, ``none`` for none). Each of ``--games`` game seeds gets a lineup of 8 seats:
8 different players drawn at random when there are at least 8, else every
player takes 8 // P seats and the other seats go to different players drawn
at random. Every lineup is played 8 times, rotated one seat further each time
(duplicate evaluation, ``agents.arena.tables``), and each of those games is rated:
OpenSkill's Plackett-Luce model from the full placements (``agents.arena.ratings``:
a player holding several seats of a game is ranked by their mean placement).
Games run ``--batch`` lineups at a time in one compiled program. The work is
the library's ``agents.arena.tournament.rate_checkpoints``.

Writes to ``--out`` (default ``runs/ratings-<timestamp>``): ``ratings.json``
(the table, the players and the settings), ``ratings.csv`` (name, ordinal,
mu, sigma, games, mean placement, update) and ``ratings.png`` (ordinal = mu -
3 sigma over training updates, one line per run, the bots as horizontal
lines). The table goes to stderr, one JSON summary line to stdout.
"""

from __future__ import annotations

import json
import sys
import time

# Only what needs no JAX is imported here: the arguments, the players and --out are checked before ``main``
# imports the library (tests/test_cli.py).
from agents.policies.specs import PLAYER_BOTS
from experiments.common import (
    GAMES_HELP,
    add_cache_args,
    add_quiet,
    check_out,
    enable_compilation_cache,
    fail,
    handles_ctrl_c,
    make_parser,
    player_spec,
    quiet_logs,
)
from experiments.names import names

DEFAULT_BOTS = tuple(names()["table_bots"])


def parse_args(argv=None):
    parser = make_parser("experiments.rate", __doc__)
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR[:STEP]", help="training runs (and checkpoints) to rate")
    parser.add_argument(
        "--games", type=int, default=16, metavar="N", help=f"{GAMES_HELP}, one drawn lineup a seed; default 16"
    )
    parser.add_argument(
        "--bots",
        default=",".join(DEFAULT_BOTS),
        help=f"comma-separated scripted bots that join, from {','.join(PLAYER_BOTS)}, or none "
        f"(default {','.join(DEFAULT_BOTS)})",
    )
    parser.add_argument(
        "--all-checkpoints", action="store_true", help="every checkpoint each RUN_DIR kept, not the latest"
    )
    parser.add_argument("--batch", type=int, default=8, help="lineups played together in one program (default 8)")
    parser.add_argument("--seed", type=int, default=0, help="lineups and game seeds (default 0)")
    parser.add_argument("--out", metavar="DIR", help="output directory (default runs/ratings-<timestamp>)")
    add_cache_args(parser)
    add_quiet(parser)
    args = parser.parse_args(argv)
    for name in ("games", "batch"):
        if getattr(args, name) < 1:
            fail(parser, f"--{name} must be >= 1, got {getattr(args, name)}")
    bots = [] if args.bots.strip() == "none" else [b.strip() for b in args.bots.split(",") if b.strip()]
    unknown = sorted(set(bots) - set(PLAYER_BOTS))
    if unknown:
        fail(parser, f"--bots: unknown bot(s) {unknown}; choose from {list(PLAYER_BOTS)} or none")
    args.bots = list(dict.fromkeys(bots))
    return parser, args


@handles_ctrl_c
def main(argv=None) -> dict:
    parser, args = parse_args(argv)  # before JAX: a bad argument costs no import
    for run in args.runs:  # every player named and the output writable before any game is played
        player_spec(parser, run)
    out = args.out or f"runs/ratings-{time.strftime('%Y%m%d-%H%M%S')}"
    check_out(parser, out)
    quiet_logs()
    from agents.arena.tournament import rate_checkpoints
    from agents.policies.load import PolicyError
    from agents.storage.checkpoints import CheckpointMismatchError, NoGoodCheckpointError
    from agents.utils.progress import ConsoleProgress

    enable_compilation_cache(None if args.no_cache else args.cache_dir)
    try:
        result = rate_checkpoints(
            args.runs,
            out,
            games=args.games,
            bots=args.bots,
            all_checkpoints=args.all_checkpoints,
            batch=args.batch,
            seed=args.seed,
            progress=None if args.quiet else ConsoleProgress(),
        )
    except (PolicyError, FileNotFoundError, MemoryError) as err:
        fail(parser, err)
    except (NoGoodCheckpointError, CheckpointMismatchError) as err:
        fail(parser, err, status=1)
    if not args.quiet:
        print(result["text"], file=sys.stderr)
    summary = {k: result[k] for k in ("out", "players", "rated_games", "best", "seconds")}
    print(json.dumps(summary))
    return {**summary, "ratings": result["ratings"]}


if __name__ == "__main__":
    main()
