"""Rate any player on the ladder, a fixed population of bots and shipped baselines: ``python -m experiments.ladder``.

    python -m experiments.ladder runs/mine                        # its latest good checkpoint, on ladder-v1
    python -m experiments.ladder baseline:ppo_small-v3 --games 96 --out runs/ladder-v3.json
    python -m experiments.ladder expert                           # a bot is a player too
    python -m experiments.ladder runs/mine --all-checkpoints --games 16 --out runs/mine/ladder   # a learning curve
    python -m experiments.ladder --show                           # the population and its ratings
    python -m experiments.ladder --fit --version ladder-v2 --games 384 --seed 9001 --out runs/ladder-v2   # new version
    python -m experiments.ladder search --games 32                  # a bot outside the population is rated too
    python -m experiments.ladder --agreement --games 32 --out runs/agreement.json   # the ladder vs head to heads

A player (``RUN_DIR[:STEP]``, ``baseline:NAME`` or a bot) sits with 7 members drawn at random for each of
``--games`` game seeds (default 64), and each table is played in its 8 seat rotations; its Plackett-Luce strength
is fitted against the members' frozen strengths (``agents.arena.ladder``). The rating is on the ladder's scale:
``expert`` = 1000 points, 400 points per factor of 10 in strength; its 95% interval is a bootstrap over the game
seeds. Beside it: the player's mean placement, and for each member how often it placed above that member where they
met (and what the fitted strengths expect). On a 2-core CPU a rating takes about 3 minutes at the default 64 game
seeds (the compile included); ``--games`` trades time for the interval's width (half-width ~ 1 / sqrt(games)).
The seed defaults to 9002, which no training run uses; the same seed gives the same rating. docs/evaluation.md is
the protocol and how to cite a ladder version.

``--all-checkpoints`` (PLAYER a training run) rates every checkpoint the run kept on the same games and writes
``DIR/ladder_curve.json`` and ``DIR/ladder_curve.png`` (points over training updates, the members as dashed lines)
to ``--out DIR``: a learning curve on the ladder's scale.

``--fit`` plays a new version's round robin (``--games`` lineups of 8 different members, 8 rotations each) and
fits its population (``--members``: whose, default the current version's); it writes ``DIR/<version>.json`` (to
ship in ``agents/arena/ladders/``) and ``DIR/<version>.games.json`` (the games, the evidence). A shipped version is
never refitted.

``--agreement`` tests the ladder's order against head to heads: every pair of its policy members at one table
(1 vs 7, 7 vs 1, 4 vs 4; ``--games`` game seeds, default 32, seed default 4300; Holm over a pair's three settings),
each significant setting marked as agreeing or disagreeing with the ladder's points
(``agents.arena.ladder_agreement``).

The table goes to stderr, one JSON object to stdout (``--out FILE`` writes it too).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# Only what needs no JAX is imported here: the arguments are checked before ``main`` imports the library
# (tests/test_cli.py); the ladder's defaults and versions come from experiments/cli_names.json.
from agents.storage.run_dir import write_json
from experiments.common import (
    GAMES_HELP,
    PLAYER_KINDS,
    add_cache_args,
    add_deterministic,
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


def parse_args(argv=None):
    LADDER = names()["ladder"]  # noqa: N806  (the library's ladder constants, read without JAX)
    parser = make_parser("experiments.ladder", __doc__)
    parser.add_argument("player", nargs="?", metavar="PLAYER", help=f"the player rated: {PLAYER_KINDS}")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--show", action="store_true", help="print the ladder's population and its ratings")
    mode.add_argument("--fit", action="store_true", help="fit a new ladder version's population (see above)")
    mode.add_argument(
        "--agreement",
        action="store_true",
        help="test the ladder's order against head to heads of its policy members (see above)",
    )
    parser.add_argument(
        "--ladder",
        default=LADDER["current"],
        metavar="VERSION",
        help=f"the ladder version (default {LADDER['current']})",
    )
    parser.add_argument("--version", default=None, metavar="NAME", help="with --fit: the new version's name")
    parser.add_argument(
        "--members",
        default=None,
        metavar="P,P,...",
        help="with --fit: the new version's members, comma-separated players, expert among them "
        "(default: the current version's)",
    )
    parser.add_argument(
        "--games",
        type=int,
        default=None,
        metavar="N",
        help=f"{GAMES_HELP}; default {LADDER['games']} (--fit: lineups, default 384)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help=f"lineups and game seeds (default {LADDER['seed']}; --fit: {LADDER['fit_seed']})",
    )
    parser.add_argument(
        "--draws",
        type=int,
        default=None,
        metavar="N",
        help=f"bootstrap resamples (default {LADDER['draws']}; --fit: 200)",
    )
    parser.add_argument(
        "--all-checkpoints",
        action="store_true",
        help="PLAYER a training run: rate every checkpoint it kept (a learning curve; needs --out DIR)",
    )
    add_deterministic(parser, "the rated policy (the members always sample)")
    parser.add_argument("--batch", type=int, default=8, help="lineups played together in one program (default 8)")
    parser.add_argument("--out", metavar="PATH", help="a JSON file for the rating; with --fit a directory")
    add_cache_args(parser)
    add_quiet(parser)
    args = parser.parse_args(argv)
    if args.batch < 1:
        fail(parser, f"--batch must be >= 1, got {args.batch}")
    if args.games is not None and args.games < 2:
        fail(parser, f"--games must be >= 2 (an interval needs a spread), got {args.games}")
    if args.draws is not None and args.draws < 100:
        fail(parser, f"--draws must be >= 100, got {args.draws}")
    if args.members is not None and not args.fit:
        fail(parser, "--members names a new version's population: it goes with --fit")
    if (args.fit or args.show or args.agreement) and args.all_checkpoints:
        fail(parser, "--all-checkpoints rates a PLAYER's checkpoints; it does not go with --show, --fit, --agreement")
    if args.fit:
        if args.deterministic:
            fail(parser, "--deterministic applies to a rated PLAYER; the population's members always sample")
        if args.player is not None:
            fail(parser, "--fit fits the population; it takes no PLAYER")
        if not args.version or not args.out:
            fail(parser, "--fit needs --version NAME (a new ladder-vN) and --out DIR")
        if args.version in LADDER["versions"]:
            fail(parser, f"--version {args.version} is shipped already; a shipped version is never refitted")
        if args.members is not None:
            args.members = [m.strip() for m in args.members.split(",") if m.strip()]
            for member in args.members:
                player_spec(parser, member)
            if "expert" not in args.members or len(set(args.members)) < 8:
                fail(
                    parser,
                    f"--members: at least 8 different players, expert among them (the scale's anchor), "
                    f"got {','.join(args.members)}",
                )
        check_out(parser, args.out)
    elif args.show or args.agreement:
        if args.deterministic:
            fail(parser, "--deterministic applies to a rated PLAYER")
        if args.player is not None:
            fail(parser, f"--{'show' if args.show else 'agreement'} takes no PLAYER: it reads the ladder's members")
        if args.out:
            check_out(parser, args.out, "file")
    else:
        if args.player is None:
            fail(parser, "give a PLAYER to rate, or --show / --fit")
        parsed = player_spec(parser, args.player)
        if args.all_checkpoints:
            if isinstance(parsed, str) or str(args.player).startswith("baseline:") or parsed[1] is not None:
                fail(parser, f"--all-checkpoints rates a training run's checkpoints: give RUN_DIR, not {args.player}")
            if not args.out:
                fail(parser, "--all-checkpoints needs --out DIR (the curve's JSON and PNG)")
            check_out(parser, args.out)
        elif args.out:
            check_out(parser, args.out, "file")
    if not args.fit and args.ladder not in LADDER["versions"]:
        fail(parser, f"--ladder {args.ladder}: no such version (shipped: {', '.join(LADDER['versions'])})")
    return parser, args


@handles_ctrl_c
def main(argv=None) -> dict:
    parser, args = parse_args(argv)  # before JAX: a bad argument costs no import
    quiet_logs()
    from agents.arena import ladder
    from agents.policies.load import PolicyError
    from agents.storage.checkpoints import CheckpointMismatchError, NoGoodCheckpointError
    from agents.utils.progress import ConsoleProgress

    progress = None if args.quiet else ConsoleProgress()
    try:
        if args.show:
            population = ladder.load_ladder(args.ladder)
            print(ladder.population_table(population), file=sys.stderr)
            summary = {k: population[k] for k in ("version", "members", "scale")}
            print(json.dumps(summary))
            return summary
        enable_compilation_cache(None if args.no_cache else args.cache_dir)
        if args.fit:
            return _fit(args, progress)
        if args.agreement:
            return _agreement(args, progress)
        if args.all_checkpoints:
            return _curve(args, progress)
        result = ladder.rate_on_ladder(
            args.player,
            games=args.games or ladder.DEFAULT_GAMES,
            seed=ladder.DEFAULT_SEED if args.seed is None else args.seed,
            version=args.ladder,
            batch=args.batch,
            draws=args.draws or ladder.DEFAULT_DRAWS,
            progress=progress,
            deterministic=args.deterministic,
        )
    except (PolicyError, ladder.LadderError, FileNotFoundError, MemoryError) as err:
        fail(parser, err)
    except (NoGoodCheckpointError, CheckpointMismatchError) as err:
        fail(parser, err, status=1)
    if not args.quiet:
        print(ladder.ladder_table(result), file=sys.stderr)
    if args.out:
        write_json(args.out, result)
    print(json.dumps(result))
    return result


def _curve(args, progress) -> dict:
    from agents.arena import ladder

    result = ladder.rate_checkpoints_on_ladder(
        args.player,
        games=args.games or ladder.DEFAULT_GAMES,
        seed=ladder.DEFAULT_SEED if args.seed is None else args.seed,
        version=args.ladder,
        batch=args.batch,
        draws=args.draws or ladder.DEFAULT_DRAWS,
        progress=progress,
        deterministic=args.deterministic,
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "ladder_curve.json", result)
    ladder.plot_ladder_curve(out / "ladder_curve.png", result)
    if progress is not None:
        for point in result["curve"]:
            print(
                f"update {point['update']}: {point['rating']:.0f} ({point['ci95'][0]:.0f} .. {point['ci95'][1]:.0f})",
                file=sys.stderr,
            )
    print(json.dumps({**result, "out": str(out)}))
    return result


def _agreement(args, progress) -> dict:
    from agents.arena.ladder_agreement import agreement, agreement_table

    result = agreement(
        args.ladder, games=args.games or 32, seed=4300 if args.seed is None else args.seed, progress=progress
    )
    if progress is not None:
        print(agreement_table(result), file=sys.stderr)
    if args.out:
        write_json(args.out, result)
    print(json.dumps(result))
    return result


def _fit(args, progress) -> dict:
    from agents.arena import ladder

    members = ladder.LADDER_V1_MEMBERS if args.members is None else tuple(args.members)
    population = ladder.fit_population(
        members,
        games=args.games or 384,
        seed=ladder.FIT_SEED if args.seed is None else args.seed,
        batch=args.batch,
        draws=args.draws or 200,
        progress=progress,
        version=args.version,
    )
    evidence = population.pop("evidence")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / f"{args.version}.json", population)
    write_json(out / f"{args.version}.games.json", evidence)
    if progress is not None:
        print(ladder.population_table(population), file=sys.stderr)
    summary = {
        "out": str(out),
        "version": args.version,
        "members": len(population["members"]),
        "rated_games": population["fit"]["rated_games"],
        "seconds": population["fit"]["seconds"],
    }
    print(json.dumps(summary))
    return population


if __name__ == "__main__":
    main()
