"""What the search bot costs at a table: ``python benchmarks/search_bot_cost.py [--games 8]``.

One seat-rotated table of ``--games`` game seeds x 8 rotations, 1 player against 7 ``expert`` bots, played twice
per player (the first call compiles): the player ``expert_public`` (what ``search`` plays except where it tries a
board move) and ``search``. It prints one JSON object: each player's first-call seconds (compile included, the
persistent cache off), its best seconds per table over ``--repeats`` calls and its mean placement there, and
the search's extra seconds per game (a game is at most 40 rounds x 12 decisions of the searching seat).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from agents.arena.tournament import play
from agents.utils import compile_cache
from jaxgame import constants as C


def time_table(bot: str, games: int, seed: int, repeats: int) -> dict:
    """Compile and run seconds of ``games`` lineups of ``bot`` + 7 ``expert`` (8 rotations each), and its mean
    placement."""
    bots = tuple(sorted({bot, "expert"}))
    rows = np.array([[bots.index(bot)] + [bots.index("expert")] * 7] * games)
    start = time.perf_counter()
    ranks = play([], bots, rows, games, seed)
    first = time.perf_counter() - start
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        ranks = play([], bots, rows, games, seed)
        runs.append(time.perf_counter() - start)
    return {
        "compile_and_first_s": round(first, 1),
        "table_s": round(min(runs), 2),
        "mean_placement": round(float(np.asarray(ranks)[:, :, 0].mean()), 3),
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=8, help="game seeds of the table (default 8)")
    parser.add_argument("--seed", type=int, default=77, help="the table's seed (default 77)")
    parser.add_argument("--repeats", type=int, default=2, help="timed calls after the first (default 2)")
    args = parser.parse_args(argv)
    compile_cache.disable()  # compile seconds are what a first run pays
    out = {"games": args.games, "rotations": C.NUM_PLAYERS, "seed": args.seed}
    for bot in ("expert_public", "search"):
        out[bot] = time_table(bot, args.games, args.seed, args.repeats)
    played = args.games * C.NUM_PLAYERS
    extra = out["search"]["table_s"] - out["expert_public"]["table_s"]
    out["extra_s_per_game"] = round(extra / played, 3)
    out["search_vs_expert_public_time"] = round(out["search"]["table_s"] / out["expert_public"]["table_s"], 2)
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
