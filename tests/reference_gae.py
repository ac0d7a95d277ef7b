"""Plain-numpy semi-MDP GAE, written from the definition (not from the scan).

For each seat and each decision step t: walk forward accumulating the
discounted rewards r_t, gamma r_{t+1}, ... until the episode ends (a
terminal step: bootstrap 0), the next decision t' of the seat (bootstrap
V(t'), and the lambda-return continues with A_{t'}) or the end of the
rollout (bootstrap ``last_value``). With k = t' - t:

    A_t = R_{t:t'} + gamma^k V(t') - V(t) + gamma^k lam A_{t'}
"""

from __future__ import annotations

import numpy as np


def _walk(reward, discount, decision, t):
    """From the decision at ``t``, accumulate ``reward[t], discount[t] reward[t+1], ...`` until the episode ends
    (a zero discount), the sequence ends, or the seat's next decision. Returns (ret, disc, k, how): ``disc`` the
    product of the discounts walked (0 once the episode ended), ``k`` the step where it stopped, ``how`` one of
    "episode end" (at step k), "sequence end" (k == len) or "decision" (at step k)."""
    ret, disc, k = 0.0, 1.0, t
    while True:
        ret += disc * reward[k]
        disc *= discount[k]
        if disc == 0.0:
            return ret, disc, k, "episode end"
        k += 1
        if k == len(reward):
            return ret, disc, k, "sequence end"
        if decision[k]:
            return ret, disc, k, "decision"


def _seat_gae(reward, value, terminal, decision, last_value, gamma, lam):
    """1-D float64 arrays over time for one seat -> advantages float64[T]."""
    discount = gamma * (1.0 - np.asarray(terminal, np.float64))
    adv = np.zeros(len(reward))
    for t in reversed(range(len(reward))):
        if not decision[t]:
            continue
        ret, disc, k, how = _walk(reward, discount, decision, t)
        if how == "episode end":
            bootstrap, next_adv = 0.0, 0.0
        elif how == "sequence end":
            bootstrap, next_adv = last_value, 0.0
        else:
            bootstrap, next_adv = value[k], adv[k]
        adv[t] = ret + disc * bootstrap - value[t] + lam * disc * next_adv
    return adv


def gae_reference(reward, value, terminal, decision, last_value, gamma, lam):
    """Same contract as ``agents.core.gae.gae`` on numpy arrays [T, ...]; returns float64 (advantages, targets)."""
    reward = np.asarray(reward, np.float64)
    value = np.asarray(value, np.float64)
    terminal = np.asarray(terminal, bool)
    decision = np.asarray(decision, bool)
    last_value = np.broadcast_to(np.asarray(last_value, np.float64), value.shape[1:])
    adv = np.zeros_like(value)
    for idx in np.ndindex(*value.shape[1:]):
        col = (slice(None), *idx)
        adv[col] = _seat_gae(
            reward[col], value[col], terminal[col], decision[col], float(last_value[idx]), float(gamma), float(lam)
        )
    targets = np.where(decision, adv + value, 0.0)
    return adv, targets


def split_rollouts_reference(reward, value, discount, decision, cut, end_value, end_decision, lam):
    """Which update trains each decision of a sequence cut into two rollouts at ``cut``, and its advantage,
    written from the definition (docs/training.md, "Rollout edges") for ONE seat (1-D float64 arrays over
    the joined time axis, ``discount[t] = gamma (1 - terminal[t])``; the state after the last step has value
    ``end_value`` and is a decision iff ``end_decision``).

    A decision t is trained by the first rollout whose data shows how it continues: its episode's end (a
    zero discount at a step j >= t: the rollout holding j), or its next decision state t' (rollout 0 if
    t' <= cut, the state after rollout 0 being shown to it; else rollout 1), or, with no next decision in
    the sequence, rollout 1 if ``end_decision`` else no rollout (it stays open: -1). Its advantage is the
    discounted rewards up to t' (or to the episode's end), plus the discounted V(t') (``end_value`` at the
    end), minus V(t), plus discount x lam x A(t') when t' is trained by the same rollout as t.

    Returns (rollout int[T], advantage float64[T]); rollout is -2 on non-decisions."""
    horizon = len(reward)
    rollout = np.full(horizon, -2)
    adv = np.zeros(horizon)
    for t in reversed(range(horizon)):
        if not decision[t]:
            continue
        ret, disc, k, how = _walk(reward, discount, decision, t)
        if how == "episode end":
            rollout[t], bootstrap, nxt = (0 if k < cut else 1), 0.0, None
        elif how == "sequence end":
            rollout[t], bootstrap, nxt = (1 if end_decision else -1), end_value, None
        else:
            rollout[t], bootstrap, nxt = (0 if k <= cut else 1), value[k], k
        chained = lam * disc * adv[nxt] if nxt is not None and rollout[nxt] == rollout[t] else 0.0
        adv[t] = ret + disc * bootstrap - value[t] + chained
    return rollout, adv
