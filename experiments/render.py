"""Pictures of a game: a PNG of one seat's view and a GIF of one fight.

    python -m experiments.render --out renders
    python -m experiments.render --out renders --seed 3 --rounds 8 --seat 2 --scale 4
    python -m experiments.render --out renders --set steps_per_round=4 --rounds 3

Plays ``--rounds`` rounds with the greedy bots on every seat (one
``jax.jit(env.step)`` per decision step; ``--set NAME=VALUE``: a game rule), then writes
into the directory ``--out``:

  * ``state.png``: ``render.render_rgb`` of ``--seat``'s view (layout in
    docs/pixels.md, "Rendered view");
  * ``fight.gif``: ``combat.record_fight`` of that seat's board (home, drawn at
    the bottom) against its last opponent's board, or a random board when it
    has none (PvE round, or the opponent is out);

and prints a JSON summary with the paths.
"""

from __future__ import annotations

import json
import os
import sys
import time

import jax
import numpy as np
from tqdm import tqdm

import jaxgame
from experiments.common import add_quiet, add_rule_sets, check_out, fail, make_parser, parse_rules
from jaxgame import bots, combat, render
from jaxgame import constants as C
from jaxgame.play import random_board


def _log(msg: str, quiet: bool) -> None:
    if not quiet:
        print(msg, file=sys.stderr, flush=True)


def play(env, seed: int, rounds: int, quiet: bool):
    """Greedy bots on all seats for ``rounds`` rounds; returns the state after the last fight."""
    key = jax.random.key(seed)
    key, reset_key = jax.random.split(key)
    state, ts = env.reset(reset_key)
    step = jax.jit(env.step)
    policy = jax.jit(bots.greedy_policy)
    steps = rounds * env.config.steps_per_round
    _log(f"playing {rounds} rounds ({steps} steps; the first step compiles, ~20 s on CPU)", quiet)
    for _ in tqdm(range(steps), desc="steps", disable=quiet, file=sys.stderr):
        key, k = jax.random.split(key)
        state, ts = step(state, policy(k, state, ts.action_mask))
        if bool(ts.done):
            _log("the game ended (auto-reset); rendering the new game", quiet)
    return state


def main(argv=None):
    parser = make_parser("experiments.render", __doc__)
    parser.add_argument("--out", required=True, metavar="DIR", help="output directory (created if missing)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=8, help="rounds played before rendering")
    parser.add_argument("--seat", type=int, default=0, help="seat drawn (0..7)")
    parser.add_argument("--scale", type=int, default=4, help="pixel scale of the PNG")
    parser.add_argument("--gif-scale", type=int, default=3, help="pixel scale of the GIF")
    parser.add_argument("--every", type=int, default=1, help="GIF: one frame every k combat ticks")
    add_rule_sets(parser, of_bots=False)
    add_quiet(parser)
    args = parser.parse_args(argv)
    rules = parse_rules(parser, args.set)
    if not 0 <= args.seat < C.NUM_PLAYERS:
        fail(parser, f"--seat must be in 0..{C.NUM_PLAYERS - 1}")
    if args.rounds < 0 or args.scale < 1 or args.gif_scale < 1 or args.every < 1:
        fail(parser, "--rounds must be >= 0; --scale, --gif-scale and --every >= 1")
    check_out(parser, args.out)  # before anything is played
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as err:  # a file there, or no permission
        fail(parser, f"--out {args.out}: cannot make the output directory ({err.strerror})")
    start = time.perf_counter()

    env = jaxgame.make("autochess", **rules)
    state = play(env, args.seed, args.rounds, args.quiet)
    p = jax.tree_util.tree_map(np.asarray, state.players)
    seat = args.seat

    png = os.path.join(args.out, "state.png")
    render.save_png(png, state, seat, scale=args.scale)
    _log(f"wrote {png}", args.quiet)

    home_species, home_stars = p.species[seat, C.BENCH_SIZE :], p.stars[seat, C.BENCH_SIZE :]
    opp = int(p.last_opponent[seat])
    fight_key = jax.random.fold_in(jax.random.key(args.seed), 12345)
    if opp >= 0 and (p.species[opp, C.BENCH_SIZE :] >= 0).any():
        away_species, away_stars, away = p.species[opp, C.BENCH_SIZE :], p.stars[opp, C.BENCH_SIZE :], f"seat {opp}"
    else:
        units = max(int((home_species >= 0).sum()), 2)
        away_species, away_stars = random_board(jax.random.fold_in(fight_key, 1), units, max_stars=2)
        away = f"random board ({units} units)"
    _log(f"recording the fight of seat {seat} vs {away}", args.quiet)
    result, replay = jax.jit(combat.record_fight, static_argnames="max_ticks")(
        home_species, home_stars, away_species, away_stars, fight_key, max_ticks=env.config.max_combat_ticks
    )
    gif = os.path.join(args.out, "fight.gif")
    frames = render.replay_to_gif(gif, replay, every=args.every, scale=args.gif_scale, ticks=int(result.ticks))
    _log(f"wrote {gif} ({frames} frames)", args.quiet)

    summary = {
        "png": png,
        "gif": gif,
        "seed": args.seed,
        "rounds": args.rounds,
        "round": int(state.round),
        "seat": seat,
        "life": int(p.life[seat]),
        "gold": int(p.gold[seat]),
        "level": int(p.level[seat]),
        "fight": {
            "away": away,
            "winner": ["home", "away", "draw"][int(result.winner)],
            "ticks": int(result.ticks),
            "home_survivors": int(result.home_survivors),
            "away_survivors": int(result.away_survivors),
            "gif_frames": frames,
        },
        "seconds": round(time.perf_counter() - start, 1),
    }
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
