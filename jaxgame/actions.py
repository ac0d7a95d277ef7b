"""The flat discrete action space: legality masks and per-player effects.

Index table (``jaxgame.constants``; also docs/rules.md):

==========  =====================================================
0           end turn (the rest of this shop phase is no-ops); no-op
1..6        buy shop slot 0..5
7           reroll the shop (1 gold)
8           buy 4 XP (4 gold)
9           toggle the shop lock
10..41      sell unit slot 0..31 (bench 0..7, board 8..31)
42..233     move bench slot b to board cell c: 42 + 24*b + c (swap if occupied)
234..257    recall board cell c to the first free bench slot: 234 + c
==========  =====================================================

Every function here is for ONE player and is ``vmap``-ed over seats.
An illegal action is a no-op: it changes nothing and does not end the turn.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxgame import constants as C
from jaxgame import economy, units
from jaxgame import shop as shop_lib
from jaxgame import species as sp
from jaxgame.state import Players

# numpy, not jnp: ``import jaxgame`` must not start JAX's backend (a multi-host run initialises it first);
# inside traced code they become constants of the program.
_COST = np.asarray(sp.SPECIES_COST)
_COPIES = np.asarray(sp.COPIES_PER_STAR)

# action kinds, the branch index of ``apply_action``
KIND_END, KIND_BUY, KIND_REROLL, KIND_XP, KIND_LOCK, KIND_SELL, KIND_PLACE, KIND_RECALL = range(8)
#: the kinds' names, in KIND_* order
KIND_NAMES = ("end", "buy", "reroll", "xp", "lock", "sell", "place", "recall")


def action_kind(action: jnp.ndarray) -> jnp.ndarray:
    """int32 kind (KIND_*) of each action index."""
    bounds = jnp.array(
        [C.ACTION_BUY, C.ACTION_REROLL, C.ACTION_BUY_XP, C.ACTION_LOCK, C.ACTION_SELL, C.ACTION_PLACE, C.ACTION_RECALL]
    )
    return jnp.sum(action[..., None] >= bounds, axis=-1).astype(jnp.int32)


def legal_mask(p: Players) -> jnp.ndarray:
    """bool[NUM_ACTIONS] for one player. Only action 0 is legal once the turn ended or the player is out."""
    can_act = p.alive & ~p.turn_ended
    shop_species = jnp.maximum(p.shop, 0)
    buy = (
        (p.shop >= 0)
        & (p.gold >= jnp.asarray(_COST)[shop_species])
        & jax.vmap(lambda s: units.can_add_unit(p.species, p.stars, s))(shop_species)
    )
    reroll = p.gold >= shop_lib.REROLL_COST
    buy_xp = (p.gold >= economy.XP_COST_GOLD) & (p.level < C.MAX_LEVEL)
    sell = p.species >= 0
    bench_occupied = p.species[units.BENCH] >= 0  # [8]
    cell_occupied = p.species[units.BOARD] >= 0  # [24]
    board_has_room = units.board_count(p.species) < p.level
    place = bench_occupied[:, None] & (cell_occupied[None, :] | board_has_room)  # [8, 24]
    recall = cell_occupied & (units.first_free_bench_slot(p.species) < C.BENCH_SIZE)
    mask = jnp.concatenate(
        [jnp.ones((1,), bool), buy, reroll[None], buy_xp[None], jnp.ones((1,), bool), sell, place.reshape(-1), recall]
    )
    return jnp.where(can_act, mask, jnp.arange(C.NUM_ACTIONS) == C.ACTION_END_TURN)


def apply_action(p: Players, action: jnp.ndarray):
    """Apply one (possibly illegal or out-of-range) action of one player.

    Any int32 outside [0, NUM_ACTIONS) is illegal, like a masked-out action:
    a no-op that changes nothing and does not end the turn.

    Returns (players, pool_delta int32[NUM_SPECIES], needs_refill bool[]):
    copies returned to the pool, and whether the shop must be redrawn (reroll).
    """
    in_range = (action >= 0) & (action < C.NUM_ACTIONS)
    legal = in_range & legal_mask(p)[jnp.clip(action, 0, C.NUM_ACTIONS - 1)]
    action = jnp.where(legal, action, C.ACTION_END_TURN)
    kind = jnp.where(legal, action_kind(action), -1)
    no_delta = jnp.zeros(sp.NUM_SPECIES, jnp.int32)

    def end_turn(p):
        return p.replace(turn_ended=jnp.ones_like(p.turn_ended)), no_delta, False

    def buy(p):
        slot = action - C.ACTION_BUY
        s = p.shop[slot]
        species, stars = units.add_unit(p.species, p.stars, s)
        p = p.replace(species=species, stars=stars, gold=p.gold - jnp.asarray(_COST)[s], shop=p.shop.at[slot].set(-1))
        return p, no_delta, False

    def reroll(p):
        delta = shop_lib.return_to_pool(no_delta, p.shop)
        p = p.replace(gold=p.gold - shop_lib.REROLL_COST, shop=jnp.full_like(p.shop, -1))
        return p, delta, True

    def buy_xp(p):
        level, xp = economy.add_xp(p.level, p.xp, economy.XP_PER_PURCHASE)
        return p.replace(gold=p.gold - economy.XP_COST_GOLD, level=level, xp=xp), no_delta, False

    def lock(p):
        return p.replace(shop_locked=~p.shop_locked), no_delta, False

    def sell(p):
        slot = action - C.ACTION_SELL
        s, star = p.species[slot], p.stars[slot]
        delta = no_delta.at[s].add(jnp.asarray(_COPIES)[star])
        species, stars = units.clear_slot(p.species, p.stars, slot)
        return p.replace(species=species, stars=stars, gold=p.gold + jnp.asarray(_COST)[s] * star), delta, False

    def place(p):
        bench_slot, cell = jnp.divmod(action - C.ACTION_PLACE, C.BOARD_CELLS)
        species, stars = units.swap_slots(p.species, p.stars, bench_slot, C.BENCH_SIZE + cell)
        return p.replace(species=species, stars=stars), no_delta, False

    def recall(p):
        cell = action - C.ACTION_RECALL
        bench_slot = units.first_free_bench_slot(p.species)
        species, stars = units.swap_slots(p.species, p.stars, bench_slot, C.BENCH_SIZE + cell)
        return p.replace(species=species, stars=stars), no_delta, False

    def illegal(p):
        return p, no_delta, False

    branches = [end_turn, buy, reroll, buy_xp, lock, sell, place, recall, illegal]
    new_p, delta, refill = jax.lax.switch(jnp.where(kind < 0, len(branches) - 1, kind), branches, p)
    counted = legal & (kind != KIND_END)
    new_p = new_p.replace(actions_this_turn=new_p.actions_this_turn + counted.astype(jnp.int32))
    return new_p, delta, jnp.asarray(refill)
