"""Which rating model predicts held-out 8-player placements better: the ladder's Plackett-Luce MAP fit or OpenSkill?

    python benchmarks/ladder_model_check.py docs/results/ladder_v1_population.games.json

Reads a ladder fit's games (``experiments.ladder --fit``'s ``<version>.games.json``), splits the lineups in two
(even and odd lineup index: a lineup's 8 rotations stay together), rates the members on one half and scores the
other half's full placements by their Plackett-Luce log-likelihood per game, both ways round:

- ``plackett_luce_map``: ``agents.arena.plackett_luce.fit`` (what the ladder uses);
- ``openskill``: ``agents.arena.ratings.Ratings`` (OpenSkill's Plackett-Luce, rated game by game, as
  ``experiments.rate`` does), its mu as the strength on OpenSkill's own scale, mu / c with c = sqrt(sum over the
  game's players of sigma^2 + beta^2) (the likelihood its update uses);
- ``openskill_best_scale``: the same mu times the one factor that fits the rating half best (OpenSkill's order
  with the scale chosen for it);
- ``uniform``: every order equally likely, -log(8!).

Prints one JSON object: the mean held-out log-likelihood per game of each (higher is better), per split and averaged.
"""

from __future__ import annotations

import json
import math
import sys

import numpy as np
from scipy import optimize

from agents.arena import ladder, plackett_luce
from agents.arena.ratings import Ratings


def openskill_strengths(members, orders):
    """OpenSkill (mu, sigma) per member from ``orders`` (member indices, best first), rated in order."""
    ratings = Ratings()
    for order in orders:
        names = [members[i] for i in order]
        ratings.rate(names, list(range(1, len(order) + 1)))
    mu = np.array([ratings.rating(m).mu for m in members])
    sigma = np.array([ratings.rating(m).sigma for m in members])
    return mu, sigma, ratings.model.beta


def per_game(strengths_of_game, orders):
    """Mean log-likelihood per game, with each game's strengths float[G, n] (by order position)."""
    s = strengths_of_game
    top = s.max(axis=1, keepdims=True)
    remaining = np.cumsum(np.exp(s - top)[:, ::-1], axis=1)[:, ::-1]
    return float((s[:, :-1] - np.log(remaining[:, :-1]) - top).sum(axis=1).mean())


def main(path):
    games = json.loads(open(path).read())
    members, lineups, ranks = games["members"], np.asarray(games["lineups"]), np.asarray(games["ranks"])
    orders, lineup_of, finished = ladder._orders(lineups, ranks)
    orders, lineup_of = orders[finished], lineup_of[finished]
    splits = {}
    for name, rate_half in (("rate_even_score_odd", 0), ("rate_odd_score_even", 1)):
        train, test = orders[lineup_of % 2 == rate_half], orders[lineup_of % 2 != rate_half]
        s = plackett_luce.fit(train, len(members))
        mu, sigma, beta = openskill_strengths(members, train)
        c = np.sqrt((sigma[test] ** 2 + beta**2).sum(axis=1, keepdims=True))
        scale = optimize.minimize_scalar(
            lambda k, mu=mu, train=train: -per_game(k * mu[train], train), bounds=(1e-3, 10.0), method="bounded"
        ).x
        splits[name] = {
            "plackett_luce_map": per_game(s[test], test),
            "openskill": per_game(mu[test] / c, test),
            "openskill_best_scale": per_game(scale * mu[test], test),
            "uniform": -math.log(math.factorial(orders.shape[1])),
            "rated_games": len(train),
            "scored_games": len(test),
        }
    mean = {
        k: round(float(np.mean([v[k] for v in splits.values()])), 4)
        for k in ("plackett_luce_map", "openskill", "openskill_best_scale", "uniform")
    }
    print(
        json.dumps(
            {"games_file": path, "members": members, "mean_heldout_log_likelihood_per_game": mean, "splits": splits}
        )
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/results/ladder_v1_population.games.json")
