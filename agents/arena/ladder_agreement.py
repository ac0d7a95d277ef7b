"""Does the ladder agree with the head to heads? For each pair of a ladder's policy members, the ladder's order
(their points) against the sign of their head to head at one table (1 vs 7, 7 vs 1, 4 vs 4:
``tournament.compare_players``, paired by game seed, Holm over the three settings).

    result = agreement("ladder-v1", games=32, seed=4300)
    result["summary"]   # {"agree": n, "disagree": n, "not_significant": n} over pairs x settings

A setting agrees when its Holm-adjusted p is below ``alpha`` and the member with more points places better; it
disagrees when it is significant the other way (non-transitivity or a ladder error: reported, not hidden).
"""

from __future__ import annotations

import itertools
import time

from agents.arena.ladder import CURRENT_LADDER, load_ladder
from agents.arena.tournament import HEAD_TO_HEAD, compare_players
from agents.policies.load import PLAYER_BOTS
from agents.utils.progress import NoProgress, Progress

#: The head-to-head settings compared with the ladder's order: ``tournament.HEAD_TO_HEAD``'s.
SETTINGS = tuple(HEAD_TO_HEAD)


def agreement(
    version: str = CURRENT_LADDER,
    games: int = 32,
    seed: int = 4300,
    alpha: float = 0.05,
    pairs=None,
    progress: Progress | None = None,
) -> dict:
    """The agreement table of ``version``'s policy members (``pairs``: (spec_a, spec_b) tuples, default every pair
    of its baselines): per pair the ladder points of both and, per setting of ``SETTINGS``, both mean placements,
    A - B with its 95% interval, the Holm-adjusted p and ``"verdict"``: ``"agree"``, ``"disagree"`` or
    ``"not_significant"``. Returns ``{"ladder", "games_per_rotation", "seed", "alpha", "pairs": [...],
    "summary", "seconds"}``."""
    progress = progress or NoProgress()
    start = time.perf_counter()
    ladder = load_ladder(version)
    points = {m["spec"]: m["points"] for m in ladder["members"]}
    policies = [s for s in points if s not in PLAYER_BOTS]
    pairs = list(pairs) if pairs is not None else list(itertools.combinations(policies, 2))
    unknown = sorted({s for pair in pairs for s in pair} - set(policies))
    if unknown:
        raise ValueError(f"pairs name players that are not policy members of {version}: {unknown}")
    rows = []
    summary = {"agree": 0, "disagree": 0, "not_significant": 0}
    for i, (a, b) in enumerate(pairs):
        progress.status(f"pair {i + 1}/{len(pairs)}: {a} against {b}")
        result = compare_players(a, b, {}, games, seed, head_to_head=True, progress=progress)
        ladder_a_better = points[a] > points[b]
        settings = {}
        for name in SETTINGS:
            test = result["settings"][name]["placement"]
            if test["p_holm"] >= alpha:
                verdict = "not_significant"
            else:
                verdict = "agree" if (test["difference"] < 0) == ladder_a_better else "disagree"
            summary[verdict] += 1
            settings[name] = {
                "mean_a": round(test["mean_a"], 3),
                "mean_b": round(test["mean_b"], 3),
                "difference": round(test["difference"], 3),
                "ci95": round(test["ci95"], 3),
                "p_holm": test["p_holm"],
                "verdict": verdict,
            }
        rows.append({"a": a, "b": b, "points_a": points[a], "points_b": points[b], "settings": settings})
    return {
        "ladder": version,
        "games_per_rotation": games,
        "seed": seed,
        "alpha": alpha,
        "pairs": rows,
        "summary": summary,
        "seconds": round(time.perf_counter() - start, 1),
    }


def agreement_table(result: dict) -> str:
    """A human table of ``agreement``'s result: one row per pair, A - B of mean placement and the verdict per
    setting (``+`` agrees, ``x`` disagrees, ``.`` not significant after Holm)."""
    mark = {"agree": "+", "disagree": "x", "not_significant": "."}
    width = max(len("pair (ladder points)"), *(len(f"{r['a']} {r['b']}") + 16 for r in result["pairs"]))
    head = "  ".join(f"{s:>14}" for s in SETTINGS)
    lines = [
        f"{result['ladder']} against head to heads ({result['games_per_rotation']} game seeds x 8 rotations a "
        f"setting, Holm over the settings of a pair, alpha {result['alpha']:g}): A - B of mean placement",
        f"{'pair (ladder points)':<{width}}  {head}",
    ]
    for r in result["pairs"]:
        pair = f"{r['a']} ({r['points_a']:.0f}) {r['b']} ({r['points_b']:.0f})"
        cells = "  ".join(
            f"{r['settings'][s]['difference']:+6.2f} +- {r['settings'][s]['ci95']:4.2f}"
            f"{mark[r['settings'][s]['verdict']]}"
            for s in SETTINGS
        )
        lines.append(f"{pair:<{width}}  {cells}")
    s = result["summary"]
    lines.append(f"agree {s['agree']}, disagree {s['disagree']}, not significant {s['not_significant']}")
    return "\n".join(lines)


__all__ = ["SETTINGS", "agreement", "agreement_table"]
