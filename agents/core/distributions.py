"""Categorical distributions over action logits with a legality mask.

Shapes: ``logits`` float32[..., A], ``mask`` bool[..., A] (True = legal),
actions int32[...]. Every function is pure and works under jit/vmap.

Illegal logits are replaced by the finite ``MASKED_LOGIT``, so illegal
actions get probability exactly 0 after the softmax while entropies and
gradients stay NaN-free. A row with no legal action at all is treated as if
action 0 were legal (it then becomes a deterministic choice of action 0).
``mask=None`` means every action is legal (nothing is masked: the plain
categorical, without the masking's operations in the compiled program).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

MASKED_LOGIT = -1e9


def legal(mask: jax.Array) -> jax.Array:
    """bool[..., A]: ``mask`` with action 0 made legal in rows that have no legal action."""
    mask = jnp.asarray(mask, dtype=bool)
    none_legal = ~jnp.any(mask, axis=-1, keepdims=True)
    first = jnp.arange(mask.shape[-1]) == 0
    return mask | (none_legal & first)


def mask_logits(logits: jax.Array, mask: jax.Array) -> jax.Array:
    """float32[..., A], bool[..., A] -> float32[..., A] with illegal entries set to ``MASKED_LOGIT``."""
    if mask is None:
        return jnp.asarray(logits, jnp.float32)
    return jnp.where(legal(mask), jnp.asarray(logits, jnp.float32), jnp.float32(MASKED_LOGIT))


def log_softmax_masked(logits: jax.Array, mask: jax.Array) -> jax.Array:
    """float32[..., A]: log-probabilities; illegal entries are about ``MASKED_LOGIT`` (probability 0)."""
    return jax.nn.log_softmax(mask_logits(logits, mask), axis=-1)


def sample(key: jax.Array, logits: jax.Array, mask: jax.Array) -> jax.Array:
    """int32[...]: one legal action per row drawn from the masked softmax."""
    return jax.random.categorical(key, mask_logits(logits, mask), axis=-1).astype(jnp.int32)


def log_prob(logits: jax.Array, mask: jax.Array, actions: jax.Array) -> jax.Array:
    """float32[...]: log-probability of ``actions`` int[...] under the masked softmax."""
    logp = log_softmax_masked(logits, mask)
    actions = jnp.asarray(actions, jnp.int32)[..., None]
    return jnp.take_along_axis(logp, actions, axis=-1)[..., 0]


def entropy(logits: jax.Array, mask: jax.Array) -> jax.Array:
    """float32[...]: entropy of the masked softmax, summed over legal actions only."""
    logp = log_softmax_masked(logits, mask)
    terms = jnp.exp(logp) * logp
    return -jnp.sum(terms if mask is None else jnp.where(legal(mask), terms, 0.0), axis=-1)


def greedy(logits: jax.Array, mask: jax.Array) -> jax.Array:
    """int32[...]: the legal action with the largest logit (lowest index on ties)."""
    return jnp.argmax(mask_logits(logits, mask), axis=-1).astype(jnp.int32)
