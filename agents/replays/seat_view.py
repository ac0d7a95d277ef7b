"""What a person at the table sees beyond the game's public state (``agents.replays.play``): the shop's offers
with the synergies they would complete, the round's fights in a sentence each, and which fight was the seat's own.

Host functions of numpy values and fight records (``agents.replays.fights``); the synergy levels are the game's own
(``jaxgame.synergy``, called eagerly); nothing here is compiled.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxgame import constants as C
from jaxgame import species, synergy


def shop_offers(unit_species, stars, shop) -> list[dict | None]:
    """The seat's shop (int[6], -1 sold) as offers, None for a sold slot: ``slot``, ``species``, ``name``,
    ``cost``, ``types`` (its type names), ``completes`` (the types whose synergy level would rise with it on the
    board: new species only, the board as it is), ``copies`` (how many 1-star copies of it the seat holds: a third
    one merges into a 2-star unit). ``unit_species``/``stars`` int[32]: bench 0..7, board 8..31."""
    unit_species, stars, shop = np.asarray(unit_species), np.asarray(stars), np.asarray(shop)
    board = unit_species[C.BENCH_SIZE :]
    # the board's synergy levels as the game counts them (jaxgame.synergy), as it is and with each offer added
    boards = np.stack([np.append(board, s) for s in np.concatenate([[-1], shop])]).astype(np.int32)
    levels = np.asarray(synergy.synergy_levels(synergy.type_counts(jnp.asarray(boards))))  # [1 + 6, NUM_TYPES]
    now = levels[0]
    offers: list[dict | None] = []
    for slot, s in enumerate(np.asarray(shop).tolist()):
        if s < 0:
            offers.append(None)
            continue
        types = sorted(set(species.SPECIES_TYPES[s].tolist()))
        after = levels[1 + slot]
        offers.append(
            {
                "slot": slot,
                "species": s,
                "name": species.SPECIES_NAMES[s],
                "cost": int(species.SPECIES_COST[s]),
                "types": [species.TYPE_NAMES[t] for t in types],
                "completes": [f"{species.TYPE_NAMES[t]} {int(after[t])}" for t in types if after[t] > now[t]],
                "copies": int(((unit_species == s) & (stars == 1)).sum()),
            }
        )
    return offers


def own_fight(fights: list[dict], seat: int) -> dict | None:
    """The fight of ``fights`` (one step's, ``fights.fights_of_step``) that ``seat`` fought: its own slot (home), or
    the PvP fight it was the away side of; None when it fought none (out of the game)."""
    for fight in fights:
        if fight["home"] == seat:
            return fight
    return next((f for f in fights if f["kind"] == "pvp" and f["away"] == seat), None)


def fight_sentence(fight: dict, names: list[str]) -> str:
    """One line of a fight's result: ``"seat 2 (greedy) beat seat 5 (human): seat 5 loses 4 life"``; ``names``:
    each seat's player."""

    def seat(s):
        return f"seat {s} ({names[s]})"

    kind = fight["kind"]
    away = (
        "the creeps" if kind == "pve" else seat(fight["away"]) if kind == "pvp" else f"a ghost of {seat(fight['away'])}"
    )
    winner, home = fight["result"]["winner"], seat(fight["home"])
    head = (
        f"{home} and {away} drew" if winner == 2 else (f"{home} beat {away}" if winner == 0 else f"{away} beat {home}")
    )
    lost = [(fight["home"], fight["life_damage"]["home"]), (fight["away"], fight["life_damage"]["away"])]
    losses = [f"seat {s} loses {n} life" for s, n in lost if n]  # the away side's is null unless PvP
    return head + (": " + ", ".join(losses) if losses else "")


__all__ = ["fight_sentence", "own_fight", "shop_offers"]
