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

from agents.core.layers import MLP, DenseParams, activation_fn, dense
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


#: the heads' hidden layers of a unit and the context (parameter name, output scale), and which unit
#: groups each reads
_UNIT_HEADS = (
    ("buy_head_hidden", 1.0),
    ("sell_head_hidden", 1.0),
    ("recall_head_hidden", 1.0),
    ("place_query", 0.1),
    ("place_key", 0.1),
)
_HEADS_OF_GROUP = {
    "shop": ("buy_head_hidden",),
    "bench": ("sell_head_hidden", "place_query"),
    "board": ("sell_head_hidden", "recall_head_hidden", "place_key"),
}


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
            raise ValueError(
                f"the entity network reads the game's vector observation ([..., {OBS_SIZE}], "
                f"{C.NUM_ACTIONS} actions), got [..., {obs.shape[-1]}] and {self.num_actions} actions"
            )
        act = activation_fn(self.activation)
        width = self.width
        slot = self.param("slot_embedding", nn.initializers.normal(0.1), (NUM_ENTITIES, width))
        units = act(entitywise(dense(width, 1.0, "unit_in"), unit_features(obs)) + slot)
        units = act(entitywise(dense(width, 1.0, "unit_out"), units))  # [..., 38, W]
        groups = dict(
            zip(("shop", "bench", "board"), jnp.split(units, [C.SHOP_SIZE, C.SHOP_SIZE + C.BENCH_SIZE], axis=-2))
        )
        own = [_block(obs, name) for name in ("self", "synergies", "pool", "owned", "opponents")]
        summary = jnp.concatenate(own + [group.mean(-2) for group in groups.values()], axis=-1)
        context = MLP(self.hidden, self.activation, name="context")(summary)
        value = dense(1, 1.0, "value_head")(MLP(self.hidden, self.activation, name="critic_torso")(summary))[..., 0]

        # Each head's hidden layer is dense(width) over a unit concatenated with the context (kernel float32[W + H,
        # W]). Without the concatenation: concat(x, context) @ kernel == x @ kernel[:W] + context @ kernel[W:], so
        # the context's share is computed once per observation, not once per unit; and the heads that read the
        # same unit group run as one matrix product (one per group, one for all the context's shares): a
        # ppo_small_entity update takes 4.5-4.6 s on the 2-core CPU against 4.9-5.1 s with one product per head.
        names = [name for name, _ in _UNIT_HEADS]
        layers = {
            name: DenseParams(width + context.shape[-1], width, scale, name=name)() for name, scale in _UNIT_HEADS
        }
        shares = context @ jnp.concatenate([layers[n][0][width:] for n in names], axis=1)
        shares = shares + jnp.concatenate([layers[n][1] for n in names])
        share = {n: shares[..., i * width : (i + 1) * width][..., None, :] for i, n in enumerate(names)}
        hidden = {}
        for group, heads in _HEADS_OF_GROUP.items():
            kernel = jnp.concatenate([layers[n][0][:width] for n in heads], axis=1)
            rows = entitywise(lambda x, kernel=kernel: x @ kernel, groups[group])
            for i, n in enumerate(heads):
                hidden[group, n] = rows[..., i * width : (i + 1) * width] + share[n]

        scorers = {
            name: DenseParams(width, 1, 0.01, name=name)()
            for name in ("buy_head", "sell_head", "recall_head", "place_cell")
        }

        def score(x, name):  # dense(1, 0.01, name) over each unit: one logit per unit
            kernel, bias = scorers[name]
            return entitywise(lambda rows: rows @ kernel, x)[..., 0] + bias[0]

        globals_ = dense(len(_GLOBAL_ACTIONS), 0.01, "global_head")(context)
        buy = score(act(hidden["shop", "buy_head_hidden"]), "buy_head")
        sell = jnp.concatenate(
            [score(act(hidden[g, "sell_head_hidden"]), "sell_head") for g in ("bench", "board")], axis=-1
        )
        recall = score(act(hidden["board", "recall_head_hidden"]), "recall_head")
        query, key = hidden["bench", "place_query"], hidden["board", "place_key"]  # [..., 8, W], [..., 24, W]
        place = jnp.einsum("...bw,...cw->...bc", query, key) / jnp.sqrt(float(width))
        place = place + score(key, "place_cell")[..., None, :]
        logits = jnp.concatenate(
            [globals_[..., :1], buy, globals_[..., 1:], sell, place.reshape(*place.shape[:-2], -1), recall], axis=-1
        )
        return logits, value


__all__ = ["EntityActorCritic", "NUM_ENTITIES", "entitywise", "unit_features"]
