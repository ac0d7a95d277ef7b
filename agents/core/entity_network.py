"""An actor-critic that reads the game's vector observation as entities (``network="entity"``).

The flat MLP sees a unit as 12 numbers among 582, its species as one scalar, and must learn a separate output
for each of the 192 (bench unit, board cell) placements. Here every unit slot is encoded by one shared encoder
and each action's logit is scored from the entities it names:

* **units** (6 shop slots, 8 bench slots, 24 board cells): the unit record, its species one-hot (decoded from
  the record's species feature), the copies of that species the seat owns and can still draw (the observation's
  ``owned`` and ``pool`` blocks at the species), plus a learned embedding of the slot -> ``width`` features;
* **context**: an MLP (``hidden``) over the seat's own numbers, synergies, pool, owned copies, opponents and the
  mean embedding of its shop, bench and board units;
* **logits**: end turn, reroll, buy XP and lock from the context; buy slot ``i``, sell slot ``s`` and recall
  cell ``c`` from that entity's embedding with the context; place bench ``b`` -> cell ``c`` as a bilinear score
  of the bench unit and the cell (query . key / sqrt(width)). The order is ``jaxgame.constants``' action order.
* **value**: its own MLP over the same inputs as the context's.

Permuting the shop slots permutes the buy logits the same way, and so for the bench (sell, place) and the
slot embeddings aside; the tests check it. Observations float32[..., OBS_SIZE] ->
``(logits float32[..., NUM_ACTIONS], value float32[...])``.
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from agents.core.layers import MLP, activation_fn, dense
from jaxgame import constants as C
from jaxgame import species as sp
from jaxgame.observation import OBS_LAYOUT, OBS_SIZE, UNIT_FEATURES

#: unit slots read as entities: the shop's, then the bench's and board's (``OBS_LAYOUT`` "shop" then "slots")
NUM_ENTITIES = C.SHOP_SIZE + C.NUM_SLOTS
_GLOBAL_ACTIONS = (C.ACTION_END_TURN, C.ACTION_REROLL, C.ACTION_BUY_XP, C.ACTION_LOCK)


def _block(obs, name):
    start, end = OBS_LAYOUT[name]
    return obs[..., start:end]


def unit_features(obs: jax.Array) -> jax.Array:
    """float32[..., OBS_SIZE] -> float32[..., NUM_ENTITIES, UNIT_FEATURES + NUM_SPECIES + 2]: each shop, bench and
    board slot's record, its species one-hot (zeros for an empty slot) and the seat's owned and drawable copies of
    that species (the ``owned`` and ``pool`` blocks at it)."""
    records = jnp.concatenate([_block(obs, "shop"), _block(obs, "slots")], axis=-1)
    records = records.reshape(*obs.shape[:-1], NUM_ENTITIES, UNIT_FEATURES)
    present = records[..., 0] > 0.5
    # the record's last feature is (species + 1) / NUM_SPECIES (jaxgame.observation.unit_records)
    species = jnp.clip(jnp.round(records[..., -1] * sp.NUM_SPECIES).astype(jnp.int32) - 1, 0, sp.NUM_SPECIES - 1)
    one_hot = jax.nn.one_hot(species, sp.NUM_SPECIES) * present[..., None]
    owned = jnp.einsum("...us,...s->...u", one_hot, _block(obs, "owned"))
    pool = jnp.einsum("...us,...s->...u", one_hot, _block(obs, "pool"))
    return jnp.concatenate([records, one_hot, owned[..., None], pool[..., None]], axis=-1)


def entitywise(layer, x: jax.Array) -> jax.Array:
    """``layer`` (a module or any function of rows) applied to float32[..., n, D] as one matrix of rows
    (float32[N * n, D]): the same numbers, but XLA's CPU backend differentiates a 2-D dot about twice as fast as
    one with two batch dimensions."""
    out = layer(x.reshape(-1, x.shape[-1]))
    return out.reshape(*x.shape[:-1], out.shape[-1])


class EntityContextDense(nn.Module):
    """A dense layer of each entity's embedding concatenated with the context, computed without the concatenation:
    ``concat(x, context) @ kernel + bias == x @ kernel[:W] + (context @ kernel[W:])[..., None, :] + bias``, so
    the context's share is computed once per observation rather than once per entity. Its parameters are
    ``dense(features, scale)``'s over the concatenation (``kernel`` float32[W + H, features], ``bias``).
    ``x`` float32[..., n, W], ``context`` float32[..., H] -> float32[..., n, features]."""

    features: int
    scale: float

    @nn.compact
    def __call__(self, x: jax.Array, context: jax.Array) -> jax.Array:
        width = x.shape[-1]
        kernel = self.param("kernel", nn.initializers.orthogonal(self.scale),
                            (width + context.shape[-1], self.features))
        bias = self.param("bias", nn.initializers.zeros, (self.features,))
        return entitywise(lambda rows: rows @ kernel[:width], x) + (context @ kernel[width:] + bias)[..., None, :]


class EntityActorCritic(nn.Module):
    """The entity network (module docstring). ``hidden``: the context and value MLPs' widths; ``width``: a unit's
    embedding."""

    num_actions: int
    hidden: Sequence[int] = (256, 256)
    activation: str = "tanh"
    width: int = 64

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        obs = jnp.asarray(obs, jnp.float32)
        if obs.shape[-1] != OBS_SIZE or self.num_actions != C.NUM_ACTIONS:
            raise ValueError(f"the entity network reads the game's vector observation ([..., {OBS_SIZE}], "
                             f"{C.NUM_ACTIONS} actions), got [..., {obs.shape[-1]}] and {self.num_actions} actions")
        act = activation_fn(self.activation)
        slot = self.param("slot_embedding", nn.initializers.normal(0.1), (NUM_ENTITIES, self.width))
        units = act(entitywise(dense(self.width, 1.0, "unit_in"), unit_features(obs)) + slot)
        units = act(entitywise(dense(self.width, 1.0, "unit_out"), units))  # [..., 38, W]
        shop, bench, board = jnp.split(units, [C.SHOP_SIZE, C.SHOP_SIZE + C.BENCH_SIZE], axis=-2)
        own = [_block(obs, name) for name in ("self", "synergies", "pool", "owned", "opponents")]
        summary = jnp.concatenate(own + [shop.mean(-2), bench.mean(-2), board.mean(-2)], axis=-1)
        context = MLP(self.hidden, self.activation, name="context")(summary)
        value = dense(1, 1.0, "value_head")(MLP(self.hidden, self.activation, name="critic_torso")(summary))[..., 0]

        def per_entity(x, name):  # one logit per entity, from it and the context
            hidden = EntityContextDense(self.width, 1.0, name=name + "_hidden")(x, context)
            return entitywise(dense(1, 0.01, name), act(hidden))[..., 0]

        globals_ = dense(len(_GLOBAL_ACTIONS), 0.01, "global_head")(context)
        buy = per_entity(shop, "buy_head")
        sell = per_entity(jnp.concatenate([bench, board], axis=-2), "sell_head")
        recall = per_entity(board, "recall_head")
        query = EntityContextDense(self.width, 0.1, name="place_query")(bench, context)  # [..., 8, W]
        key = EntityContextDense(self.width, 0.1, name="place_key")(board, context)  # [..., 24, W]
        place = jnp.einsum("...bw,...cw->...bc", query, key) / jnp.sqrt(float(self.width))
        place = place + entitywise(dense(1, 0.01, "place_cell"), key)[..., 0][..., None, :]
        logits = jnp.concatenate([
            globals_[..., :1], buy, globals_[..., 1:], sell, place.reshape(*place.shape[:-2], -1), recall,
        ], axis=-1)
        return logits, value


__all__ = ["EntityActorCritic", "EntityContextDense", "NUM_ENTITIES", "unit_features"]
