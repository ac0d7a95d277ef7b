"""The ladder's rating fit (agents.arena.plackett_luce): the likelihood against a plain-Python reference, its
gradient, and the fit recovering populations of known strength (numpy only, no JAX work)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from agents.arena import plackett_luce as pl


def reference_log_likelihood(strengths, orders):
    """Plackett-Luce, written out: each place is won by one of those left, with probability ~ exp(strength)."""
    total = 0.0
    for order in orders:
        left = list(order)
        while len(left) > 1:
            winner = left.pop(0)
            total += strengths[winner] - math.log(sum(math.exp(strengths[j]) for j in [winner, *left]))
    return total


def sample_games(strengths, games, seats, rng, noise=None):
    """orders int[games, seats]: ``seats`` different players drawn per game, ranked by strength + Gumbel noise
    (exactly Plackett-Luce), or + ``noise(rng, shape)`` for another model of performance."""
    players = np.stack([rng.choice(len(strengths), seats, replace=False) for _ in range(games)])
    draw = rng.gumbel(size=players.shape) if noise is None else noise(rng, players.shape)
    performance = np.asarray(strengths)[players] + draw
    return np.take_along_axis(players, np.argsort(-performance, axis=1), axis=1)


def test_the_log_likelihood_is_the_models_written_out():
    rng = np.random.default_rng(1)
    strengths = rng.normal(size=6)
    orders = sample_games(strengths, 20, 5, rng)
    assert pl.log_likelihood(strengths, orders) == pytest.approx(reference_log_likelihood(strengths, orders), 1e-12)
    # three players a, b, c, order (0, 1, 2): a - log(e^a + e^b + e^c) + b - log(e^b + e^c)
    a, b, c = 0.3, -1.0, 2.0
    expected = a - math.log(math.exp(a) + math.exp(b) + math.exp(c)) + b - math.log(math.exp(b) + math.exp(c))
    assert pl.log_likelihood([a, b, c], [[0, 1, 2]]) == pytest.approx(expected, 1e-12)


def test_the_gradient_is_the_likelihoods():
    rng = np.random.default_rng(2)
    strengths = rng.normal(size=7)
    orders = sample_games(strengths, 50, 8 - 1, rng)
    weights = rng.uniform(0.5, 2.0, len(orders))
    _, grad = pl._objective(strengths, orders, weights, 3.0)
    eps = 1e-6
    numeric = [
        (
            pl._objective(strengths + eps * e, orders, weights, 3.0)[0]
            - pl._objective(strengths - eps * e, orders, weights, 3.0)[0]
        )
        / (2 * eps)
        for e in np.eye(7)
    ]
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-6)


def test_the_fit_recovers_known_strengths():
    rng = np.random.default_rng(3)
    true = np.linspace(-2.0, 2.0, 10)
    orders = sample_games(true, 3000, 8, rng)
    fitted = pl.fit(orders, 10)
    np.testing.assert_allclose(fitted - fitted.mean(), true - true.mean(), atol=0.12)
    assert list(np.argsort(fitted)) == list(range(10))


def test_the_fit_orders_players_whose_performance_is_not_plackett_luce():
    """Performance = skill + Gaussian noise (a Thurstone model, not Plackett-Luce's Gumbel): the fit must still
    recover the order of skill."""
    rng = np.random.default_rng(4)
    skill = np.array([0.0, 0.4, 0.8, 1.2, 1.6, 2.0, 2.4, 2.8, 3.2])
    orders = sample_games(skill, 2000, 8, rng, noise=lambda r, shape: r.normal(0.0, 1.0, shape))
    fitted = pl.fit(orders, len(skill))
    assert list(np.argsort(fitted)) == list(range(len(skill)))


def test_a_player_that_always_loses_stays_finite_and_last():
    rng = np.random.default_rng(5)
    strengths = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, -50.0])
    orders = sample_games(strengths, 400, 8, rng)
    assert (orders[:, -1] == 7).all()
    fitted = pl.fit(orders, 8)
    assert np.isfinite(fitted).all() and fitted.argmin() == 7


def test_one_player_against_fixed_strengths_is_the_direct_one_dimensional_fit():
    rng = np.random.default_rng(6)
    members = np.linspace(-1.5, 1.5, 9)
    true_candidate = 0.7
    everyone = np.append(members, true_candidate)
    games = np.stack([np.append(9, rng.choice(9, 7, replace=False)) for _ in range(600)])
    performance = everyone[games] + rng.gumbel(size=games.shape)
    orders = np.take_along_axis(games, np.argsort(-performance, axis=1), axis=1)

    strength, replicates = pl.fit_one(
        orders, members, 9, seeds=np.arange(600) // 8, draws=300, rng=np.random.default_rng(0), prior_sd=4.0
    )

    def negative_posterior(x):
        return -(pl.log_likelihood(np.append(members, x), orders) - x**2 / (2 * 4.0**2))

    assert strength == pytest.approx(optimize.minimize_scalar(negative_posterior).x, abs=1e-6)
    low, high = np.percentile(replicates, [2.5, 97.5])
    assert low < true_candidate < high
    assert 0.05 < high - low < 0.6
    again = pl.fit_one(orders, members, 9, seeds=np.arange(600) // 8, draws=300, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(replicates, again[1])  # deterministic for a seed


def test_the_interval_narrows_with_more_games():
    rng = np.random.default_rng(7)
    members = np.linspace(-1.5, 1.5, 9)
    widths = []
    for n in (200, 1600):
        games = np.stack([np.append(9, rng.choice(9, 7, replace=False)) for _ in range(n)])
        performance = np.append(members, 0.2)[games] + rng.gumbel(size=games.shape)
        orders = np.take_along_axis(games, np.argsort(-performance, axis=1), axis=1)
        _, replicates = pl.fit_one(orders, members, 9, draws=300, rng=np.random.default_rng(1))
        widths.append(np.percentile(replicates, 97.5) - np.percentile(replicates, 2.5))
    assert widths[1] < 0.5 * widths[0]  # ~ 1 / sqrt(8) = 0.35 of it


def test_orders_from_ranks_and_bad_orders():
    participants = np.array([[4, 2, 9], [1, 0, 3]])
    ranks = np.array([[2, 3, 1], [1, 2, 3]])
    np.testing.assert_array_equal(pl.orders_from_ranks(participants, ranks), [[9, 4, 2], [1, 0, 3]])
    with pytest.raises(ValueError, match="twice"):
        pl.check_orders([[0, 1, 1]], 3)
    with pytest.raises(ValueError, match="0..2"):
        pl.check_orders([[0, 1, 3]], 3)
    with pytest.raises(ValueError, match="shape"):
        pl.check_orders([0, 1, 2], 3)
    with pytest.raises(ValueError, match="prior_sd"):
        pl.fit([[0, 1]], 2, prior_sd=0.0)
    with pytest.raises(ValueError, match="exactly one place"):
        pl.fit_one([[0, 1, 2]], [0.0, 0.0, 0.0], 3)
