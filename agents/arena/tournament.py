"""Saved policies at seat-rotated tables: a checkpoint's placements against lineups of bots and other checkpoints
(``evaluate_checkpoint``), two players compared with significance tests (``compare_players``), and a rating
tournament of checkpoints and bots (``rate_checkpoints``).

    result = evaluate_checkpoint("runs/a", None, {"greedy": ["greedy"] * 7}, games=16)  # vs 7 greedy bots
    result = compare_players("runs/a", "runs/b", {"greedy": ["greedy"] * 7}, games=64)   # p-values, per setting
    result = rate_checkpoints(["runs/a", "runs/b:120"], "runs/ratings-ab", games=16)   # writes ratings.*

The tournament:

The players are the runs' policies (``RUN_DIR``: the latest good checkpoint,
``RUN_DIR:STEP``: checkpoint STEP, ``all_checkpoints``: every checkpoint a
run kept; a run of independent learners enters as 8 players, ``...#seatP``
for seat P's learner) and the scripted bots. Each of ``games`` game seeds gets
a lineup of 8 seats: 8 different players drawn at random when there are at
least 8, else every player takes 8 // P seats and the other seats go to
different players drawn at random. Every lineup is played 8 times, rotated one
seat further each time (duplicate evaluation, ``agents.arena.tables``), and each of
those games is rated: OpenSkill's Plackett-Luce model from the full placements
(``agents.arena.ratings``: a player holding several seats of a game is ranked by
their mean placement). Games run ``batch`` lineups at a time in one compiled
program. Not to be confused with ``agents.league.pool``, the snapshot pool a league
run trains against; ``python -m experiments.rate`` is the command line.

Outputs: ``ratings.json`` (the table, the players and the settings),
``ratings.csv`` (name, ordinal, mu, sigma, games, mean placement, update) and
``ratings.png`` (ordinal = mu - 3 sigma over training updates, one line per
run, the bots as horizontal lines).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping
from pathlib import Path

import jax
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import jaxgame
from agents.arena import significance
from agents.arena.evaluation import placement_summary
from agents.arena.ratings import Ratings
from agents.arena.tables import DEFAULT_BOTS, draw_lineups, make_table_runner
from agents.envs.make import make_game
from agents.policies.load import (
    PLAYER_BOTS,
    PolicyError,
    checkpoint_steps,
    is_baseline,
    load_policy,
    parse_spec,
    rule_differences,
    seat_policies,
    table_networks,
    table_observations,
)
from agents.policies.specs import lineup_of  # noqa: F401  (tournament.lineup_of: a lineup spec's 7 opponents)
from agents.storage.outputs import check_writable
from agents.storage.run_dir import write_csv, write_json
from agents.utils import compile_cache, memory
from agents.utils.progress import NoProgress, Progress
from jaxgame import constants as C


def rate_checkpoints(
    specs,
    out_dir,
    games: int = 16,
    bots=DEFAULT_BOTS,
    all_checkpoints: bool = False,
    batch: int = 8,
    seed: int = 0,
    progress: Progress | None = None,
) -> dict:
    """Rate the policies of ``specs`` (``RUN_DIR[:STEP]``) and ``bots`` against each other (see the module
    docstring), write ``ratings.json``, ``.csv`` and ``.png`` to ``out_dir``; returns the summary with the table
    (``"ratings"``, best first) and its text (``"text"``)."""
    progress = progress or NoProgress()
    start = time.perf_counter()
    for spec in specs:  # every player named and the output writable before anything is loaded or played
        parse_spec(spec)
    check_writable(out_dir, "dir")
    policies, names = load_players(specs, all_checkpoints, bots)
    if len(names) < 2:
        raise PolicyError(f"a rating tournament needs at least 2 players, got {names}")
    for note in rule_differences(policies):
        progress.status(f"note: {note}")
    memory.check_fits(
        f"batch={min(batch, games)} lineups (x 8 rotations)",
        memory.table_bytes(make_game(policies[0].config), min(batch, games)),
    )
    rows = draw_lineups(len(names), games, np.random.default_rng(seed))
    progress.status(f"{len(names)} players, {games} lineups x 8 rotations: compiling ...")
    progress.start(len(rows), 0, unit="lineup")
    ranks = play(
        policies, list(bots), rows, min(batch, games), seed, on_batch=lambda lineups: progress.chunk(lineups, "")
    )
    progress.close()
    ratings, mean_placement, unfinished = rate(names, rows, ranks)
    update = {p.name: p.step for p in policies}
    table = [
        {**row, "mean_placement": mean_placement[row["name"]], "update": update.get(row["name"])}
        for row in ratings.table()
    ]
    out_dir = Path(out_dir)
    settings = {
        "players": names,
        "games": games,
        "rated_games": games * 8 - unfinished,
        "unfinished_games": unfinished,
        "seed": seed,
        "bots": list(bots),
        "rules": policies[0].config.rules() if policies else None,
    }
    write_outputs(out_dir, table, policies, settings)
    return {
        "out": str(out_dir),
        "players": len(names),
        "rated_games": settings["rated_games"],
        "best": table[0]["name"] if table else None,
        "seconds": round(time.perf_counter() - start, 1),
        "ratings": table,
        "text": format_table(table),
    }


def evaluate_checkpoint(
    run_dir,
    step: int | None,
    lineups: dict,
    games: int,
    seed: int = 0,
    progress: Progress | None = None,
    greedy_policy: bool = False,
) -> dict:
    """Seat-rotated evaluation of a run's saved policy (``run_dir`` at ``step``, None: the latest good one)
    against each lineup of ``lineups`` (name -> 7 player specs: a bot, ``baseline:NAME`` or ``RUN_DIR[:STEP]``),
    ``games`` game seeds each played in 8 rotations. Returns ``{"checkpoint", "update", "games_per_rotation",
    "vs_<name>": placement_summary, ..., "seconds"}`` (per-seat placements too for independent learners).
    ``MemoryError`` (with the estimate) when ``games`` cannot fit. ``greedy_policy``: the policies play their most
    likely legal action instead of a sample (``"greedy_policy"`` in the result says which)."""
    progress = progress or NoProgress()
    candidate = load_policy(run_dir, step)
    policies, player_of = resolve_players(sorted({n for names in lineups.values() for n in names}), [candidate])
    game = table_game(policies)  # the candidate's, given first
    for note in rule_differences(policies):
        progress.status(f"note: {note}")
    index, table_bots = participant_index(policies, player_of)

    memory.check_fits(f"games={games} (x 8 rotations)", memory.table_bytes(game, games))
    progress.status(f"evaluating {candidate.name} against {len(lineups)} lineup(s): compiling ...")
    start = time.perf_counter()
    run = make_table_runner(game, table_networks(policies, game), games, greedy_policy, bot_names=table_bots)
    params = tuple(p.params for p in policies)
    result = {
        "checkpoint": str(run_dir),
        "update": candidate.step,
        "games_per_rotation": games,
        "greedy_policy": greedy_policy,
    }
    for spec, names in lineups.items():
        lineup = [0] + [index[player_of[n]] for n in names]
        ranks = np.asarray(run(params, np.tile(lineup, (games, 1)), jax.random.key(seed)))[:, :, 0]
        result[f"vs_{spec}"] = summary = placement_summary(ranks)
        if candidate.config.net.independent:  # rotation r: the run's seat-r learner in seat r
            summary["per_seat_mean_placement"] = [round(float(m), 3) for m in ranks.mean(0)]
    result["seconds"] = round(time.perf_counter() - start, 2)
    return result


def evaluate(
    player: str,
    vs=("random", "greedy"),
    games: int = 32,
    seed: int = 0,
    deterministic: bool = False,
    progress: Progress | None = None,
) -> dict:
    """Seat-rotated evaluation of one saved policy against lineups of opponents: ``games`` game seeds, each played
    8 times with the policy rotated over the seats (``evaluate_checkpoint``'s result).

    Args:
        player: ``RUN_DIR[:STEP]`` (a run's checkpoint STEP, default its latest good one) or ``baseline:NAME``.
        vs: lineups, each one player for all 7 other seats or 7 comma-separated players (a bot name,
            ``baseline:NAME`` or ``RUN_DIR[:STEP]``).
        games: game seeds per lineup (>= 1); ``games * 8`` games are played per lineup.
        deterministic: the policies play their most likely legal action instead of sampling.

    Example::

        result = agents.evaluate("runs/nb", vs=["greedy", "baseline:ppo_small-v1"], games=32, seed=123)
        result["vs_greedy"]["mean_placement"]        # 1 (best) .. 8
    """
    compile_cache.use_default_cache()  # the next evaluation of the same tables loads them (agents.utils.compile_cache)
    if isinstance(vs, str):
        vs = [vs]
    if isinstance(games, bool) or not isinstance(games, int) or games < 1:
        raise ValueError(f"games must be an int >= 1, got {games!r}")
    spec = parse_spec(str(player))
    if isinstance(spec, str):
        raise PolicyError(f"player must be RUN_DIR[:STEP] or baseline:NAME, got the bot {player!r}")
    run_dir, step = spec
    return evaluate_checkpoint(
        run_dir, step, {v: lineup_of(v) for v in vs}, games, seed, progress, greedy_policy=deterministic
    )


def table_game(policies, rules: dict | None = None, obs: str = "vector") -> jaxgame.AutoChessEnv:
    """The game players sit at: the first policy's rules (policies play the rules they trained with:
    ``PolicyError`` when ``rules`` are given) and the policies' observations (``table_observations``: ``"both"``
    for vector and pixel policies together, whose networks then read their own part, ``table_networks``;
    ``PolicyError`` for a mix that cannot sit together) or, with bots alone, the game of ``rules`` (``GameConfig``
    fields) and ``obs``."""
    if policies:
        if rules:
            raise PolicyError("rules apply to games of bots only; a policy plays with the rules it trained with")
        return make_game(policies[0].config, table_observations(policies))
    return jaxgame.make("autochess", obs=obs, **(rules or {}))


def participant_index(policies, player_of: dict, num_seated: int | None = None) -> tuple[dict, tuple[str, ...]]:
    """``(index, bots)`` for a table runner (``agents.arena.tables``): ``bots`` are the bots ``player_of`` (spec ->
    policy
    or bot name, ``resolve_players``) names, in ``PLAYER_BOTS`` order, and ``index`` maps each policy's name to its
    place in ``policies`` and each bot to its participant index, after the ``num_seated`` seated policies (default
    ``len(policies)``)."""
    bots = tuple(bot for bot in PLAYER_BOTS if bot in player_of.values())
    first_bot = len(policies) if num_seated is None else num_seated
    index = {p.name: i for i, p in enumerate(policies)}
    index.update({bot: first_bot + i for i, bot in enumerate(bots)})
    return index, bots


def resolve_players(specs, policies=()):
    """``(policies, player_of)``: ``policies`` (those given first, then each one ``specs`` loads, once per name) and
    ``player_of``: each spec -> its loaded policy's name or its bot's name."""
    loaded = {p.name: p for p in policies}
    player_of = {}
    for name in specs:
        parsed = parse_spec(name)
        if isinstance(parsed, str):
            player_of[name] = parsed
        else:
            policy = load_policy(*parsed)
            loaded.setdefault(policy.name, policy)
            player_of[name] = policy.name
    return list(loaded.values()), player_of


#: Head-to-head tables of ``compare_players``: which lineup positions A holds (the others are B's).
HEAD_TO_HEAD = {"1v7": (0,), "7v1": (0, 1, 2, 3, 4, 5, 6), "4v4": (0, 2, 4, 6)}


def compare_players(
    spec_a: str,
    spec_b: str,
    lineups: dict,
    games: int,
    seed: int = 0,
    head_to_head: bool = True,
    rules: dict | None = None,
    points=significance.DEFAULT_RANK_POINTS,
    difference: float = significance.DEFAULT_DIFFERENCE,
    progress: Progress | None = None,
) -> dict:
    """Is player A better than player B? Seat-rotated games, tested by game seed (``agents.arena.significance``).

    Players (``spec_a``, ``spec_b`` and the lineups' names): a bot, ``baseline:NAME`` or ``RUN_DIR[:STEP]``.
    ``lineups``: name -> 7 players: A plays ``games`` game seeds against them (8 rotations each), then B the
    same seeds against the same lineup (duplicate games: paired by seed). ``head_to_head``: also A and B at
    one table (``HEAD_TO_HEAD``: 1 A and 7 B, 7 A and 1 B, 4 and 4), each seed's A seats against its B seats.
    ``rules``: the game's rules when every player is a bot (policies play the rules they trained with).
    The same policy as A and B is seated as two participants with the same parameters (a player against itself:
    the head-to-head tables then test a true null); the same bot cannot be (no head-to-head tables, with a note).
    ``difference``: the difference of mean placement to report the seeds needed for (power 0.8, level 0.05).
    Returns ``{"a", "b", "games_per_rotation", "seed", "settings": {name: {"placement": compare(...) +
    "games_needed" + "p_holm", "points": {"mean_a", "mean_b", "difference", "p_value", "p_holm"}, "per_seed_a",
    "per_seed_b" (the mean placements tested, float[games])}}, "verdict" (``comparison_verdict``), "rank_points",
    "difference", "seconds"}``; setting names are ``"vs NAME"`` and ``HEAD_TO_HEAD``'s; placements are 1..8 (lower
    is better), points higher is better. ``p_holm`` is Holm's adjusted p-value over the settings (``add_holm``):
    a claim over several settings ("better in every setting") reads it, not ``p_value``. ``ValueError`` for
    fewer than 2 games or a bad points table, ``PolicyError`` for players that cannot play, ``MemoryError``
    (with the estimate) when ``games`` cannot fit.
    """
    progress = progress or NoProgress()
    if not isinstance(games, int) or games < 2:
        raise ValueError(f"a comparison needs games >= 2 game seeds (a test needs a spread), got {games!r}")
    points = significance.check_rank_points(points)
    specs = [spec_a, spec_b] + [n for names in lineups.values() for n in names]
    policies, player_of = resolve_players(dict.fromkeys(specs))
    game = table_game(policies, rules)
    for note in rule_differences(policies):
        progress.status(f"note: {note}")
    seated = list(policies)
    same_policy = player_of[spec_a] == player_of[spec_b] and player_of[spec_a] not in PLAYER_BOTS
    if same_policy:  # B is a second participant with A's parameters, so that at one table its seats are told
        seated.append(next(p for p in policies if p.name == player_of[spec_a]))  # from A's: the null, tested
    index, table_bots = participant_index(policies, player_of, len(seated))
    a = index[player_of[spec_a]]
    b = len(seated) - 1 if same_policy else index[player_of[spec_b]]
    if head_to_head and a == b:
        progress.status(f"note: A and B are the same bot ({spec_a}): no head-to-head tables (one bot per table)")
        head_to_head = False

    memory.check_fits(f"games={games} (x 8 rotations)", memory.table_bytes(game, games))
    progress.status(f"comparing {spec_a} with {spec_b}: compiling ...")
    start = time.perf_counter()
    run = make_table_runner(game, table_networks(seated, game), games, bot_names=table_bots)
    params = tuple(p.params for p in seated)
    key = jax.random.key(seed)

    def play_lineup(lineup):  # int[games, 8 rotations, 8 positions]
        return np.asarray(run(params, np.tile(lineup, (games, 1)), key))

    lineups = {name: [index[player_of[n]] for n in names] for name, names in lineups.items()}
    settings = compare_tables(play_lineup, a, b, lineups, head_to_head, points, difference)
    return {
        "a": spec_a,
        "b": spec_b,
        "games_per_rotation": games,
        "seed": seed,
        "settings": settings,
        "verdict": comparison_verdict(settings),
        "rank_points": list(points),
        "difference": difference,
        "seconds": round(time.perf_counter() - start, 2),
    }


def compare_over_seeds(
    pairs,
    lineups: dict,
    games: int,
    seed: int = 0,
    head_to_head: bool = True,
    rules: dict | None = None,
    points=significance.DEFAULT_RANK_POINTS,
    difference: float = significance.DEFAULT_DIFFERENCE,
    progress: Progress | None = None,
    compare=None,
) -> dict:
    """Is a training recipe A better than B over training seeds? ``pairs``: at least 2 ``(spec_a, spec_b)``, one
    pair per training seed (A's and B's runs of that seed); each pair is compared by ``compare_players`` on the
    same game seeds, and each setting's per-pair mean placements (and points) are then tested with a paired
    t-test over the pairs (``significance.compare``: one result per training seed, so the interval and p-value are
    over training seeds, not game seeds), Holm-adjusted over the settings (``add_holm``).

    Returns ``compare_players``'s keys for the whole, with ``"a"`` and ``"b"`` the comma-joined specs,
    ``"pairs"`` (each pair's ``compare_players`` result) and per setting ``"per_pair_a"``, ``"per_pair_b"``
    (float[P]: the mean placements tested) in place of ``per_seed_*``; ``games_needed`` is then the number of
    training-seed pairs a test of ``difference`` needs. ``compare``: ``compare_players`` or a stand-in of its
    signature (tests). ``ValueError`` for fewer than 2 pairs."""
    pairs = [tuple(p) for p in pairs]
    if len(pairs) < 2 or any(len(p) != 2 for p in pairs):
        raise ValueError(f"a comparison over training seeds needs at least 2 (A, B) pairs, got {pairs!r}")
    progress = progress or NoProgress()
    compare = compare or compare_players
    start = time.perf_counter()
    results = []
    for i, (spec_a, spec_b) in enumerate(pairs):
        progress.status(f"pair {i + 1}/{len(pairs)}")
        results.append(
            compare(
                spec_a,
                spec_b,
                lineups,
                games,
                seed,
                head_to_head=head_to_head,
                rules=rules,
                points=points,
                difference=difference,
                progress=progress,
            )
        )
    names = list(results[0]["settings"])
    if any(list(r["settings"]) != names for r in results):
        raise ValueError("the pairs' comparisons tested different settings (A and B the same bot in one pair?)")
    settings = {}
    for name in names:
        per = [r["settings"][name] for r in results]
        per_pair_a = [r["placement"]["mean_a"] for r in per]
        per_pair_b = [r["placement"]["mean_b"] for r in per]
        settings[name] = {
            **paired_setting(
                per_pair_a,
                per_pair_b,
                [r["points"]["mean_a"] for r in per],
                [r["points"]["mean_b"] for r in per],
                difference,
            ),
            "per_pair_a": per_pair_a,
            "per_pair_b": per_pair_b,
        }
    add_holm(settings)
    return {
        "a": ",".join(a for a, _ in pairs),
        "b": ",".join(b for _, b in pairs),
        "pairs": results,
        "games_per_rotation": games,
        "seed": seed,
        "settings": settings,
        "verdict": comparison_verdict(settings),
        "rank_points": list(results[0]["rank_points"]),
        "difference": difference,
        "seconds": round(time.perf_counter() - start, 2),
    }


def compare_tables(
    play,
    a: int,
    b: int,
    lineups: dict,
    head_to_head: bool = True,
    points=significance.DEFAULT_RANK_POINTS,
    difference: float = significance.DEFAULT_DIFFERENCE,
):
    """The settings of ``compare_players`` from ``play(lineup) -> int ranks[S seeds, 8 rotations, 8 positions]``
    (``lineup``: 8 participant indices; every call plays the same S seeds), participants ``a`` and ``b`` and
    ``lineups``: name -> 7 participant indices. Returns ``{setting: {"placement", "points", "per_seed_a",
    "per_seed_b"}}`` (``compare_players`` says what they hold; ``p_holm`` adjusts over all the settings returned)."""

    def ranks(lineup):
        out = np.asarray(play(lineup))
        if not (out >= 1).all():
            raise RuntimeError(f"{int((out < 1).sum())} placements of unfinished games (the step limit)")
        return out

    def setting(ranks_a, ranks_b):
        """From A's and B's positions: (ranks_a, ranks_b) int[S, 8, n]; per-seed means, paired by seed."""
        per_seed_a, per_seed_b = ranks_a.mean((1, 2)), ranks_b.mean((1, 2))
        pa, pb = (significance.rank_points(r, points).mean((1, 2)) for r in (ranks_a, ranks_b))
        return {
            **paired_setting(per_seed_a, per_seed_b, pa, pb, difference),
            "per_seed_a": per_seed_a.tolist(),
            "per_seed_b": per_seed_b.tolist(),
        }

    settings = {}
    for name, others in lineups.items():
        settings[f"vs {name}"] = setting(ranks([a, *others])[:, :, :1], ranks([b, *others])[:, :, :1])
    if head_to_head:
        for name, seats_a in HEAD_TO_HEAD.items():
            table = ranks([a if j in seats_a else b for j in range(C.NUM_PLAYERS)])
            seats_b = [j for j in range(C.NUM_PLAYERS) if j not in seats_a]
            settings[name] = setting(table[:, :, list(seats_a)], table[:, :, seats_b])
    add_holm(settings)
    return settings


def paired_setting(placement_a, placement_b, points_a, points_b, difference: float) -> dict:
    """One setting's tests from paired results (float[S] each, one per seed: game seeds in ``compare_tables``,
    training seeds in ``compare_over_seeds``): ``{"placement": significance.compare(...) + "games_needed" (the
    seeds a test of ``difference`` needs), "points": its mean_a, mean_b, difference and p_value}``."""
    placement = significance.compare(placement_a, placement_b, paired=True)
    placement["games_needed"] = significance.games_needed(placement["sd"], difference)
    test = significance.compare(points_a, points_b, paired=True)
    return {"placement": placement, "points": {k: test[k] for k in ("mean_a", "mean_b", "difference", "p_value")}}


def add_holm(settings: dict) -> None:
    """Adds ``"p_holm"`` beside ``"p_value"`` in every setting's ``"placement"`` and ``"points"``: Holm's adjusted
    p-values (``significance.holm``) over the settings, the placement tests one family and the points tests
    another, so a claim over several settings holds at its level."""
    for test in ("placement", "points"):
        adjusted = significance.holm([r[test]["p_value"] for r in settings.values()])
        for r, p in zip(settings.values(), adjusted):
            r[test]["p_holm"] = float(p)


def comparison_verdict(settings: dict, alpha: float = 0.05) -> dict:
    """Which settings of ``compare_tables`` show a difference of mean placement, read from the Holm-adjusted
    p-values (``add_holm``: the claim is over all the settings tested). Returns ``{"alpha", "a_better",
    "b_better", "no_difference"}`` (lists of setting names; A is better where its mean placement is lower) and
    ``"text"``, one sentence: "A places better than B in every setting" only when every adjusted p is below
    ``alpha``; it says so when the raw p-values alone would have claimed more."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    groups = {"a_better": [], "b_better": [], "no_difference": []}
    raw_groups = {"a_better": [], "b_better": [], "no_difference": []}
    for name, r in settings.items():
        pl = r["placement"]
        for out, p in ((groups, pl["p_holm"]), (raw_groups, pl["p_value"])):
            side = "no_difference" if p >= alpha else ("a_better" if pl["difference"] < 0 else "b_better")
            out[side].append(name)
    count = len(settings)
    tested = f"{count} setting{'s' if count != 1 else ''} tested"
    text = f"{_verdict_text(groups, count)} (Holm-adjusted p < {alpha:g}, {tested})"
    if raw_groups != groups:
        text += f"; uncorrected, p < {alpha:g} would say: {_verdict_text(raw_groups, count)}"
    return {"alpha": alpha, **groups, "text": text}


def _verdict_text(groups: dict, count: int) -> str:
    """The claim of ``comparison_verdict``'s groups of ``count`` settings, without its level."""
    sides = (("a_better", "A places better than B"), ("b_better", "B places better than A"))
    for side, who in sides:
        if count and len(groups[side]) == count:
            return f"{who} in every setting"
    parts = [f"{who} in {', '.join(groups[side])}" for side, who in sides if groups[side]]
    if not parts:
        return "no setting shows a difference"
    if groups["no_difference"]:
        parts.append(f"no difference shown in {', '.join(groups['no_difference'])}")
    return "; ".join(parts)


def comparison_table(result: dict) -> str:
    """A human table of ``compare_players``'s result: one row per setting (the raw and the Holm-adjusted p-value
    of the placement test), then the verdict (``comparison_verdict``)."""
    rows = result["settings"]
    width = max(len("setting"), *(len(n) for n in rows))
    games = f"{result['games_per_rotation']} game seeds x 8 rotations a setting"
    if "pairs" in result:  # compare_over_seeds
        tests = (
            f"{len(result['pairs'])} pairs of training seeds, each on {games}; paired t-test over the pairs (the "
            "interval is over training seeds)"
        )
        unit = "pairs"  # what games_needed counts
    else:
        tests, unit = f"{games}, paired t-test by seed", "seeds"
    head = (
        f"A = {result['a']}, B = {result['b']}: {tests}, Holm-adjusted over the {len(rows)} settings; points "
        f"{result['rank_points']}"
    )
    lines = [
        head,
        f"{'setting':<{width}}  A place  B place  A - B (95% CI)    p-value  p (Holm)  A points  B points  "
        f"{unit} for {result['difference']:g}",
    ]
    for name, r in rows.items():
        pl, pt = r["placement"], r["points"]
        needed = "-" if pl["games_needed"] is None else str(pl["games_needed"])
        lines.append(
            f"{name:<{width}}  {pl['mean_a']:7.2f}  {pl['mean_b']:7.2f}  "
            f"{pl['difference']:+6.2f} +- {pl['ci95']:<6.2f}  {pl['p_value']:7.2g}  {pl['p_holm']:8.2g}  "
            f"{pt['mean_a']:8.1f}  {pt['mean_b']:8.1f}  {needed:>5}"
        )
    verdict = result.get("verdict") or comparison_verdict(rows)
    lines.append(verdict["text"])
    return "\n".join(lines)


def placement_table(rows) -> str:
    """A human table of (opponents, placement_summary) rows."""
    width = max(len("opponents"), *(len(spec) for spec, _ in rows))
    lines = [f"{'opponents':<{width}}  mean placement (95% CI)   top-1   top-4   games"]
    for spec, s in rows:
        ci = f"+- {s['ci95']:.2f}" if s["ci95"] is not None else "(1 seed)"
        lines.append(
            f"{spec:<{width}}  {s['mean_placement']:5.2f} {ci:<18} {s['top1']:6.1%}  {s['top4']:6.1%}  {s['games']:5d}"
        )
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
            raise PolicyError(f"{spec!r} is a bot: pass it in bots=, not as a run")
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
                warnings.warn(
                    f"{run_dir}:{s} skipped: its checkpoint cannot be read ({err})", RuntimeWarning, stacklevel=2
                )
                continue
            for p in seat_policies(policy):  # an independent run: one player a seat
                policies.setdefault(p.name, p)
    policies = list(policies.values())
    table_observations(policies)  # PolicyError now for players that cannot share a table
    return policies, [p.name for p in policies] + list(bots)


def play(
    policies,
    bots,
    rows,
    batch: int,
    seed: int,
    on_batch=None,
    greedy_policy=False,
    compiler_options: Mapping | None = None,
):
    """ranks int[G, 8 rotations, 8 positions] of every lineup in ``rows`` (indices into policies + bots);
    ``on_batch(lineups)`` is called after each batch with the number it played. ``greedy_policy``: one bool for
    every policy or one per policy; ``compiler_options``: the XLA options the tables' program compiles with (None:
    the process's; ``tables.make_table_runner``)."""
    game = table_game(policies)
    run = make_table_runner(
        game, table_networks(policies, game), batch, greedy_policy, bot_names=bots, compiler_options=compiler_options
    )
    # player index -> participant index of the runner: the same order, policies first, then the bots
    participant = np.arange(len(policies) + len(bots))
    params = tuple(p.params for p in policies)
    key = jax.random.key(seed)
    out = []
    for start in range(0, len(rows), batch):
        chunk = rows[start : start + batch]
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
            ax.annotate(row["name"], (0, row["ordinal"]), xycoords=("axes fraction", "data"), fontsize=8, va="bottom")
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
        lines.append(
            f"{row['name']:<{width}}  {row['ordinal']:7.2f}  {row['mu']:6.2f}  {row['sigma']:6.2f}  "
            f"{row['games']:5d}  {placement:>14}"
        )
    return "\n".join(lines)


__all__ = [
    "HEAD_TO_HEAD",
    "add_holm",
    "compare_over_seeds",
    "compare_players",
    "compare_tables",
    "comparison_table",
    "comparison_verdict",
    "evaluate_checkpoint",
    "format_table",
    "load_players",
    "placement_table",
    "play",
    "paired_setting",
    "participant_index",
    "rate",
    "rate_checkpoints",
    "resolve_players",
    "table_game",
    "write_outputs",
]
