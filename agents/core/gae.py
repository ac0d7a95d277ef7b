"""Generalised advantage estimation for multi-seat rollouts with non-decision steps.

Time ``t`` is the step at which an action was taken; ``reward[t]`` is the
reward received after it; ``terminal[t]`` means no bootstrapping past step
``t`` for that seat (its episode ended there: game over, or the seat was
eliminated / finished); ``decision[t]`` means the seat had more than one
legal action at step ``t``. Steps that are not decisions are pass-throughs:
they get no advantage and their rewards flow into the previous decision.

Two entry points, one scan:

- ``gae``: the textbook truncation, every seat bootstraps from ``last_value``
  at the end of the rollout;
- ``semi_mdp_gae``: what PPO uses on the game. A seat whose state after the
  rollout is not a decision of its own (its turn ended, it waits for the
  fight) has no value there worth bootstrapping from (the critic never trains
  on such states): its last decision is left *open* (not trained now) and
  carried to the next rollout with the discounted rewards collected since
  (``open_return``) and their discount (``open_discount``); the next rollout
  puts it back on its first row (``agents.algorithms.ppo``), where it collects the
  rewards that arrive before the seat decides again and bootstraps from that
  decision's value. So every reward lands in exactly one decision's target,
  and every bootstrap is the value of a decision state.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp


class SemiMDPGAE(NamedTuple):
    """``semi_mdp_gae``'s result; arrays [T, ...] of the inputs' shape."""

    advantages: jax.Array  # float32: 0 where not ``trained``
    targets: jax.Array  # float32: advantages + value where ``trained``, else 0
    trained: jax.Array  # bool: a decision whose target is complete (decision & ~open)
    open: jax.Array  # bool: a decision whose next decision is not in this rollout (at most one per seat)
    open_return: jax.Array  # float32: at open steps, the discounted rewards from that step to the rollout's end
    open_discount: jax.Array  # float32: at open steps, the product of the discounts from that step to the end


def semi_mdp_gae(reward, value, discount, decision, end_value, end_decision, lam) -> SemiMDPGAE:
    """Semi-MDP GAE by one reverse ``lax.scan`` over time.

    Args:
      reward, value: float32[T, ...]; the trailing dims are any batch dims (e.g. [N, P]).
      discount: float32[T, ...], what multiplies everything after step t: ``gamma (1 - terminal[t])``, or for
        a decision carried in from an earlier rollout the product of the discounts since it was taken.
      decision: bool[T, ...].
      end_value: float32[...], the value of the state after step T-1.
      end_decision: bool[...], whether that state is a decision of the seat (only then is ``end_value``
        used: as the bootstrap of the seat's last decision, whose lambda-chain it cuts).
      lam: Python float or traced float32 scalar.

    For a decision at ``t`` whose next decision of the same seat in the same episode is at ``t' = t + k``
    (``d_j`` the discount of step j)::

        delta_t = r_t + d_t r_{t+1} + ... + (d_t...d_{t'-2}) r_{t'-1} + (d_t...d_{t'-1}) V(t') - V(t)
        A_t     = delta_t + (d_t...d_{t'-1}) lam A_{t'}

    i.e. lambda applies once per decision while rewards of the non-decision steps in between are
    accumulated with per-step discounting. A zero discount (terminal) in ``[t, t')`` cuts the bootstrap and
    the ``A_{t'}`` term. A decision whose next decision lies beyond the rollout is open unless its episode
    ends first or ``end_decision`` (then ``t'`` is the state after the rollout: bootstrap ``end_value``, no
    ``A`` term). An open decision is the bootstrap of the decisions before it (``V(t)``, no ``A`` term):
    lambda-chains end at a rollout's last trained decision, as in every truncated GAE.

    Implementation: a bootstrap ``B``, a carried advantage ``C``, ``reach`` (no decision and no terminal
    from here to the end, and the end is not a decision) and the discount ``tail`` to the end run backwards
    from ``B = end_value if end_decision else 0``, ``C = 0``, ``reach = ~end_decision``, ``tail = 1``.
    """
    reward = jnp.asarray(reward, jnp.float32)
    value = jnp.asarray(value, jnp.float32)
    discount = jnp.asarray(discount, jnp.float32)
    decision = jnp.asarray(decision, bool)
    end_decision = jnp.broadcast_to(jnp.asarray(end_decision, bool), value.shape[1:])
    end_value = jnp.broadcast_to(jnp.asarray(end_value, jnp.float32), value.shape[1:])
    lam = jnp.asarray(lam, jnp.float32)

    def step(carry, xs):
        boot_next, carried_next, reach_next, tail_next = carry
        r, v, d, dec = xs
        passed = r + d * boot_next
        adv = passed - v + d * lam * carried_next
        is_open = dec & reach_next & (d > 0)
        boot = jnp.where(dec, v, passed)
        carried = jnp.where(dec, jnp.where(is_open, 0.0, adv), d * carried_next)
        reach = reach_next & ~dec & (d > 0)
        tail = d * tail_next
        return (boot, carried, reach, tail), (jnp.where(dec & ~is_open, adv, 0.0), is_open, passed, tail)

    init = (jnp.where(end_decision, end_value, 0.0), jnp.zeros_like(end_value), ~end_decision, jnp.ones_like(end_value))
    _, (advantages, is_open, passed, tail) = jax.lax.scan(step, init, (reward, value, discount, decision), reverse=True)
    trained = decision & ~is_open
    return SemiMDPGAE(
        advantages=advantages,
        targets=jnp.where(trained, advantages + value, 0.0),
        trained=trained,
        open=is_open,
        open_return=jnp.where(is_open, passed, 0.0),
        open_discount=jnp.where(is_open, tail, 0.0),
    )


def gae(reward, value, terminal, decision, last_value, gamma, lam) -> tuple[jax.Array, jax.Array]:
    """Semi-MDP GAE truncated at the rollout's end with ``last_value`` for every seat.

    Args:
      reward, value: float32[T, ...]; the trailing dims are any batch dims (e.g. [N, P]).
      terminal, decision: bool[T, ...].
      last_value: float32[...], the value of the state after step T-1.
      gamma, lam: Python floats or traced float32 scalars (vmap-able).

    Returns:
      (advantages, targets), both float32[T, ...]; both are 0 on non-decision
      steps, and ``targets = advantages + value`` on decision steps. With no
      later decision in the rollout, ``last_value`` (discounted by ``gamma^{T-t}``)
      is the bootstrap and the ``A`` term is 0 (``semi_mdp_gae`` with
      ``discount = gamma (1 - terminal)`` and every ``end_decision`` true).
    """
    discount = jnp.asarray(gamma, jnp.float32) * (1.0 - jnp.asarray(terminal, jnp.float32))
    result = semi_mdp_gae(reward, value, discount, decision, last_value, True, lam)
    return result.advantages, result.targets
