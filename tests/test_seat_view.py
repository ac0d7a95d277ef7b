"""agents.replays.seat_view: what the play page shows beyond the public state, against the game's own synergy code
and hand-written fight records."""

from __future__ import annotations

import numpy as np

from agents.replays import seat_view
from jaxgame import constants as C
from jaxgame import species, synergy


def _levels(board):
    return np.asarray(synergy.synergy_levels(synergy.type_counts(np.asarray(board, np.int32))))


def test_a_hand_checked_shop():
    # a charmander (fire, monster) on the board; fire and monster need 2 species for level 1
    unit_species = np.full(C.BENCH_SIZE + C.BOARD_CELLS, -1)
    stars = np.zeros_like(unit_species)
    unit_species[C.BENCH_SIZE + 3], stars[C.BENCH_SIZE + 3] = species.SPECIES_NAMES.index("charmander"), 1
    shop = [species.SPECIES_NAMES.index(n) for n in ("growlithe", "rattata", "charmander", "squirtle")] + [-1, -1]
    offers = seat_view.shop_offers(unit_species, stars, shop)
    assert [o["completes"] for o in offers[:4]] == [["fire 1"], ["monster 1"], [], []]
    assert [o["copies"] for o in offers[:4]] == [0, 0, 1, 0] and offers[4:] == [None, None]
    assert offers[0]["types"] == ["normal", "fire"] and offers[0]["name"] == "growlithe"


def test_shop_offers_name_the_synergies_they_complete_and_the_copies_held():
    rng = np.random.default_rng(1)
    seen_completes = seen_copies = 0
    for _ in range(40):
        unit_species = rng.integers(-1, species.NUM_SPECIES, C.BENCH_SIZE + C.BOARD_CELLS)
        stars = np.where(unit_species >= 0, rng.integers(1, 3, unit_species.shape), 0)
        shop = rng.integers(-1, species.NUM_SPECIES, C.SHOP_SIZE)
        offers = seat_view.shop_offers(unit_species, stars, shop)
        board = unit_species[C.BENCH_SIZE :]
        for k, s in enumerate(shop.tolist()):
            if s < 0:
                assert offers[k] is None
                continue
            o = offers[k]
            assert (o["slot"], o["species"], o["cost"]) == (k, s, int(species.SPECIES_COST[s]))
            before, after = _levels(board), _levels(np.append(board, s))
            rising = [
                f"{species.TYPE_NAMES[t]} {after[t]}"
                for t in sorted(set(species.SPECIES_TYPES[s]))
                if after[t] > before[t]
            ]
            assert o["completes"] == rising
            assert o["copies"] == int(((unit_species == s) & (stars == 1)).sum())
            seen_completes += bool(rising)
            seen_copies += o["copies"] > 0
    assert seen_completes and seen_copies  # the sample has both


def _fight(kind, home, away, winner, lost_home, lost_away):
    return {
        "kind": kind,
        "home": home,
        "away": away,
        "result": {"winner": winner},
        "life_damage": {"home": lost_home, "away": lost_away},
    }


def test_fight_sentences_and_the_seats_own_fight():
    names = ["you", "greedy", "expert", "random", "greedy", "expert", "random", "greedy"]
    pvp = _fight("pvp", 2, 0, 1, 4, 0)
    assert seat_view.fight_sentence(pvp, names) == "seat 0 (you) beat seat 2 (expert): seat 2 loses 4 life"
    draw = _fight("pvp", 3, 5, 2, 2, 3)
    assert seat_view.fight_sentence(draw, names) == (
        "seat 3 (random) and seat 5 (expert) drew: seat 3 loses 2 life, seat 5 loses 3 life"
    )
    pve = _fight("pve", 1, None, 1, 3, None)
    assert seat_view.fight_sentence(pve, names) == "the creeps beat seat 1 (greedy): seat 1 loses 3 life"
    ghost = _fight("ghost", 7, 4, 0, 0, None)
    assert seat_view.fight_sentence(ghost, names) == "seat 7 (greedy) beat a ghost of seat 4 (greedy)"
    fights = [pvp, draw, pve, ghost]
    assert seat_view.own_fight(fights, 0) is pvp  # the away side of a PvP fight
    assert seat_view.own_fight(fights, 5) is draw and seat_view.own_fight(fights, 7) is ghost
    assert seat_view.own_fight(fights, 4) is None  # a ghost's source did not fight it
