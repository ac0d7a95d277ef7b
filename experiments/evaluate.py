"""Evaluate a player against lineups of opponents, compare two players, or play games of bots.

    python -m experiments.evaluate runs/mine --vs greedy --games 16            # its latest good checkpoint
    python -m experiments.evaluate runs/mine:120 --vs random --vs greedy        # checkpoint 120
    python -m experiments.evaluate runs/clone --vs greedy --games 32 --deterministic   # argmax play
    python -m experiments.evaluate runs/mine --vs baseline:ppo_small-v1 --games 32
    python -m experiments.evaluate runs/mine --vs runs/b:120 --vs greedy,greedy,random,runs/b,greedy,random,random
    python -m experiments.evaluate expert --vs greedy --set max_rounds=20    # a bot is a player too
    python -m experiments.evaluate runs/mine --vs expert --games 32 --save-replays 3 runs/mine/replays
    python -m experiments.evaluate --compare runs/mine runs/other --games 64
    python -m experiments.evaluate --compare runs/mine baseline:ppo_small-v1 --vs greedy --games 64
    python -m experiments.evaluate expert --vs greedy,random,greedy,random,greedy,random,expert --games 32
    python -m experiments.evaluate --games 16                  # games of bots: greedy --vs random,greedy,...

A player is a training run ``RUN_DIR[:STEP]`` (its latest good checkpoint, or checkpoint STEP), a shipped
baseline policy ``baseline:NAME`` (``python -m experiments.baseline list``) or a bot (``random``, ``greedy``,
``expert``). Every table is played duplicate (``agents.arena.tables``): ``--games N`` game seeds, each in 8 seat
rotations, so N x 8 games per lineup, and every player sits in every seat on the same luck of the draw.

With PLAYER it evaluates that player in one seat against 7 opponents (``agents.arena.tournament``). Each
``--vs`` (repeatable; default: random, then greedy) names the opponents: one player for all 7 seats, or 7
comma-separated players. The policies sample their actions, as in training; ``--deterministic`` makes them play
their most likely legal action (a behaviour-cloned policy is meant to be played so). JSON with, per ``--vs``, the
mean placement, a 95% interval over the seeds, top-1 and top-4 rates; a table of the same on stderr. When every
player is a bot and there is one ``--vs`` (``BOT --vs BOTS``: one table of 8 bots), the JSON also holds what games
of bots report (below): each bot's placements over all the seats it holds, and the ranks.
``--save-replays N DIR`` also records the first N games of each lineup as the evaluation played them (rotation 0,
the player in seat 0; ``agents.replays.evaluation``): ``DIR/<lineup>-game<g>.json`` and ``.html``, a viewer page
to open in a browser. Each recording costs about as much as the evaluation's own games, so keep N small.

With ``--compare A B`` (two players) it tests whether A places better than B
(``agents.arena.tournament.compare_players``): A against each ``--vs`` lineup (default: random, then greedy),
then B against the same lineup on the same game seeds, and (unless ``--no-head-to-head``) A and B at one table:
1 A and 7 B, 7 A and 1 B, 4 and 4. Per setting: both mean placements, A - B with its 95% interval, the p-value
of a paired t-test over the game seeds and the same p Holm-adjusted over all the settings tested, the mean rank
points (``--rank-points``, default 90,45,0,-135 over places 1-2, 3-4, 5-6, 7-8) and the game seeds a difference
of ``--difference`` places needs (power 0.8 at p < 0.05). The verdict ("A places better than B in every
setting", or which settings show a difference) reads the Holm-adjusted p-values. The table and the verdict on
stderr, the JSON (per-seed placements and ``"verdict"`` included) on stdout.

``--compare A1,A2,A3 B1,B2,B3`` (as many players on each side, at least 2: one run per training seed, paired in
order) compares each pair as above, then tests over training seeds (``agents.arena.tournament.compare_over_seeds``):
per setting the pairs' mean placements, a paired t-test over the pairs, its interval over training seeds, Holm over
the settings. Each pair's table, then the one over seeds; the JSON holds each pair's result under ``"pairs"``.

Games of bots: ``BOT --vs BOTS`` (one ``--vs``, every player a bot), or with neither PLAYER nor ``--compare`` the
default table greedy,random,... alternating (``greedy --vs random,greedy,random,greedy,random,greedy,random``):
``--games`` game seeds, the table's 8 seats (PLAYER first, then the ``--vs`` seats) rotated over the 8 seats for
each; JSON with the seats, each bot's mean placement (and its interval) and the ranks int[games][8 rotations][8
positions of the seats].

``--set NAME=VALUE`` (repeatable) changes a game rule (``jaxgame.GameConfig``, e.g. ``--set max_rounds=20``) of
games of bots; a policy plays with the rules it trained with. Tells stderr what it is doing (compiling, ~20-30 s
on a 2-core CPU; the persistent compilation cache, as in ``experiments.train``, makes later runs start in
seconds), then prints one JSON object as the last line of stdout. ``--quiet`` silences the messages.
"""

from __future__ import annotations

import json
import time

# Only what needs no JAX is imported here: the players, lineups, counts and paths are checked before ``main``
# imports the library (tests/test_cli.py); the game rules of --set and the rank points are checked after it.
from agents.policies.specs import PLAYER_BOTS, PolicyError, lineup_of, parse_spec
from experiments.common import (
    GAMES_HELP,
    PLAYER_KINDS,
    add_cache_args,
    add_deterministic,
    add_quiet,
    add_removed_flag,
    add_rule_sets,
    check_out,
    check_rule_names,
    enable_compilation_cache,
    fail,
    handles_ctrl_c,
    make_parser,
    parse_rules,
    player_spec,
    quiet_logs,
    status,
)
from experiments.names import names

DEFAULT_SEATS = "greedy,random,greedy,random,greedy,random,greedy,random"
DEFAULT_VS = ("random", "greedy")
PLAYER = PLAYER_KINDS.replace(" / ", " | ")


def parse_args(argv=None):
    """``(parser, args)``: ``args.player`` (None without one), ``args.lineups`` (``--vs`` spec -> its 7 opponents),
    ``args.seats`` (the 8 bots of games of bots, ``bot_table``; None for other games); bad input is a one-line parser
    error."""
    parser = make_parser("experiments.evaluate", __doc__)
    parser.add_argument("player", nargs="?", metavar="PLAYER", help=f"the player evaluated: {PLAYER}")
    parser.add_argument(
        "--vs",
        action="append",
        metavar="PLAYER[,PLAYER x6]",
        help="the opponents of PLAYER (or of --compare's A and B): one player for all 7 seats or 7 "
        "comma-separated (repeatable; default: random, then greedy)",
    )
    parser.add_argument("--games", type=int, default=16, metavar="N", help=f"{GAMES_HELP} per lineup; default 16")
    parser.add_argument("--seed", type=int, default=0)
    add_deterministic(parser)
    add_rule_sets(parser)
    add_removed_flag(
        parser,
        "--seats",
        "BOT --vs BOTS (the first seat's bot, then one bot for the 7 other seats or 7 comma-separated)",
    )
    parser.add_argument(
        "--compare",
        nargs=2,
        metavar=("A", "B"),
        help=f"test whether player A places better than player B ({PLAYER}); comma-separated lists "
        "of as many players (one per training seed) test over training seeds",
    )
    parser.add_argument(
        "--no-head-to-head", action="store_true", help="with --compare: only the --vs lineups, not A and B at one table"
    )
    parser.add_argument(
        "--difference",
        type=float,
        default=names()["difference"],
        help=f"with --compare: the difference of mean placement to size a test for (default {names()['difference']})",
    )
    parser.add_argument(
        "--rank-points",
        default=",".join(f"{v:g}" for v in names()["rank_points"]),
        help="with --compare: points per place, 1, 2, 4 or 8 comma-separated values spread over the 8 "
        "places (default %(default)s)",
    )
    parser.add_argument(
        "--save-replays",
        nargs=2,
        metavar=("N", "DIR"),
        default=None,
        help="with PLAYER: also record the first N games of each lineup (rotation 0, PLAYER in seat 0) "
        "as replays in DIR: a .json (docs/replays.md) and a .html viewer each",
    )
    add_quiet(parser)
    add_cache_args(parser)
    args = parser.parse_args(argv)
    _check(parser, args)
    check_rule_names(parser, args.set, names()["rules"])  # the values: check_after_import
    return parser, args


def _check(parser, args) -> None:
    """The combinations and ranges ``parse_args`` refuses; ``args.lineups`` and ``args.seats`` filled in."""
    if args.games < 1:
        fail(parser, f"--games must be >= 1, got {args.games}")
    if args.compare and args.player:
        fail(parser, f"--compare takes its two players as A B (RUN_DIR:STEP for a step), not a PLAYER ({args.player})")
    for spec in args.vs or ():  # every opponent named (the closest valid names for an unknown one)
        for name in dict.fromkeys(n.strip() for n in spec.split(",") if n.strip()):
            player_spec(parser, name, "--vs")
    if not args.player and not args.compare and args.vs:
        fail(parser, f"--vs needs a PLAYER ({parser.prog} RUN_DIR[:STEP] --vs greedy) or --compare A B")
    if args.deterministic and not args.player:
        fail(
            parser,
            f"--deterministic needs a PLAYER (a policy that plays its most likely action): {parser.prog} "
            "RUN_DIR[:STEP] --deterministic",
        )
    if args.save_replays is not None:
        count, out = args.save_replays
        if not args.player:
            fail(parser, "--save-replays records games of a PLAYER's evaluation: give the PLAYER")
        if not count.isdigit() or not 1 <= int(count) <= args.games:
            fail(parser, f"--save-replays N DIR: N must be an int in [1, --games={args.games}], got {count!r}")
        check_out(parser, out, flag="--save-replays DIR")
        args.save_replays = (int(count), out)
    if args.compare:
        sides = [[n.strip() for n in side.split(",")] for side in args.compare]
        if any(not n for side in sides for n in side):
            fail(parser, f"--compare A B: an empty name in {args.compare[0]!r} {args.compare[1]!r}")
        if len(sides[0]) != len(sides[1]):
            fail(
                parser,
                f"--compare A B: A lists {len(sides[0])} players and B {len(sides[1])}; give as many on each "
                "side, one run per training seed, paired in order",
            )
        args.pairs = list(zip(*sides))  # one pair: compare_players; more: compare_over_seeds
        if args.games < 2:
            fail(parser, f"--compare needs --games >= 2 game seeds (a test needs a spread), got {args.games}")
        if not (args.difference > 0):
            fail(parser, f"--difference must be > 0 places, got {args.difference}")
    try:
        args.lineups = {spec: lineup_of(spec) for spec in (args.vs or DEFAULT_VS)}
    except PolicyError as err:
        fail(parser, f"--vs: {err}")
    args.seats = bot_table(args)


def bot_table(args) -> tuple[str, ...] | None:
    """The 8 bots of the one table of games of bots, seat 0 first: PLAYER and its one ``--vs`` lineup when every
    player is a bot, the default table without PLAYER and ``--compare``; None otherwise."""
    if args.compare:
        return None
    if not args.player:
        return tuple(DEFAULT_SEATS.split(","))
    if len(args.lineups) != 1:
        return None
    seats = (args.player.strip(), *next(iter(args.lineups.values())))
    return seats if all(seat in PLAYER_BOTS for seat in seats) else None


def check_after_import(parser, args) -> dict:
    """What ``parse_args`` leaves to the library: the rank points of --compare and the game rules of --set."""
    from agents.arena import significance

    if args.compare:
        try:
            args.rank_points = significance.check_rank_points(float(v) for v in args.rank_points.split(","))
        except ValueError as err:
            fail(parser, f"--rank-points {args.rank_points!r}: {err}")
    return parse_rules(parser, args.set)


def play_lineups(lineups: dict, games: int, seed: int, rules: dict, deterministic: bool = False) -> dict:
    """``{name: ranks int[games, 8 rotations, 8 positions]}`` for each lineup (name -> 8 players: bots,
    ``baseline:NAME`` or ``RUN_DIR[:STEP]``), every game seed in 8 seat rotations, all lineups on the same seeds in
    one compiled program (``agents.arena.tables``); ``rules``: the game's, when every player is a bot."""
    import jax
    import numpy as np

    from agents.arena import tournament
    from agents.arena.tables import make_table_runner
    from agents.policies.load import table_networks
    from agents.utils import memory

    policies, player_of = tournament.resolve_players(dict.fromkeys(n for names in lineups.values() for n in names))
    game = tournament.table_game(policies, rules)
    index, bots = tournament.participant_index(policies, player_of)
    memory.check_fits(f"--games {games}", memory.table_bytes(game, games))
    run = make_table_runner(game, table_networks(policies, game), games, deterministic, bot_names=bots)
    params, key = tuple(p.params for p in policies), jax.random.key(seed)
    return {
        name: np.asarray(run(params, np.tile([index[player_of[n]] for n in names], (games, 1)), key))
        for name, names in lineups.items()
    }


def evaluate_player(args, rules) -> dict:
    """PLAYER against each ``--vs`` lineup: a policy through ``agents.arena.tournament.evaluate_checkpoint``, a bot
    at tables of ``play_lineups``; the table on stderr, the JSON on stdout."""
    from agents.arena import tournament
    from agents.arena.evaluation import placement_summary
    from agents.replays.evaluation import save_evaluation_replays
    from agents.utils.progress import ConsoleProgress

    parsed = parse_spec(args.player)
    if isinstance(parsed, tuple):
        if rules:
            raise PolicyError("--set applies to games of bots; a policy plays with the rules it trained with")
        result = {
            "player": args.player,
            **tournament.evaluate_checkpoint(
                *parsed,
                args.lineups,
                args.games,
                args.seed,
                progress=None if args.quiet else ConsoleProgress(),
                greedy_policy=args.deterministic,
            ),
        }
    else:
        status(f"evaluating {args.player} against {len(args.lineups)} lineup(s): compiling ...", not args.quiet)
        start = time.perf_counter()
        tables = play_lineups(
            {spec: [args.player, *names] for spec, names in args.lineups.items()},
            args.games,
            args.seed,
            rules,
            args.deterministic,
        )
        result = {
            "player": args.player,
            "games_per_rotation": args.games,
            "rules": rules,
            **{f"vs_{spec}": placement_summary(ranks[:, :, 0]) for spec, ranks in tables.items()},
            "seconds": round(time.perf_counter() - start, 2),
        }
        if args.seats:  # one table of 8 bots: what games of bots report too
            result.update(bot_placements(args, next(iter(tables.values()))))
    status(tournament.placement_table([(spec, result[f"vs_{spec}"]) for spec in args.lineups]), not args.quiet)
    if args.save_replays is not None:
        count, out = args.save_replays
        result["replays"] = save_evaluation_replays(
            args.player,
            args.lineups,
            args.games,
            args.seed,
            count,
            out,
            rules,
            args.deterministic,
            None if args.quiet else ConsoleProgress(),
        )
        status(f"saved {len(result['replays'])} replays in {out} (open the .html files in a browser)", not args.quiet)
    print(json.dumps(result))
    return result


def compare(args, rules) -> dict:
    """``--compare A B``: the significance tests of ``agents.arena.tournament.compare_players`` (or with lists of
    players, ``compare_over_seeds``), as tables and JSON."""
    from agents.arena import tournament
    from agents.utils.progress import ConsoleProgress

    options = dict(
        head_to_head=not args.no_head_to_head,
        rules=rules,
        points=args.rank_points,
        difference=args.difference,
        progress=None if args.quiet else ConsoleProgress(),
    )
    if len(args.pairs) == 1:
        result = tournament.compare_players(*args.pairs[0], args.lineups, args.games, args.seed, **options)
    else:
        result = tournament.compare_over_seeds(args.pairs, args.lineups, args.games, args.seed, **options)
        for pair in result["pairs"]:
            status(tournament.comparison_table(pair) + "\n", not args.quiet)
    status(tournament.comparison_table(result), not args.quiet)
    print(json.dumps(result))
    return result


def bot_placements(args, ranks) -> dict:
    """What games of bots report of the table ``args.seats`` (8 bots, seat 0 first) from its ``ranks`` int[games,
    8 rotations, 8 positions]: the games, rotations, seats and seed, each bot's placements over all the seats it
    holds (and their mean), the ranks."""
    from agents.arena.evaluation import placement_summary

    seats = list(args.seats)
    placements = {
        bot: placement_summary(ranks[:, :, [i for i, s in enumerate(seats) if s == bot]].reshape(args.games, -1))
        for bot in sorted(set(seats))
    }
    return {
        "games": args.games,
        "rotations": 8,
        "seats": seats,
        "seed": args.seed,
        "mean_placement": {bot: p["mean_placement"] for bot, p in placements.items()},
        "placements": placements,
        "ranks": ranks.tolist(),
    }


def play_bots(args, rules) -> dict:
    """Games of bots without a PLAYER: the 8 bots of ``args.seats`` (the default table), ``--games`` seeds x 8
    rotations; each bot's placements (``bot_placements``)."""
    seats = list(args.seats)
    status(f"playing {args.games} game seeds x 8 rotations of {','.join(seats)}: compiling ...", not args.quiet)
    start = time.perf_counter()
    ranks = play_lineups({"seats": seats}, args.games, args.seed, rules)["seats"]
    seconds = time.perf_counter() - start
    status(f"played {args.games * 8} games in {seconds:.1f} s (compiling included)", not args.quiet)
    result = {**bot_placements(args, ranks), "rules": rules, "seconds": round(seconds, 2)}
    print(json.dumps(result))
    return result


@handles_ctrl_c
def main(argv=None):
    parser, args = parse_args(argv)  # before JAX: a bad argument costs no import
    if args.player:  # the players named (the closest valid names for an unknown one) before any work
        player_spec(parser, args.player)
    for pair in args.pairs if args.compare else ():
        for name in pair:
            player_spec(parser, name, "--compare")
    quiet_logs()
    rules = check_after_import(parser, args)
    from agents.storage.checkpoints import CheckpointMismatchError, NoGoodCheckpointError

    enable_compilation_cache(None if args.no_cache else args.cache_dir)
    try:
        if args.compare:
            return compare(args, rules)
        return evaluate_player(args, rules) if args.player else play_bots(args, rules)
    except (NoGoodCheckpointError, CheckpointMismatchError) as err:
        fail(parser, err, status=1)
    except (PolicyError, FileNotFoundError, MemoryError, ValueError) as err:
        fail(parser, err)


if __name__ == "__main__":
    main()
