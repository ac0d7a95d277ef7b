"""Rate checkpoints and the scripted bots against each other: ``python -m experiments.league``.

    python -m experiments.league runs/a runs/b --games 16
    python -m experiments.league runs/a:40 runs/a:120 runs/b --bots greedy --games 32 --out runs/league-ab
    python -m experiments.league runs/a --all-checkpoints --games 16      # rating over training updates

The players are the runs' policies (``RUN_DIR``: the latest good checkpoint,
``RUN_DIR:STEP``: checkpoint STEP, ``--all-checkpoints``: every checkpoint a
run kept; a run of independent learners enters as 8 players, ``...#seatP``
for seat P's learner) and the scripted bots (``--bots``, default ``random,greedy``;
``none`` for none). Each of ``--games`` game seeds gets a lineup of 8 seats:
8 different players drawn at random when there are at least 8, else every
player takes 8 // P seats and the other seats go to different players drawn
at random. Every lineup is played 8 times, rotated one seat further each time
(duplicate evaluation, ``agents.tables``), and each of those games is rated:
OpenSkill's Plackett-Luce model from the full placements (``agents.ratings``:
a player holding several seats of a game is ranked by their mean placement).
Games run ``--batch`` lineups at a time in one compiled program.

Writes to ``--out`` (default ``runs/league-<timestamp>``): ``ratings.json``
(the table, the players and the settings), ``ratings.csv`` (name, ordinal,
mu, sigma, games, mean placement, update) and ``ratings.png`` (ordinal = mu -
3 sigma over training updates, one line per run, the bots as horizontal
lines). The table goes to stderr, one JSON summary line to stdout.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

from agents.tables import TABLE_BOTS, draw_lineups
from experiments.common import DEFAULT_CACHE, enable_compilation_cache, status


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m experiments.league", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR[:STEP]", help="training runs (and checkpoints) to rate")
    parser.add_argument("--games", type=int, default=16, help="game seeds (lineups), each played 8 times (default 16)")
    parser.add_argument("--bots", default=",".join(TABLE_BOTS),
                        help=f"comma-separated scripted bots that join the league, or none (default {','.join(TABLE_BOTS)})")
    parser.add_argument("--all-checkpoints", action="store_true", help="every checkpoint each RUN_DIR kept, not the latest")
    parser.add_argument("--batch", type=int, default=8, help="lineups played together in one program (default 8)")
    parser.add_argument("--seed", type=int, default=0, help="lineups and game seeds (default 0)")
    parser.add_argument("--out", help="output directory (default runs/league-<timestamp>)")
    parser.add_argument("--cache-dir", default=DEFAULT_CACHE, help=f"JAX compilation cache (default {DEFAULT_CACHE})")
    parser.add_argument("--no-cache", action="store_true", help="do not use the persistent compilation cache")
    parser.add_argument("--quiet", action="store_true", help="no progress or table on stderr")
    args = parser.parse_args(argv)
    for name in ("games", "batch"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    bots = [] if args.bots.strip() == "none" else [b.strip() for b in args.bots.split(",") if b.strip()]
    unknown = sorted(set(bots) - set(TABLE_BOTS))
    if unknown:
        parser.error(f"--bots: unknown bot(s) {unknown}; choose from {list(TABLE_BOTS)} or none")
    args.bots = list(dict.fromkeys(bots))
    return args


def load_players(args):
    """(policies, names of every player: the policies', then the bots')."""
    from experiments.policies import (
        check_same_observations, checkpoint_steps, load_run_policy, parse_spec, seat_policies,
    )

    policies = {}
    for spec in args.runs:
        parsed = parse_spec(spec)
        if isinstance(parsed, str):
            raise SystemExit(f"{spec!r} is a bot: add bots with --bots, not as a run")
        run_dir, step = parsed
        steps = checkpoint_steps(run_dir) if args.all_checkpoints and step is None else [step]
        for s in steps:
            for policy in seat_policies(load_run_policy(run_dir, s)):  # an independent run: one player a seat
                policies.setdefault(policy.name, policy)
    policies = list(policies.values())
    check_same_observations(policies)
    return policies, [p.name for p in policies] + args.bots


def play(policies, bots, rows, batch: int, seed: int, progress: bool):
    """ranks int[G, 8 rotations, 8 positions] of every lineup in ``rows`` (indices into policies + bots)."""
    import jax
    import numpy as np
    from tqdm import tqdm

    from agents.envs import make_game
    from agents.tables import make_table_runner

    run = make_table_runner(make_game(policies[0].config), [p.network for p in policies], batch)
    # player index -> participant index of the runner (policies first, then TABLE_BOTS)
    participant = np.array(list(range(len(policies))) + [len(policies) + TABLE_BOTS.index(b) for b in bots])
    params = tuple(p.params for p in policies)
    key = jax.random.key(seed)
    out = []
    for start in tqdm(range(0, len(rows), batch), desc="lineups", unit="batch", disable=not progress,
                      file=sys.stderr):
        chunk = rows[start:start + batch]
        padded = np.concatenate([chunk, np.repeat(chunk[-1:], batch - len(chunk), axis=0)])  # a full last batch
        ranks = np.asarray(run(params, participant[padded], jax.random.fold_in(key, start)))
        out.append(ranks[: len(chunk)])
    return np.concatenate(out)


def rate(names, rows, ranks):
    """(Ratings, mean placement per player) from every rotation of every lineup."""
    import numpy as np

    from agents.ratings import Ratings

    ratings = Ratings()
    placed = {n: [] for n in names}
    unfinished = 0
    for row, game in zip(rows, ranks):
        for rotation in game:
            if (rotation < 1).any():
                unfinished += 1
                continue
            ratings.rate([names[i] for i in row], rotation.tolist())
            for i, r in zip(row, rotation):
                placed[names[i]].append(int(r))
    return ratings, {n: float(np.mean(v)) if v else None for n, v in placed.items()}, unfinished


def write_outputs(out_dir: Path, table, policies, settings) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "ratings.json").write_text(json.dumps({**settings, "ratings": table}, indent=2) + "\n")
    with (out_dir / "ratings.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["name", "ordinal", "mu", "sigma", "games", "mean_placement", "update"])
        writer.writeheader()
        writer.writerows(table)
    plot_ratings(out_dir / "ratings.png", table, policies)


def plot_ratings(path: Path, table, policies) -> None:
    """Ordinal over training updates: one line per run, the bots as horizontal lines."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    by_name = {row["name"]: row for row in table}
    fig = Figure(figsize=(7, 4.5), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    runs = {}
    for p in policies:  # one line per run (per seat for independent learners: "...#seatP")
        if p.name in by_name:
            seat = p.name.partition("#")[2]
            label = Path(p.run_dir).name + (f" {seat}" if seat else "")
            runs.setdefault(label, []).append((p.step, by_name[p.name]["ordinal"]))
    for label, points in runs.items():
        points.sort()
        ax.plot([s for s, _ in points], [o for _, o in points], marker="o", label=label)
    for row in table:
        if row["update"] is None:
            ax.axhline(row["ordinal"], linestyle="--", linewidth=1, color="grey")
            ax.annotate(row["name"], (0, row["ordinal"]), xycoords=("axes fraction", "data"), fontsize=8,
                        va="bottom")
    ax.set_xlabel("training update")
    ax.set_ylabel("OpenSkill ordinal (mu - 3 sigma)")
    ax.grid(alpha=0.3)
    if runs:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)


def format_table(table) -> str:
    width = max(len("player"), *(len(row["name"]) for row in table))
    lines = [f"{'player':<{width}}  ordinal      mu   sigma  games  mean placement"]
    for row in table:
        placement = f"{row['mean_placement']:.2f}" if row["mean_placement"] is not None else "-"
        lines.append(f"{row['name']:<{width}}  {row['ordinal']:7.2f}  {row['mu']:6.2f}  {row['sigma']:6.2f}  "
                     f"{row['games']:5d}  {placement:>14}")
    return "\n".join(lines)


def main(argv=None) -> dict:
    import numpy as np

    from experiments.policies import rule_differences

    args = parse_args(argv)
    enable_compilation_cache(None if args.no_cache else args.cache_dir)
    progress = not args.quiet
    start = time.perf_counter()
    policies, names = load_players(args)
    if len(names) < 2:
        raise SystemExit(f"a league needs at least 2 players, got {names}")
    for note in rule_differences(policies):
        status(f"note: {note}", progress)
    rows = draw_lineups(len(names), args.games, np.random.default_rng(args.seed))
    status(f"{len(names)} players, {args.games} lineups x 8 rotations: compiling ...", progress)
    ranks = play(policies, args.bots, rows, min(args.batch, args.games), args.seed, progress)
    ratings, mean_placement, unfinished = rate(names, rows, ranks)
    update = {p.name: p.step for p in policies}
    table = [{**row, "mean_placement": mean_placement[row["name"]], "update": update.get(row["name"])}
             for row in ratings.table()]
    out_dir = Path(args.out or f"runs/league-{time.strftime('%Y%m%d-%H%M%S')}")
    settings = {"players": names, "games": args.games, "rated_games": args.games * 8 - unfinished,
                "unfinished_games": unfinished, "seed": args.seed, "bots": args.bots,
                "rules": policies[0].config.rules() if policies else None}
    write_outputs(out_dir, table, policies, settings)
    status(format_table(table), progress)
    summary = {"out": str(out_dir), "players": len(names), "rated_games": settings["rated_games"],
               "best": table[0]["name"] if table else None, "seconds": round(time.perf_counter() - start, 1)}
    print(json.dumps(summary))
    return {**summary, "ratings": table}


if __name__ == "__main__":
    main()
