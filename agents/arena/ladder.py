"""The ladder: one rating of any player against a fixed, versioned population of bots and shipped baselines.

A ladder version (``agents/arena/ladders/<version>.json``) names its members, each pinned by a sha256, and their
Plackett-Luce strengths, fitted once from a seat-rotated round robin of mixed tables (``fit_population``) and
never refitted: a new fit is a new version. ``rate_on_ladder`` seats a player with 7 members drawn at random for
each game seed, plays each lineup in its 8 seat rotations, and fits the player's one strength with the members'
held fixed (``agents.arena.plackett_luce.fit_one``). The scale is the ladder's own: ``expert`` = 1000 points and
400 points per factor of 10 in Plackett-Luce strength (the Elo convention: a player 400 points above another
places above it in 10 of 11 of their meetings, other things equal). The interval is a percentile bootstrap over
game seeds (a seed's 8 rotations resampled together). docs/evaluation.md is the protocol.

    result = rate_on_ladder("baseline:ppo_small-v3", games=64)   # result["rating"], result["ci95"]
    population = fit_population(LADDER_V1_MEMBERS, games=384, seed=9001)   # a new version's fit
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from agents.arena import plackett_luce
from agents.arena.game_fingerprint import game_fingerprint, game_source_sha256, remembered_fingerprint
from agents.arena.tables import draw_lineups
from agents.arena.tournament import load_players, play, table_game
from agents.policies import baselines
from agents.policies.load import (
    PLAYER_BOTS,
    PolicyError,
    checkpoint_steps,
    is_baseline,
    load_policy,
    parse_spec,
    rule_differences,
)
from agents.utils import memory
from agents.utils.progress import NoProgress, Progress
from jaxgame import bots as _bots
from jaxgame import constants as C
from jaxgame import search_bot

#: Where the ladder versions live (package data).
LADDERS = Path(__file__).resolve().parent / "ladders"
#: The version a rating uses unless told otherwise.
CURRENT_LADDER = "ladder-v1"
#: ladder-v1's population: every scripted bot and every baseline shipped when it was fitted.
LADDER_V1_MEMBERS = (
    "random",
    "greedy",
    "expert",
    "expert_public",
    "baseline:ppo_small-v1",
    "baseline:ppo_small-v2",
    "baseline:ppo_small-v3",
    "baseline:ppo_small_entity-v1",
    "baseline:pipeline_entity-v1",
    "baseline:ppo_large-v1",
)
#: The scale: the anchor member's points, and points per natural-log unit of strength (400 per factor of 10).
ANCHOR, ANCHOR_POINTS, POINTS_PER_UNIT = "expert", 1000.0, 400.0 / math.log(10.0)
#: Defaults of a rating: game seeds (each 8 rotations) and the evaluation seed, which no training run uses.
DEFAULT_GAMES, DEFAULT_SEED, DEFAULT_DRAWS = 64, 9002, 2000
#: The seed of ladder-v1's population fit (a rating's default seed differs, so its tables are new games).
FIT_SEED = 9001


class LadderError(ValueError):
    """A ladder version that does not exist, or whose pinned members are not the ones installed."""


def points(strength, anchor_strength: float) -> np.ndarray | float:
    """Ladder points of a strength (log units) on a population whose anchor has ``anchor_strength``."""
    return ANCHOR_POINTS + POINTS_PER_UNIT * (np.asarray(strength) - anchor_strength)


def member_pin(spec: str) -> str:
    """The sha256 that pins a member: a baseline's digest file (``NAME.sha256``, which lists the sha256 of each of
    its files), a bot's source file (``jaxgame/bots.py``; ``search``: ``jaxgame/search_bot.py``)."""
    if is_baseline(spec):
        path = baselines.DIRECTORY / f"{spec[len(baselines.PREFIX) :]}.sha256"
    elif spec == "search":
        path = Path(search_bot.__file__)
    elif spec in PLAYER_BOTS:
        path = Path(_bots.__file__)
    else:
        raise LadderError(f"a ladder member is a bot or baseline:NAME, got {spec!r}")
    if not path.is_file():
        raise LadderError(f"ladder member {spec}: {path.name} is missing")
    return hashlib.sha256(path.read_bytes()).hexdigest()


def game_pin() -> str:
    """The sha256 of the game's source (every ``jaxgame/*.py``, by name): a ladder's ratings assume its game."""
    return game_source_sha256()


def available() -> list[str]:
    """The shipped ladder versions, sorted."""
    return sorted(p.stem for p in LADDERS.glob("ladder-v*.json"))


def load_ladder(version: str = CURRENT_LADDER) -> dict:
    """A ladder version's JSON: ``members`` (spec, pin, strength, points, ci95 ...), ``scale``, ``fit``; checked:
    ``LadderError`` for an unknown version or a baseline member whose files are not the pinned ones."""
    path = LADDERS / f"{version}.json"
    if not path.is_file():
        raise LadderError(f"no ladder {version!r}; shipped: {', '.join(available()) or 'none'}")
    ladder = json.loads(path.read_text())
    for member in ladder["members"]:
        if is_baseline(member["spec"]) and member_pin(member["spec"]) != member["sha256"]:
            raise LadderError(
                f"{version}: {member['spec']} is not the policy the ladder was fitted with (its digest "
                f"file's sha256 differs from the pinned {member['sha256'][:12]}...)"
            )
    return ladder


def plays_as_fitted(ladder: dict, progress: Progress | None = None) -> bool | None:
    """Whether the game and its bots play the ladder's fingerprint games as they did when it was fitted
    (``agents.arena.game_fingerprint`` under the fit's rules: about 15-25 s, mostly compiling, the first time for a
    game source and JAX version, then remembered on disk); None for a ladder fitted without a fingerprint."""
    fitted = ladder["fit"].get("game_fingerprint")
    if fitted is None:
        return None
    if progress is not None:
        progress.status(f"checking that the game plays its fingerprint games as when {ladder['version']} was fitted")
    return remembered_fingerprint(ladder["fit"]["rules"]) == fitted


def drift_notes(ladder: dict, progress: Progress | None = None) -> list[str]:
    """Notes for what changed since the ladder was fitted and is not refused: the bots' or the game's play. When
    the game's or the bots' source differs from the fit's, the fingerprint games say whether they still play the
    same (no note then); a ladder without a fingerprint gets a note for any changed source."""
    bots_changed = any(member_pin(m["spec"]) != m["sha256"] for m in ladder["members"] if m["spec"] in PLAYER_BOTS)
    game_changed = game_pin() != ladder["fit"]["game_sha256"]
    if not (bots_changed or game_changed):
        return []
    same = plays_as_fitted(ladder, progress)
    if same is False:
        return [
            f"the game or its bots play differently from those {ladder['version']} was fitted with (its fingerprint "
            "games differ, agents.arena.game_fingerprint): ratings now are not on the ladder's scale; a new ladder "
            "version is fitted for the new game"
        ]
    if same:
        return []
    notes = []
    if bots_changed:
        notes.append(
            f"the bots' source (jaxgame/bots.py) differs from the one {ladder['version']} was fitted with: "
            "its members may play differently now"
        )
    if game_changed:
        notes.append(
            f"the game's source (jaxgame/*.py) differs from the one {ladder['version']} was fitted with: "
            "ratings hold as far as the game plays the same (a new ladder version is fitted when it does not)"
        )
    return notes


def _participants(specs, extra=None, extra_bot=None):
    """``(policies, bots, participant)``: the members' (and ``extra``'s) policies and bots (and the bot
    ``extra_bot``) as a table runner seats them (policies first, then the bots), and ``participant[spec]``, each
    spec's index there."""
    policy_specs = [s for s in specs if s not in PLAYER_BOTS]
    bot_specs = [b for b in PLAYER_BOTS if b in specs or b == extra_bot]
    policies, _ = load_players(policy_specs) if policy_specs else ([], [])
    if extra is not None:
        policies = [*policies, extra]
    participant = {spec: i for i, spec in enumerate(policy_specs)}
    participant.update({bot: len(policies) + i for i, bot in enumerate(bot_specs)})
    return policies, bot_specs, participant


def _check_table(policies, progress: Progress, batch: int) -> list[str]:
    """The notes on policies whose rules differ from the table's (each told to ``progress``); ``MemoryError`` when
    ``batch`` lineups cannot fit."""
    notes = rule_differences(policies)
    for note in notes:
        progress.status(f"note: {note}")
    memory.check_fits(f"batch={batch} lineups (x 8 rotations)", memory.table_bytes(table_game(policies), batch))
    return notes


def _one_place(placed) -> str | None:
    """``"last"`` or ``"first"`` when every one of ``placed`` (int placements, at least one) is that place, else
    None: then no finite Plackett-Luce strength fits, and the prior alone sets it."""
    if (placed == C.NUM_PLAYERS).all():
        return "last"
    if (placed == 1).all():
        return "first"
    return None


def _orders(competitors, ranks):
    """(orders int[G*8, 8], seed int[G*8], finished bool[G*8]) from ``competitors`` int[G, 8] (each lineup
    position's competitor) and ``ranks`` int[G, 8 rotations, 8 positions] of ``tournament.play``."""
    games = ranks.shape[0]
    who = np.repeat(competitors[:, None, :], C.NUM_PLAYERS, axis=1).reshape(-1, C.NUM_PLAYERS)
    flat = ranks.reshape(-1, C.NUM_PLAYERS)
    finished = (flat >= 1).all(axis=1)
    seed = np.repeat(np.arange(games), C.NUM_PLAYERS)
    return plackett_luce.orders_from_ranks(who, flat), seed, finished


def fit_population(
    members=LADDER_V1_MEMBERS,
    games: int = 384,
    seed: int = FIT_SEED,
    batch: int = 8,
    draws: int = 200,
    prior_sd: float = plackett_luce.PRIOR_SD,
    progress: Progress | None = None,
    version: str = CURRENT_LADDER,
) -> dict:
    """A new ladder version's population fit: ``games`` lineups of 8 different members drawn at random
    (``tables.draw_lineups``, rng ``seed``), each played in its 8 seat rotations from game seed ``seed``, and the
    members' joint MAP Plackett-Luce strengths with ``draws`` bootstrap resamples of the lineups for 95%
    intervals. Returns the version's JSON (``load_ladder``'s form) and, under ``"evidence"``, the games
    (``lineups`` int[G, 8] member indices, ``ranks`` int[G, 8, 8])."""
    progress = progress or NoProgress()
    start = time.perf_counter()
    members = list(dict.fromkeys(members))
    if ANCHOR not in members or len(members) < C.NUM_PLAYERS:
        raise LadderError(f"a ladder needs at least {C.NUM_PLAYERS} members including {ANCHOR!r}, got {members}")
    for spec in members:
        parse_spec(spec)
        member_pin(spec)
    policies, bots, participant = _participants(members)
    _check_table(policies, progress, min(batch, games))
    lineups = draw_lineups(len(members), games, np.random.default_rng(seed))
    index = np.array([participant[m] for m in members])
    progress.status(f"{version}: {len(members)} members, {games} lineups x 8 rotations: compiling ...")
    progress.start(games, 0, unit="lineup")
    ranks = play(policies, bots, index[lineups], min(batch, games), seed, on_batch=lambda n: progress.chunk(n, ""))
    progress.close()
    population = population_from_games(members, lineups, ranks, seed, draws, prior_sd, version)
    population["fit"]["rules"] = policies[0].config.rules() if policies else None
    population["fit"]["game_fingerprint"] = game_fingerprint(population["fit"]["rules"])
    population["fit"]["seconds"] = round(time.perf_counter() - start, 1)
    return population


def population_from_games(
    members,
    lineups,
    ranks,
    seed: int,
    draws: int = 200,
    prior_sd: float = plackett_luce.PRIOR_SD,
    version: str = CURRENT_LADDER,
) -> dict:
    """``fit_population``'s result from its games: ``lineups`` int[G, 8] (member indices), ``ranks`` int[G, 8, 8]
    (``tournament.play``'s), the bootstrap's rng ``seed``. A member that placed last (or first) in every game
    has no finite maximum-likelihood strength: its points are the prior's bound, and its row says so."""
    members = list(members)
    lineups, ranks = np.asarray(lineups), np.asarray(ranks)
    orders, lineup_of, finished = _orders(lineups, ranks)
    strengths = plackett_luce.fit(orders[finished], len(members), prior_sd=prior_sd)
    boot = plackett_luce.bootstrap(
        orders[finished],
        len(members),
        lineup_of[finished],
        draws,
        np.random.default_rng(seed),
        prior_sd,
        init=strengths,
    )
    anchor = strengths[members.index(ANCHOR)]
    boot_points = points(boot, boot[:, [members.index(ANCHOR)]])
    flat = ranks.reshape(-1, C.NUM_PLAYERS)[finished]
    who = np.repeat(lineups, C.NUM_PLAYERS, axis=0)[finished]
    rows = []
    for i, spec in enumerate(members):
        low, high = np.percentile(boot_points[:, i], [2.5, 97.5])
        placed = flat[who == i]
        row = {
            "spec": spec,
            "sha256": member_pin(spec),
            "strength": float(strengths[i]),
            "points": round(float(points(strengths[i], anchor)), 1),
            "ci95": [round(float(low), 1), round(float(high), 1)],
            "mean_placement": round(float(placed.mean()), 3),
            "games": int(placed.size),
        }
        place = _one_place(placed) if placed.size else None
        if place:
            row["note"] = (
                f"placed {place} in all {placed.size} of its games: its points are set by the prior (sd "
                f"{prior_sd:g}), a bound, not a measurement"
            )
        rows.append(row)
    return {
        "version": version,
        "members": rows,
        "scale": {
            "anchor": ANCHOR,
            "anchor_points": ANCHOR_POINTS,
            "points_per_unit": POINTS_PER_UNIT,
            "prior_sd": prior_sd,
        },
        "fit": {
            "lineups": len(lineups),
            "rotations": C.NUM_PLAYERS,
            "rated_games": int(finished.sum()),
            "unfinished_games": int((~finished).sum()),
            "seed": seed,
            "bootstrap_draws": draws,
            "game_sha256": game_pin(),
            "log_likelihood_per_game": round(
                plackett_luce.log_likelihood(strengths, orders[finished]) / int(finished.sum()), 4
            ),
        },
        "evidence": {"members": members, "lineups": lineups.tolist(), "ranks": ranks.tolist()},
    }


def _candidate(player, members):
    """``(name, bot or None, policy or None)`` of the player rated: a spec (bot, baseline, run) or a loaded policy
    (anything with ``name``, ``network``, ``params`` and ``config``, e.g. ``agents.load_policy``'s)."""
    if not isinstance(player, str):
        for attr in ("name", "network", "params", "config"):
            if not hasattr(player, attr):
                raise PolicyError(f"a player object needs .{attr} (like agents.load_policy's result)")
        return str(player.name), None, player
    parsed = parse_spec(player)
    if isinstance(parsed, str):  # a member bot, or one that joins the members' tables as the player rated
        return parsed, parsed, None
    policy = load_policy(*parsed)
    return player, None, policy


def rate_on_ladder(
    player,
    games: int = DEFAULT_GAMES,
    seed: int = DEFAULT_SEED,
    version: str = CURRENT_LADDER,
    batch: int = 8,
    draws: int = DEFAULT_DRAWS,
    progress: Progress | None = None,
    deterministic: bool = False,
    compiler_options: Mapping | None = None,
) -> dict:
    """The ladder rating of ``player`` (a bot, ``baseline:NAME``, ``RUN_DIR[:STEP]`` or a loaded policy object):
    for each of ``games`` game seeds, the player and 7 members drawn at random (rng ``seed``) sit at one table,
    played in its 8 seat rotations (game seed ``seed``); the player's strength is fitted with the members' fixed
    (MAP, the ladder's prior) and bootstrapped ``draws`` times over game seeds.

    Returns ``{"player", "ladder", "rating", "ci95": [low, high], "half_width", "strength", "mean_placement",
    "vs_members": {spec: {"games", "above_rate", "expected_above_rate", "placement", "member_placement"}},
    "games", "rated_games", "unfinished_games", "seed", "notes", "seconds"}``: points on the ladder's scale
    (``expert`` = 1000), ``above_rate`` how often the player placed above that member where they met (and what
    the fitted strengths expect), placements 1..8. Deterministic for a seed. ``PolicyError`` for a player that
    cannot sit at the ladder's tables, ``LadderError`` for a ladder whose members are not the pinned ones.
    ``deterministic``: the rated policy plays its most likely legal action (a behaviour clone is meant to be played
    so); the members always sample, as they did in the population's fit (``"deterministic"`` in the result).
    ``compiler_options``: XLA options the tables' program compiles with (``tables.make_table_runner``; e.g.
    ``{"xla_backend_optimization_level": 2}`` under ``XLA_FLAGS`` that lower it); None (the default): the
    process's. The policies' float results (and so, rarely, a sampled action) may differ in the last bits between
    options; a rating is deterministic for a seed and the same options."""
    progress = progress or NoProgress()
    if isinstance(games, bool) or not isinstance(games, int) or games < 2:
        raise ValueError(f"games must be an int >= 2 (an interval needs a spread), got {games!r}")
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 100:
        raise ValueError(f"draws must be an int >= 100 (bootstrap resamples for the interval), got {draws!r}")
    start = time.perf_counter()
    ladder = load_ladder(version)
    members = [m["spec"] for m in ladder["members"]]
    strengths = np.array([m["strength"] for m in ladder["members"]])
    anchor = strengths[members.index(ladder["scale"]["anchor"])]
    name, bot, policy = _candidate(player, members)
    if deterministic and policy is None:
        raise PolicyError(f"deterministic play is for a policy; {name} is a bot")
    if policy is not None and getattr(getattr(policy.config, "net", None), "independent", False):
        raise PolicyError(
            f"{name} is a run of independent learners (one policy per seat); the ladder rates one "
            "policy: rate a shared-parameter run"
        )
    notes = drift_notes(ladder, progress)
    policies, bots, participant = _participants(members, extra=policy, extra_bot=bot)
    candidate_index = participant[bot] if bot is not None else len(policies) - 1
    batch = min(batch, games)
    notes += _check_table(policies, progress, batch)
    rng = np.random.default_rng(seed)
    drawn = np.stack([rng.choice(len(members), C.NUM_PLAYERS - 1, replace=False) for _ in range(games)])
    rows = np.concatenate(
        [np.full((games, 1), candidate_index), np.array([participant[m] for m in members])[drawn]], axis=1
    )
    progress.status(
        f"{name} on {version}: {games} game seeds x 8 rotations, 7 of {len(members)} members a table: compiling ..."
    )
    progress.start(games, 0, unit="lineup")
    greedy = tuple(deterministic and p is policy for p in policies)  # the candidate alone, when asked
    ranks = play(
        policies,
        bots,
        rows,
        batch,
        seed,
        on_batch=lambda n: progress.chunk(n, ""),
        greedy_policy=greedy,
        compiler_options=compiler_options,
    )
    progress.close()
    cand = len(members)  # the candidate's competitor index in the fit, past the members'
    competitors = np.concatenate([np.full((games, 1), cand), drawn], axis=1)
    orders, seed_of, finished = _orders(competitors, ranks)
    if not finished.any():
        raise RuntimeError("no game ended within the game's step limit: nothing to rate")
    strength, replicates = plackett_luce.fit_one(
        orders[finished],
        strengths,
        cand,
        seed_of[finished],
        draws,
        np.random.default_rng(seed),
        ladder["scale"]["prior_sd"],
    )
    flat = ranks.reshape(-1, C.NUM_PLAYERS)[finished]
    place = _one_place(flat[:, 0])
    if place:
        notes.append(
            f"{name} placed {place} in all {len(flat)} games: no finite strength fits that, so its rating "
            f"is set by the prior and moves {'down' if place == 'last' else 'up'} with more games (a bound, "
            "not a measurement)"
        )
    rating = float(points(strength, anchor))
    low, high = (float(v) for v in np.percentile(points(replicates, anchor), [2.5, 97.5]))
    who = np.repeat(competitors, C.NUM_PLAYERS, axis=0)[finished]
    vs = {}
    for i, spec in enumerate(members):
        met = (who == i).any(axis=1)
        if not met.any():
            continue
        mine, theirs = flat[met, 0], flat[met][who[met] == i]
        expected = 1.0 / (1.0 + math.exp(strengths[i] - strength))
        vs[spec] = {
            "games": int(met.sum()),
            "above_rate": round(float((mine < theirs).mean()), 3),
            "expected_above_rate": round(expected, 3),
            "placement": round(float(mine.mean()), 3),
            "member_placement": round(float(theirs.mean()), 3),
        }
    return {
        "player": name,
        "ladder": version,
        "rating": round(rating, 1),
        "ci95": [round(low, 1), round(high, 1)],
        "half_width": round((high - low) / 2, 1),
        "strength": strength,
        "mean_placement": round(float(flat[:, 0].mean()), 3),
        "vs_members": vs,
        "games": games,
        "rated_games": int(finished.sum()),
        "unfinished_games": int((~finished).sum()),
        "seed": seed,
        "bootstrap_draws": draws,
        "deterministic": bool(deterministic),
        "notes": notes,
        "seconds": round(time.perf_counter() - start, 1),
    }


def rate_checkpoints_on_ladder(
    run_dir,
    games: int = DEFAULT_GAMES,
    seed: int = DEFAULT_SEED,
    version: str = CURRENT_LADDER,
    batch: int = 8,
    draws: int = DEFAULT_DRAWS,
    progress: Progress | None = None,
    deterministic: bool = False,
    rate=None,
) -> dict:
    """A learning curve on the ladder: ``rate_on_ladder`` of every checkpoint a run kept (``RUN_DIR:STEP``, oldest
    first; the same games for each, so the curve's steps differ by the policy alone). Returns ``{"run_dir",
    "ladder", "games", "seed", "deterministic", "curve": [{"update", "rating", "ci95", "half_width",
    "mean_placement"}, ...], "seconds"}``. ``rate``: ``rate_on_ladder`` or a stand-in of its signature (tests).
    ``PolicyError`` when ``run_dir`` is not a training run."""
    progress = progress or NoProgress()
    rate = rate or rate_on_ladder
    start = time.perf_counter()
    steps = checkpoint_steps(run_dir)
    if not steps:
        raise PolicyError(f"{run_dir} has no checkpoints to rate")
    curve = []
    for i, step in enumerate(steps):
        progress.status(f"checkpoint {step} ({i + 1}/{len(steps)})")
        result = rate(
            f"{run_dir}:{step}",
            games=games,
            seed=seed,
            version=version,
            batch=batch,
            draws=draws,
            progress=progress,
            deterministic=deterministic,
        )
        curve.append({"update": step, **{k: result[k] for k in ("rating", "ci95", "half_width", "mean_placement")}})
    return {
        "run_dir": str(run_dir),
        "ladder": version,
        "games": games,
        "seed": seed,
        "deterministic": bool(deterministic),
        "curve": curve,
        "seconds": round(time.perf_counter() - start, 1),
    }


def plot_ladder_curve(path, result: dict, population: dict | None = None) -> None:
    """``rate_checkpoints_on_ladder``'s curve as a PNG: ladder points over training updates with 95% intervals,
    and the population's members (``population``, default the result's ladder version) as dashed lines."""
    population = population or load_ladder(result["ladder"])
    fig = Figure(figsize=(7, 4.5), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    updates = [p["update"] for p in result["curve"]]
    ratings = [p["rating"] for p in result["curve"]]
    errors = [
        [p["rating"] - p["ci95"][0] for p in result["curve"]],
        [p["ci95"][1] - p["rating"] for p in result["curve"]],
    ]
    ax.errorbar(updates, ratings, yerr=errors, marker="o", capsize=3, label=str(result["run_dir"]))
    low = min([*ratings, *(p["ci95"][0] for p in result["curve"])])
    for member in population["members"]:
        if member["points"] < low - 300:  # far below the curve (random): it would flatten the plot
            continue
        ax.axhline(member["points"], linestyle="--", linewidth=0.8, color="grey")
        ax.annotate(
            member["spec"].removeprefix("baseline:"),
            (0, member["points"]),
            xycoords=("axes fraction", "data"),
            fontsize=7,
            va="bottom",
        )
    ax.set_xlabel("training update")
    ax.set_ylabel(f"{result['ladder']} points (expert = 1000)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)


def ladder_table(result: dict) -> str:
    """A human summary of ``rate_on_ladder``'s result: the rating line, then one row per member met."""
    lines = [
        f"{result['player']} on {result['ladder']}: {result['rating']:.0f} points (95% interval "
        f"{result['ci95'][0]:.0f} .. {result['ci95'][1]:.0f}, +- {result['half_width']:.0f}; expert = 1000), "
        f"mean placement {result['mean_placement']:.2f} over {result['rated_games']} games"
    ]
    width = max(len("member"), *(len(s) for s in result["vs_members"]))
    lines.append(f"{'member':<{width}}  games  placed above  (model)  its place  member's place")
    for spec, row in result["vs_members"].items():
        lines.append(
            f"{spec:<{width}}  {row['games']:5d}  {row['above_rate']:12.1%}  {row['expected_above_rate']:7.1%}"
            f"  {row['placement']:9.2f}  {row['member_placement']:14.2f}"
        )
    lines += [f"note: {n}" for n in result["notes"]]
    return "\n".join(lines)


def population_table(ladder: dict) -> str:
    """A human table of a ladder version's members, best first."""
    rows = sorted(ladder["members"], key=lambda m: -m["points"])
    width = max(len("member"), *(len(m["spec"]) for m in rows))
    lines = [
        f"{ladder['version']}: {ladder['fit']['rated_games']} rated games of {ladder['fit']['lineups']} lineups "
        f"(seed {ladder['fit']['seed']}); {ladder['scale']['anchor']} = {ladder['scale']['anchor_points']:.0f}",
        f"{'member':<{width}}  points  95% interval    mean placement",
    ]
    for m in rows:
        lines.append(
            f"{m['spec']:<{width}}  {m['points']:6.0f}  {m['ci95'][0]:6.0f} .. {m['ci95'][1]:<6.0f}"
            f"  {m['mean_placement']:14.2f}"
        )
    return "\n".join(lines)


__all__ = [
    "ANCHOR",
    "CURRENT_LADDER",
    "LADDER_V1_MEMBERS",
    "LadderError",
    "available",
    "drift_notes",
    "plays_as_fitted",
    "fit_population",
    "game_pin",
    "ladder_table",
    "load_ladder",
    "member_pin",
    "plot_ladder_curve",
    "points",
    "population_from_games",
    "population_table",
    "rate_checkpoints_on_ladder",
    "rate_on_ladder",
]
