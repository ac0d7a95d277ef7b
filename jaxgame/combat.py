"""Combat: a deterministic, tick-based fight between two boards (pure JAX).

The exact rules, with every number, are in ``docs/combat.md``; this module
and the plain-Python reference ``jaxgame/combat_reference.py`` implement them
bit-for-bit (integer arithmetic only; the one random draw per fighter and tick
comes from :func:`tick_uniforms`).

Fighter ``i`` in ``0..23`` is the home unit on board cell ``i``; fighter
``24 + c`` is the away unit on cell ``c``. The grid is 8 columns (x) by 6 rows
(y): home cell (row r, col c) stands at (x=c, y=2-r), away cell (row r, col c)
at (x=7-c, y=3+r), so the two front rows meet in the middle.

Representation (for speed; the results do not depend on it). A fight
simulates ``K = max_units`` units a side, not all 24 cells: units ``0..K-1``
are the home side, ``K..2K-1`` the away side, and within a side the occupied
cells come first in cell order, then padding (empty cells, never alive).
Compact order is fighter order, so "lowest fighter index" tie-breaks are
unchanged; ``Fighters.index`` maps a unit back to its fighter index (its
random draw and its replay slot). The default ``K = 24`` is exact for every
board; the game passes ``K = MAX_LEVEL`` (9), the most units a board can hold.

Fights are simulated in batches with the batch as the LAST axis (per-unit
arrays ``[2K, B]``), so every op of a tick is a vector op across fights, and
pairwise work is one ``[K, K, B]`` block per side (targets: one
``[2, K, K, B]`` block for both sides), reduced over the other units (row by
row on a CPU). :func:`simulate_fight` is written for
one fight but defines its ``vmap`` (``jax.custom_batching.custom_vmap``): a
vmapped call, nested vmaps included, runs :func:`simulate_fights` once on the
whole flattened batch. :func:`simulate_fights` runs a ``lax.while_loop`` until
every fight of the batch is decided, jumping over the ticks in which no
unit can act (:func:`idle_ticks`); :func:`record_fight` runs the same
:func:`tick` under ``lax.scan``, every tick, and keeps every frame for replays.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxgame import constants as C
from jaxgame import random_bits, synergy
from jaxgame import species as sp
from jaxgame.batching import any_in_batch

NUM_FIGHTERS = C.MAX_FIGHTERS  # 48
HALF = C.BOARD_CELLS  # 24 fighters per side
COLS = C.GRID_COLS  # 8
ROWS = C.GRID_ROWS  # 6

TICK_MS = 100
TICKS_PER_SECOND = 10
CRIT_CHANCE = 0.1
CRIT_MULT = 2
DEF_PERCENT = 5  # each point of def/spdef adds 5% to the damage divisor
MANA_PER_ATTACK = 5
MANA_PER_SECOND = 10
MANA_PER_DAMAGE = 10  # +ceil(damage / 10) mana per damage instance taken
STUN_TICKS = 15
MONSTER_HEAL_MULT = 10
# What a fighter did in a tick, as record_fight records it (FightReplay.action)
ACT_NONE, ACT_BASIC, ACT_CAST = 0, 1, 2
_NO_KEY = 0x7FFFFFFF  # int32 max: "nothing" in packed-key minimums
# Implementation limits (checked on the static tables): special damage is divided in float32
# (see _div_spell), and target stats are bit-packed into one int32 per unit.
_DIV_EPS = 1.0 / 512
_MAX_POTENCY = 80_000
assert int(sp.SPECIES_POWER.max()) * (100 + int(sp.SYNERGY_VALUES[sp.PSYCHIC].max())) <= _MAX_POTENCY
assert int(sp.SPECIES_SPDEF.max()) < 16 and int(sp.SPECIES_DEF.max()) < 32
assert int(sp.SYNERGY_VALUES[sp.FIGHTING].max()) < 64

#: int32[NUM_SPECIES] ms between basic attacks: round(1000 / (0.4 + 0.007 * speed)).
ATTACK_INTERVAL_MS = np.round(1000.0 / (0.4 + 0.007 * sp.SPECIES_SPEED.astype(np.float64))).astype(np.int32)
#: int32[NUM_SPECIES] ms between steps: 40000 // speed.
MOVE_INTERVAL_MS = (40000 // sp.SPECIES_SPEED).astype(np.int32)

#: Fixed neighbour order (last tie-break of a step): row-major over (dy, dx).
NEIGHBOUR_DX = np.array([-1, 0, 1, -1, 1, -1, 0, 1], dtype=np.int32)
NEIGHBOUR_DY = np.array([-1, -1, -1, 0, 0, 1, 1, 1], dtype=np.int32)
#: The 3x3 block around a cell (area damage, shield), centre included.
AREA_DX = np.array([-1, 0, 1, -1, 0, 1, -1, 0, 1], dtype=np.int32)
AREA_DY = np.array([-1, -1, -1, 0, 0, 0, 1, 1, 1], dtype=np.int32)

#: A draw ``u`` is a crit (``u < float32(0.1)``) iff its 32 random bits ``b`` have ``b >> 9 < CRIT_BELOW``:
#: ``jax.random.uniform`` makes ``u = (b >> 9) * 2**-23`` exactly.
CRIT_BELOW = int(np.ceil(np.float64(np.float32(CRIT_CHANCE)) * 2**23))


@struct.dataclass
class FightResult:
    winner: jax.Array  # int32[]  0 = home wins, 1 = away wins, 2 = draw
    home_survivors: jax.Array  # int32[]  alive home units at the end
    away_survivors: jax.Array  # int32[]
    home_damage: jax.Array  # int32[]  total damage dealt by home units (hp + shield removed)
    away_damage: jax.Array  # int32[]
    ticks: jax.Array  # int32[]  ticks simulated


@struct.dataclass
class FightReplay:
    """Per-tick recording; frame 0 is the start, frame t+1 the state after tick t."""

    x: jax.Array  # int32[T+1, 48]
    y: jax.Array  # int32[T+1, 48]
    hp: jax.Array  # int32[T+1, 48]  (0 once dead)
    max_hp: jax.Array  # int32[48]
    mana: jax.Array  # int32[T+1, 48]  (0 once dead)
    max_mana: jax.Array  # int32[48]
    action: jax.Array  # int32[T, 48]  what the fighter did in tick t: ACT_NONE, ACT_BASIC or ACT_CAST
    target: jax.Array  # int32[T, 48]  the fighter index it attacked or cast at in tick t, -1 when ACT_NONE
    alive: jax.Array  # bool[T+1, 48]
    species: jax.Array  # int32[48]  (-1 = no unit)
    stars: jax.Array  # int32[48]  (0 = no unit)
    team: jax.Array  # int32[48]  0 = home, 1 = away


@struct.dataclass
class Fighters:
    """Per-unit constants of a batch of B fights: int32[2K, B] each (K = ``max_units``, batch last)."""

    index: jax.Array  # fighter index of the unit: home cell c -> c, away cell c -> 24 + c
    team: jax.Array
    species: jax.Array
    stars: jax.Array
    max_hp: jax.Array
    defense: jax.Array
    spdef: jax.Array
    range: jax.Array
    max_mana: jax.Array
    ability: jax.Array
    power: jax.Array
    atk_interval: jax.Array
    move_interval: jax.Array
    ap: jax.Array  # psychic ability power (%)
    block: jax.Array  # fighting block per damage instance taken
    fire: jax.Array  # atk gained per basic attack
    water: jax.Array  # extra mana per second
    grass: jax.Array  # hp healed per second
    steel: jax.Array  # true damage per basic attack, % of atk
    monster: jax.Array  # atk (and 10x hp) gained per kill


@struct.dataclass
class FightState:
    """Per-unit mutable state of a batch of fights: int32[2K, B] unless noted, and damage totals."""

    x: jax.Array
    y: jax.Array
    hp: jax.Array
    shield: jax.Array
    mana: jax.Array
    atk: jax.Array
    atk_cd: jax.Array  # ms
    move_cd: jax.Array  # ms
    stun: jax.Array  # ticks
    target: jax.Array  # unit index (0..2K-1) or -1
    alive: jax.Array  # bool[2K, B]
    home_damage: jax.Array  # int32[B]
    away_damage: jax.Array  # int32[B]

    if TYPE_CHECKING:  # flax.struct.dataclass adds it; declared for the type checker only

        def replace(self, **changes) -> FightState: ...


def tick_uniforms(key, tick) -> jax.Array:
    """float32[48]: the fresh uniform draw of every fighter for one tick (crits)."""
    return jax.random.uniform(jax.random.fold_in(key, tick), (NUM_FIGHTERS,), dtype=jnp.float32)


_TICK_UNIFORMS = tick_uniforms


# ---------------- random draws ----------------
def _fast_draws(keys) -> bool:
    """Whether :func:`_unit_crits` may hash the units' draws itself: threefry keys with partitionable bits
    (jax's default), where draw i of ``jax.random.uniform(key, (48,))`` only depends on (key, i), and
    ``tick_uniforms`` is this module's own (a test may replace it)."""
    return tick_uniforms is _TICK_UNIFORMS and random_bits.hashable(keys)


def _unit_crits(keys, t, index) -> jax.Array:
    """bool[2K, B]: ``tick_uniforms(keys[b], t[b])[index[:, b]] < 0.1`` for typed keys[B], t int32 (scalar or
    [B]) and index int32[2K, B]."""
    if _fast_draws(keys):
        data = jax.random.key_data(keys)  # uint32[B, 2]
        zero = jnp.uint32(0)
        k0, k1 = random_bits.threefry2x32(data[:, 0], data[:, 1], zero, jnp.asarray(t).astype(jnp.uint32))  # fold_in
        b0, b1 = random_bits.threefry2x32(k0, k1, zero, index.astype(jnp.uint32))
        return ((b0 ^ b1) >> jnp.uint32(9)) < jnp.uint32(CRIT_BELOW)
    draws = jax.vmap(tick_uniforms)(keys, jnp.broadcast_to(t, keys.shape))  # float32[B, 48]
    return jnp.take_along_axis(draws.T, index, axis=0) < jnp.float32(CRIT_CHANCE)


# ---------------- setup ----------------
def _side_synergy(board_species: jax.Array, occupied: jax.Array) -> jax.Array:
    """int32[24, NUM_TYPES]: synergy effect value per unit and type for one side."""
    masked = jnp.where(occupied, board_species, -1)
    levels = synergy.synergy_levels(synergy.type_counts(masked))  # int32[NUM_TYPES]
    values = jnp.asarray(sp.SYNERGY_VALUES)[jnp.arange(sp.NUM_TYPES), levels]  # int32[NUM_TYPES]
    has_type = jnp.asarray(sp.SPECIES_TYPE_MASK)[jnp.maximum(board_species, 0)] & occupied[:, None]
    return jnp.where(has_type, values[None, :], 0).astype(jnp.int32)


def _side_units(occupied: jax.Array, max_units: int) -> jax.Array:
    """int32[max_units]: the cells a side simulates, occupied ones first (in cell order), then empty ones."""
    return jnp.argsort(~occupied, stable=True)[:max_units].astype(jnp.int32)


def _start_position(index: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(x, y): int32 grid positions at tick 0 of fighter indices (home cell c -> c, away cell c -> 24 + c)."""
    away = index >= HALF
    cell = index % HALF
    row, col = cell // COLS, cell % COLS
    return jnp.where(away, COLS - 1 - col, col), jnp.where(away, C.BOARD_ROWS + row, (C.BOARD_ROWS - 1) - row)


#: int32[NUM_SPECIES, 10]: the per-species constants of a fighter, one column each (hp, atk, def, spdef, range,
#: max mana, ability, power, attack and move intervals), gathered at once by :func:`_init_one`.
_SPECIES_TABLE = np.stack(
    [
        np.asarray(t).astype(np.int32)
        for t in (
            sp.SPECIES_HP,
            sp.SPECIES_ATK,
            sp.SPECIES_DEF,
            sp.SPECIES_SPDEF,
            sp.SPECIES_RANGE,
            sp.SPECIES_MAX_MANA,
            sp.SPECIES_ABILITY,
            sp.SPECIES_POWER,
            ATTACK_INTERVAL_MS,
            MOVE_INTERVAL_MS,
        )
    ],
    axis=1,
)


def _init_one(home_species, home_stars, away_species, away_stars, max_units):
    """Fighters and tick-0 state of one fight (int32[2K] fields, scalar damage totals)."""
    home_species = jnp.asarray(home_species, jnp.int32)
    away_species = jnp.asarray(away_species, jnp.int32)
    home_stars = jnp.asarray(home_stars, jnp.int32)
    away_stars = jnp.asarray(away_stars, jnp.int32)
    home_occ = (home_species >= 0) & (home_stars > 0)
    away_occ = (away_species >= 0) & (away_stars > 0)
    index = jnp.concatenate([_side_units(home_occ, max_units), HALF + _side_units(away_occ, max_units)])
    occupied = jnp.concatenate([home_occ, away_occ])[index]
    species = jnp.where(occupied, jnp.concatenate([home_species, away_species])[index], -1)
    stars = jnp.where(occupied, jnp.clip(jnp.concatenate([home_stars, away_stars])[index], 0, sp.MAX_STARS), 0)
    s = jnp.maximum(species, 0)
    both = jax.vmap(_side_synergy)(jnp.stack([home_species, away_species]), jnp.stack([home_occ, away_occ]))
    syn = both.reshape(2 * HALF, sp.NUM_TYPES)[index]
    # the species' constants, one gather: int32[2K, 10]
    tables = jnp.where(occupied[:, None], jnp.asarray(_SPECIES_TABLE)[s], 0)
    hp, atk, defense, spdef, range_, max_mana, ability, power, atk_interval, move_interval = tables.T
    x, y = _start_position(index)
    max_hp = hp * jnp.asarray(sp.STAR_HP_TENTHS)[stars] // 10
    atk = atk * jnp.asarray(sp.STAR_ATK_MULT)[stars]
    f = Fighters(
        index=index,
        team=(index >= HALF).astype(jnp.int32),
        species=species,
        stars=stars,
        max_hp=max_hp,
        defense=defense,
        spdef=spdef,
        range=range_,
        max_mana=max_mana,
        ability=ability,
        power=power,
        atk_interval=atk_interval,
        move_interval=move_interval,
        ap=syn[:, sp.PSYCHIC],
        block=syn[:, sp.FIGHTING],
        fire=syn[:, sp.FIRE],
        water=syn[:, sp.WATER],
        grass=syn[:, sp.GRASS],
        steel=syn[:, sp.STEEL],
        monster=syn[:, sp.MONSTER],
    )
    zeros = jnp.zeros(2 * max_units, jnp.int32)
    state = FightState(
        x=x,
        y=y,
        hp=max_hp,
        shield=syn[:, sp.NORMAL],
        mana=zeros,
        atk=atk,
        atk_cd=zeros,
        move_cd=zeros,
        stun=zeros,
        target=jnp.full(2 * max_units, -1, jnp.int32),
        alive=occupied,
        home_damage=jnp.int32(0),
        away_damage=jnp.int32(0),
    )
    return f, state


def init_fights(
    home_species, home_stars, away_species, away_stars, max_units: int = HALF
) -> tuple[Fighters, FightState]:
    """Fighter constants and the state at tick 0 of B fights, batch last (``[2K, B]`` fields).

    Boards are int32[B, 24] (species, -1 empty; stars, 0 empty). ``max_units`` (static) is K, the units
    simulated a side; exact when no side has more than K occupied cells (always with the default 24).
    """
    if not 1 <= max_units <= HALF:
        raise ValueError(f"max_units must be in 1..{HALF}, got {max_units}")
    one = functools.partial(_init_one, max_units=max_units)
    fighters, state = jax.vmap(one)(home_species, home_stars, away_species, away_stars)
    return jax.tree.map(lambda a: jnp.moveaxis(a, 0, -1), (fighters, state))


# ---------------- one tick ----------------
def _div(a, b):
    """Exact floor division a // b for int32 0 <= a < 2**24 and 0 < b < 2**24, without integer divides.

    The float32 quotient is within one of the true one; one integer correction step fixes it.
    """
    q = jnp.floor(a.astype(jnp.float32) / b.astype(jnp.float32)).astype(jnp.int32)
    q = q - (q * b > a).astype(jnp.int32)
    return q + ((q + 1) * b <= a).astype(jnp.int32)


def _div_spell(potency_f, inv_divisor):
    """potency // divisor from float32 potency and float32 1/divisor: floor(potency * (1/divisor) + 1/512).

    Exact for integer 0 <= potency <= _MAX_POTENCY (80000) and divisor in [100, 150]: the float error is
    below 2e-4 while a non-integer quotient is at least 1/150 below the next integer.
    """
    return jnp.floor(potency_f * inv_divisor + _DIV_EPS).astype(jnp.int32)


def _per_platform(fn, *args):
    """``fn(*args, cpu=...)`` with ``cpu`` (static) True when the program runs on a CPU, else False: both
    are traced, the one of the lowering platform is lowered (``lax.platform_dependent``). The CPU
    workarounds of the code ``fn`` calls (:func:`_reduce_rows`, :func:`_materialize`) take that flag, so a
    tick's program holds one platform choice instead of one per reduction."""
    return jax.lax.platform_dependent(
        *args, cpu=functools.partial(fn, cpu=True), default=functools.partial(fn, cpu=False)
    )


def _materialize(zero, *arrays, cpu: bool | None = None):
    """The arrays (same shape) unchanged, but on a CPU computed once: XLA:CPU would otherwise fuse (and so
    re-compute) their producers, reductions included, into every consumer. ``zero``: an int32 scalar that
    is 0 at run time but unknown to the compiler, so the scatter below stays a scatter (never fused into
    its users) instead of being simplified away; ``lax.optimization_barrier`` is expanded before fusion on
    CPU. Elsewhere the arrays as they are (a scatter would be one more kernel). ``cpu`` (static): whether
    the program runs on a CPU, None for unknown (decided at lowering, see :func:`_per_platform`)."""
    if cpu is None:
        return jax.lax.platform_dependent(zero, *arrays, cpu=_materialized, default=lambda zero, *arrays: arrays)
    return _materialized(zero, *arrays) if cpu else arrays


def _materialized(zero, *arrays):
    """:func:`_materialize` on a CPU."""
    dtypes = [a.dtype for a in arrays]
    padded = [a.astype(jnp.int32) for a in arrays] + [jnp.zeros_like(arrays[0], jnp.int32)]  # 2+ rows: not
    stacked = jnp.stack(padded)  # a single-row scatter, which XLA would turn into a fusible update
    rows = jnp.arange(len(padded), dtype=jnp.int32) + zero
    out = jnp.zeros_like(stacked).at[rows].set(stacked, unique_indices=True)
    return tuple(o.astype(d) for o, d in zip(out, dtypes))


def _sides(n: int) -> tuple:
    """Per side of ``n`` units (home first), (its units: slice, their enemies: range) of unit indices."""
    h = n // 2
    return (slice(0, h), range(h, n)), (slice(h, n), range(h))


def _sided(a: jax.Array) -> jax.Array:
    """A per-unit array ``[n, ...]`` as ``[2, n // 2, ...]``: the home side's units, then the away side's."""
    return a.reshape(2, a.shape[0] // 2, *a.shape[1:])


def _unsided(a: jax.Array) -> jax.Array:
    """The inverse of :func:`_sided`: ``[2, h, ...]`` -> ``[2h, ...]``."""
    return a.reshape(2 * a.shape[1], *a.shape[2:])


def _units(a: jax.Array) -> jax.Array:
    """A per-unit array ``[n, ...]`` as ``[2, 1, n // 2, ...]``: the units' operand of a pairwise block
    (:func:`_over_sides`)."""
    return _sided(a)[:, None]


def _per_side(op: str, a: jax.Array, cpu: bool | None = None) -> jax.Array:
    """``op``-reduce a per-unit array ``[n, ...]`` over the units of each side: ``[2, ...]`` (home, away)."""
    return _reduce_rows(op, _sided(a), cpu, axis=1)


def _cheb(ax, ay, bx, by):
    return jnp.maximum(jnp.abs(ax - bx), jnp.abs(ay - by))


#: Pairwise reductions over at most this many other units (all of them with up to 9 units a side) are one
#: block of elementwise ops that XLA fuses into a few loops; longer ones (the 24-a-side layout) are rolled
#: loops over the other units, which compile much faster.
UNROLL_MAX = 18

_COMBINE = {"min": jnp.minimum, "add": jnp.add, "or": jnp.logical_or}


_REDUCE = {"min": jnp.min, "add": jnp.sum, "or": jnp.any}


def _reduce_rows(op: str, block: jax.Array, cpu: bool | None = None, axis: int = 0) -> jax.Array:
    """``op`` ("min", "add" or "or") over the leading axis (or ``axis``, static) of ``block`` [m, ...],
    keeping its dtype. On a CPU row by row (elementwise ops on the rows, unrolled up to :data:`UNROLL_MAX`
    rows): XLA:CPU's reductions over a major axis do not vectorise. Elsewhere one reduction, one kernel on an
    accelerator instead of a chain. ``cpu``: as :func:`_materialize`'s."""
    combine, m = _COMBINE[op], block.shape[axis]

    def rows(block):
        if m <= UNROLL_MAX:
            return functools.reduce(combine, [jax.lax.index_in_dim(block, i, axis, False) for i in range(m)])
        row = functools.partial(jax.lax.dynamic_index_in_dim, block, axis=axis, keepdims=False)
        return jax.lax.fori_loop(1, m, lambda i, acc: combine(acc, row(i)), row(0))

    def reduction(block):
        return _REDUCE[op](block, axis=axis).astype(block.dtype)

    if cpu is None:
        return jax.lax.platform_dependent(block, cpu=rows, default=reduction)
    return rows(block) if cpu else reduction(block)


def _others(a: jax.Array, enemies: bool = True) -> jax.Array:
    """Per side of the units, the rows of the other side's units (``enemies``) or of its own side's, of a
    per-unit array ``a[n, ...]``, as ``[2, h, 1, ...]`` (side of the units, other unit): the other units'
    operand of a pairwise block against the units' arrays as ``[2, 1, h, ...]`` (:func:`_units`)."""
    return (_sided(a)[::-1] if enemies else _sided(a))[:, :, None]


def _other_ids(n: int, enemies: bool = True) -> jax.Array:
    """int32[2, h, 1, 1]: the unit indices of :func:`_others`' rows (n units, h = n // 2 a side)."""
    h = n // 2
    first = np.array([h, 0] if enemies else [0, h], np.int32)
    return jnp.asarray((first[:, None] + np.arange(h, dtype=np.int32)[None, :])[:, :, None, None])


def _over_sides(op: str, n: int, term, enemies: bool = True, cpu: bool | None = None) -> jax.Array:
    """For each of ``n`` units (two sides of h), ``op``-reduce ``term(pick, j)`` over the h units ``j`` of the
    other side (``enemies``) or of its own side (its allies, itself included): both sides in one traced
    block. Returns ``[2, h, B]`` (:func:`_unsided` makes it ``[n, B]``); ``term`` broadcasts against the units'
    arrays as ``[2, 1, h, B]`` (:func:`_units`). Up to :data:`UNROLL_MAX` units a side, at once: ``pick(a)`` is,
    per side of the units, the other units' rows ``[2, h, 1, B]`` of a per-unit array ``a[n, B]`` (or
    ``[2, h, 1, 1]`` of an ``[n, 1]`` one) and ``j`` their indices int32[2, h, 1, 1], so ``term`` builds one
    ``[2, h, h, B]`` block (side, other unit, unit) that :func:`_reduce_rows` reduces over its axis 1; else one
    at a time in a rolled loop (``pick(a)`` ``[2, 1, 1, B]``, ``j`` int32[2, 1, 1, 1]). ``cpu``: as
    :func:`_materialize`'s."""
    h = n // 2
    if h <= UNROLL_MAX:
        block = term(functools.partial(_others, enemies=enemies), _other_ids(n, enemies))
        return _reduce_rows(op, block, cpu, axis=1)
    combine = _COMBINE[op]
    first = _other_ids(n, enemies)[:, :1]  # [2, 1, 1, 1]

    def one(j):
        def row(a):  # [n, B] -> [2, 1, 1, B]: per side of the units, the other unit j's row
            return jax.lax.dynamic_index_in_dim(_others(a, enemies), j, axis=1)

        return term(row, first + j)

    return jax.lax.fori_loop(1, h, lambda j, acc: combine(acc, one(j)), one(0))[:, 0]


def _over(op: str, others: range, term, cpu: bool | None = None) -> jax.Array:
    """``op``-reduce ``term(pick, j)`` over the other units ``j`` in ``others``. Up to :data:`UNROLL_MAX` of
    them, at once: ``pick(a)`` is their rows ``[m, 1, B]`` of a per-unit array ``a[2K, B]`` (or ``[m, 1, 1]``
    of an ``[2K, 1]`` one) and ``j`` their indices int32[m, 1, 1], so ``term`` builds one ``[m, k, B]`` block
    (broadcast against ``[k, B]`` unit arrays) that :func:`_reduce_rows` reduces; else one at a time in a
    rolled loop (``pick(a)`` row j ``[B]``, ``j`` a traced int32). ``cpu``: as :func:`_materialize`'s."""
    combine = _COMBINE[op]
    if len(others) <= UNROLL_MAX:
        ids = jnp.arange(others.start, others.stop, dtype=jnp.int32)[:, None, None]
        return _reduce_rows(op, term(lambda a: a[others.start : others.stop, None], ids), cpu)
    first = term(lambda a: a[others.start], others.start)
    return jax.lax.fori_loop(others.start + 1, others.stop, lambda j, acc: combine(acc, term(lambda a: a[j], j)), first)


#: A coordinate far off the grid: the area centre of an attacker that casts no area, the x of a dead victim
#: (never splashed), the x of a unit that casts no shield.
_FAR = -100


class _Tick(NamedTuple):
    """The working record of one tick of B fights, handed from phase to phase (n = 2K units).

    Per-unit fields are ``[n, B]`` (batch last), int32 unless noted; a phase's outputs are ``None`` until
    it has run. Every decision reads the state at the start of the tick (``s``, ``cell`` and the fields
    phases 1-2 derive from it); damage, heals, shields, stuns, mana and attack gains are applied at the end
    (phase 7). The record only names intermediate arrays: it adds no work to the traced program.
    """

    # constants of the tick (:func:`_start_tick`)
    f: Fighters  # per-unit constants, int32[n, B] fields
    s: FightState  # the state at the start of the tick
    t: jax.Array  # int32 scalar or [B]: each fight's tick number (its draws, once-a-second effects)
    keys: jax.Array  # typed PRNG keys[B]
    opaque: jax.Array  # int32 scalar, 0 at run time but unknown to the compiler (see _materialize)
    idx: jax.Array  # int32[n, 1]: unit index
    cell: jax.Array  # grid cell y * COLS + x at the start of the tick
    cpu: bool | None  # static: whether the program runs on a CPU, None for unknown (see _per_platform)
    # per-unit state, the start-of-tick values until a phase updates them (phases read positions at the
    # start of the tick from ``s``)
    x: jax.Array  # phase 6
    y: jax.Array  # phase 6
    atk_cd: jax.Array  # ms; phases 1, 4
    move_cd: jax.Array  # ms; phases 1, 6
    stun: jax.Array  # ticks; phases 2, 7
    target: jax.Array  # unit index or -1; phase 3
    # phase 2, _apply_stun
    act: jax.Array | None = None  # bool: alive at the start and not stunned
    # phase 3, _pick_targets
    has_enemy: jax.Array | None = None  # bool: some enemy is alive
    near_dist: jax.Array | None = None  # distance to the nearest alive enemy; -1 when the target is kept
    ex: jax.Array | None = None  # x of the kept target, else of the nearest alive enemy
    ey: jax.Array | None = None  # y of the same
    t_def: jax.Array | None = None  # def of the same
    t_spdef: jax.Array | None = None  # spdef of the same
    t_block: jax.Array | None = None  # fighting block of the same
    new_target: jax.Array | None = None  # the target (unit index) chosen this tick, or -1
    has_target: jax.Array | None = None  # bool: acts and has a target
    # phase 4, _attack_or_cast
    cast: jax.Array | None = None  # bool: casts its ability
    basic: jax.Array | None = None  # bool: basic-attacks
    basic_amt: jax.Array | None = None  # its basic attack's damage instance (if it attacks)
    # phase 5, _cast_abilities; per attacker: the damage instance on its target, the centre of its area
    # cast, its stun target; per victim: its x; sentinels (_FAR, -1) make the pairwise masks implicit
    direct: jax.Array | None = None  # damage on direct_tgt (basic attack, nuke, stun), else 0
    direct_tgt: jax.Array | None = None  # unit index or -1
    splash_x: jax.Array | None = None  # area centre x, _FAR when it casts no area
    splash_y: jax.Array | None = None  # area centre y, _FAR when it casts no area
    stun_tgt: jax.Array | None = None  # unit index it stuns, or -1
    vic_x: jax.Array | None = None  # x as a victim: -_FAR once dead (never splashed)
    potency_f: jax.Array | None = None  # float32: power * (100 + ap)
    inv_div: jax.Array | None = None  # float32: 1 / (100 + 5 * spdef), as a victim
    shield_gain: jax.Array | None = None  # shield received from shield casts
    heal: jax.Array | None = None  # hp received from heal casts
    # phase 6, _move_units
    moves: jax.Array | None = None  # bool: stepped to a neighbouring cell
    # phase 7.1-7.3, _collect_hits and _apply_damage
    incoming: jax.Array | None = None  # sum of the damage instances taken
    mana_hit: jax.Array | None = None  # sum of ceil(instance / 10) over the instances taken
    killer: jax.Array | None = None  # lowest unit index that damaged it, else n
    stun_hit: jax.Array | None = None  # bool: the target of a stun cast
    shield: jax.Array | None = None  # shield after absorbing, then plus the gains
    hp: jax.Array | None = None  # hp after the damage, then plus the heals (capped)
    alive: jax.Array | None = None  # bool: alive at the end of the tick
    kills: jax.Array | None = None  # units it killed this tick
    # phase 7.4-7.6, _apply_gains
    mana: jax.Array | None = None
    atk: jax.Array | None = None


def _start_tick(f: Fighters, s: FightState, t, keys, clock, cpu: bool | None = None) -> _Tick:
    """The record of a tick of B fights at its start: ``f``, ``s`` (``[n, B]`` fields), ``t`` (int32 scalar
    or [B]), typed ``keys[B]``, ``clock`` (int32 scalar or None: the loop's counter, default ``t``); ``idx``
    int32[n, 1], ``cell`` int32[n, B] and the start-of-tick x, y, cooldowns, stun and target; ``cpu``: see
    :func:`_per_platform`."""
    n = s.alive.shape[0]
    idx = jnp.arange(n, dtype=jnp.int32)[:, None]
    cell = s.y * COLS + s.x
    return _Tick(
        f=f,
        s=s,
        t=t,
        keys=keys,
        opaque=jnp.asarray(t if clock is None else clock, jnp.int32) >> 30,  # 0 (< 2**30), see _materialize
        idx=idx,
        cell=cell,
        cpu=cpu,
        x=s.x,
        y=s.y,
        atk_cd=s.atk_cd,
        move_cd=s.move_cd,
        stun=s.stun,
        target=s.target,
    )


def _cool_down(w: _Tick) -> _Tick:
    """Phase 1: ``atk_cd`` and ``move_cd`` (int32[n, B], ms) drop by one tick, down to 0 (stunned units
    too)."""
    return w._replace(atk_cd=jnp.maximum(w.atk_cd - TICK_MS, 0), move_cd=jnp.maximum(w.move_cd - TICK_MS, 0))


def _apply_stun(w: _Tick) -> _Tick:
    """Phase 2: a unit alive with ``stun > 0`` (int32[n, B], ticks) counts it down and does nothing else
    this tick. Sets ``act`` (bool[n, B]): alive at the start of the tick and not stunned."""
    stunned = w.s.alive & (w.stun > 0)
    return w._replace(act=w.s.alive & ~stunned, stun=jnp.where(stunned, w.stun - 1, w.stun))


def _pick_targets(w: _Tick) -> _Tick:
    """Phase 3: the target of every acting unit (int32[n, B] unit index, or -1), and the kept target's or
    else the nearest alive enemy's position, def, spdef and block (int32[n, B]; ``has_enemy`` bool[n, B]).

    Per unit, the min over its enemies of a packed key
    rank << 27 | index << 21 | cell << 15 | block << 9 | spdef << 5 | def, where rank is 0 for the
    current target if it is alive and within range, else 1 + distance; dead enemies are _NO_KEY. The
    min is the kept target if any, else the nearest alive enemy (ties lowest index), with its stats.
    """
    f, x, y = w.f, w.s.x, w.s.y
    code = jnp.where(w.s.alive, (w.idx << 21) | (w.cell << 15) | (f.block << 9) | (f.spdef << 5) | f.defense, _NO_KEY)

    def ranked(pick, e):
        d = _cheb(_units(x), _units(y), pick(x), pick(y))
        rank = jnp.where((_units(w.target) == e) & (d <= _units(f.range)), 0, d + 1)
        return (rank << 27) | pick(code)  # _NO_KEY stays _NO_KEY (rank < 16)

    (tkey,) = _materialize(w.opaque, _unsided(_over_sides("min", x.shape[0], ranked, cpu=w.cpu)), cpu=w.cpu)
    has_enemy = tkey != _NO_KEY
    near_dist = (tkey >> 27) - 1  # distance to the nearest enemy, or -1 when the target is kept
    found = (tkey >> 21) & 63  # the kept target, else the nearest enemy
    tcell = (tkey >> 15) & 63
    ex, ey = tcell & 7, tcell >> 3
    t_def, t_spdef, t_block = tkey & 31, (tkey >> 5) & 15, (tkey >> 9) & 63
    new_target = jnp.where(has_enemy & (near_dist <= f.range), found, -1)
    return w._replace(
        has_enemy=has_enemy,
        near_dist=near_dist,
        ex=ex,
        ey=ey,
        t_def=t_def,
        t_spdef=t_spdef,
        t_block=t_block,
        new_target=new_target,
        has_target=w.act & (new_target >= 0),
        target=jnp.where(w.act, new_target, w.target),
    )


def _attack_or_cast(w: _Tick) -> _Tick:
    """Phase 4: a unit with a target and ``atk_cd == 0`` casts (``mana >= max_mana``) or basic-attacks
    (``cast``, ``basic``: bool[n, B]) and pays the attack interval (``atk_cd``, int32[n, B] ms). Sets
    ``basic_amt`` (int32[n, B]): the basic attack's damage instance, crits from :func:`_unit_crits`."""
    f, s = w.f, w.s
    attack = w.has_target & (w.atk_cd == 0)
    cast = attack & (s.mana >= f.max_mana)
    basic = attack & ~cast
    atk_cd = jnp.where(attack, w.atk_cd + f.atk_interval, w.atk_cd)
    mult = jnp.where(_unit_crits(w.keys, w.t, f.index), CRIT_MULT, 1)
    raw = jnp.maximum(1, _div(s.atk * mult * 100, 100 + DEF_PERCENT * w.t_def))
    return w._replace(
        cast=cast, basic=basic, atk_cd=atk_cd, basic_amt=jnp.maximum(1, raw - w.t_block) + s.atk * f.steel // 100
    )


def _cast_abilities(w: _Tick) -> _Tick:
    """Phase 5: the casts' effects. Sets, int32[n, B] each: per attacker the direct damage instance on its
    target (basic attack, nuke or stun) ``direct`` / ``direct_tgt``, its area centre ``splash_x`` /
    ``splash_y``, its stun target ``stun_tgt``; per victim ``vic_x``; float32[n, B] ``potency_f`` and
    ``inv_div`` for area damage (:func:`_collect_hits` pairs them up); ``shield_gain`` and ``heal``
    received from shield and heal casts."""
    f, s, cast = w.f, w.s, w.cast
    x, y = s.x, s.y
    ability = f.ability
    potency = f.power * (100 + f.ap)
    amount = potency // 100
    single = cast & ((ability == sp.NUKE) | (ability == sp.STUN))
    single_amt = jnp.maximum(1, _div(potency, 100 + DEF_PERCENT * w.t_spdef) - w.t_block)
    direct = jnp.where(w.basic, w.basic_amt, jnp.where(single, single_amt, 0))
    direct_tgt = jnp.where(w.basic | single, w.new_target, -1)
    area = cast & (ability == sp.AREA)
    splash_x = jnp.where(area, w.ex, _FAR)
    splash_y = jnp.where(area, w.ey, _FAR)
    stun_tgt = jnp.where(cast & (ability == sp.STUN), w.new_target, -1)
    vic_x = jnp.where(s.alive, x, -_FAR)
    direct, direct_tgt, splash_x, splash_y, stun_tgt, vic_x = _materialize(
        w.opaque, direct, direct_tgt, splash_x, splash_y, stun_tgt, vic_x, cpu=w.cpu
    )
    potency_f = potency.astype(jnp.float32)
    inv_div = 1.0 / (100 + DEF_PERCENT * f.spdef).astype(jnp.float32)
    # shields: caster and alive allies within Chebyshev 1
    caster_x = jnp.where(cast & (ability == sp.SHIELD), x, _FAR)
    # Shields and heals stay one block per side (unlike :func:`_over_sides`): as one block for both sides,
    # XLA:CPU fuses them into their consumers differently and the tick runs about 10% slower.
    shield_gain = []
    for allies, _ in _sides(x.shape[0]):

        def shielded(pick, c, allies=allies):
            close = (jnp.abs(pick(caster_x) - vic_x[allies]) <= 1) & (jnp.abs(pick(y) - y[allies]) <= 1)
            return jnp.where(close, pick(amount), 0)

        shield_gain.append(_over("add", range(allies.start, allies.stop), shielded, w.cpu))
    # heals: the alive ally with the lowest hp permille (ties lowest index), per side
    heal_on = jnp.where(cast & (ability == sp.HEAL), amount, 0)
    ratio_key = jnp.where(s.alive, _div(s.hp * 1000, jnp.maximum(f.max_hp, 1)) * 64 + w.idx, _NO_KEY)
    heal = jnp.zeros_like(s.hp)
    for allies, _ in _sides(x.shape[0]):
        lowest = _reduce_rows("min", ratio_key[allies], w.cpu) & 63
        heal = heal + jnp.where(w.idx == lowest, _reduce_rows("add", heal_on[allies], w.cpu), 0)
    return w._replace(
        direct=direct,
        direct_tgt=direct_tgt,
        splash_x=splash_x,
        splash_y=splash_y,
        stun_tgt=stun_tgt,
        vic_x=vic_x,
        potency_f=potency_f,
        inv_div=inv_div,
        shield_gain=jnp.concatenate(shield_gain),
        heal=heal,
    )


def _move_units(w: _Tick) -> _Tick:
    """Phase 6: an acting unit with no target and ``move_cd == 0`` steps toward the nearest alive enemy;
    the lowest index claiming a cell gets it. Updates ``x``, ``y`` and ``move_cd`` (int32[n, B]).

    Occupancy at the start of the tick is a 48-bit mask in two uint32 words per fight (uint32[B]). The
    score of a step, (Chebyshev, squared distance to the nearest enemy, neighbour order), is packed as
    (cheb * 128 + sq) * 16 + code, code = (dy + 1) * 3 + (dx + 1) (increasing in the neighbour order).
    """
    u32 = jnp.uint32
    x, y, ex, ey, cell, idx = w.s.x, w.s.y, w.ex, w.ey, w.cell, w.idx
    bit = jnp.where(w.s.alive, jnp.left_shift(u32(1), (cell & 31).astype(u32)), u32(0))
    words = jnp.stack([jnp.where(cell < 32, bit, u32(0)), jnp.where(cell >= 32, bit, u32(0))], axis=1)  # [n, 2, B]
    occ_lo, occ_hi = _reduce_rows("add", words, w.cpu)
    dx, dy = NEIGHBOUR_DX[:, None, None], NEIGHBOUR_DY[:, None, None]  # the 8 steps at once: [8, n, B] below
    nx, ny = x + dx, y + dy
    npos = ny * COLS + nx
    word = jnp.where(npos < 32, occ_lo, occ_hi)
    taken = (jnp.right_shift(word, (npos & 31).astype(u32)) & u32(1)) > 0
    free = (nx >= 0) & (nx < COLS) & (ny >= 0) & (ny < ROWS) & ~taken
    score = (_cheb(nx, ny, ex, ey) * 128 + (nx - ex) ** 2 + (ny - ey) ** 2) * 16 + (dy + 1) * 3 + (dx + 1)
    (score,) = _materialize(w.opaque, _reduce_rows("min", jnp.where(free, score, _NO_KEY), w.cpu), cpu=w.cpu)
    best_cheb, best_sq, step = score >> 11, (score >> 4) & 127, score & 15
    cur_sq = (x - ex) ** 2 + (y - ey) ** 2
    closer = (best_cheb < w.near_dist) | ((best_cheb == w.near_dist) & (best_sq < cur_sq))
    want = w.act & ~w.has_target & (w.move_cd == 0) & w.has_enemy & (score < _NO_KEY) & closer
    dest_x = x + step % 3 - 1
    dest_y = y + step // 3 - 1
    (dest,) = _materialize(w.opaque, jnp.where(want, dest_y * COLS + dest_x, -1), cpu=w.cpu)
    # the lowest index claiming a cell gets it
    beaten = _over("or", range(w.s.alive.shape[0] - 1), lambda pick, j: (dest == pick(dest)) & (idx > j), w.cpu)
    (moves,) = _materialize(w.opaque, want & ~beaten, cpu=w.cpu)
    return w._replace(
        moves=moves,
        x=jnp.where(moves, dest_x, x),
        y=jnp.where(moves, dest_y, y),
        move_cd=jnp.where(moves, w.move_cd + w.f.move_interval, w.move_cd),
    )


def _collect_hits(w: _Tick) -> _Tick:
    """Phase 7.1 (and the inputs of 7.3, 7.4, 7.6): the damage instances of phases 4-5, one
    ``[2, K, K, B]`` block (side of the victims, attacker, victim), reduced per victim to int32[n, B]
    ``incoming`` (their sum), ``mana_hit`` (sum of ceil(instance / 10)), ``killer`` (the lowest attacker
    index, else n) and bool[n, B] ``stun_hit`` (the target of a stun cast)."""
    # per side, as shields and heals (see _cast_abilities): one block for both sides runs slower on a CPU
    f, idx, n = w.f, w.idx, w.s.alive.shape[0]
    blocks = []
    for victims, attackers in _sides(n):
        a, v = (slice(attackers.start, attackers.stop), None), (None, victims)
        splash = (jnp.abs(w.splash_x[a] - w.vic_x[v]) <= 1) & (jnp.abs(w.splash_y[a] - w.s.y[v]) <= 1)
        spell = jnp.maximum(1, _div_spell(w.potency_f[a], w.inv_div[v]) - f.block[v])
        blocks.append(jnp.where(splash, spell, jnp.where(w.direct_tgt[a] == idx[v], w.direct[a], 0)))
    (hits,) = _materialize(w.opaque, jnp.stack(blocks), cpu=w.cpu)  # [side of the victims, attacker, victim, B]
    per_side: tuple[list[jax.Array], ...] = ([], [], [], [])  # incoming, mana_hit, killer, stun_hit
    for side, (victims, attackers) in enumerate(_sides(n)):
        dmg, attacker = hits[side], idx[attackers.start : attackers.stop, None]
        per_side[0].append(_reduce_rows("add", dmg, w.cpu))
        per_side[1].append(_reduce_rows("add", _div(dmg + (MANA_PER_DAMAGE - 1), jnp.int32(MANA_PER_DAMAGE)), w.cpu))
        per_side[2].append(_reduce_rows("min", jnp.where(dmg > 0, attacker, n), w.cpu))
        per_side[3].append(_over("or", attackers, lambda pick, a, v=victims: pick(w.stun_tgt) == idx[v], w.cpu))
    incoming, mana_hit, killer, stun_hit = (jnp.concatenate(v) for v in per_side)
    return w._replace(incoming=incoming, mana_hit=mana_hit, killer=killer, stun_hit=stun_hit)


def _apply_damage(w: _Tick) -> _Tick:
    """Phases 7.1-7.3: shields absorb the incoming damage first, the rest comes off hp; units at hp <= 0
    die; each death is credited to its killer. Sets ``shield``, ``hp``, ``kills`` (int32[n, B]) and
    ``alive`` (bool[n, B])."""
    s, idx = w.s, w.idx
    absorbed = jnp.minimum(s.shield, w.incoming)
    shield = s.shield - absorbed
    alive0 = s.alive
    hp = s.hp - (w.incoming - absorbed)
    alive = alive0 & (hp > 0)
    died = alive0 & ~alive
    (credit,) = _materialize(w.opaque, jnp.where(died, w.killer, -1), cpu=w.cpu)
    kills = jnp.concatenate(  # per side: as one block for both sides, the tick runs slower on a CPU
        [
            _over("add", enemies, lambda pick, e, u=u: (pick(credit) == idx[u]).astype(jnp.int32), w.cpu)
            for u, enemies in _sides(idx.shape[0])
        ]
    )
    return w._replace(shield=shield, hp=hp, alive=alive, kills=kills)


def _apply_gains(w: _Tick) -> _Tick:
    """Phases 7.4-7.6: mana (int32[n, B]; attacks, casts, hits taken, once a second), atk (fire, monster
    kills), shields received, heals (capped at max_hp) and stuns received. Sets ``mana`` and ``atk``,
    updates ``shield``, ``hp`` and ``stun`` (int32[n, B]); dead units are zeroed by :func:`_end_tick`."""
    f, s, basic, kills = w.f, w.s, w.basic, w.kills
    second = (w.t % TICKS_PER_SECOND) == TICKS_PER_SECOND - 1
    mana = (
        s.mana
        - jnp.where(w.cast, f.max_mana, 0)
        + jnp.where(basic, MANA_PER_ATTACK, 0)
        + w.mana_hit
        + jnp.where(second, MANA_PER_SECOND + f.water, 0)
    )
    atk = s.atk + jnp.where(basic, f.fire, 0) + kills * f.monster
    shield = w.shield + w.shield_gain
    regen = w.heal + jnp.where(second, f.grass, 0) + kills * MONSTER_HEAL_MULT * f.monster
    return w._replace(
        mana=mana,
        atk=atk,
        shield=shield,
        hp=jnp.minimum(f.max_hp, w.hp + regen),
        stun=jnp.where(w.stun_hit, jnp.maximum(w.stun, STUN_TICKS), w.stun),
    )


def _end_tick(w: _Tick) -> FightState:
    """Phase 7.7 and the new state: dead units get hp, shield, mana and stun 0 and target -1; every
    damage instance counts toward its attacker's side total (int32[B])."""
    alive = w.alive
    home_taken, away_taken = _per_side("add", w.incoming, w.cpu)
    return FightState(
        x=w.x,
        y=w.y,
        hp=jnp.where(alive, w.hp, 0),
        shield=jnp.where(alive, w.shield, 0),
        mana=jnp.where(alive, w.mana, 0),
        atk=w.atk,
        atk_cd=w.atk_cd,
        move_cd=w.move_cd,
        stun=jnp.where(alive, w.stun, 0),
        target=jnp.where(alive, w.target, -1),
        alive=alive,
        home_damage=w.s.home_damage + away_taken,
        away_damage=w.s.away_damage + home_taken,
    )


def tick(f: Fighters, s: FightState, t, keys, clock=None) -> FightState:
    """One 100 ms tick of B fights (``[2K, B]`` state, typed keys[B]): every decision reads the state at
    the start of the tick. ``t``: each fight's tick number (int32, scalar or [B]), which picks its random
    draws and its once-a-second effects; ``clock`` (int32 scalar, default ``t``): the loop's own counter.

    The phases are those of docs/combat.md ("A tick"), each a function of the tick's working record
    (:class:`_Tick`). Pairwise work (targets, damage, shields, kill credit, move claims) is one block of
    every unit against the other units (targets: both sides in one block, :func:`_over_sides`; damage,
    shields, kill credit: one block per side; move claims: :func:`_over`), elementwise across the batch, reduced
    over the other units. The occupancy of the 48 grid cells is a bitmask. The only gathers are the units'
    draws on the generic path of :func:`_unit_crits`; the only scatters are :func:`_materialize`'s (on a
    CPU). The choice between the CPU's and the other platforms' code is made once, for the whole tick
    (:func:`_per_platform`).
    """

    def run(f, s, keys, cpu):
        return _end_tick(_tick_record(f, s, t, keys, clock, cpu))  # 7.7

    return _per_platform(run, f, s, keys)


def _tick_record(f: Fighters, s: FightState, t, keys, clock, cpu: bool | None = None) -> _Tick:
    """The working record of :func:`tick` at the end of phase 7.6 (its arguments are :func:`tick`'s;
    ``cpu``: see :func:`_per_platform`)."""
    w = _start_tick(f, s, t, keys, clock, cpu)
    w = _cool_down(w)  # 1
    w = _apply_stun(w)  # 2
    w = _pick_targets(w)  # 3
    w = _attack_or_cast(w)  # 4
    w = _cast_abilities(w)  # 5
    w = _move_units(w)  # 6
    w = _collect_hits(w)  # 7.1
    w = _apply_damage(w)  # 7.1-7.3
    return _apply_gains(w)  # 7.4-7.6


# ---------------- whole fights ----------------
def idle_ticks(f: Fighters, s: FightState, t, max_ticks: int, stuck, cpu: bool | None = None) -> jax.Array:
    """int32[B]: how many ticks from now, at most ``max_ticks - t``, change nothing but the clocks.

    A tick only counts down cooldowns and stuns and adds the once-a-second mana and grass heal unless some
    unit attacks, casts or moves in it; units die only from damage, so nothing else changes either. With
    the positions fixed, an acting (alive, unstunned) unit with an alive enemy within range keeps or takes
    that target and acts first on the tick its ``atk_cd`` reaches 0; one without an enemy in range can act
    first on the tick its ``move_cd`` reaches 0; a stunned unit on neither before its stun ends. The
    bound per unit is the later of those, the batch's the earliest over its units (0: the next tick may
    act). ``s``: the state at the start of the next tick (``[n, B]`` fields), ``t`` int32[B] its number.
    ``stuck`` (bool[n, B]): units known unable to act while the positions stay as they are (see
    :func:`stuck_units`); they do not bound the count. ``cpu``: see :func:`_per_platform`.
    """

    def reachable(pick, e):
        d = _cheb(_units(s.x), _units(s.y), pick(s.x), pick(s.y))
        return pick(s.alive) & (d <= _units(f.range))

    in_range = _unsided(_over_sides("or", s.alive.shape[0], reachable, cpu=cpu))
    cooldown = jnp.where(in_range, s.atk_cd, s.move_cd)  # ms until it may act
    ready = jnp.maximum((cooldown + (TICK_MS - 1)) // TICK_MS - 1, 0)  # ticks before that tick
    per_unit = jnp.where(s.alive & ~stuck, jnp.maximum(ready, s.stun), jnp.int32(1 << 20))
    return jnp.minimum(_reduce_rows("min", per_unit, cpu), max_ticks - jnp.asarray(t, jnp.int32))


def stuck_units(w: _Tick) -> jax.Array:
    """bool[n, B]: after the tick of record ``w``, the units that cannot act on any later tick until some unit
    moves or dies. A unit that acted in the tick without a target (no alive enemy within range) and had its
    move ready but did not step finds, while every position stays the same, the same cells taken and no
    step that brings it closer; if some unit moved or died in this tick of its fight, none is known stuck."""
    changed = _reduce_rows("or", w.moves | (w.s.alive & ~w.alive), w.cpu)  # bool[B]
    return w.act & ~w.has_target & (w.move_cd == 0) & ~w.moves & ~changed


def skip_ticks(f: Fighters, s: FightState, t, ticks) -> FightState:
    """The state after ``ticks`` (int32[B], from :func:`idle_ticks`) ticks in which no unit acts, from the
    state ``s`` at the start of tick ``t`` (int32[B]): cooldowns and stuns count down, and the mana and grass
    heal of each second boundary crossed (ticks ``j`` with ``j % 10 == 9``) are added. Equal, field for field
    except the stored targets, to running :func:`tick` ``ticks`` times; a stored target that is dead or out
    of range is left as it is rather than cleared, which no later decision can tell apart from no target
    (phase 3 only keeps a target that is alive and within range)."""
    t = jnp.asarray(t, jnp.int32)
    seconds = (t + ticks) // TICKS_PER_SECOND - t // TICKS_PER_SECOND  # int32[B]
    grown = jnp.where(s.alive, seconds, 0)
    return s.replace(
        hp=jnp.minimum(f.max_hp, s.hp + grown * f.grass),
        mana=s.mana + grown * (MANA_PER_SECOND + f.water),
        atk_cd=jnp.maximum(s.atk_cd - TICK_MS * ticks, 0),
        move_cd=jnp.maximum(s.move_cd - TICK_MS * ticks, 0),
        stun=jnp.maximum(s.stun - ticks, 0),
    )


def _counts(s: FightState, cpu: bool | None = None):
    home, away = _per_side("add", s.alive.astype(jnp.int32), cpu)
    return home, away


def _decided(s: FightState, cpu: bool | None = None, counts=None) -> jax.Array:
    home, away = _counts(s, cpu) if counts is None else counts
    return (home == 0) | (away == 0)


def _result(s: FightState, ticks, cpu: bool | None = None, counts=None) -> FightResult:
    """The result of fights in state ``s`` after ``ticks``; ``counts``: their ``_counts``, if known."""
    home, away = _counts(s, cpu) if counts is None else counts
    winner = jnp.where((home > 0) & (away == 0), 0, jnp.where((home == 0) & (away > 0), 1, 2))
    return FightResult(
        winner=winner.astype(jnp.int32),
        home_survivors=home,
        away_survivors=away,
        home_damage=s.home_damage,
        away_damage=s.away_damage,
        ticks=jnp.asarray(ticks, jnp.int32),
    )


def _typed_keys(keys) -> jax.Array:
    """Typed keys[B] from typed keys[B] or legacy uint32[B, 2] keys."""
    if jax.dtypes.issubdtype(keys.dtype, jax.dtypes.prng_key):
        return keys
    return jax.random.wrap_key_data(jnp.asarray(keys, jnp.uint32))


#: With a lane queue (``lanes`` < the number of fights) finished lanes take the next pending fight every
#: this many ticks: often enough that a lane is rarely idle, rarely enough that the gathers stay cheap.
REFILL_EVERY = 8
#: Once the queue is empty and at most half the lanes are busy, the busy ones are packed into half as many
#: lanes (a second, smaller copy of the loop), down to this many lanes...
MIN_STAGE_LANES = 64
#: ... and in at most this many loops. A tick costs about its lanes' work (on a CPU), and fights' lengths
#: spread widely (mid-game: a median near 200 ticks, some at ``max_ticks``), so the tail of a batch runs
#: in a half or a quarter of the lanes; each loop is one more copy of the tick to compile.
MAX_STAGES = 3


def _take_fights(tree, ids):
    """Columns ``ids`` int32[L] of every ``[..., N]`` leaf (batch last) of ``tree``."""
    return jax.tree.map(lambda a: jnp.take(a, ids, axis=-1, mode="clip"), tree)


def lane_stages(lanes: int) -> tuple[int, ...]:
    """The lane counts of the fight loop's copies, in order: ``lanes``, then halves while they are at
    least :data:`MIN_STAGE_LANES`, at most :data:`MAX_STAGES` in all."""
    stages = [lanes]
    while len(stages) < MAX_STAGES and stages[-1] // 2 >= MIN_STAGE_LANES:
        stages.append(stages[-1] // 2)
    return tuple(stages)


class _Lanes(NamedTuple):
    """The fight loop's carry: per lane (``[L]``, batch last for the fights) and per fight (``out``)."""

    t: jax.Array  # int32 scalar: the loop's tick counter (every stage's)
    ptr: jax.Array  # int32 scalar: the queue's next position
    ids: jax.Array  # int32[L]: the fight in each lane
    busy: jax.Array  # bool[L]: the lane's fight is still running
    lt: jax.Array  # int32[L]: the lane's fight's own tick count
    lane: tuple  # (Fighters, FightState, keys[L]) of the lanes' fights
    out: FightResult  # int32[N] fields: every fight's result, written on the tick it ends


def _run_fights(
    f: Fighters, s0: FightState, keys, max_ticks: int, lanes: int | None = None, sync_axes: tuple[str, ...] = ()
) -> FightResult:
    """The batched fight loop over N fights (``[2K, N]`` fighters and state, typed keys[N]).

    ``lanes`` (static, default N) fights are simulated side by side in a ``lax.while_loop``; the fights
    not decided at tick 0 wait in a queue (in index order), and every :data:`REFILL_EVERY` ticks the
    lanes whose fight has ended take the next ones. A fight ends when a side is wiped or after
    ``max_ticks`` of its own ticks; its random draws use its own tick count, so the outcome of every fight
    is the same whatever the lanes (a test). Fewer lanes than fights waste less work on ended fights (the
    loop no longer runs every fight as long as the longest one) but vectorise less. Once the queue is
    empty and few lanes are busy, the loop goes on in fewer lanes (:func:`lane_stages`).
    ``sync_axes``: vmapped axes that share the loop's trip count (``jaxgame.batching``).
    """
    n_fights = s0.alive.shape[-1]
    lanes = n_fights if lanes is None else int(min(max(lanes, 1), n_fights))
    counts0 = _counts(s0)
    done0 = _decided(s0, counts=counts0)
    pending = jnp.sum(~done0, dtype=jnp.int32)
    queue = jnp.argsort(done0, stable=True).astype(jnp.int32)  # undecided fights first, in index order
    i32 = jnp.int32

    def refill(c: _Lanes) -> _Lanes:  # lanes' fighters, state and keys change only here and in pack
        free = ~c.busy
        pos = c.ptr + jnp.cumsum(free, dtype=i32) - 1
        load = free & (pos < pending)
        ids = jnp.where(load, queue[jnp.minimum(pos, n_fights - 1)], c.ids)
        lane = jax.tree.map(lambda new, old: jnp.where(load, new, old), _take_fights((f, s0, keys), ids), c.lane)
        return c._replace(
            ptr=c.ptr + jnp.sum(load, dtype=i32), ids=ids, busy=c.busy | load, lt=jnp.where(load, 0, c.lt), lane=lane
        )

    def pack(c: _Lanes, size: int) -> _Lanes:  # the busy lanes (at most ``size``) first, then cut to size
        order = jnp.argsort(~c.busy, stable=True)[:size]
        return c._replace(ids=c.ids[order], busy=c.busy[order], lt=c.lt[order], lane=_take_fights(c.lane, order))

    def tick_lanes(c: _Lanes, cpu: bool) -> _Lanes:
        fl, sl, kl = c.lane
        w = _tick_record(fl, sl, c.lt, kl, c.t, cpu)
        sl, lt = _end_tick(w), c.lt + 1
        counts = _counts(sl, cpu)
        decided = _decided(sl, counts=counts)
        idle = jnp.where(c.busy & ~decided, idle_ticks(fl, sl, lt, max_ticks, stuck_units(w), cpu), 0)  # none acts
        sl, lt = skip_ticks(fl, sl, lt, idle), lt + idle
        ended = c.busy & (decided | (lt >= max_ticks))
        target = jnp.where(ended, c.ids, n_fights)  # out of range: dropped
        out = jax.tree.map(lambda o, r: o.at[target].set(r, mode="drop"), c.out, _result(sl, lt, counts=counts))
        return c._replace(t=c.t + 1, busy=c.busy & ~ended, lt=lt, lane=(fl, sl, kl), out=out)

    def run_stage(c: _Lanes, queued: bool, next_size: int) -> _Lanes:
        def cond(c):  # go on while the queue has fights or more lanes are busy than the next stage has
            more = jnp.sum(c.busy, dtype=i32) > next_size
            return any_in_batch((c.ptr < pending) | more if queued else more, sync_axes)

        def body(c):
            if queued:
                c = jax.lax.cond((c.t % REFILL_EVERY == 0) & (c.t > 0), refill, lambda c: c, c)
            return _per_platform(tick_lanes, c)  # one platform choice a tick

        return jax.lax.while_loop(cond, body, c)

    lane_ids = queue[:lanes]
    c = _Lanes(
        t=i32(0),
        ptr=jnp.minimum(i32(lanes), pending),
        ids=lane_ids,
        busy=jnp.arange(lanes) < pending,
        lt=jnp.zeros(lanes, i32),
        lane=_take_fights((f, s0, keys), lane_ids),
        out=_result(s0, jnp.zeros(n_fights, i32), counts=counts0),
    )  # decided at tick 0: no ticks
    stages = lane_stages(lanes)
    for i, size in enumerate(stages):
        if i:
            c = pack(c, size)
        # only the first stage has a queue: the next starts once it is empty
        c = run_stage(c, queued=i == 0 and lanes < n_fights, next_size=stages[i + 1] if i + 1 < len(stages) else 0)
    return c.out


def simulate_fights(
    home_species,
    home_stars,
    away_species,
    away_stars,
    keys,
    max_ticks: int = 400,
    max_units: int = HALF,
    lanes: int | None = None,
    sync_axes: tuple[str, ...] = (),
) -> FightResult:
    """B fights at once: boards int32[B, 24] (species, -1 empty; stars), keys[B] (typed, or uint32[B, 2])
    -> FightResult of int32[B] fields. ``max_ticks``, ``max_units`` (K, see :func:`init_fights`) and
    ``lanes`` (fights ticked side by side, default B; see :func:`_run_fights`) are static; the outcomes
    do not depend on ``lanes``. ``rounds.run_fights`` calls this on all the fights of a batch of games.
    """
    f, s0 = init_fights(home_species, home_stars, away_species, away_stars, max_units)
    return _run_fights(f, s0, _typed_keys(keys), max_ticks, lanes, sync_axes)


def _broadcast_unbatched(axis_size, in_batched, args):
    """The arguments (pytrees), each with a leading batch axis of ``axis_size`` (added where unbatched)."""

    def one(arg, batched):
        return jax.tree.map(lambda a, b: a if b else jnp.broadcast_to(a, (axis_size,) + a.shape), arg, batched)

    return [one(a, b) for a, b in zip(args, in_batched)]


def share_lanes(n_fights: int, lane_share: float | None) -> int | None:
    """The lanes of a fold of ``n_fights`` fights for a ``lane_share`` (None: one lane a fight)."""
    if lane_share is None:
        return None
    return int(min(n_fights, max(MIN_STAGE_LANES, math.ceil(n_fights * lane_share))))


@functools.cache
def _batched_run(max_ticks: int, lane_share: float | None = None):
    """:func:`_run_fights` for a static ``max_ticks``, whose vmap folds the new (leading) axis into the
    batch axis (last) of the fighters and the state; ``lane_share``: see :func:`simulate_fight`."""

    @jax.custom_batching.custom_vmap
    def run(f, s, keys):
        return _run_fights(f, s, keys, max_ticks, share_lanes(keys.shape[0], lane_share))

    @run.def_vmap
    def run_vmap(axis_size, in_batched, f, s, keys):
        f, s, keys = _broadcast_unbatched(axis_size, in_batched, (f, s, keys))

        def fold(a):  # [S, ..., B] -> [..., S * B]
            return jnp.moveaxis(a, 0, -2).reshape(a.shape[1:-1] + (-1,))

        result = run(jax.tree.map(fold, f), jax.tree.map(fold, s), keys.reshape(-1))
        result = jax.tree.map(lambda r: r.reshape(axis_size, -1), result)
        return result, jax.tree.map(lambda _: True, result)

    return run


@functools.cache
def _one_run(max_ticks: int, lane_share: float | None = None):
    """One fight's loop as a batch of one, whose vmap is one batched loop (:func:`_batched_run`)."""

    @jax.custom_batching.custom_vmap
    def run(f, s, key):
        f, s = jax.tree.map(lambda a: a[..., None], (f, s))
        return jax.tree.map(lambda r: r[0], _batched_run(max_ticks, lane_share)(f, s, key[None]))

    @run.def_vmap
    def run_vmap(axis_size, in_batched, f, s, keys):
        f, s, keys = _broadcast_unbatched(axis_size, in_batched, (f, s, keys))
        f, s = jax.tree.map(lambda a: jnp.moveaxis(a, 0, -1), (f, s))
        result = _batched_run(max_ticks, lane_share)(f, s, keys)
        return result, jax.tree.map(lambda _: True, result)

    return run


def simulate_fight(
    home_species,
    home_stars,
    away_species,
    away_stars,
    key,
    max_ticks: int = 400,
    max_units: int = HALF,
    lane_share: float | None = None,
) -> FightResult:
    """Fight two boards (int32[24] species, -1 empty; int32[24] stars) until one side is wiped or max_ticks.

    ``key``: a typed PRNG key or a legacy uint32[2] one. ``max_ticks`` and ``max_units`` are static;
    ``max_units`` (K) units are simulated per side: the default 24 is exact for every board, a smaller K is
    faster and exact for boards of at most K units a side. Under ``jax.vmap`` (nested ones included) the
    fight loop runs once on the whole batch (``jax.custom_batching.custom_vmap``; the loop then runs until
    every fight of the batch is decided), like :func:`simulate_fights`. ``lane_share`` (static, in (0, 1]):
    that batch is ticked in ``ceil(share x fights)`` lanes (at least :data:`MIN_STAGE_LANES`), the rest queued,
    instead of one lane a fight: for batches where most fights are decided before the first tick (an empty
    side), which then cost no ticks. The outcomes do not depend on it.
    """
    if not 1 <= max_units <= HALF:
        raise ValueError(f"max_units must be in 1..{HALF}, got {max_units}")
    if lane_share is not None and not 0 < lane_share <= 1:
        raise ValueError(f"lane_share must be in (0, 1] or None, got {lane_share}")
    f, s0 = _init_one(home_species, home_stars, away_species, away_stars, int(max_units))
    return _one_run(int(max_ticks), lane_share)(f, s0, _typed_keys(key))


def _by_fighter(f: Fighters, values: jax.Array, fill) -> jax.Array:
    """[..., 2K] per-unit values of one fight -> [..., 48] per fighter index; fighters not simulated get
    ``fill`` (broadcasting to [..., 48])."""
    out = jnp.broadcast_to(jnp.asarray(fill, values.dtype), values.shape[:-1] + (NUM_FIGHTERS,))
    return out.at[..., f.index[:, 0]].set(values, unique_indices=True)


def record_fight(
    home_species, home_stars, away_species, away_stars, key, max_ticks: int = 400, max_units: int = HALF
) -> tuple[FightResult, FightReplay]:
    """Like :func:`simulate_fight` but keeps all ``max_ticks + 1`` frames (after the end they repeat),
    mapped back to the 48 fighters, and what each fighter did in each tick (phase 4's ``basic`` and
    ``cast`` with their target: :data:`ACT_BASIC`, :data:`ACT_CAST`). Runs :func:`tick`'s phases on a batch
    of one under ``lax.scan``."""
    keys = _typed_keys(key)[None]
    home, home_st, away, away_st = (
        jnp.asarray(a, jnp.int32)[None] for a in (home_species, home_stars, away_species, away_stars)
    )
    f, s0 = init_fights(home, home_st, away, away_st, max_units)
    no_action = jnp.zeros_like(f.index)

    def acted(st, t, cpu):
        w = _tick_record(f, st, t, keys, None, cpu)
        action = jnp.where(w.cast, ACT_CAST, jnp.where(w.basic, ACT_BASIC, ACT_NONE))
        target = jnp.where(action != ACT_NONE, f.index[jnp.maximum(w.new_target, 0), 0], -1)
        return _end_tick(w), action, target

    def body(carry, t, cpu):
        n, s, done = carry
        ticked = functools.partial(acted, cpu=cpu)
        s, action, target = jax.lax.cond(done, lambda st, t: (st, no_action, no_action - 1), ticked, s, t)
        n = n + jnp.where(done, 0, 1).astype(jnp.int32)
        done = done | _decided(s, cpu)[0]
        return (n, s, done), (s.x[:, 0], s.y[:, 0], s.hp[:, 0], s.mana[:, 0], s.alive[:, 0], action[:, 0], target[:, 0])

    (n, s, _), (xs, ys, hps, manas, alives, actions, targets) = jax.lax.scan(
        lambda carry, t: _per_platform(body, carry, t),
        (jnp.int32(0), s0, _decided(s0)[0]),
        jnp.arange(max_ticks, dtype=jnp.int32),
    )

    def frames(first, rest, fill):
        return _by_fighter(f, jnp.concatenate([first[None, :, 0], rest], axis=0), fill)

    start_x, start_y = _start_position(jnp.arange(NUM_FIGHTERS, dtype=jnp.int32))
    replay = FightReplay(
        x=frames(s0.x, xs, start_x),
        y=frames(s0.y, ys, start_y),
        hp=frames(s0.hp, hps, 0),
        max_hp=_by_fighter(f, f.max_hp[:, 0], 0),
        mana=frames(s0.mana, manas, 0),
        max_mana=_by_fighter(f, f.max_mana[:, 0], 0),
        action=_by_fighter(f, actions, ACT_NONE),
        target=_by_fighter(f, targets, -1),
        alive=frames(s0.alive, alives, False),
        species=_by_fighter(f, f.species[:, 0], -1),
        stars=_by_fighter(f, f.stars[:, 0], 0),
        team=(jnp.arange(NUM_FIGHTERS) >= HALF).astype(jnp.int32),
    )
    return jax.tree.map(lambda r: r[0], _result(s, n[None])), replay
