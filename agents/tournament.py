"""Saved policies at seat-rotated tables: a checkpoint's placements against lineups of bots and other checkpoints
(``evaluate_checkpoint``), and a rating tournament of checkpoints and bots (``rate_checkpoints``).

    result = evaluate_checkpoint("runs/a", None, {"greedy": ["greedy"] * 7}, games=16)  # vs 7 greedy bots
    result = rate_checkpoints(["runs/a", "runs/b:120"], "runs/ratings-ab", games=16)   # writes ratings.*

The tournament:

The players are the runs' policies (``RUN_DIR``: the latest good checkpoint,
``RUN_DIR:STEP``: checkpoint STEP, ``all_checkpoints``: every checkpoint a
run kept; a run of independent learners enters as 8 players, ``...#seatP``
for seat P's learner) and the scripted bots. Each of ``games`` game seeds gets
a lineup of 8 seats: 8 different players drawn at random when there are at
least 8, else every player takes 8 // P seats and the other seats go to
different players drawn at random. Every lineup is played 8 times, rotated one
seat further each time (duplicate evaluation, ``agents.tables``), and each of
those games is rated: OpenSkill's Plackett-Luce model from the full placements
(``agents.ratings``: a player holding several seats of a game is ranked by
their mean placement). Games run ``batch`` lineups at a time in one compiled
program. Not to be confused with ``agents.league``, the snapshot pool a league
run trains against; ``python -m experiments.rate`` is the command line.

Outputs: ``ratings.json`` (the table, the players and the settings),
``ratings.csv`` (name, ordinal, mu, sigma, games, mean placement, update) and
``ratings.png`` (ordinal = mu - 3 sigma over training updates, one line per
run, the bots as horizontal lines).
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import jax
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from agents import memory
from agents.envs import make_game
from agents.evaluation import placement_summary
from agents.policies import (
    PolicyError,
    check_same_observations,
    checkpoint_steps,
    is_baseline,
    load_policy,
    parse_spec,
    rule_differences,
    seat_policies,
)
from agents.progress import NoProgress, Progress
from agents.ratings import Ratings
from agents.run_dir import write_csv, write_json
from agents.tables import DEFAULT_BOTS, TABLE_BOTS, draw_lineups, make_table_runner


def rate_checkpoints(specs, out_dir, games: int = 16, bots=DEFAULT_BOTS, all_checkpoints: bool = False,
                     batch: int = 8, seed: int = 0, progress: Progress | None = None) -> dict:
    """Rate the policies of ``specs`` (``RUN_DIR[:STEP]``) and ``bots`` against each other (see the module
    docstring), write ``ratings.json``, ``.csv`` and ``.png`` to ``out_dir``; returns the summary with the table
    (``"ratings"``, best first) and its text (``"text"``)."""
    progress = progress or NoProgress()
    start = time.perf_counter()
    policies, names = load_players(specs, all_checkpoints, bots)
    if len(names) < 2:
        raise PolicyError(f"a rating tournament needs at least 2 players, got {names}")
    for note in rule_differences(policies):
        progress.status(f"note: {note}")
    memory.check_fits(f"batch={min(batch, games)} lineups (x 8 rotations)",
                      memory.table_bytes(make_game(policies[0].config), min(batch, games)))
    rows = draw_lineups(len(names), games, np.random.default_rng(seed))
    progress.status(f"{len(names)} players, {games} lineups x 8 rotations: compiling ...")
    progress.start(len(rows), 0, unit="lineup")
    ranks = play(policies, list(bots), rows, min(batch, games), seed,
                 on_batch=lambda lineups: progress.chunk(lineups, ""))
    progress.close()
    ratings, mean_placement, unfinished = rate(names, rows, ranks)
    update = {p.name: p.step for p in policies}
    table = [{**row, "mean_placement": mean_placement[row["name"]], "update": update.get(row["name"])}
             for row in ratings.table()]
    out_dir = Path(out_dir)
    settings = {"players": names, "games": games, "rated_games": games * 8 - unfinished,
                "unfinished_games": unfinished, "seed": seed, "bots": list(bots),
                "rules": policies[0].config.rules() if policies else None}
    write_outputs(out_dir, table, policies, settings)
    return {"out": str(out_dir), "players": len(names), "rated_games": settings["rated_games"],
            "best": table[0]["name"] if table else None, "seconds": round(time.perf_counter() - start, 1),
            "ratings": table, "text": format_table(table)}


def evaluate_checkpoint(run_dir, step: int | None, lineups: dict, games: int, seed: int = 0,
                        progress: Progress | None = None) -> dict:
    """Seat-rotated evaluation of a run's saved policy (``run_dir`` at ``step``, None: the latest good one)
    against each lineup of ``lineups`` (name -> 7 player specs: a bot, ``baseline:NAME`` or ``RUN_DIR[:STEP]``),
    ``games`` game seeds each played in 8 rotations. Returns ``{"checkpoint", "update", "games_per_rotation",
    "vs_<name>": placement_summary, ..., "seconds"}`` (per-seat placements too for independent learners).
    ``MemoryError`` (with the estimate) when ``games`` cannot fit."""
    progress = progress or NoProgress()
    candidate = load_policy(run_dir, step)
    policies = {candidate.name: candidate}
    player_of = {}  # opponent spec -> loaded policy name or bot name
    for name in sorted({n for names in lineups.values() for n in names}):
        parsed = parse_spec(name)
        if isinstance(parsed, str):
            player_of[name] = parsed
        else:
            policy = load_policy(*parsed)
            policies.setdefault(policy.name, policy)
            player_of[name] = policy.name
    policies = list(policies.values())
    check_same_observations(policies)
    for note in rule_differences(policies):
        progress.status(f"note: {note}")
    index = {p.name: i for i, p in enumerate(policies)}
    table_bots = tuple(bot for bot in TABLE_BOTS if bot in player_of.values())  # only the bots the lineups name
    index.update({bot: len(policies) + i for i, bot in enumerate(table_bots)})

    game = make_game(candidate.config)
    memory.check_fits(f"games={games} (x 8 rotations)", memory.table_bytes(game, games))
    progress.status(f"evaluating {candidate.name} against {len(lineups)} lineup(s): compiling ...")
    start = time.perf_counter()
    run = make_table_runner(game, [p.network for p in policies], games, bot_names=table_bots)
    params = tuple(p.params for p in policies)
    result = {"checkpoint": str(run_dir), "update": candidate.step, "games_per_rotation": games}
    for spec, names in lineups.items():
        lineup = [0] + [index[player_of[n]] for n in names]
        ranks = np.asarray(run(params, np.tile(lineup, (games, 1)), jax.random.key(seed)))[:, :, 0]
        result[f"vs_{spec}"] = summary = placement_summary(ranks)
        if candidate.config.independent:  # rotation r: the run's seat-r learner in seat r
            summary["per_seat_mean_placement"] = [round(float(m), 3) for m in ranks.mean(0)]
    result["seconds"] = round(time.perf_counter() - start, 2)
    return result


def placement_table(rows) -> str:
    """A human table of (opponents, placement_summary) rows."""
    width = max(len("opponents"), *(len(spec) for spec, _ in rows))
    lines = [f"{'opponents':<{width}}  mean placement (95% CI)   top-1   top-4   games"]
    for spec, s in rows:
        ci = f"+- {s['ci95']:.2f}" if s["ci95"] is not None else "(1 seed)"
        lines.append(f"{spec:<{width}}  {s['mean_placement']:5.2f} {ci:<18} {s['top1']:6.1%}  {s['top4']:6.1%}  "
                     f"{s['games']:5d}")
    return "\n".join(lines)


#: what reading one damaged checkpoint (given by step, so with no fallback) raises
_UNREADABLE = (OSError, ValueError, RuntimeError)


def load_players(specs, all_checkpoints: bool = False, bots=()):
    """(policies, names of every player: the policies', then the bots'). ``specs``: ``RUN_DIR[:STEP]`` strings;
    ``all_checkpoints``: every checkpoint a ``RUN_DIR`` without ``:STEP`` kept. A kept checkpoint that cannot be
    read is skipped with a ``RuntimeWarning``."""
    policies = {}
    for spec in specs:
        parsed = parse_spec(spec)
        if isinstance(parsed, str):
            raise PolicyError(f"{spec!r} is a bot: add bots with --bots, not as a run")
        run_dir, step = parsed
        every = all_checkpoints and step is None and not is_baseline(run_dir)
        for s in checkpoint_steps(run_dir) if every else [step]:
            try:
                policy = load_policy(run_dir, s)
            except PolicyError:
                raise
            except _UNREADABLE as err:  # with a step given, a damaged checkpoint does not fall back
                if not every:
                    raise
                warnings.warn(f"{run_dir}:{s} skipped: its checkpoint cannot be read ({err})", RuntimeWarning,
                              stacklevel=2)
                continue
            for p in seat_policies(policy):  # an independent run: one player a seat
                policies.setdefault(p.name, p)
    policies = list(policies.values())
    check_same_observations(policies)
    return policies, [p.name for p in policies] + list(bots)


def play(policies, bots, rows, batch: int, seed: int, on_batch=None):
    """ranks int[G, 8 rotations, 8 positions] of every lineup in ``rows`` (indices into policies + bots);
    ``on_batch(lineups)`` is called after each batch with the number it played."""
    run = make_table_runner(make_game(policies[0].config), [p.network for p in policies], batch, bot_names=bots)
    # player index -> participant index of the runner: the same order, policies first, then the bots
    participant = np.arange(len(policies) + len(bots))
    params = tuple(p.params for p in policies)
    key = jax.random.key(seed)
    out = []
    for start in range(0, len(rows), batch):
        chunk = rows[start:start + batch]
        padded = np.concatenate([chunk, np.repeat(chunk[-1:], batch - len(chunk), axis=0)])  # a full last batch
        ranks = np.asarray(run(params, participant[padded], jax.random.fold_in(key, start)))
        out.append(ranks[: len(chunk)])
        if on_batch is not None:
            on_batch(len(chunk))
    return np.concatenate(out)


def rate(names, rows, ranks):
    """(Ratings, mean placement per player) from every rotation of every lineup."""
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
    """``ratings.json``, ``ratings.csv`` (each written atomically) and ``ratings.png`` in ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    write_json(out_dir / "ratings.json", {**settings, "ratings": table})
    write_csv(out_dir / "ratings.csv", table)
    plot_ratings(out_dir / "ratings.png", table, policies)


def plot_ratings(path: Path, table, policies) -> None:
    """Ordinal over training updates: one line per run, the bots as horizontal lines."""
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


__all__ = ["evaluate_checkpoint", "format_table", "load_players", "placement_table", "play", "rate", "rate_checkpoints", "write_outputs"]
