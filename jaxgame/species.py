"""Static game data: unit species, rarities, types and synergy tables.

Everything here is plain numpy (host constants). JAX code converts with
``jnp.asarray`` at trace time, so the tables become compile-time constants.

Species are indexed 0..27 and sorted by rarity. Rarities are indexed
0..4 = common, uncommon, rare, epic, ultra; a unit costs ``rarity + 1`` gold.
"""

from __future__ import annotations

import numpy as np

NUM_RARITIES = 5
RARITY_NAMES = ("common", "uncommon", "rare", "epic", "ultra")
#: copies of each species in the shared pool, by rarity
POOL_COPIES_BY_RARITY = np.array([27, 22, 18, 14, 10], dtype=np.int32)

NUM_TYPES = 8
TYPE_NAMES = ("normal", "fire", "water", "grass", "fighting", "psychic", "steel", "monster")
NORMAL, FIRE, WATER, GRASS, FIGHTING, PSYCHIC, STEEL, MONSTER = range(NUM_TYPES)

#: Ability templates (see docs/rules.md, "Combat").
ABILITY_NAMES = ("nuke", "area", "shield", "heal", "stun")
NUKE, AREA, SHIELD, HEAL, STUN = range(5)

# name, rarity, type1, type2, hp, atk, def, spdef, range, speed, max_mana, ability, power
_SPECIES = [
    # common (cost 1)
    ("rattata", 0, NORMAL, MONSTER, 450, 45, 2, 2, 1, 60, 80, NUKE, 80),
    ("charmander", 0, FIRE, MONSTER, 400, 50, 1, 1, 1, 55, 90, AREA, 60),
    ("squirtle", 0, WATER, FIGHTING, 500, 40, 4, 2, 1, 45, 80, SHIELD, 80),
    ("bulbasaur", 0, GRASS, PSYCHIC, 480, 38, 3, 3, 1, 45, 90, HEAL, 90),
    ("machop", 0, FIGHTING, NORMAL, 520, 48, 3, 1, 1, 50, 100, STUN, 50),
    ("abra", 0, PSYCHIC, NORMAL, 350, 40, 1, 4, 3, 50, 70, NUKE, 110),
    ("magnemite", 0, STEEL, WATER, 420, 42, 5, 2, 2, 45, 90, STUN, 40),
    ("growlithe", 0, FIRE, NORMAL, 430, 47, 2, 2, 1, 65, 90, AREA, 55),
    # uncommon (cost 2)
    ("pidgeotto", 1, NORMAL, FIGHTING, 600, 55, 3, 3, 2, 70, 90, NUKE, 120),
    ("poliwhirl", 1, WATER, FIGHTING, 700, 52, 4, 3, 1, 50, 100, STUN, 70),
    ("ivysaur", 1, GRASS, MONSTER, 680, 50, 4, 4, 1, 50, 90, HEAL, 130),
    ("ponyta", 1, FIRE, GRASS, 560, 60, 2, 2, 1, 75, 100, AREA, 90),
    ("onix", 1, STEEL, MONSTER, 900, 40, 8, 3, 1, 35, 110, SHIELD, 150),
    ("drowzee", 1, PSYCHIC, GRASS, 580, 45, 3, 5, 2, 45, 80, STUN, 60),
    ("scyther", 1, STEEL, GRASS, 620, 66, 3, 2, 1, 80, 100, NUKE, 140),
    # rare (cost 3)
    ("arcanine", 2, FIRE, NORMAL, 850, 72, 4, 3, 1, 70, 100, AREA, 130),
    ("lapras", 2, WATER, PSYCHIC, 950, 60, 5, 5, 2, 45, 110, HEAL, 200),
    ("machamp", 2, FIGHTING, STEEL, 1000, 75, 6, 3, 1, 55, 110, STUN, 100),
    ("venusaur", 2, GRASS, WATER, 980, 62, 6, 5, 1, 45, 110, HEAL, 220),
    ("alakazam", 2, PSYCHIC, STEEL, 700, 60, 2, 7, 3, 55, 80, NUKE, 240),
    ("gyarados", 2, WATER, MONSTER, 1050, 70, 5, 4, 1, 55, 120, AREA, 150),
    # epic (cost 4)
    ("charizard", 3, FIRE, MONSTER, 1150, 90, 5, 4, 2, 65, 110, AREA, 200),
    ("snorlax", 3, NORMAL, GRASS, 1600, 70, 8, 6, 1, 35, 120, SHIELD, 300),
    ("lucario", 3, FIGHTING, STEEL, 1100, 95, 5, 5, 1, 75, 100, NUKE, 260),
    ("gardevoir", 3, PSYCHIC, FIRE, 950, 75, 3, 8, 3, 55, 90, STUN, 150),
    # ultra (cost 5)
    ("mewtwo", 4, PSYCHIC, FIGHTING, 1400, 110, 5, 9, 3, 65, 100, NUKE, 400),
    ("tyranitar", 4, MONSTER, STEEL, 1900, 105, 10, 6, 1, 45, 120, AREA, 280),
    ("rayquaza", 4, FIRE, WATER, 1600, 120, 6, 6, 2, 70, 110, AREA, 320),
]

NUM_SPECIES = len(_SPECIES)
SPECIES_NAMES = tuple(row[0] for row in _SPECIES)
_COLUMNS = np.array([row[1:] for row in _SPECIES], dtype=np.int32)

#: int32[NUM_SPECIES] each, one entry per species
SPECIES_RARITY = _COLUMNS[:, 0]
SPECIES_TYPES = _COLUMNS[:, 1:3]  # int32[NUM_SPECIES, 2]
SPECIES_HP = _COLUMNS[:, 3]
SPECIES_ATK = _COLUMNS[:, 4]
SPECIES_DEF = _COLUMNS[:, 5]
SPECIES_SPDEF = _COLUMNS[:, 6]
SPECIES_RANGE = _COLUMNS[:, 7]
SPECIES_SPEED = _COLUMNS[:, 8]
SPECIES_MAX_MANA = _COLUMNS[:, 9]
SPECIES_ABILITY = _COLUMNS[:, 10]
SPECIES_POWER = _COLUMNS[:, 11]
SPECIES_COST = SPECIES_RARITY + 1
SPECIES_POOL_COPIES = POOL_COPIES_BY_RARITY[SPECIES_RARITY]

#: bool[NUM_SPECIES, NUM_TYPES]: species s has type t
SPECIES_TYPE_MASK = np.zeros((NUM_SPECIES, NUM_TYPES), dtype=bool)
SPECIES_TYPE_MASK[np.arange(NUM_SPECIES), SPECIES_TYPES[:, 0]] = True
SPECIES_TYPE_MASK[np.arange(NUM_SPECIES), SPECIES_TYPES[:, 1]] = True

#: Star scaling in tenths: hp x1 / x1.8 / x3.2 and atk x1 / x2 / x4 for 1/2/3 stars.
#: Index 0 is unused (no unit).
STAR_HP_TENTHS = np.array([0, 10, 18, 32], dtype=np.int32)
STAR_ATK_MULT = np.array([0, 1, 2, 4], dtype=np.int32)
MAX_STARS = 3
#: Copies of the base species that one unit of the given star level is made of.
COPIES_PER_STAR = np.array([0, 1, 3, 9], dtype=np.int32)

#: Synergy thresholds: int32[NUM_TYPES, 3]; 99 marks a level that does not exist.
SYNERGY_THRESHOLDS = np.array(
    [
        [3, 5, 7],  # normal: shield at fight start
        [2, 4, 6],  # fire: attack gained per hit
        [3, 6, 99],  # water: extra mana per second
        [3, 5, 7],  # grass: heal per second
        [2, 4, 6],  # fighting: flat damage block
        [2, 4, 6],  # psychic: ability power (%)
        [2, 4, 6],  # steel: true damage per hit (% of atk)
        [2, 4, 6],  # monster: atk and hp gained per kill
    ],
    dtype=np.int32,
)
#: Effect size per type and synergy level (index 0 = inactive). The effect
#: applies to the units of that type on the side that has the synergy.
SYNERGY_VALUES = np.array(
    [
        [0, 30, 60, 100],  # normal: shield hp at fight start
        [0, 2, 4, 7],  # fire: +atk per attack
        [0, 10, 20, 20],  # water: +mana per second
        [0, 5, 10, 20],  # grass: +hp per second
        [0, 4, 8, 14],  # fighting: damage block per hit taken
        [0, 30, 60, 100],  # psychic: ability power %
        [0, 20, 40, 70],  # steel: true damage % of atk per attack
        [0, 3, 6, 10],  # monster: +atk on kill (hp gained on kill = 10x this)
    ],
    dtype=np.int32,
)

assert NUM_SPECIES == 28
assert np.bincount(SPECIES_RARITY, minlength=NUM_RARITIES).tolist() == [8, 7, 6, 4, 3]
assert np.all(SPECIES_TYPES[:, 0] != SPECIES_TYPES[:, 1])
assert np.all(np.diff(SPECIES_RARITY) >= 0), "species must be sorted by rarity"
