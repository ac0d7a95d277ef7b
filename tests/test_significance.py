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


@pytest.mark.parametrize(
    "a, b, paired, message",
    [
        ([4.0], [4.0], False, "at least 2"),
        ([4.0, float("nan")], [4.0, 5.0], False, "finite"),
        ([[4.0, 5.0]], [4.0, 5.0], False, "1-d"),
        ([4.0, 5.0, 6.0], [4.0, 5.0], True, "as many seeds"),
    ],
)
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


def test_t_interval_takes_the_t_quantile_of_the_seed_count():
    """4 seeds [1, 2, 3, 4]: sd = sqrt(5/3) = 1.291, half-width t(0.975, 3) x sd / 2 = 3.182 x 1.291 / 2 = 2.054,
    where the normal's 1.96 gave 1.265 (a 95% interval that covered about 88% of the time at 4 seeds)."""
    mean, half = significance.t_interval([1.0, 2.0, 3.0, 4.0])
    assert mean == 2.5
    assert half == pytest.approx(3.182446 * math.sqrt(5 / 3) / 2, rel=1e-6)
    assert half == pytest.approx(2.054260, rel=1e-6) and half > 1.96 * math.sqrt(5 / 3) / 2 + 0.7
    assert significance.t_interval([1.0, 2.0, 3.0, 4.0], confidence=0.9)[1] == pytest.approx(
        stats.t.ppf(0.95, 3) * math.sqrt(5 / 3) / 2
    )
    assert significance.t_interval([3.5]) == (3.5, None)  # one seed: no spread to measure
    assert significance.t_interval([2.0, 2.0, 2.0]) == (2.0, 0.0)
    for bad, message in (([], "at least 1"), ([1.0, float("inf")], "finite"), ([[1.0, 2.0]], "1-d")):
        with pytest.raises(ValueError, match=message):
            significance.t_interval(bad)
    with pytest.raises(ValueError, match="confidence must be in"):
        significance.t_interval([1.0, 2.0], confidence=1.0)


def test_placement_summary_interval_is_the_t_interval_over_game_seeds():
    """Three game seeds with per-seed mean placements 4.5, 1 and 8 (their 8 rotations are one draw): sd 3.5, so
    the half-width is t(0.975, 2) x 3.5 / sqrt(3) = 4.303 x 2.021 = 8.694 (the normal's 1.96 gave 3.96)."""
    from agents.arena.evaluation import placement_summary

    ranks = np.array([np.arange(1, 9), np.ones(8), np.full(8, 8)], np.int32)
    summary = placement_summary(ranks)
    assert summary["mean_placement"] == 4.5 and summary["games"] == 24
    assert summary["ci95"] == pytest.approx(4.302653 * 3.5 / math.sqrt(3), rel=1e-6)
    assert summary["ci95"] == pytest.approx(8.694482, rel=1e-6)
    assert (summary["top1"], summary["top4"]) == (9 / 24, 12 / 24)
    assert placement_summary(ranks[:1])["ci95"] is None  # one seed


def test_holm_adjusts_step_down_monotone_and_clipped():
    """Sorted 0.01, 0.03, 0.04, 0.2 times 4, 3, 2, 1: 0.04, 0.09, 0.08 -> 0.09 (monotone), 0.2; in their order."""
    np.testing.assert_allclose(significance.holm([0.01, 0.04, 0.03, 0.2]), [0.04, 0.09, 0.09, 0.2], rtol=1e-12)
    np.testing.assert_allclose(significance.holm([0.5, 0.3]), [0.6, 0.6])  # 2 x 0.3; 1 x 0.5 raised to 0.6
    np.testing.assert_allclose(significance.holm([0.7, 0.6]), [1.0, 1.0])  # 2 x 0.6 clipped to 1, 0.7 raised
    np.testing.assert_allclose(significance.holm([0.02]), [0.02])  # one test: nothing to correct
    np.testing.assert_allclose(significance.holm([0.01, 0.01, 0.01]), [0.03, 0.03, 0.03])  # ties
    assert significance.holm([]).shape == (0,)
    for bad in ([0.1, 1.5], [float("nan")], [[0.1]]):
        with pytest.raises(ValueError, match="p_values must be"):
            significance.holm(bad)


# ---------------------------------------------------------------- compare's settings, corrected for their number

#: per-seed placements of B minus A's (A always places 3rd) in two settings: A better by 0.5 places, raw paired
#: p = 0.033, and by 0.75, raw p = 0.048. Holm over the 2 settings: 2 x 0.033 = 0.066 for both, not < 0.05.
WORSE_BY = {"x": [0, 0, 0, 0, 1, 1, 1, 1], "y": [0, 0, 0, 0, 1, 1, 2, 2]}
A_PLACE = 3


def _two_settings(worse_by=WORSE_BY):
    """``compare_tables`` on hand-made ranks, no game played: participant 0 is A, 1 is B, 2 and 3 the two lineups'
    opponents; position 0's rank is the same in every rotation of a seed (A's 3, B's 3 + worse_by)."""
    from agents.arena import tournament

    def play(lineup):
        setting = "x" if lineup[1] == 2 else "y"
        places = A_PLACE + (np.asarray(worse_by[setting]) if lineup[0] == 1 else np.zeros(8, np.int64))
        rows = [[p] + [q for q in range(1, 9) if q != p] for p in places]  # a whole placement, position 0 at p
        return np.repeat(np.asarray(rows)[:, None, :], 8, axis=1)  # [8 seeds, 8 rotations, 8 positions]

    return tournament.compare_tables(play, 0, 1, {"x": [2] * 7, "y": [3] * 7}, head_to_head=False)


def test_compare_settings_carry_raw_and_holm_adjusted_p_values():
    settings = _two_settings()
    raw = [settings[s]["placement"]["p_value"] for s in ("vs x", "vs y")]
    assert raw == pytest.approx([stats.ttest_1samp(WORSE_BY[s], 0).pvalue for s in "xy"])
    assert raw == pytest.approx([0.033146, 0.047945], rel=1e-4)
    for name in settings:
        assert settings[name]["placement"]["p_holm"] == pytest.approx(2 * raw[0])  # 0.066, both (monotone)
    points = [settings[s]["points"]["p_value"] for s in ("vs x", "vs y")]
    assert [settings[s]["points"]["p_holm"] for s in ("vs x", "vs y")] == pytest.approx(significance.holm(points))


def test_compare_verdict_reads_holm_adjusted_p_values():
    """Raw p < 0.05 in both settings would say "A places better than B in every setting"; Holm's adjusted p (0.066)
    does not, and the verdict says so. With larger differences (raw p < 0.025 each) the claim holds."""
    from agents.arena import tournament

    verdict = tournament.comparison_verdict(_two_settings())
    assert verdict["a_better"] == [] and verdict["no_difference"] == ["vs x", "vs y"]
    assert verdict["text"].startswith("no setting shows a difference (Holm-adjusted p < 0.05, 2 settings tested)")
    assert verdict["text"].endswith("; uncorrected, p < 0.05 would say: A places better than B in every setting")

    settings = _two_settings({"x": [1, 1, 1, 1, 2, 2, 2, 2], "y": [0, 0, 0, 0, 1, 1, 2, 2]})  # raw 0.0002, 0.048
    assert settings["vs x"]["placement"]["p_value"] < 0.025 and settings["vs y"]["placement"]["p_holm"] < 0.05
    verdict = tournament.comparison_verdict(settings)
    assert verdict["a_better"] == ["vs x", "vs y"]
    assert verdict["text"] == "A places better than B in every setting (Holm-adjusted p < 0.05, 2 settings tested)"

    result = {
        "a": "A",
        "b": "B",
        "games_per_rotation": 8,
        "rank_points": [90.0, 45.0, 0.0, -135.0],
        "difference": 0.25,
        "settings": _two_settings(),
    }
    table = tournament.comparison_table(result)
    assert "p (Holm)" in table and "0.066" in table and table.splitlines()[-1].startswith("no setting shows")


def _fake_pair_comparison(placements):
    """A stand-in for ``compare_players``: pair ``(a, b)`` (spec strings naming a row of ``placements``) gets, per
    setting, the mean placements ``placements[a][setting]`` for A and ``placements[b][setting]`` for B."""
    calls = []

    def compare(spec_a, spec_b, lineups, games, seed, **options):
        calls.append((spec_a, spec_b, games, seed, options["head_to_head"]))
        settings = {}
        for name in ("vs x", "4v4"):
            a, b = placements[spec_a][name], placements[spec_b][name]
            settings[name] = {
                "placement": {"mean_a": a, "mean_b": b, "difference": a - b, "p_value": 0.5},
                "points": {"mean_a": -a, "mean_b": -b, "difference": b - a, "p_value": 0.5},
            }
        return {"a": spec_a, "b": spec_b, "settings": settings, "rank_points": [1.0, 0.0], "games_per_rotation": games}

    return compare, calls


def test_compare_over_seeds_tests_the_pairs_mean_placements_over_training_seeds():
    """Three training-seed pairs: per setting, a paired t-test over the pairs' mean placements (scipy's one-sample
    test of the differences), its t interval over the 3 seeds, Holm over the 2 settings; every pair played the
    same game seeds."""
    from agents.arena import tournament

    placements = {
        "a0": {"vs x": 3.0, "4v4": 4.0},
        "a1": {"vs x": 3.2, "4v4": 4.4},
        "a2": {"vs x": 3.1, "4v4": 4.9},
        "b0": {"vs x": 4.0, "4v4": 4.5},
        "b1": {"vs x": 4.1, "4v4": 4.2},
        "b2": {"vs x": 4.2, "4v4": 4.6},
    }
    compare, calls = _fake_pair_comparison(placements)
    result = tournament.compare_over_seeds(
        [("a0", "b0"), ("a1", "b1"), ("a2", "b2")], {"x": ["greedy"] * 7}, 16, 7, compare=compare
    )
    assert calls == [("a0", "b0", 16, 7, True), ("a1", "b1", 16, 7, True), ("a2", "b2", 16, 7, True)]
    assert result["a"] == "a0,a1,a2" and result["b"] == "b0,b1,b2" and len(result["pairs"]) == 3
    raw = []
    for name in ("vs x", "4v4"):
        setting = result["settings"][name]
        diffs = [placements[f"a{i}"][name] - placements[f"b{i}"][name] for i in range(3)]
        assert setting["per_pair_a"] == [placements[f"a{i}"][name] for i in range(3)]
        placement = setting["placement"]
        assert placement["difference"] == pytest.approx(np.mean(diffs))
        assert placement["ci95"] == pytest.approx(significance.t_interval(diffs)[1])
        assert placement["p_value"] == pytest.approx(stats.ttest_1samp(diffs, 0).pvalue)
        assert placement["df"] == 2
        raw.append(placement["p_value"])
    # vs x: differences -1.0, -0.9, -1.1 (t = -17.3, 2 df: p 0.0033, Holm 0.0066); 4v4: -0.5, +0.2, +0.3 (mean 0)
    assert raw == pytest.approx([0.0033168, 1.0], abs=1e-6)
    assert [result["settings"][n]["placement"]["p_holm"] for n in ("vs x", "4v4")] == pytest.approx(
        significance.holm(raw)
    )
    assert result["verdict"]["a_better"] == ["vs x"] and result["verdict"]["no_difference"] == ["4v4"]
    table = tournament.comparison_table(result)
    assert "3 pairs of training seeds" in table and "pairs for 0.25" in table


def test_compare_over_seeds_refuses_fewer_than_two_pairs():
    from agents.arena import tournament

    compare, _ = _fake_pair_comparison({})
    for pairs in ([], [("a", "b")], [("a", "b"), ("c",)]):
        with pytest.raises(ValueError, match="at least 2"):
            tournament.compare_over_seeds(pairs, {}, 2, compare=compare)
