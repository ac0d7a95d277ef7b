"""Generalised advantage estimation for multi-seat rollouts with non-decision steps.

Time ``t`` is the step at which an action was taken; ``reward[t]`` is the
reward received after it; ``terminal[t]`` means no bootstrapping past step
``t`` for that seat (its episode ended there: game over, or the seat was
eliminated / finished); ``decision[t]`` means the seat had more than one
legal action at step ``t``. Steps that are not decisions are pass-throughs:
they get no advantage and their rewards flow into the previous decision.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def gae(reward, value, terminal, decision, last_value, gamma, lam) -> tuple[jax.Array, jax.Array]:
    """Semi-MDP GAE computed by one reverse ``lax.scan`` over time.

    Args:
      reward, value: float32[T, ...]; the trailing dims are any batch dims (e.g. [N, P]).
      terminal, decision: bool[T, ...].
      last_value: float32[...], the value of the state after step T-1.
      gamma, lam: Python floats or traced float32 scalars (vmap-able).

    Returns:
      (advantages, targets), both float32[T, ...]; both are 0 on non-decision
      steps, and ``targets = advantages + value`` on decision steps.

    For a decision at ``t`` whose next decision of the same seat in the same
    episode is at ``t' = t + k``::

        delta_t = r_t + gamma r_{t+1} + ... + gamma^{k-1} r_{t'-1} + gamma^k V(t') - V(t)
        A_t     = delta_t + gamma^k lam A_{t'}

    i.e. lambda applies once per decision while rewards of the non-decision
    steps in between are accumulated with per-step discounting. A terminal
    at any step in ``[t, t')`` cuts both the bootstrap and the ``A_{t'}``
    term; with no later decision in the rollout, ``last_value`` (discounted
    by ``gamma^{T-t}``) is the bootstrap and the ``A`` term is 0.

    Implementation: a bootstrap value ``B`` and carried advantage ``C`` run
    backwards from ``B_T = last_value, C_T = 0`` with
    ``nb = gamma (1 - terminal[t])``; a decision sets ``B_t = V(t)``,
    ``C_t = A_t``; a non-decision sets ``B_t = r_t + nb B_{t+1}``,
    ``C_t = nb C_{t+1}``.
    """
    reward = jnp.asarray(reward, jnp.float32)
    value = jnp.asarray(value, jnp.float32)
    terminal = jnp.asarray(terminal, bool)
    decision = jnp.asarray(decision, bool)
    last_value = jnp.broadcast_to(jnp.asarray(last_value, jnp.float32), value.shape[1:])
    gamma = jnp.asarray(gamma, jnp.float32)
    lam = jnp.asarray(lam, jnp.float32)

    def step(carry, xs):
        boot_next, carried_next = carry
        r, v, term, dec = xs
        nb = gamma * (1.0 - term.astype(jnp.float32))
        passed = r + nb * boot_next
        adv = passed - v + nb * lam * carried_next
        boot = jnp.where(dec, v, passed)
        carried = jnp.where(dec, adv, nb * carried_next)
        return (boot, carried), jnp.where(dec, adv, 0.0)

    init = (last_value, jnp.zeros_like(last_value))
    _, advantages = jax.lax.scan(step, init, (reward, value, terminal, decision), reverse=True)
    targets = jnp.where(decision, advantages + value, 0.0)
    return advantages, targets
