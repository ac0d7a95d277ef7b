"""Fixed 8x8 2bpp tile art, built deterministically with numpy at import time.

Every tile set exists twice: unpacked pixels ``uint8[N, 8, 8]`` (shades 0..3)
and packed ``uint8[N, 8, 2]`` (suffix ``_PACKED``; see ``jaxgame.packing``
for the bit order). A renderer blits packed tiles at tile-aligned positions:
tile row ``r`` of a tile at tile column ``tx`` is bytes ``2*tx, 2*tx+1`` of
frame row ``8*ty + r`` (``packing.blit_tile_packed``), or renders a whole
9x10 tile map at once with ``packing.tilemap_to_frame(tilemap, ATLAS_PACKED)``.

Tile sets
---------
``SPECIES_TILES``   [28]  one sprite per species. The silhouette (outline in
                          shade 3) is set by the species' first type, the
                          fill pattern (shades 1/2) by its second type, and
                          the eye style by its rank among species sharing the
                          first type. All 28 are pairwise distinct.
``GLYPH_TILES``     [45]  5x7 font (shade 3 on 0, in columns 1..5, rows 0..6):
                          ``GLYPH_CHARS`` = digits, A-Z, ``: / - + . !``,
                          space, heart (``'♥'``) and coin (``'$'``).
``NUMBER_TILES``    [100] 0..99 drawn with a 3x5 font, two digits per tile
                          (right-aligned; 0..9 have no leading zero).
``STAR_PIPS``       [4]   ``STAR_PIPS[k]`` shows ``k`` stars as 2x2 shade-3
                          pips along the top two rows (k = 0 is empty), so it
                          can be laid over a sprite with
                          ``packing.overlay_packed`` or blitted on its own.
``EMPTY_CELL``      tile  faint cell outline (shade 1 perimeter).
``EMPTY``           tile  all zeros.

``ATLAS`` / ``ATLAS_PACKED`` concatenate everything; its index offsets are
``ATLAS_EMPTY``, ``ATLAS_EMPTY_CELL``, ``ATLAS_STAR0`` (+k), ``ATLAS_SPECIES0``
(+species), ``ATLAS_GLYPH0`` (+glyph), ``ATLAS_NUMBER0`` (+n).
"""

from __future__ import annotations

import numpy as np

from jaxgame import species as S
from jaxgame.packing import TILE, pack_tile

# --------------------------------------------------------------------------
# species sprites
# --------------------------------------------------------------------------

# 'o' outline (3), 'x' fill (pattern of the second type), 'e' eye, '.' background.
_SILHOUETTES = {
    S.NORMAL: [  # round critter with ears
        ".o....o.",
        "oxo..oxo",
        "oxxooxxo",
        "oxexxexo",
        "oxxxxxxo",
        "oxxooxxo",
        ".oxxxxo.",
        "..oooo..",
    ],
    S.FIRE: [  # flame, pointed and flickering on top
        "...o....",
        "..oxo..o",
        ".oxxxooo",
        ".oxxxxxo",
        "oxexxexo",
        "oxxxxxxo",
        ".oxxxxo.",
        "..oooo..",
    ],
    S.WATER: [  # drop-shaped fish, fins and tail below
        "...oo...",
        "..oxxo..",
        ".oxxxxo.",
        "oxexxexo",
        "oxxxxxxo",
        ".oxxxxo.",
        "..oxxo..",
        ".oo..oo.",
    ],
    S.GRASS: [  # bulb with two leaves and stubby legs
        ".oo..oo.",
        "oxxooxxo",
        ".oxxxxo.",
        "oxexxexo",
        "oxxxxxxo",
        "oxxxxxxo",
        ".oxxxxo.",
        ".oo..oo.",
    ],
    S.FIGHTING: [  # humanoid, arms out, fists up
        "o.oooo.o",
        "ooexxeoo",
        ".ooxxoo.",
        "..oxxo..",
        "..oxxo..",
        "..oxxo..",
        "..o..o..",
        ".oo..oo.",
    ],
    S.PSYCHIC: [  # diamond head with antennae
        "o......o",
        ".o.oo.o.",
        "..oxxo..",
        ".oxxxxo.",
        "oxexxexo",
        ".oxxxxo.",
        "..oxxo..",
        "...oo...",
    ],
    S.STEEL: [  # boxy robot with antennae and feet
        "o......o",
        "oooooooo",
        "oxxxxxxo",
        "oxexxexo",
        "oxxxxxxo",
        "oxxxxxxo",
        "oooooooo",
        ".o....o.",
    ],
    S.MONSTER: [  # horned beast with fangs and claws
        "o..oo..o",
        "oooxxooo",
        ".oxxxxo.",
        "oxexxexo",
        "oxxxxxxo",
        "oxoxxoxo",
        "oxxxxxxo",
        "oo.oo.oo",
    ],
}

_YY, _XX = np.mgrid[0:TILE, 0:TILE]
# Fill pattern per second type: shades 1/2 only, so eyes (0 or 3) stay visible.
_FILLS = {
    S.NORMAL: np.ones((TILE, TILE), np.uint8),
    S.FIRE: np.full((TILE, TILE), 2, np.uint8),
    S.WATER: np.where(_YY % 2 == 0, 2, 1).astype(np.uint8),  # horizontal waves
    S.GRASS: np.where((_XX + _YY) % 2 == 0, 2, 1).astype(np.uint8),  # checker
    S.FIGHTING: np.where(_XX % 2 == 0, 2, 1).astype(np.uint8),  # vertical stripes
    S.PSYCHIC: np.where((_XX + _YY) % 3 == 0, 2, 1).astype(np.uint8),  # diagonals
    S.STEEL: np.where((_XX % 3 == 1) & (_YY % 3 == 1), 1, 2).astype(np.uint8),  # rivets
    S.MONSTER: np.where(_YY < 4, 2, 1).astype(np.uint8),  # dark back, light belly
}
# (left eye, right eye) shade per rank within the first type; None = fill (closed).
_EYE_STYLES = [(3, 3), (0, 0), (3, None), (None, 3), (0, 3), (3, 0), (None, 0)]


def _species_tile(s: int, rank: int) -> np.ndarray:
    art = np.array([list(r) for r in _SILHOUETTES[int(S.SPECIES_TYPES[s, 0])]])
    fill = _FILLS[int(S.SPECIES_TYPES[s, 1])]
    tile = np.zeros((TILE, TILE), np.uint8)
    tile[art == "o"] = 3
    body = (art == "x") | (art == "e")
    tile[body] = fill[body]
    eyes = np.argwhere(art == "e")
    eyes = eyes[np.argsort(eyes[:, 1], kind="stable")]
    for (y, x), shade in zip(eyes, _EYE_STYLES[rank]):
        if shade is not None:
            tile[y, x] = shade
    return tile


def _build_species() -> np.ndarray:
    ranks = np.zeros(S.NUM_SPECIES, np.int64)
    seen: dict[int, int] = {}
    for s in range(S.NUM_SPECIES):
        t1 = int(S.SPECIES_TYPES[s, 0])
        ranks[s] = seen.get(t1, 0)
        seen[t1] = ranks[s] + 1
    return np.stack([_species_tile(s, int(ranks[s])) for s in range(S.NUM_SPECIES)])


SPECIES_TILES = _build_species()  # uint8[28, 8, 8]

# --------------------------------------------------------------------------
# 5x7 font
# --------------------------------------------------------------------------

_FONT_5X7 = {
    "0": ["01110", "10001", "10011", "10101", "11001", "10001", "01110"],
    "1": ["00100", "01100", "00100", "00100", "00100", "00100", "01110"],
    "2": ["01110", "10001", "00001", "00010", "00100", "01000", "11111"],
    "3": ["11111", "00010", "00100", "00010", "00001", "10001", "01110"],
    "4": ["00010", "00110", "01010", "10010", "11111", "00010", "00010"],
    "5": ["11111", "10000", "11110", "00001", "00001", "10001", "01110"],
    "6": ["00110", "01000", "10000", "11110", "10001", "10001", "01110"],
    "7": ["11111", "00001", "00010", "00100", "01000", "01000", "01000"],
    "8": ["01110", "10001", "10001", "01110", "10001", "10001", "01110"],
    "9": ["01110", "10001", "10001", "01111", "00001", "00010", "01100"],
    "A": ["01110", "10001", "10001", "11111", "10001", "10001", "10001"],
    "B": ["11110", "10001", "10001", "11110", "10001", "10001", "11110"],
    "C": ["01110", "10001", "10000", "10000", "10000", "10001", "01110"],
    "D": ["11100", "10010", "10001", "10001", "10001", "10010", "11100"],
    "E": ["11111", "10000", "10000", "11110", "10000", "10000", "11111"],
    "F": ["11111", "10000", "10000", "11110", "10000", "10000", "10000"],
    "G": ["01110", "10001", "10000", "10111", "10001", "10001", "01111"],
    "H": ["10001", "10001", "10001", "11111", "10001", "10001", "10001"],
    "I": ["01110", "00100", "00100", "00100", "00100", "00100", "01110"],
    "J": ["00111", "00010", "00010", "00010", "00010", "10010", "01100"],
    "K": ["10001", "10010", "10100", "11000", "10100", "10010", "10001"],
    "L": ["10000", "10000", "10000", "10000", "10000", "10000", "11111"],
    "M": ["10001", "11011", "10101", "10101", "10001", "10001", "10001"],
    "N": ["10001", "10001", "11001", "10101", "10011", "10001", "10001"],
    "O": ["01110", "10001", "10001", "10001", "10001", "10001", "01110"],
    "P": ["11110", "10001", "10001", "11110", "10000", "10000", "10000"],
    "Q": ["01110", "10001", "10001", "10001", "10101", "10010", "01101"],
    "R": ["11110", "10001", "10001", "11110", "10100", "10010", "10001"],
    "S": ["01111", "10000", "10000", "01110", "00001", "00001", "11110"],
    "T": ["11111", "00100", "00100", "00100", "00100", "00100", "00100"],
    "U": ["10001", "10001", "10001", "10001", "10001", "10001", "01110"],
    "V": ["10001", "10001", "10001", "10001", "10001", "01010", "00100"],
    "W": ["10001", "10001", "10001", "10101", "10101", "10101", "01010"],
    "X": ["10001", "10001", "01010", "00100", "01010", "10001", "10001"],
    "Y": ["10001", "10001", "10001", "01010", "00100", "00100", "00100"],
    "Z": ["11111", "00001", "00010", "00100", "01000", "10000", "11111"],
    ":": ["00000", "01100", "01100", "00000", "01100", "01100", "00000"],
    "/": ["00000", "00001", "00010", "00100", "01000", "10000", "00000"],
    "-": ["00000", "00000", "00000", "11111", "00000", "00000", "00000"],
    "+": ["00000", "00100", "00100", "11111", "00100", "00100", "00000"],
    ".": ["00000", "00000", "00000", "00000", "00000", "01100", "01100"],
    "!": ["00100", "00100", "00100", "00100", "00100", "00000", "00100"],
    " ": ["00000"] * 7,
    "♥": ["00000", "01010", "11111", "11111", "01110", "00100", "00000"],
    # coin: dark rim, mid-shade face, light shine (digits 1..3 are shades)
    "$": ["01110", "13331", "32223", "32123", "32223", "13331", "01110"],
}

GLYPH_CHARS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ:/-+.! ♥$"
HEART = "♥"
COIN = "$"
_GLYPH_ALIASES = {"<": "♥"}  # ascii-only spelling of the heart


def _glyph_tile(rows: list[str]) -> np.ndarray:
    tile = np.zeros((TILE, TILE), np.uint8)
    multi = any(c in "23" for r in rows for c in r)
    for y, row in enumerate(rows):
        for x, c in enumerate(row):
            v = int(c)
            tile[y, 1 + x] = v if multi else 3 * v
    return tile


GLYPH_TILES = np.stack([_glyph_tile(_FONT_5X7[c]) for c in GLYPH_CHARS])  # uint8[45, 8, 8]
_GLYPH_INDEX = {c: i for i, c in enumerate(GLYPH_CHARS)}


def glyph_index(char: str) -> int:
    """Index into ``GLYPH_TILES`` of one character (lower case maps to upper case)."""
    if len(char) != 1:
        raise ValueError(f"expected one character, got {char!r}")
    c = _GLYPH_ALIASES.get(char, char).upper()
    try:
        return _GLYPH_INDEX[c]
    except KeyError:
        raise KeyError(f"no glyph for {char!r}; available: {GLYPH_CHARS!r}") from None


def text_tiles(s: str, atlas: bool = False) -> np.ndarray:
    """Host helper: string -> int32[len(s)] indices into ``GLYPH_TILES``
    (or into ``ATLAS`` when ``atlas=True``). One 8x8 tile per character."""
    idx = np.array([glyph_index(c) for c in s], dtype=np.int32)
    return idx + ATLAS_GLYPH0 if atlas else idx


# --------------------------------------------------------------------------
# 3x5 digits: two per tile, for numbers 0..99
# --------------------------------------------------------------------------

_FONT_3X5 = {
    "0": ["111", "101", "101", "101", "111"],
    "1": ["010", "110", "010", "010", "111"],
    "2": ["111", "001", "111", "100", "111"],
    "3": ["111", "001", "011", "001", "111"],
    "4": ["101", "101", "111", "001", "001"],
    "5": ["111", "100", "111", "001", "111"],
    "6": ["111", "100", "111", "101", "111"],
    "7": ["111", "001", "010", "010", "010"],
    "8": ["111", "101", "111", "101", "111"],
    "9": ["111", "101", "111", "001", "111"],
}


def _number_tile(n: int) -> np.ndarray:
    tile = np.zeros((TILE, TILE), np.uint8)
    digits = f"{n:d}"
    # right-aligned: tens digit in columns 0..2, units digit in columns 4..6; rows 1..5
    for d, x0 in zip(digits[::-1], (4, 0)):
        glyph = np.array([[int(c) for c in r] for r in _FONT_3X5[d]], np.uint8)
        tile[1:6, x0 : x0 + 3] = 3 * glyph
    return tile


NUMBER_TILES = np.stack([_number_tile(n) for n in range(100)])  # uint8[100, 8, 8]

# --------------------------------------------------------------------------
# star pips, empty cell, empty
# --------------------------------------------------------------------------


def _star_tile(k: int) -> np.ndarray:
    # k 2x2 pips along the top two rows, centred, 1 px apart
    tile = np.zeros((TILE, TILE), np.uint8)
    x0 = (TILE - (3 * k - 1)) // 2 if k else 0
    for j in range(k):
        tile[0:2, x0 + 3 * j : x0 + 3 * j + 2] = 3
    return tile


STAR_PIPS = np.stack([_star_tile(k) for k in range(4)])  # uint8[4, 8, 8], index = stars
STAR_PIP = STAR_PIPS  # alias

EMPTY = np.zeros((TILE, TILE), np.uint8)
EMPTY_CELL = np.zeros((TILE, TILE), np.uint8)
EMPTY_CELL[[0, -1], :] = 1
EMPTY_CELL[:, [0, -1]] = 1

# --------------------------------------------------------------------------
# packed versions and the atlas
# --------------------------------------------------------------------------

SPECIES_TILES_PACKED = pack_tile(SPECIES_TILES)  # uint8[28, 8, 2]
GLYPH_TILES_PACKED = pack_tile(GLYPH_TILES)  # uint8[45, 8, 2]
NUMBER_TILES_PACKED = pack_tile(NUMBER_TILES)  # uint8[100, 8, 2]
STAR_PIPS_PACKED = pack_tile(STAR_PIPS)  # uint8[4, 8, 2]
STAR_PIP_PACKED = STAR_PIPS_PACKED
EMPTY_PACKED = pack_tile(EMPTY)  # uint8[8, 2]
EMPTY_CELL_PACKED = pack_tile(EMPTY_CELL)  # uint8[8, 2]

ATLAS_EMPTY = 0
ATLAS_EMPTY_CELL = 1
ATLAS_STAR0 = 2  # + stars (0..3)
ATLAS_SPECIES0 = ATLAS_STAR0 + len(STAR_PIPS)  # + species
ATLAS_GLYPH0 = ATLAS_SPECIES0 + len(SPECIES_TILES)  # + glyph_index(c)
ATLAS_NUMBER0 = ATLAS_GLYPH0 + len(GLYPH_TILES)  # + n (0..99)
ATLAS = np.concatenate([EMPTY[None], EMPTY_CELL[None], STAR_PIPS, SPECIES_TILES, GLYPH_TILES, NUMBER_TILES])
ATLAS_PACKED = pack_tile(ATLAS)  # uint8[NUM_ATLAS_TILES, 8, 2]
NUM_ATLAS_TILES = len(ATLAS)

# import-time sanity: species sprites pairwise distinct and non-empty
assert len({t.tobytes() for t in SPECIES_TILES}) == S.NUM_SPECIES
assert all(t.any() for t in SPECIES_TILES)
