"""agents.arena.significance: the tests on hand-computed values, their error rates by simulation, the sample size
against G*Power's tables, rank points."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from agents.arena import significance
from agents.arena.significance import compare, games_needed, rank_points

A = np.array([3.0, 4.5, 2.25, 5.0, 3.5, 4.0])
B = np.array([4.0, 4.75, 3.0, 5.5, 3.0, 5.25, 4.5, 6.0])


def test_welch_matches_the_formulas_by_hand():
    va, vb = A.var(ddof=1) / A.size, B.var(ddof=1) / B.size
    t = (A.mean() - B.mean()) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (A.size - 1) + vb**2 / (B.size - 1))  # Welch-Satterthwaite
    out = compare(A, B, paired=False)
    assert out["test"] == "Welch's t-test" and (out["seeds_a"], out["seeds_b"]) == (6, 8)
    assert out["difference"] == pytest.approx(A.mean() - B.mean())
    assert out["t"] == pytest.approx(t) and out["df"] == pytest.approx(df)
    assert out["p_value"] == pytest.approx(2 * stats.t.sf(abs(t), df))
    assert out["ci95"] == pytest.approx(stats.t.ppf(0.975, df) * math.sqrt(va + vb))
    assert out["sd"] == pytest.approx(math.sqrt((A.var(ddof=1) + B.var(ddof=1)) / 2))


def test_paired_matches_the_formulas_by_hand_and_uses_the_pairs():
    b = B[:6]
    d = A - b
    t = d.mean() / (d.std(ddof=1) / math.sqrt(d.size))
    out = compare(A, b, paired=True)
    assert out["test"] == "paired t-test" and out["df"] == 5
    assert out["t"] == pytest.approx(t) and out["p_value"] == pytest.approx(2 * stats.t.sf(abs(t), 5))
    assert out["sd"] == pytest.approx(d.std(ddof=1))
    # a shared per-seed luck that Welch counts as noise and the pairs remove
    luck = np.array([-2.0, 2.0, -1.5, 1.5, -1.0, 1.0])
    noise = np.array([0.05, -0.05, 0.1, 0.0, -0.1, 0.0])
    assert compare(A + luck, A + luck + 0.3 + noise, paired=True)["p_value"] < 1e-3
    assert compare(A + luck, A + luck + 0.3 + noise, paired=False)["p_value"] > 0.5
    assert compare(A + luck, A + luck + 0.3, paired=True)["p_value"] == 0.0  # a constant difference, rounded


def test_results_that_do_not_vary_have_a_defined_p_value():
    same = np.full(5, 4.5)
    assert compare(same, same, paired=True)["p_value"] == 1.0
    assert compare(same, same + 1, paired=True)["p_value"] == 0.0
    assert compare(same, same, paired=False)["p_value"] == 1.0
    assert compare(same, same - 1, paired=False)["t"] == math.inf


@pytest.mark.parametrize("a, b, paired, message", [
    ([4.0], [4.0], False, "at least 2"),
    ([4.0, float("nan")], [4.0, 5.0], False, "finite"),
    ([[4.0, 5.0]], [4.0, 5.0], False, "1-d"),
    ([4.0, 5.0, 6.0], [4.0, 5.0], True, "as many seeds"),
])
def test_bad_results_are_errors(a, b, paired, message):
    with pytest.raises(ValueError, match=message):
        compare(a, b, paired)


def _rejections(a, b, paired: bool) -> float:
    """The share of p < 0.05 over the rows of a, b float[trials, seeds] (``compare`` equals scipy's test, above;
    scipy's over an axis is what makes thousands of trials cheap)."""
    test = stats.ttest_rel(a, b, axis=1) if paired else stats.ttest_ind(a, b, axis=1, equal_var=False)
    return float(np.mean(test.pvalue < 0.05))


def test_the_error_rates_are_what_the_level_and_the_sample_size_promise():
    """Simulated per-seed results: with no difference about 5% of tests reject at 0.05 (paired, and Welch with
    unequal variances and sizes); with a difference of 0.25 and sd 1, ``games_needed`` seeds give about 80%
    power. 10,000 tests each: binomial standard errors of 0.2 and 0.4 points."""
    rng = np.random.default_rng(0)
    trials = 10_000
    assert 0.045 <= _rejections(rng.normal(0, 1, (trials, 16)), np.zeros((trials, 16)), True) <= 0.055
    assert 0.045 <= _rejections(rng.normal(0, 1, (trials, 12)), rng.normal(0, 2, (trials, 20)), False) <= 0.055
    n = games_needed(1.0, 0.25)
    assert 0.785 <= _rejections(rng.normal(0.25, 1, (trials, n)), np.zeros((trials, n)), True) <= 0.815
    assert _rejections(rng.normal(0.25, 1, (trials, n // 2)), np.zeros((trials, n // 2)), True) < 0.6  # too few
    a, b = rng.normal(4.5, 1, (20, 16)), rng.normal(4.5, 1, (20, 16))
    for row_a, row_b in zip(a, b):  # and compare gives scipy's p-value row by row
        assert compare(row_a, row_b, paired=True)["p_value"] == pytest.approx(stats.ttest_rel(row_a, row_b).pvalue)


def test_games_needed_agrees_with_g_power():
    # G*Power 3.1, two-tailed, alpha 0.05, power 0.8: paired (matched pairs) d = 0.5 -> 34; d = 0.25 -> 128;
    # two independent means d = 0.5 -> 64 per group
    assert games_needed(1.0, 0.5, paired=True) == 34
    assert games_needed(2.0, 0.5, paired=True) == 128
    assert games_needed(1.0, 0.5, paired=False) == 64
    assert games_needed(1.0, 0.5, power=0.9) > 34 and games_needed(1.0, 0.5, alpha=0.01) > 34
    assert games_needed(0.0, 0.5) is None
    for bad in [dict(sd=-1.0), dict(sd=1.0, difference=0.0), dict(sd=1.0, power=1.0), dict(sd=1.0, alpha=0.0)]:
        with pytest.raises(ValueError):
            games_needed(**bad)


def test_rank_points_spread_a_table_over_the_eight_places():
    places = np.arange(1, 9)
    np.testing.assert_array_equal(rank_points(places), [90, 90, 45, 45, 0, 0, -135, -135])
    np.testing.assert_array_equal(rank_points(places, range(8, 0, -1)), 9 - places)
    np.testing.assert_array_equal(rank_points(places, [1.0, -1.0]), [1, 1, 1, 1, -1, -1, -1, -1])
    assert rank_points(np.array([[1, 8], [4, 5]])).shape == (2, 2)
    assert significance.check_rank_points([3, 2, 1, 0]) == (3.0, 2.0, 1.0, 0.0)
    for table in ([90, 45, 0], [], [1, float("nan")]):
        with pytest.raises(ValueError, match="1, 2, 4 or 8 finite values"):
            rank_points(places, table)
    with pytest.raises(ValueError, match="finished games"):
        rank_points(np.array([0, 1, 2]))
