"""Plackett-Luce strengths fitted to full placements by maximum a posteriori (numpy; no JAX, no files).

A game is an *order*: the participants from first place to last. Under the Plackett-Luce model each place
is won by one of the participants still in the game with probability proportional to ``exp(strength)``, so a
game's log-likelihood is ``sum_k [s[o_k] - log sum_{j >= k} exp(s[o_j])]`` over its places ``k``. Strengths
(float64, log-strength units) get a Gaussian prior ``N(0, prior_sd**2)``, which keeps a participant that wins
or loses every game finite (its strength is then set by the prior: a bound, not a measurement).

    strengths = fit(orders, num_players=10)                       # orders int[G, n]: indices, best first
    s, replicates = fit_one(orders_with_candidate, strengths, candidate=10, seeds=seed_of_game, draws=2000)

``fit`` fits every participant jointly; ``fit_one`` fits one participant against fixed strengths (the ladder's
frozen population), with bootstrap replicates over game seeds for its interval.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize

#: The default prior's standard deviation, in log-strength units (the ladder's; docs/evaluation.md).
PRIOR_SD = 4.0


def check_orders(orders, num_players: int) -> np.ndarray:
    """``orders`` as int64[G, n] (n >= 2 places); ``ValueError`` unless every entry is in ``[0, num_players)``
    and no participant appears twice in a game."""
    orders = np.asarray(orders)
    if orders.ndim != 2 or orders.shape[1] < 2 or not np.issubdtype(orders.dtype, np.integer):
        raise ValueError(f"orders must be ints of shape [games, places >= 2], got {orders.dtype} {orders.shape}")
    if orders.size and (orders.min() < 0 or orders.max() >= num_players):
        raise ValueError(f"orders must name participants 0..{num_players - 1}, got {orders.min()}..{orders.max()}")
    sorted_rows = np.sort(orders, axis=1)
    if (sorted_rows[:, 1:] == sorted_rows[:, :-1]).any():
        raise ValueError("a participant appears twice in one game's order")
    return orders.astype(np.int64)


def orders_from_ranks(participants, ranks) -> np.ndarray:
    """int[G, n] orders from ``participants`` int[G, n] (who held each position) and their ``ranks`` int[G, n]
    (1 = first; distinct within a game, as the game's placements are)."""
    participants, ranks = np.asarray(participants), np.asarray(ranks)
    if participants.shape != ranks.shape:
        raise ValueError(f"participants {participants.shape} and ranks {ranks.shape} must have one shape")
    by_place = np.argsort(ranks, axis=1, kind="stable")
    return np.take_along_axis(participants, by_place, axis=1)


def log_likelihood(strengths, orders, weights=None) -> float:
    """The (weighted) Plackett-Luce log-likelihood of ``orders`` int[G, n] under ``strengths`` float[P]."""
    return float(_objective(np.asarray(strengths, np.float64), np.asarray(orders), weights, None)[0])


def _objective(strengths, orders, weights, prior_sd):
    """(log posterior, its gradient float[P]) of ``strengths``; ``prior_sd`` None: the log-likelihood alone."""
    s = strengths[orders]  # [G, n]
    top = s.max(axis=1, keepdims=True)
    e = np.exp(s - top)
    remaining = np.cumsum(e[:, ::-1], axis=1)[:, ::-1]  # [G, n]: sum over places j >= k
    last = orders.shape[1] - 1
    log_den = np.log(remaining[:, :last]) + top  # place k = 0 .. n-2 (the last place is certain)
    per_game = (s[:, :last] - log_den).sum(axis=1)
    inv = np.cumsum(1.0 / remaining[:, :last], axis=1)  # [G, n-1]: sum_{k <= j} 1 / remaining_k
    inv = np.concatenate([inv, inv[:, -1:]], axis=1)  # the last place's sum runs over every k <= n-2
    grad_s = -e * inv
    grad_s[:, :last] += 1.0
    w = np.ones(len(orders)) if weights is None else np.asarray(weights, np.float64)
    value = float(w @ per_game)
    grad = np.bincount(orders.ravel(), weights=(grad_s * w[:, None]).ravel(), minlength=strengths.size)
    if prior_sd is not None:
        value -= float((strengths**2).sum()) / (2 * prior_sd**2)
        grad = grad - strengths / prior_sd**2
    return value, grad


def fit(orders, num_players: int, weights=None, prior_sd: float = PRIOR_SD, init=None) -> np.ndarray:
    """float64[num_players]: the maximum-a-posteriori strengths of ``orders`` int[G, n] (participant indices,
    best first), each game weighted by ``weights`` float[G] (default 1). A participant in no game gets 0."""
    if not prior_sd > 0:
        raise ValueError(f"prior_sd must be > 0, got {prior_sd}")
    orders = check_orders(orders, num_players)
    x0 = np.zeros(num_players) if init is None else np.asarray(init, np.float64)

    def negative(x):
        value, grad = _objective(x, orders, weights, prior_sd)
        return -value, -grad

    result = optimize.minimize(negative, x0, jac=True, method="L-BFGS-B", options={"maxiter": 1000, "gtol": 1e-9})
    if not result.success and np.abs(result.jac).max() > 1e-4:
        raise RuntimeError(f"the Plackett-Luce fit did not converge: {result.message}")
    return result.x


def bootstrap(
    orders, num_players: int, groups, draws: int, rng: np.random.Generator, prior_sd: float = PRIOR_SD, init=None
) -> np.ndarray:
    """float64[draws, num_players]: ``fit`` of ``draws`` resamples of the ``groups`` int[G] (a game's group: its
    lineup, whose rotations are resampled together), for percentile intervals."""
    groups = np.asarray(groups)
    names, index = np.unique(groups, return_inverse=True)
    out = np.empty((draws, num_players))
    for d in range(draws):
        counts = np.bincount(rng.integers(0, len(names), len(names)), minlength=len(names))
        out[d] = fit(orders, num_players, counts[index].astype(np.float64), prior_sd, init)
    return out


def _candidate_terms(orders, strengths, candidate: int):
    """Per game, what the candidate's likelihood needs: ``wins`` float[G] (1 unless it placed last) and ``others``
    float[G, n-1]: at each place k <= its own, the exp-strength of the others still in the game (NaN after)."""
    strengths = np.asarray(strengths, np.float64)
    is_candidate = orders == candidate
    if (is_candidate.sum(axis=1) != 1).any():
        raise ValueError(f"the candidate {candidate} must hold exactly one place of every game")
    position = is_candidate.argmax(axis=1)
    padded = np.append(strengths, -np.inf)  # the candidate's own entry contributes exp(-inf) = 0
    e = np.exp(padded[np.where(is_candidate, len(strengths), orders)])
    remaining = np.cumsum(e[:, ::-1], axis=1)[:, ::-1][:, :-1]  # [G, n-1]
    places = np.arange(orders.shape[1] - 1)
    active = places[None, :] <= position[:, None]
    wins = (position < orders.shape[1] - 1).astype(np.float64)
    return wins, np.where(active, remaining, np.nan)


def fit_one(
    orders,
    strengths,
    candidate: int,
    seeds=None,
    draws: int = 0,
    rng: np.random.Generator | None = None,
    prior_sd: float = PRIOR_SD,
) -> tuple[float, np.ndarray]:
    """``(strength, replicates float64[draws])``: the MAP strength of participant ``candidate`` (an index
    ``>= len(strengths)``, in every game of ``orders`` int[G, n]) with the others' ``strengths`` fixed, and its
    bootstrap over ``seeds`` int[G] (each game's seed: a seed's rotations are resampled together)."""
    if not prior_sd > 0:
        raise ValueError(f"prior_sd must be > 0, got {prior_sd}")
    strengths = np.asarray(strengths, np.float64)
    orders = check_orders(orders, max(len(strengths), candidate + 1))
    if candidate < len(strengths):
        raise ValueError(f"candidate {candidate} must be past the {len(strengths)} fixed strengths")
    wins, others = _candidate_terms(orders, strengths, candidate)
    seeds = np.arange(len(orders)) if seeds is None else np.asarray(seeds)
    names, index = np.unique(seeds, return_inverse=True)
    weights = [np.ones(len(orders))]
    if draws:
        rng = rng or np.random.default_rng(0)
        counts = np.stack(
            [np.bincount(rng.integers(0, len(names), len(names)), minlength=len(names)) for _ in range(draws)]
        )
        weights.append(counts[:, index].astype(np.float64))
    w = np.vstack(weights)  # [1 + draws, G]
    x = np.zeros(len(w))
    for _ in range(100):  # Newton's method on a strictly concave function of one variable per row
        ex = np.exp(x)[:, None, None]
        share = ex / (others[None] + ex)  # [R, G, n-1], NaN where the candidate had placed
        grad = w @ wins - np.einsum("rg,rgk->r", w, np.nan_to_num(share)) - x / prior_sd**2
        hess = -np.einsum("rg,rgk->r", w, np.nan_to_num(share * (1 - share))) - 1 / prior_sd**2
        step = np.clip(-grad / hess, -2.0, 2.0)
        x = x + step
        if np.abs(step).max() < 1e-10:
            break
    return float(x[0]), x[1:]


__all__ = ["PRIOR_SD", "bootstrap", "check_orders", "fit", "fit_one", "log_likelihood", "orders_from_ranks"]
