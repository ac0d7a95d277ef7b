"""PPO and A2C losses over flattened, weighted minibatches.

Per-sample arrays share one leading shape [B]. ``weight`` float32[B] is 1 for
decision samples and 0 for non-decision ones; every mean is the weighted
mean ``sum(w x) / max(sum(w), 1)``, and samples with weight 0 have no effect
on the losses, the metrics or the gradients (whatever their values).
In ``ppo_loss``, ``weighted_mean`` and ``explained_variance``, ``weight=None``
means every sample weighs 1 (plain means; PPO passes it when every sample is a
decision, e.g. on gymnax envs), and ``mask=None`` that every action is legal
(``agents.core.distributions``).
Coefficients may be Python floats or traced scalars.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from agents.core import distributions


def _keep(x: jax.Array, weight: jax.Array) -> jax.Array:
    """x with weight-0 entries replaced by 0 (so non-finite junk there cannot leak); x itself for None."""
    if weight is None:
        return x
    return jnp.where(weight > 0, x, jnp.zeros_like(x))


def weighted_mean(x: jax.Array, weight: jax.Array) -> jax.Array:
    """float32[]: ``sum(w x) / max(sum(w), 1)`` over all entries of x, weight float32[B] (None: the mean)."""
    x = jnp.asarray(x, jnp.float32)
    if weight is None:
        return jnp.mean(x)
    weight = jnp.asarray(weight, jnp.float32)
    return jnp.sum(_keep(weight * x, weight)) / jnp.maximum(jnp.sum(weight), 1.0)


#: added to the advantages' std before dividing (``ppo_loss``, ``a2c_loss`` and the streaming A2C's update)
NORMALIZE_EPS = 1e-8


def weighted_std(x: jax.Array, weight: jax.Array) -> jax.Array:
    """float32[]: the standard deviation of x about its ``weighted_mean``, weighted the same way (None: plain)."""
    return jnp.sqrt(weighted_mean(jnp.square(x - weighted_mean(x, weight)), weight))


def _normalize(advantages: jax.Array, weight: jax.Array) -> jax.Array:
    mean = weighted_mean(advantages, weight)
    return _keep((advantages - mean) / (weighted_std(advantages, weight) + NORMALIZE_EPS), weight)


def ppo_loss(
    new_logits,
    new_value,
    mask,
    actions,
    old_log_prob,
    old_value,
    advantages,
    targets,
    weight,
    clip_eps,
    vf_coef,
    ent_coef,
    clip_value: bool,
    normalize_advantages: bool,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Clipped PPO loss.

    Args:
      new_logits: float32[B, A]; new_value: float32[B]; mask: bool[B, A];
      actions: int32[B]; old_log_prob, old_value, advantages, targets,
      weight: float32[B]. ``clip_value`` and ``normalize_advantages`` are
      static Python bools.

    Returns:
      (total float32[], metrics) where ``total = policy_loss + vf_coef *
      value_loss - ent_coef * entropy`` and metrics holds float32[] scalars
      "policy_loss", "value_loss", "entropy", "approx_kl", "clip_frac".

    Advantage normalisation (per minibatch) uses the weighted mean and std of
    decision samples only. With ``clip_value`` the value loss is the PPO2
    ``0.5 max((v - t)^2, (old_v + clip(v - old_v, -eps, eps) - t)^2)``.
    """
    weight = None if weight is None else jnp.asarray(weight, jnp.float32)
    advantages = _keep(jnp.asarray(advantages, jnp.float32), weight)
    if normalize_advantages:
        advantages = _normalize(advantages, weight)
    new_log_prob = distributions.log_prob(new_logits, mask, actions)
    log_ratio = _keep(new_log_prob - old_log_prob, weight)
    ratio = jnp.exp(log_ratio)
    clipped_ratio = jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps)
    policy_loss = weighted_mean(-jnp.minimum(ratio * advantages, clipped_ratio * advantages), weight)

    new_value = _keep(jnp.asarray(new_value, jnp.float32), weight)
    targets = _keep(jnp.asarray(targets, jnp.float32), weight)
    value_err = jnp.square(new_value - targets)
    if clip_value:
        old_value = _keep(jnp.asarray(old_value, jnp.float32), weight)
        clipped_value = old_value + jnp.clip(new_value - old_value, -clip_eps, clip_eps)
        value_err = jnp.maximum(value_err, jnp.square(clipped_value - targets))
    value_loss = weighted_mean(0.5 * value_err, weight)

    ent = weighted_mean(distributions.entropy(new_logits, mask), weight)
    total = policy_loss + vf_coef * value_loss - ent_coef * ent
    metrics = {
        "policy_loss": policy_loss,
        "value_loss": value_loss,
        "entropy": ent,
        "approx_kl": weighted_mean((ratio - 1.0) - log_ratio, weight),
        "clip_frac": weighted_mean((jnp.abs(ratio - 1.0) > clip_eps).astype(jnp.float32), weight),
    }
    return total, metrics


def a2c_sums(logits, value, mask, actions, advantages, targets, weight) -> dict[str, jax.Array]:
    """The weighted sums an advantage actor-critic loss is made of (float32[] each; shapes as ``a2c_loss``):
    "adv_nlp" ``sum w (-log_prob) sg(adv)``, "nlp" ``sum w (-log_prob)``, "value_sq" ``sum w 0.5 (v -
    sg(target))^2`` and "entropy" ``sum w H``. ``a2c_loss`` divides them by ``max(sum w, 1)``; the streaming
    A2C (agents/algorithms/a2c.py) adds them up over an update's steps first."""
    weight = jnp.asarray(weight, jnp.float32)
    advantages = jax.lax.stop_gradient(_keep(jnp.asarray(advantages, jnp.float32), weight))
    targets = jax.lax.stop_gradient(_keep(jnp.asarray(targets, jnp.float32), weight))
    nlp = -_keep(distributions.log_prob(logits, mask, actions), weight)
    value = _keep(jnp.asarray(value, jnp.float32), weight)

    def total(x):
        return jnp.sum(_keep(weight * x, weight))

    return {
        "adv_nlp": total(nlp * advantages),
        "nlp": total(nlp),
        "value_sq": total(0.5 * jnp.square(value - targets)),
        "entropy": total(distributions.entropy(logits, mask)),
    }


def a2c_loss(
    logits, value, mask, actions, advantages, targets, weight, vf_coef, ent_coef, normalize_advantages=False
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Advantage actor-critic loss (e.g. streaming TD(0) targets).

    Args:
      logits: float32[B, A]; value: float32[B]; mask: bool[B, A];
      actions: int32[B]; advantages, targets, weight: float32[B];
      normalize_advantages: static bool, advantages normalised as in ``ppo_loss``.

    Returns:
      (total float32[], metrics "policy_loss", "value_loss", "entropy") with
      ``policy_loss = mean(-log_prob * sg(adv))``, ``value_loss =
      mean(0.5 (v - sg(target))^2)``; no gradient flows through
      ``advantages`` or ``targets``. The means are ``a2c_sums`` over ``max(sum w, 1)``.
    """
    weight = jnp.asarray(weight, jnp.float32)
    if normalize_advantages:
        advantages = _normalize(jax.lax.stop_gradient(jnp.asarray(advantages, jnp.float32)), weight)
    sums = a2c_sums(logits, value, mask, actions, advantages, targets, weight)
    n = jnp.maximum(jnp.sum(weight), 1.0)
    policy_loss, value_loss, ent = sums["adv_nlp"] / n, sums["value_sq"] / n, sums["entropy"] / n
    total = policy_loss + vf_coef * value_loss - ent_coef * ent
    return total, {"policy_loss": policy_loss, "value_loss": value_loss, "entropy": ent}


def bc_loss(logits, value, mask, actions, targets, weight, vf_coef) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Behaviour cloning: the recorded action's cross-entropy over the legal actions plus the value's squared error.

    Args:
      logits: float32[B, A]; value: float32[B]; mask: bool[B, A] (the legal actions: the softmax is over them, as the
      policy acts); actions: int32[B], the recorded (teacher's) actions, legal; targets: float32[B], the value's
      target (a recording's final outcome, ``agents.pipeline.recording``'s ``outcome``); weight: float32[B] (1 for the
      samples trained on, e.g. decisions; None: all); vf_coef: the value loss's weight.

    Returns:
      (total float32[], metrics) with ``total = cross_entropy + vf_coef * value_loss``, ``cross_entropy =
      mean(-log p(action | legal))``, ``value_loss = mean(0.5 (v - target)^2)``, and the metrics "cross_entropy",
      "value_loss", "accuracy" (the policy's most likely legal action is the recorded one; ties: the first) and
      "entropy" of the masked policy; no gradient flows through ``targets``.
    """
    nll = -distributions.log_prob(logits, mask, actions)
    value_error = 0.5 * jnp.square(value - jax.lax.stop_gradient(jnp.asarray(targets, jnp.float32)))
    hit = (distributions.greedy(logits, mask) == actions).astype(jnp.float32)
    metrics = {
        "cross_entropy": weighted_mean(nll, weight),
        "value_loss": weighted_mean(value_error, weight),
        "accuracy": weighted_mean(hit, weight),
        "entropy": weighted_mean(distributions.entropy(logits, mask), weight),
    }
    return metrics["cross_entropy"] + vf_coef * metrics["value_loss"], metrics


def policy_kl(logits, reference_logits, mask, weight, temperature=1.0) -> jax.Array:
    """float32[]: the weighted mean over samples of KL(student || reference) between the masked softmaxes of
    ``logits / temperature`` and ``reference_logits / temperature`` (float32[B, A] each; mask bool[B, A]: both over
    the legal actions; weight float32[B] or None), ``sum_a p(a) (log p(a) - log q(a))``. No gradient flows into
    the reference. Distillation's and the anchors' term (``agents.algorithms.distill``)."""
    log_p = distributions.log_softmax_masked(jnp.asarray(logits, jnp.float32) / temperature, mask)
    reference = jax.lax.stop_gradient(jnp.asarray(reference_logits, jnp.float32))
    log_q = distributions.log_softmax_masked(reference / temperature, mask)
    terms = jnp.exp(log_p) * (log_p - log_q)
    if mask is not None:  # illegal actions have p = 0; where() keeps their junk out of the gradient
        terms = jnp.where(distributions.legal(mask), terms, 0.0)
    return weighted_mean(jnp.sum(terms, axis=-1), weight)


def explained_variance(values, targets, weight) -> jax.Array:
    """float32[]: weighted ``1 - var(targets - values) / var(targets)``; 0 when var(targets) == 0."""
    weight = None if weight is None else jnp.asarray(weight, jnp.float32)
    values = _keep(jnp.asarray(values, jnp.float32), weight)
    targets = _keep(jnp.asarray(targets, jnp.float32), weight)

    def var(x):
        return weighted_mean(jnp.square(x - weighted_mean(x, weight)), weight)

    var_t = var(targets)
    safe = jnp.where(var_t > 0, var_t, 1.0)
    return jnp.where(var_t > 0, 1.0 - var(targets - values) / safe, 0.0).astype(jnp.float32)
