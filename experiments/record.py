"""Record games for behaviour cloning: seat-rotated games of bots and policies written as a dataset.

    python -m experiments.record expert --vs expert --games 64 --out data/expert
    python -m experiments.record expert --vs greedy --out data/e1
    python -m experiments.record runs/mine --vs greedy,random,greedy,random,greedy,random,expert --positions 0,7 \\
        --games 32 --out data/mine
    python -m experiments.record greedy --vs greedy --obs pixels --set max_rounds=20 --games 16 --out data/pixels
    python -m experiments.record expert --vs greedy --obs oracle --games 64 --out data/e1_oracle
    python -m experiments.record runs/clone:STEP --vs greedy --label expert_public --games 64 --out data/dagger1

``PLAYER`` is lineup position 0's player and ``--vs`` the 7 other positions': one player for all 7 or 7
comma-separated, in position order (``PLAYER --vs PLAYER``: the same player in all 8); a player is a bot (random,
greedy, expert), a shipped baseline policy ``baseline:NAME`` or a training run ``RUN_DIR[:STEP]``. Each game seed is
played in ``--rotations`` rotations (default 8, every player in every seat; 1 when all 8 are the same player,
whose rotations would be the same game). The steps of the lineup positions in ``--positions`` (default 0) go to
the dataset directory ``--out`` (new or empty): observation (packed pixels stay packed), legal-action mask, action,
reward, return-to-go, final placement, decision flag and the game/rotation/position/seat/step of each sample, in
sharded ``.npz`` files with a manifest (shapes, dtypes, players, rules, jaxgame version, a sha256 per shard;
``agents.pipeline.recording``, ``agents.storage.datasets``). ``--set`` (game rules) and ``--obs`` apply to games of
bots; policies play with the rules and observations they trained with, sampling their actions (``--deterministic``:
their most likely legal action). ``--obs oracle`` stores each step's vector observation followed by the hidden
information (``jaxgame.observation.oracle_block``): the same games as ``--obs vector`` with the same seed and
players, for a clone (``--set obs=oracle``) that sees what the recorded player could not. ``--label PLAYER``
stores PLAYER's action in each recorded state as the label (``action``) and the seat's own as ``played``: DAgger's
data, a teacher labelling the states its clone's own play leads to (clone several such recordings at once with
``--set bc_dataset=DIR1,DIR2``).

Tells stderr what it is doing (a progress bar over the games), then prints one JSON object (the dataset's
directory, samples, shards, bytes, the recorded positions' mean placements, seconds) as the last line of stdout.
"""

from __future__ import annotations

import json

# Only what needs no JAX is imported here: the players, counts, --out and the names of --set rules are checked before
# ``main`` imports the library (tests/test_cli.py); the rules' values after it (``check_after_import``).
from experiments.common import (
    add_cache_args,
    add_deterministic,
    add_lineup,
    add_quiet,
    add_removed_flag,
    add_rule_sets,
    check_out,
    check_rule_names,
    enable_compilation_cache,
    fail,
    handles_ctrl_c,
    lineup,
    make_parser,
    parse_rules,
    player_spec,
    quiet_logs,
)
from experiments.names import names


def parse_args(argv=None):
    parser = make_parser("experiments.record", __doc__)
    add_lineup(parser, "lineup position 0's player (--positions 0, the default, records it)")
    add_removed_flag(
        parser,
        "--players",
        "PLAYER --vs OPPONENTS (lineup position 0's player, then one player for the 7 other positions or 7 "
        "comma-separated; one player in all 8: PLAYER --vs PLAYER)",
    )
    parser.add_argument("--out", required=True, metavar="DATA_DIR", help="the dataset directory (new or empty)")
    parser.add_argument(
        "--games",
        type=int,
        default=64,
        metavar="N",
        help="game seeds; each is played in --rotations seat rotations (default 8: N x 8 games; default 64 seeds)",
    )
    parser.add_argument("--positions", default="0", help="comma-separated lineup positions to record (default 0)")
    parser.add_argument("--rotations", type=int, help="rotations per game seed, 1..8 (default: 8; 1 for one player)")
    parser.add_argument(
        "--batch-games", type=int, default=8, help="game seeds played at once, one shard each (default 8)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--obs",
        choices=names()["recorded_obs"],
        default="vector",
        help="games of bots: the observations stored (oracle: the vector, then the hidden information; default vector)",
    )
    add_rule_sets(parser)
    parser.add_argument(
        "--label",
        metavar="PLAYER",
        help="store PLAYER's action in each recorded state as the label, the seat's own as "
        "'played' (DAgger; PLAYER need not play)",
    )
    add_deterministic(parser)
    add_quiet(parser)
    add_cache_args(parser)
    args = parser.parse_args(argv)
    if args.games < 1:
        fail(parser, f"--games must be >= 1, got {args.games}")
    try:
        args.positions = [int(p) for p in args.positions.split(",")]
    except ValueError:
        fail(parser, f"--positions {args.positions!r}: expected comma-separated ints in 0..7")
    args.players = lineup(parser, args.player, args.vs)  # the 8 lineup positions', position 0 first
    if args.label is not None:
        player_spec(parser, args.label.strip(), "--label")
    check_out(parser, args.out)
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
    from agents.pipeline import recording
    from agents.storage.checkpoints import CheckpointMismatchError, NoGoodCheckpointError
    from agents.utils.progress import ConsoleProgress, NoProgress

    enable_compilation_cache(None if args.no_cache else args.cache_dir)
    try:
        result = recording.record(
            args.players,
            args.out,
            args.games,
            args.positions,
            args.seed,
            args.rotations,
            args.batch_games,
            rules,
            args.obs,
            args.deterministic,
            NoProgress() if args.quiet else ConsoleProgress(),
            label=args.label,
        )
    except (NoGoodCheckpointError, CheckpointMismatchError) as err:
        fail(parser, err, status=1)
    except (ValueError, TypeError, FileNotFoundError, MemoryError) as err:  # PolicyError, DatasetError: ValueErrors
        fail(parser, err)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
