"""Record one whole game of any lineup as a replay file (the format: docs/replays.md).

    python -m experiments.replay baseline:ppo_small-v1 --vs expert --seed 0 --out game.json
    python -m experiments.replay baseline:ppo_small-v1 --vs baseline:ppo_small-v1 --seed 3 --deterministic \\
        --out self-play.json
    python -m experiments.replay expert --vs greedy,random,greedy,expert,random,greedy,random \\
        --set max_rounds=20 --out bots.json
    python -m experiments.replay baseline:ppo_small-v1 --vs expert --seed 0 --out game.html
                                      # the same record in the browser viewer (one offline HTML file)

``PLAYER`` plays seat 0 and ``--vs`` the 7 other seats: one player for all 7 or 7 comma-separated, in seat order
(``PLAYER --vs PLAYER``: the same player in all 8 seats); a player is a bot (random, greedy, expert, expert_public,
search), a shipped baseline policy ``baseline:NAME`` or a training run ``RUN_DIR[:STEP]``. The game is the
seat-rotated evaluation's game of the same ``--seed``: the game that ``python -m experiments.evaluate PLAYER --vs
OPPONENTS --games 1 --seed S`` plays first (rotation 0), to the same final placements. Every decision step's
public state of every seat, each seat's action and, for the policies' seats, their ``--top-k`` most likely legal
actions and value estimate go into the file ``--out`` (compact JSON, a few MB for a 40-round game; written
atomically). An ``--out`` ending in ``.html`` (or ``.htm``) writes the replay viewer
instead (``agents.replays.viewer``): one self-contained page holding the record, which opens offline from the file
(no server, nothing fetched) and plays the game: the 8 seats, one in focus, its actions, the fights tick by tick.
An ``--out`` ending in ``.gif`` writes an animated picture of seat 0's game instead (``agents.replays.gif``): its
view at each round's fight, then its own fight tick by tick (``--gif-every`` ticks a frame, ``--gif-scale``,
``--gif-rounds`` for the first rounds only), a few hundred kB for a short game.
Policies sample their actions (``--deterministic``: their most likely legal action) and play with the rules they
trained with; ``--set`` (game rules) applies to games of bots only.

Tells stderr what it is doing, then prints one JSON object (the file, its bytes, the steps, the final placement of
each seat, seconds) as the last line of stdout. A game is one compiled program: the first game of a lineup's
players compiles it (about a minute on a 2-core CPU; the persistent compilation cache keeps it for the next
call), the game itself then takes seconds.
"""

from __future__ import annotations

import json
import sys
import time

# Only what needs no JAX is imported here: the players, --top-k and --out are checked before ``main`` imports the
# library (tests/test_cli.py); the game rules of --set are checked by their types after it.
from experiments.common import (
    add_game_args,
    add_lineup,
    add_removed_flag,
    check_out,
    check_rule_names,
    enable_compilation_cache,
    fail,
    handles_ctrl_c,
    lineup,
    make_parser,
    parse_rules,
    quiet_logs,
)
from experiments.names import names

#: the --out suffixes: the replay record (JSON) or the viewer page holding it
OUT_SUFFIXES = (".json", ".html", ".htm", ".gif")


def parse_args(argv=None):
    num_actions = names()["num_actions"]
    parser = make_parser("experiments.replay", __doc__)
    add_lineup(parser, "seat 0's player (the .gif shows its game)")
    add_removed_flag(
        parser,
        "--players",
        "PLAYER --vs OPPONENTS (seat 0's player, then one player for the 7 other seats or 7 comma-separated; "
        "one player in all 8 seats: PLAYER --vs PLAYER)",
    )
    parser.add_argument(
        "--out",
        required=True,
        metavar="FILE.json|FILE.html",
        help="the replay file (JSON, docs/replays.md), or with .html the viewer page holding it",
    )
    parser.add_argument("--seed", type=int, default=0, help="the game seed, as evaluate's --seed (default 0)")
    parser.add_argument(
        "--top-k",
        type=int,
        default=5,
        metavar="K",
        help=f"the policies' most likely legal actions kept per step, 1..{num_actions} (default 5)",
    )
    parser.add_argument(
        "--gif-every", type=int, default=4, metavar="K", help="--out .gif: one fight frame every K ticks"
    )
    parser.add_argument("--gif-scale", type=int, default=2, metavar="S", help="--out .gif: pixels per game pixel")
    parser.add_argument(
        "--gif-rounds",
        type=int,
        default=None,
        metavar="N",
        help="--out .gif: the first N rounds' fights only (default: the whole game)",
    )
    add_game_args(parser)
    args = parser.parse_args(argv)
    args.players = lineup(parser, args.player, args.vs)  # the 8 seats', seat 0 first
    if not 1 <= args.top_k <= num_actions:
        fail(parser, f"--top-k must be in 1..{num_actions}, got {args.top_k}")
    if not str(args.out).lower().endswith(OUT_SUFFIXES):
        fail(
            parser,
            f"--out {args.out}: a replay is written as {' or '.join(OUT_SUFFIXES)} (the JSON record, the "
            "viewer page holding it, or a GIF of seat 0's game); this suffix is not one of them",
        )
    if args.gif_every < 1 or args.gif_scale < 1 or (args.gif_rounds is not None and args.gif_rounds < 1):
        fail(parser, "--gif-every, --gif-scale and --gif-rounds must be >= 1")
    check_out(parser, args.out, "file")
    check_rule_names(parser, args.set, names()["rules"])  # the values: check_after_import
    return parser, args


def check_after_import(parser, args) -> dict:
    """The game rules of --set, parsed by their types (the library's ``parse_rules``)."""
    return parse_rules(parser, args.set)


def ordinal(n: int) -> str:
    """1 -> "1st", 2 -> "2nd", 3 -> "3rd", 4 -> "4th", ..."""
    return f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n if n < 20 else n % 10, 'th') }"


def placement_sentence(players, game: dict) -> str:
    """One sentence of the game's final placements, best first: "seat 2 (expert) placed 1st, seat 0 (runs/demo)
    placed 2nd, ..."; or that the game did not end within its steps."""
    if not game["finished"]:
        return f"the game did not end within its {game['steps']} steps: no placements"
    order = sorted(range(len(players)), key=lambda seat: game["placements"][seat])
    return ", ".join(f"seat {seat} ({players[seat]}) placed {ordinal(game['placements'][seat])}" for seat in order)


def _write_gif(args, rules, progress) -> tuple[dict, int]:
    """Seat 0's game as a GIF (``agents.replays.gif``); returns (the game's steps, finished and placements, bytes)."""
    import jaxgame
    from agents.replays import gif, record

    trace, meta = record.play_game(args.players, args.seed, rules, args.deterministic, args.top_k, progress=progress)
    progress.status("drawing seat 0's rounds and fights ...")
    frames = gif.game_frames(
        trace,
        jaxgame.AutoChessEnv(jaxgame.GameConfig(**meta["rules"])),
        seat=0,
        every=args.gif_every,
        scale=args.gif_scale,
        rounds=args.gif_rounds,
    )
    game = {"steps": trace.steps, "finished": trace.finished, "placements": trace.placements.astype(int).tolist()}
    return game, gif.write_gif(args.out, frames)


@handles_ctrl_c
def main(argv=None):
    parser, args = parse_args(argv)  # before JAX: a bad argument costs no import
    quiet_logs()
    rules = check_after_import(parser, args)
    from agents.replays import format as replay_format
    from agents.replays import record, viewer
    from agents.storage.checkpoints import CheckpointMismatchError, NoGoodCheckpointError
    from agents.utils.progress import ConsoleProgress, NoProgress

    enable_compilation_cache(None if args.no_cache else args.cache_dir)
    progress = NoProgress() if args.quiet else ConsoleProgress()
    start = time.perf_counter()
    try:
        if str(args.out).lower().endswith(".gif"):
            game, size = _write_gif(args, rules, progress)
        else:
            game = record.record_game(args.players, args.seed, rules, args.deterministic, args.top_k, progress=progress)
            is_page = str(args.out).lower().endswith((".html", ".htm"))
            size = (viewer.write_html if is_page else replay_format.write)(game, args.out)
    except (NoGoodCheckpointError, CheckpointMismatchError) as err:
        fail(parser, err, status=1)
    except (ValueError, TypeError, FileNotFoundError, MemoryError) as err:  # PolicyError: a ValueError
        fail(parser, err)
    except OSError as err:
        fail(parser, f"--out {args.out}: {err.strerror or err}", status=1)
    result = {
        "out": str(args.out),
        "bytes": size,
        "steps": game["steps"],
        "finished": game["finished"],
        "placements": game["placements"],
        "seconds": round(time.perf_counter() - start, 2),
    }
    if not args.quiet:
        print(placement_sentence(record.seat_players(args.players), game), file=sys.stderr, flush=True)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
