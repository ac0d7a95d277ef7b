"""OpenSkill ratings from 8-player placements (agents.arena.ratings) against the package's own updates."""

from __future__ import annotations

import pytest
from openskill.models import PlackettLuce

from agents.arena.ratings import Ratings, competitors

GAMES = [
    (["a", "b", "c", "d", "greedy", "greedy", "random", "random"], [1, 2, 3, 4, 5, 6, 7, 8]),
    (["greedy", "a", "random", "b", "c", "d", "greedy", "random"], [2, 8, 5, 1, 3, 4, 6, 7]),
    (["b", "b", "a", "a", "c", "c", "d", "d"], [4, 1, 6, 7, 2, 8, 3, 5]),
]


def test_a_participant_in_several_seats_is_one_competitor_at_its_mean_placement():
    names, ranks = competitors(*GAMES[2])
    assert names == ["b", "a", "c", "d"]
    assert ranks == [2.5, 6.5, 5.0, 4.0]
    with pytest.raises(ValueError, match="one placement per seat"):
        competitors(["a", "b"], [1])


def test_ratings_equal_the_packages_sequential_updates():
    ratings = Ratings()
    for seats, placements in GAMES:
        ratings.rate(seats, placements)

    model = PlackettLuce()
    expected = {}
    by_hand = [  # the same games, with the competitors and mean placements worked out by hand
        (["a", "b", "c", "d", "greedy", "random"], [1, 2, 3, 4, 5.5, 7.5]),
        (["greedy", "a", "random", "b", "c", "d"], [4, 8, 6, 1, 3, 4]),
        (["b", "a", "c", "d"], [2.5, 6.5, 5, 4]),
    ]
    for names, ranks in by_hand:
        teams = [[expected.get(n) or model.rating(name=n)] for n in names]
        for name, team in zip(names, model.rate(teams, ranks=ranks)):
            expected[name] = team[0]

    table = ratings.table()
    assert {row["name"] for row in table} == set(expected)
    for row in table:
        assert row["mu"] == pytest.approx(expected[row["name"]].mu, rel=1e-12)
        assert row["sigma"] == pytest.approx(expected[row["name"]].sigma, rel=1e-12)
        assert row["ordinal"] == pytest.approx(row["mu"] - 3 * row["sigma"], rel=1e-9)
    assert [row["ordinal"] for row in table] == sorted((row["ordinal"] for row in table), reverse=True)
    assert ratings.games == {"a": 3, "b": 3, "c": 3, "d": 3, "greedy": 2, "random": 2}


def test_the_constant_winner_rates_first_and_single_participant_games_are_skipped():
    ratings = Ratings()
    for shift in range(8):
        seats = ["w"] + [f"p{(i + shift) % 7}" for i in range(7)]
        ratings.rate(seats, [1] + list(range(2, 9)))
    ratings.rate(["w"] * 8, list(range(1, 9)))  # nothing to learn
    assert ratings.table()[0]["name"] == "w" and ratings.games["w"] == 8
    with pytest.raises(ValueError, match="did not end"):
        ratings.rate(["w", "x"], [0, 1])
