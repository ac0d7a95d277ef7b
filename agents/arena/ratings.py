"""OpenSkill ratings (the ``openskill`` package's Plackett-Luce model) from full 8-player placements.

Every game is one multi-player match. A participant that holds several seats
of a table (a bot filling the empty seats, say) is one competitor there,
ranked by the mean placement of its seats; equal means are ties. Games are
rated one after another, in the order given.

    ratings = Ratings()
    ratings.rate(["run_a", "greedy", "greedy", ...], [3, 1, 8, ...])   # 8 seat names, 8 placements
    ratings.table()   # [{"name", "ordinal", "mu", "sigma", "games"}, ...], best ordinal first
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
from openskill.models import PlackettLuce


def competitors(seats: Sequence[str], placements: Sequence[float]) -> tuple[list[str], list[float]]:
    """The distinct participants of one game, in order of first seat, and the mean placement of each."""
    if len(seats) != len(placements):
        raise ValueError(f"one placement per seat: got {len(seats)} seats and {len(placements)} placements")
    names = list(dict.fromkeys(seats))
    placements = np.asarray(placements, np.float64)
    seats = np.asarray(seats, dtype=object)
    return names, [float(placements[seats == name].mean()) for name in names]


class Ratings:
    """Running OpenSkill ratings of named participants (new ones start at the model's default rating)."""

    def __init__(self, model: PlackettLuce | None = None):
        self.model = model or PlackettLuce()
        self.ratings = {}
        self.games = Counter()

    def rating(self, name: str):
        return self.ratings.get(name) or self.model.rating(name=name)

    def rate(self, seats: Sequence[str], placements: Sequence[float]) -> None:
        """Rate one game: ``seats[i]`` names the participant in seat i, ``placements[i]`` its rank (1 = first).
        A game with one distinct participant teaches nothing and is skipped."""
        if any(p < 1 for p in placements):
            raise ValueError(f"placements must be >= 1 (a game that did not end cannot be rated), got {placements}")
        names, ranks = competitors(seats, placements)
        if len(names) < 2:
            return
        rated = self.model.rate([[self.rating(n)] for n in names], ranks=ranks)
        for name, team in zip(names, rated):
            self.ratings[name] = team[0]
            self.games[name] += 1

    def table(self) -> list[dict]:
        """One row per rated participant (ordinal = mu - 3 sigma), best ordinal first."""
        rows = [
            {"name": n, "ordinal": r.ordinal(), "mu": r.mu, "sigma": r.sigma, "games": self.games[n]}
            for n, r in self.ratings.items()
        ]
        return sorted(rows, key=lambda row: -row["ordinal"])
