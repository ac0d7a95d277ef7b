"""Is one player better than another? Tests on per-game results, the games a difference needs, rank points.

The unit of a seat-rotated table (``agents.arena.tables``) is the *game seed*: its 8 rotations share the deal, so
they are not independent draws, while different seeds are. A player's result for a seed is its mean over
the seats it held in the seed's 8 rotations (a placement 1..8, or rank points). Two players' results are
*paired* when they come from the same seeds (the same table, or the same lineup and seeds with one player
swapped for the other: duplicate games); then the paired t-test on the per-seed differences removes the
luck of the deal. Otherwise Welch's t-test compares them (unequal variances).

    result = compare(a, b, paired=True)      # a, b: float[S] per-seed mean placements (or points)
    result["p_value"], result["difference"]  # two-sided; difference = mean(a) - mean(b)
    games_needed(sd=1.2, difference=0.25)    # seeds for a paired test to detect 0.25 places (alpha .05, power .8)
    rank_points(ranks)                       # float[...]: points of places 1..8 from the [90, 45, 0, -135] table
    t_interval([3.1, 2.8, 3.4])              # (mean, 95% half-width over the values, None for one value)
    holm([0.01, 0.04, 0.03, 0.2])            # [0.04, 0.09, 0.09, 0.2]: Holm-adjusted, for claims over several tests

The p-values come from ``scipy.stats`` (``ttest_rel``, ``ttest_ind(equal_var=False)``); the sample size is the
usual normal approximation refined with t quantiles (G*Power's numbers for a paired test with effect size
d = 0.5: 34 pairs; two groups: 64 each). An interval over a handful of seeds takes the t quantile of their count
(``t_interval``: 3.18 standard errors for 4 seeds, not the normal's 1.96). A claim over several tests at once (A
is better in every setting) reads Holm's adjusted p-values (``holm``), which keep the chance of any false claim
in the family at the level.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from jaxgame import constants as C

#: Points per place for four players, as the design's ranking scores them; ``rank_points`` spreads a table of K
#: entries over the 8 places (each entry covers 8 / K places: here 1-2, 3-4, 5-6, 7-8).
DEFAULT_RANK_POINTS = (90.0, 45.0, 0.0, -135.0)
#: The smallest difference of mean placement the evaluation reports a sample size for, by default.
DEFAULT_DIFFERENCE = 0.25


def check_rank_points(table) -> tuple[float, ...]:
    """``table`` as a tuple of floats; ``ValueError`` unless it has 1, 2, 4 or 8 finite entries."""
    values = tuple(float(v) for v in table)
    if len(values) not in (1, 2, 4, 8) or not all(math.isfinite(v) for v in values):
        raise ValueError(
            f"a rank-points table needs 1, 2, 4 or 8 finite values (each covering 8 / K places), got {list(table)}"
        )
    return values


def rank_points(ranks, table=DEFAULT_RANK_POINTS) -> np.ndarray:
    """float64 array like ``ranks`` (ints 1..8, any shape): the points of each place, ``table[(rank - 1) * K // 8]``
    for a table of K entries. A rank outside 1..8 (an unfinished game's 0) is a ``ValueError``."""
    values = np.asarray(check_rank_points(table))
    ranks = np.asarray(ranks)
    if ranks.size and not ((ranks >= 1) & (ranks <= C.NUM_PLAYERS)).all():
        raise ValueError(f"rank points need finished games with ranks 1..{C.NUM_PLAYERS}, got {np.unique(ranks)}")
    return values[(ranks.astype(np.int64) - 1) * len(values) // C.NUM_PLAYERS]


def _as_results(x, name: str) -> np.ndarray:
    x = np.asarray(x, np.float64)
    if x.ndim != 1 or x.size < 2 or not np.isfinite(x).all():
        raise ValueError(f"{name} must be a 1-d array of at least 2 finite per-seed results, got shape {x.shape}")
    return x


def compare(a, b, paired: bool, alpha: float = 0.05) -> dict:
    """Two-sided test of mean(a) == mean(b) from per-seed results ``a`` float[S_a] and ``b`` float[S_b].

    ``paired``: ``a[i]`` and ``b[i]`` come from the same seed (needs S_a == S_b): the paired t-test on
    ``a - b``; else Welch's t-test. Returns ``{"test", "seeds_a", "seeds_b", "mean_a", "mean_b", "difference"
    (mean_a - mean_b), "ci95" (half-width of the difference's interval at 1 - alpha), "t", "df", "p_value",
    "sd"}``, where ``sd`` is the standard deviation the test works with (of the differences when paired, else
    the pooled sqrt((var_a + var_b) / 2)), what ``games_needed`` takes. When the results do not vary at all the
    p-value is 1 for equal means and 0 otherwise (scipy's is undefined there).
    """
    a, b = _as_results(a, "a"), _as_results(b, "b")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    difference = float(a.mean() - b.mean())
    if paired:
        if a.shape != b.shape:
            raise ValueError(f"paired results need as many seeds on each side, got {a.size} and {b.size}")
        sd = float((a - b).std(ddof=1))
        se = sd / math.sqrt(a.size)
        test, df = "paired t-test", float(a.size - 1)
    else:
        se = float(math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size))
        sd = float(math.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2))
        test, df = "Welch's t-test", float(a.size + b.size - 2)  # scipy's Welch-Satterthwaite df replaces it below
    if se <= 1e-12 * max(1.0, abs(float(a.mean())), abs(float(b.mean()))):  # no spread (up to rounding)
        t = 0.0 if difference == 0.0 else math.copysign(math.inf, difference)
        p, half = (1.0 if difference == 0.0 else 0.0), 0.0
    else:
        result = stats.ttest_rel(a, b) if paired else stats.ttest_ind(a, b, equal_var=False)
        t, p, df = float(result.statistic), float(result.pvalue), float(result.df)
        interval = result.confidence_interval(1 - alpha)
        half = float(interval.high - interval.low) / 2
    return {
        "test": test,
        "seeds_a": int(a.size),
        "seeds_b": int(b.size),
        "mean_a": float(a.mean()),
        "mean_b": float(b.mean()),
        "difference": difference,
        "ci95": half,
        "t": t,
        "df": df,
        "p_value": p,
        "sd": sd,
    }


def t_interval(values, confidence: float = 0.95) -> tuple[float, float | None]:
    """``(mean, half_width)`` of the ``confidence`` interval of the mean of ``values`` (1-d, finite floats: one
    result per independent seed): ``t.ppf((1 + confidence) / 2, n - 1) * sd / sqrt(n)`` with the sample standard
    deviation (ddof 1). The half-width is None for one value (no spread to measure) and 0 when the values do not
    vary. ``ValueError`` for no values, non-finite ones or ``confidence`` outside (0, 1)."""
    x = np.asarray(values, np.float64)
    if x.ndim != 1 or x.size == 0 or not np.isfinite(x).all():
        raise ValueError(f"values must be a 1-d array of at least 1 finite value, got shape {x.shape}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if x.size == 1:
        return float(x[0]), None
    quantile = float(stats.t.ppf((1 + confidence) / 2, x.size - 1))
    return float(x.mean()), quantile * float(x.std(ddof=1)) / math.sqrt(x.size)


def holm(p_values) -> np.ndarray:
    """float64[m]: Holm's step-down adjusted p-values of ``p_values`` (m p-values in [0, 1], in their order).

    Sorted ascending, the i-th smallest (i = 1..m) becomes ``(m - i + 1) * p_(i)``, raised to the largest
    adjusted value before it (adjusted p-values are monotone in the raw ones) and clipped to 1. Rejecting every
    test whose adjusted p is below alpha keeps the chance of one or more false rejections in the family at most
    alpha (Holm 1979). ``ValueError`` for a value outside [0, 1] or not 1-d."""
    p = np.asarray(p_values, np.float64)
    if p.ndim != 1 or not (np.isfinite(p).all() and ((p >= 0) & (p <= 1)).all()):
        raise ValueError(f"p_values must be a 1-d array of p-values in [0, 1], got {p_values!r}")
    order = np.argsort(p, kind="stable")
    scaled = (p.size - np.arange(p.size)) * p[order]
    adjusted = np.empty_like(p)
    adjusted[order] = np.minimum(np.maximum.accumulate(scaled), 1.0)
    return adjusted


def games_needed(
    sd: float, difference: float = DEFAULT_DIFFERENCE, paired: bool = True, alpha: float = 0.05, power: float = 0.8
) -> int | None:
    """Seeds (per side when not ``paired``) for a two-sided t-test at level ``alpha`` to detect a true
    difference of ``difference`` with probability ``power``, when the results' standard deviation is ``sd``
    (``compare``'s). None when ``sd`` is 0 (any number of seeds shows a difference that exists)."""
    if not (difference > 0 and math.isfinite(difference)):
        raise ValueError(f"difference must be a positive number, got {difference}")
    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError(f"alpha and power must be in (0, 1), got {alpha}, {power}")
    if not sd >= 0:
        raise ValueError(f"sd must be >= 0, got {sd}")
    if sd == 0:
        return None
    spread = sd**2 * (1 if paired else 2)  # the variance of one pair's difference / of a difference of two means

    def n_for(z_alpha, z_power):
        return spread * (z_alpha + z_power) ** 2 / difference**2

    n = n_for(stats.norm.ppf(1 - alpha / 2), stats.norm.ppf(power))
    for _ in range(20):  # t quantiles at the degrees of freedom of the last estimate, to a fixed point
        df = max(n - 1 if paired else 2 * n - 2, 1.0)
        refined = n_for(stats.t.ppf(1 - alpha / 2, df), stats.t.ppf(power, df))
        if math.ceil(refined) == math.ceil(n):
            break
        n = refined
    return max(2, math.ceil(n))


__all__ = [
    "DEFAULT_DIFFERENCE",
    "DEFAULT_RANK_POINTS",
    "check_rank_points",
    "compare",
    "games_needed",
    "holm",
    "rank_points",
    "t_interval",
]
