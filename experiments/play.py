"""Play one seat of a game yourself, in the browser, against policies or bots.

    python -m experiments.play --vs baseline:ppo_small-v1
    python -m experiments.play --vs expert,expert,greedy,greedy,random,random,baseline:ppo_small-v1 --seat 3
    python -m experiments.play --vs greedy --set max_rounds=10 --seed 7 --out runs/mine.json --no-browser

``--vs``: one player for the 7 other seats, or 7 comma-separated in seat order (yours skipped); a player is a bot
(random, greedy, expert, expert_public, search), a shipped baseline policy ``baseline:NAME`` or a training run
``RUN_DIR[:STEP]``. Policies sample their actions (``--deterministic``: their most likely legal action) and play
with the rules they trained with; ``--set`` (game rules) applies to games of bots only.

Serves a page on http://127.0.0.1:PORT/ (this machine only; ``--port 0``, the default, picks a free port) and
opens it in the web browser (``--no-browser``: only prints the URL). The page shows your board, bench, shop,
gold and level, the other seats' boards and lives, and a button for every action the legal-action mask allows
now (the agents' own mask): buy, sell, place, recall, level (buy XP), reroll, lock, end turn. The other seats act
at every step; while you have nothing to decide (your turn ended, or you are out) the game plays on by itself.
At the end the game is saved as a replay (docs/replays.md) to ``--out`` (default ``runs/play-TIMESTAMP.json``;
your seat's player is ``human``) and the page says where. Ctrl-C stops the server: the last line of stdout is then
a JSON object (the file, the steps, the placements) when the game was saved, else one line on stderr.
"""

from __future__ import annotations

import json
import sys
import time
import webbrowser

# Only what needs no JAX is imported here: the players, seat, port, --out and the names of --set rules are checked
# before ``main`` imports the library (tests/test_cli.py); the rules' values after it (``check_after_import``).
from experiments.common import (
    PLAYER_KINDS,
    add_game_args,
    check_out,
    check_rule_names,
    enable_compilation_cache,
    fail,
    handles_ctrl_c,
    make_parser,
    parse_rules,
    player_list,
    quiet_logs,
)
from experiments.names import names


def parse_args(argv=None):
    num_players = names()["num_players"]
    parser = make_parser("experiments.play", __doc__)
    parser.add_argument(
        "--vs",
        required=True,
        metavar="PLAYER[,PLAYER x6]",
        help=f"one player for the 7 other seats or 7 comma-separated: {PLAYER_KINDS}",
    )
    parser.add_argument("--seat", type=int, default=0, help=f"your seat, 0..{num_players - 1} (default 0)")
    parser.add_argument("--seed", type=int, default=0, help="the game seed (default 0)")
    parser.add_argument("--port", type=int, default=0, help="the port on 127.0.0.1 (default 0: a free one)")
    parser.add_argument(
        "--out",
        default=None,
        metavar="FILE.json",
        help="the replay file of the finished game (default runs/play-TIMESTAMP.json)",
    )
    parser.add_argument("--no-browser", action="store_true", help="print the URL without opening a browser")
    add_game_args(parser)
    args = parser.parse_args(argv)
    args.vs = player_list(parser, args.vs, "--vs", (1, num_players - 1))
    if not 0 <= args.seat < num_players:
        fail(parser, f"--seat must be in 0..{num_players - 1}, got {args.seat}")
    if not 0 <= args.port <= 65535:
        fail(parser, f"--port must be in 0..65535 (0: a free one), got {args.port}")
    if args.out is None:
        args.out = f"runs/play-{time.strftime('%Y%m%d-%H%M%S')}.json"
    if str(args.out).lower().endswith((".html", ".htm")):
        fail(parser, f"--out {args.out}: the game is saved as a .json replay")
    check_out(parser, args.out, "file")
    check_rule_names(parser, args.set, names()["rules"])
    return parser, args


def check_after_import(parser, args) -> dict:
    """The game rules of --set, parsed by their types (the library's ``parse_rules``)."""
    return parse_rules(parser, args.set)


@handles_ctrl_c
def main(argv=None):
    parser, args = parse_args(argv)  # before JAX: a bad argument costs no import
    quiet_logs()
    rules = check_after_import(parser, args)
    from agents.replays.play import PlaySession
    from agents.replays.play_server import PlayServer
    from agents.storage.checkpoints import CheckpointMismatchError, NoGoodCheckpointError

    enable_compilation_cache(None if args.no_cache else args.cache_dir)

    def say(text):
        if not args.quiet:
            print(text, file=sys.stderr, flush=True)

    try:
        session = PlaySession(args.vs, args.seat, args.seed, rules, args.deterministic, notes=say)
        say(f"compiling the game of you against {', '.join(dict.fromkeys(args.vs))} ...")
        session.warm_up()
        server = PlayServer(session, args.out, args.port)
    except (NoGoodCheckpointError, CheckpointMismatchError) as err:
        fail(parser, err, status=1)
    except (ValueError, TypeError, FileNotFoundError) as err:  # PolicyError: a ValueError
        fail(parser, err)
    except OSError as err:  # the port is taken
        fail(parser, f"--port {args.port}: {err.strerror or err}", status=1)
    except KeyboardInterrupt:
        fail(parser, "interrupted before the game started; nothing saved", status=130)
    told = False
    try:
        server.start()
        print(server.url, flush=True)
        say(f"your seat is {args.seat}; the finished game goes to {args.out}; Ctrl-C stops the server")
        if not args.no_browser:
            webbrowser.open(server.url)
        while True:
            time.sleep(0.2)
            if not told and (server.saved or server.save_error):
                told = True
                say(f"game over: saved to {server.saved}" if server.saved else f"not saved: {server.save_error}")
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    if not server.saved:
        fail(
            parser,
            f"stopped at step {session.step} before the game was saved"
            + (f" ({server.save_error})" if server.save_error else "; nothing saved"),
            status=130,
        )
    result = {
        "out": server.saved,
        "viewer": server.viewer,
        "steps": session.step,
        "finished": session.finished,
        "placements": session.placements.tolist(),
        "seat": args.seat,
    }
    print(json.dumps(result), flush=True)
    return result


if __name__ == "__main__":
    main()
