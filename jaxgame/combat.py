"""Combat: a deterministic, tick-based fight between two boards (pure JAX).

The exact rules, with every number, are in ``docs/combat.md``; this module
and the plain-Python reference ``jaxgame/combat_reference.py`` implement them
bit-for-bit (integer arithmetic only; the one random draw per fighter and tick
comes from :func:`tick_uniforms`).

Fighter ``i`` in ``0..23`` is the home unit on board cell ``i``; fighter
``24 + c`` is the away unit on cell ``c``. The grid is 8 columns (x) by 6 rows
(y): home cell (row r, col c) stands at (x=c, y=2-r), away cell (row r, col c)
at (x=7-c, y=3+r), so the two front rows meet in the middle.

Everything is jit- and vmap-able with static shapes. :func:`simulate_fight`
runs a ``lax.while_loop`` that stops as soon as the fight is decided;
:func:`record_fight` runs the same tick function under ``lax.scan`` and keeps
every frame for replays.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxgame import constants as C
from jaxgame import species as sp
from jaxgame import synergy

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
_BIG = 1 << 30
# Implementation limits (checked on the static tables): special damage is divided in float32
# (see _div_spell), and target stats are bit-packed into one int32 per fighter.
_DIV_EPS = 1.0 / 512
_MAX_POTENCY = 80_000
assert int(sp.SPECIES_POWER.max()) * (100 + int(sp.SYNERGY_VALUES[sp.PSYCHIC].max())) <= _MAX_POTENCY
assert int(sp.SPECIES_SPDEF.max()) <= 10 and int(sp.SPECIES_DEF.max()) < 32
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
    alive: jax.Array  # bool[T+1, 48]
    species: jax.Array  # int32[48]  (-1 = no unit)
    stars: jax.Array  # int32[48]  (0 = no unit)
    team: jax.Array  # int32[48]  0 = home, 1 = away


@struct.dataclass
class Fighters:
    """Per-fighter constants of one fight (int32[48] each)."""

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
    """Per-fighter mutable state (int32[48] unless noted) and damage totals."""

    x: jax.Array
    y: jax.Array
    hp: jax.Array
    shield: jax.Array
    mana: jax.Array
    atk: jax.Array
    atk_cd: jax.Array  # ms
    move_cd: jax.Array  # ms
    stun: jax.Array  # ticks
    target: jax.Array  # fighter index or -1
    alive: jax.Array  # bool[48]
    home_damage: jax.Array  # int32[]
    away_damage: jax.Array  # int32[]


def tick_uniforms(key, tick) -> jax.Array:
    """float32[48]: the fresh uniform draw of every fighter for one tick (crits)."""
    return jax.random.uniform(jax.random.fold_in(key, tick), (NUM_FIGHTERS,), dtype=jnp.float32)


def _side_synergy(board_species: jax.Array, occupied: jax.Array) -> jax.Array:
    """int32[24, NUM_TYPES]: synergy effect value per unit and type for one side."""
    masked = jnp.where(occupied, board_species, -1)
    levels = synergy.synergy_levels(synergy.type_counts(masked))  # int32[NUM_TYPES]
    values = jnp.asarray(sp.SYNERGY_VALUES)[jnp.arange(sp.NUM_TYPES), levels]  # int32[NUM_TYPES]
    has_type = jnp.asarray(sp.SPECIES_TYPE_MASK)[jnp.maximum(board_species, 0)] & occupied[:, None]
    return jnp.where(has_type, values[None, :], 0).astype(jnp.int32)


def init_fight(home_species, home_stars, away_species, away_stars) -> tuple[Fighters, FightState]:
    """Fighter constants and the state at tick 0."""
    home_species = jnp.asarray(home_species, jnp.int32)
    away_species = jnp.asarray(away_species, jnp.int32)
    home_stars = jnp.asarray(home_stars, jnp.int32)
    away_stars = jnp.asarray(away_stars, jnp.int32)
    home_occ = (home_species >= 0) & (home_stars > 0)
    away_occ = (away_species >= 0) & (away_stars > 0)
    occupied = jnp.concatenate([home_occ, away_occ])
    species = jnp.where(occupied, jnp.concatenate([home_species, away_species]), -1)
    stars = jnp.where(occupied, jnp.clip(jnp.concatenate([home_stars, away_stars]), 0, sp.MAX_STARS), 0)
    s = jnp.maximum(species, 0)
    syn = jnp.concatenate([_side_synergy(home_species, home_occ), _side_synergy(away_species, away_occ)])

    def table(t):
        return jnp.where(occupied, jnp.asarray(t, jnp.int32)[s], 0)

    cell = jnp.arange(HALF, dtype=jnp.int32)
    row, col = cell // COLS, cell % COLS
    x = jnp.concatenate([col, COLS - 1 - col])
    y = jnp.concatenate([(C.BOARD_ROWS - 1) - row, C.BOARD_ROWS + row])
    team = jnp.concatenate([jnp.zeros(HALF, jnp.int32), jnp.ones(HALF, jnp.int32)])

    max_hp = table(sp.SPECIES_HP) * jnp.asarray(sp.STAR_HP_TENTHS)[stars] // 10
    atk = table(sp.SPECIES_ATK) * jnp.asarray(sp.STAR_ATK_MULT)[stars]
    f = Fighters(
        team=team,
        species=species,
        stars=stars,
        max_hp=max_hp,
        defense=table(sp.SPECIES_DEF),
        spdef=table(sp.SPECIES_SPDEF),
        range=table(sp.SPECIES_RANGE),
        max_mana=table(sp.SPECIES_MAX_MANA),
        ability=table(sp.SPECIES_ABILITY),
        power=table(sp.SPECIES_POWER),
        atk_interval=table(ATTACK_INTERVAL_MS),
        move_interval=table(MOVE_INTERVAL_MS),
        ap=syn[:, sp.PSYCHIC],
        block=syn[:, sp.FIGHTING],
        fire=syn[:, sp.FIRE],
        water=syn[:, sp.WATER],
        grass=syn[:, sp.GRASS],
        steel=syn[:, sp.STEEL],
        monster=syn[:, sp.MONSTER],
    )
    zeros = jnp.zeros(NUM_FIGHTERS, jnp.int32)
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
        target=jnp.full(NUM_FIGHTERS, -1, jnp.int32),
        alive=occupied,
        home_damage=jnp.int32(0),
        away_damage=jnp.int32(0),
    )
    return f, state


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


def _materialize(*vectors):
    """Returns same-shaped int32 arrays unchanged, but computed once: XLA:CPU would otherwise fuse (and so
    re-compute) their producers into every pairwise consumer. A scatter is never fused into its users."""
    stacked = jnp.stack(vectors)
    out = jnp.zeros_like(stacked).at[jnp.arange(len(vectors))].set(stacked, unique_indices=True)
    return tuple(out)


def _cheb(ax, ay, bx, by):
    return jnp.maximum(jnp.abs(ax - bx), jnp.abs(ay - by))


def tick(f: Fighters, s: FightState, t, key) -> FightState:
    """One 100 ms tick: every decision reads the state at the start of the tick.

    Implementation notes (CPU speed): pairwise work is done on 24x24 blocks
    (home x away for attacks, home x home / away x away for shields) with plain
    elementwise ops and reductions; the occupancy of the 48 grid cells is a
    bitmask; gathers and scatters are over 48 entries only.
    """
    i32 = jnp.int32
    n, h = NUM_FIGHTERS, HALF
    idx = jnp.arange(n, dtype=i32)
    alive0 = s.alive
    x, y = s.x, s.y
    cell = y * COLS + x
    hx, hy, ax, ay = x[:h, None], y[:h, None], x[None, h:], y[None, h:]  # home down, away across
    home_alive, away_alive = alive0[:h, None], alive0[None, h:]

    # 1-2. stun and cooldowns
    stunned = alive0 & (s.stun > 0)
    act = alive0 & ~stunned
    stun = jnp.where(stunned, s.stun - 1, s.stun)
    atk_cd = jnp.maximum(s.atk_cd - TICK_MS, 0)
    move_cd = jnp.maximum(s.move_cd - TICK_MS, 0)

    # 3. targeting. Nearest alive enemy (Chebyshev, ties lowest index), packed as
    # dist << 12 | index << 6 | cell; the nearest enemy within range, if any, is the nearest enemy.
    cross = _cheb(hx, hy, ax, ay)  # [home, away]
    home_key = jnp.min(jnp.where(away_alive, (cross << 12) | (idx[None, h:] << 6) | cell[None, h:], _BIG), axis=1)
    away_key = jnp.min(jnp.where(home_alive, (cross << 12) | (idx[:h, None] << 6) | cell[:h, None], _BIG), axis=0)
    (near_key,) = _materialize(jnp.concatenate([home_key, away_key]))
    has_enemy = near_key < _BIG
    near_dist = near_key >> 12
    nearest = (near_key >> 6) & 63
    ex, ey = near_key & 7, (near_key >> 3) & 7
    cur = s.target
    cur_code = (cell | (alive0.astype(i32) << 6))[jnp.maximum(cur, 0)]
    cur_dist = _cheb(x, y, cur_code & 7, (cur_code >> 3) & 7)
    cur_ok = (cur >= 0) & (cur_code >= 64) & (cur_dist <= f.range)
    new_target = jnp.where(cur_ok, cur, jnp.where(has_enemy & (near_dist <= f.range), nearest, -1))
    has_target = act & (new_target >= 0)
    target = jnp.where(act, new_target, s.target)

    # 4-5. basic attack or cast
    attack = has_target & (atk_cd == 0)
    cast = attack & (s.mana >= f.max_mana)
    basic = attack & ~cast
    atk_cd = jnp.where(attack, atk_cd + f.atk_interval, atk_cd)
    # the target's def, spdef, block and cell in one gather
    tcode = (f.defense | (f.spdef << 5) | (f.block << 10) | (cell << 16))[jnp.maximum(new_target, 0)]
    t_def, t_spdef, t_block = tcode & 31, (tcode >> 5) & 31, (tcode >> 10) & 63
    tx, ty = (tcode >> 16) & 7, (tcode >> 19) & 7
    crit = tick_uniforms(key, t) < jnp.float32(CRIT_CHANCE)
    mult = jnp.where(crit, CRIT_MULT, 1)
    raw = jnp.maximum(1, _div(s.atk * mult * 100, 100 + DEF_PERCENT * t_def))
    basic_amt = jnp.maximum(1, raw - t_block) + s.atk * f.steel // 100
    ability = f.ability
    potency = f.power * (100 + f.ap)
    amount = potency // 100
    single = cast & ((ability == sp.NUKE) | (ability == sp.STUN))
    single_amt = jnp.maximum(1, _div(potency, 100 + DEF_PERCENT * t_spdef) - t_block)
    direct = jnp.where(basic, basic_amt, jnp.where(single, single_amt, 0))  # one instance on the target
    area = cast & (ability == sp.AREA)
    # pairwise damage on [home, away] blocks, kept to a few cheap ops per pair: per-attacker and
    # per-victim values are prepared as vectors (sentinels make the masks implicit)
    far = -100
    splash_x = jnp.where(area, tx, far)  # centre of an area cast, far away for everyone else
    splash_y = jnp.where(area, ty, far)
    vic_x = jnp.where(alive0, x, -far)  # dead fighters are never splashed
    direct_tgt = jnp.where(basic | single, new_target, -1)
    splash_x, splash_y, vic_x, direct_tgt, direct = _materialize(splash_x, splash_y, vic_x, direct_tgt, direct)
    potency_f = potency.astype(jnp.float32)
    inv_div = 1.0 / (100 + DEF_PERCENT * f.spdef).astype(jnp.float32)

    def hits(a, v):
        """Damage instances of attackers ``a`` on victims ``v`` (index tuples broadcasting to a 24x24 block)."""
        splash = (jnp.abs(splash_x[a] - vic_x[v]) <= 1) & (jnp.abs(splash_y[a] - y[v]) <= 1)
        spell = jnp.maximum(1, _div_spell(potency_f[a], inv_div[v]) - f.block[v])
        return jnp.where(splash, spell, jnp.where(direct_tgt[a] == idx[v], direct[a], 0))

    home, away = (slice(0, h), None), (None, slice(h, n))
    by_home = hits(home, away)  # [home attacker, away victim]
    by_away = hits(away, home)  # [home victim, away attacker]
    incoming = jnp.concatenate([jnp.sum(by_away, axis=1), jnp.sum(by_home, axis=0)])
    mana_hit = jnp.concatenate(
        [
            jnp.sum(jax.lax.div(by_away + (MANA_PER_DAMAGE - 1), MANA_PER_DAMAGE), axis=1),
            jnp.sum(jax.lax.div(by_home + (MANA_PER_DAMAGE - 1), MANA_PER_DAMAGE), axis=0),
        ]
    )
    killer = jnp.concatenate(
        [
            jnp.min(jnp.where(by_away > 0, idx[None, h:], n), axis=1),
            jnp.min(jnp.where(by_home > 0, idx[:h, None], n), axis=0),
        ]
    )
    incoming, mana_hit, killer = _materialize(incoming, mana_hit, killer)

    # shields: caster and alive allies within Chebyshev 1 (sentinel positions make the masks implicit)
    shield_on = cast & (ability == sp.SHIELD)
    caster_x = jnp.where(shield_on, x, far)
    shield_gain = []
    for side in (slice(0, h), slice(h, n)):
        near = (jnp.abs(caster_x[side, None] - vic_x[None, side]) <= 1) & (jnp.abs(y[side, None] - y[None, side]) <= 1)
        shield_gain.append(jnp.sum(jnp.where(near, amount[side, None], 0), axis=0))
    shield_gain = jnp.concatenate(shield_gain)
    # heals: the alive ally with the lowest hp permille (ties lowest index), per side
    heal_on = jnp.where(cast & (ability == sp.HEAL), amount, 0)
    ratio_key = jnp.where(alive0, _div(s.hp * 1000, jnp.maximum(f.max_hp, 1)) * 64 + idx, _BIG)
    heal = jnp.zeros(n, i32)
    for side in (slice(0, h), slice(h, n)):
        heal = heal + jnp.where(idx == (jnp.min(ratio_key[side]) & 63), jnp.sum(heal_on[side]), 0)
    stun_cast = cast & (ability == sp.STUN)
    stun_hit = jnp.zeros(n + 1, i32).at[jnp.where(stun_cast, new_target, n)].add(1)[:n] > 0

    # 6. movement; occupancy at tick start as a 48-bit mask in two uint32 words
    u32 = jnp.uint32
    bit = jnp.where(alive0, jnp.left_shift(u32(1), (cell & 31).astype(u32)), u32(0))
    occ_lo = jnp.sum(jnp.where(cell < 32, bit, u32(0)), dtype=u32)
    occ_hi = jnp.sum(jnp.where(cell >= 32, bit, u32(0)), dtype=u32)
    nx = x[:, None] + jnp.asarray(NEIGHBOUR_DX)[None, :]
    ny = y[:, None] + jnp.asarray(NEIGHBOUR_DY)[None, :]
    inside = (nx >= 0) & (nx < COLS) & (ny >= 0) & (ny < ROWS)
    npos = ny * COLS + nx
    word = jnp.where(npos < 32, occ_lo, occ_hi)
    taken = (jnp.right_shift(word, (npos & 31).astype(u32)) & u32(1)) > 0
    free = inside & ~taken
    ncheb = _cheb(nx, ny, ex[:, None], ey[:, None])
    nsq = (nx - ex[:, None]) ** 2 + (ny - ey[:, None]) ** 2
    score = jnp.min(jnp.where(free, (ncheb * 128 + nsq) * 8 + jnp.arange(8, dtype=i32)[None, :], _BIG), axis=1)
    k = score & 7
    best_cheb, best_sq = score >> 10, (score >> 3) & 127
    cur_sq = (x - ex) ** 2 + (y - ey) ** 2
    closer = (best_cheb < near_dist) | ((best_cheb == near_dist) & (best_sq < cur_sq))
    want = act & ~has_target & (move_cd == 0) & has_enemy & (score < _BIG) & closer
    dest_x = x + jnp.asarray(NEIGHBOUR_DX)[k]
    dest_y = y + jnp.asarray(NEIGHBOUR_DY)[k]
    nowhere = ROWS * COLS
    dest = jnp.where(want, dest_y * COLS + dest_x, nowhere)
    first_claim = jnp.full(nowhere + 1, n, i32).at[dest].min(idx)
    moves = want & (first_claim[dest] == idx)
    x = jnp.where(moves, dest_x, x)
    y = jnp.where(moves, dest_y, y)
    move_cd = jnp.where(moves, move_cd + f.move_interval, move_cd)

    # 7. end of tick: damage, deaths, kill credit, gains
    absorbed = jnp.minimum(s.shield, incoming)
    shield = s.shield - absorbed
    hp = s.hp - (incoming - absorbed)
    alive = alive0 & (hp > 0)
    died = alive0 & ~alive
    kills = jnp.zeros(n + 1, i32).at[jnp.where(died, killer, n)].add(1)[:n]
    second = (t % TICKS_PER_SECOND) == TICKS_PER_SECOND - 1
    mana = (
        s.mana
        - jnp.where(cast, f.max_mana, 0)
        + jnp.where(basic, MANA_PER_ATTACK, 0)
        + mana_hit
        + jnp.where(second, MANA_PER_SECOND + f.water, 0)
    )
    atk = s.atk + jnp.where(basic, f.fire, 0) + kills * f.monster
    shield = shield + shield_gain
    regen = heal + jnp.where(second, f.grass, 0) + kills * MONSTER_HEAL_MULT * f.monster
    hp = jnp.minimum(f.max_hp, hp + regen)
    stun = jnp.where(stun_hit, jnp.maximum(stun, STUN_TICKS), stun)

    return FightState(
        x=x,
        y=y,
        hp=jnp.where(alive, hp, 0),
        shield=jnp.where(alive, shield, 0),
        mana=jnp.where(alive, mana, 0),
        atk=atk,
        atk_cd=atk_cd,
        move_cd=move_cd,
        stun=jnp.where(alive, stun, 0),
        target=jnp.where(alive, target, -1),
        alive=alive,
        home_damage=s.home_damage + jnp.sum(incoming[h:]),
        away_damage=s.away_damage + jnp.sum(incoming[:h]),
    )


def _counts(s: FightState):
    home = jnp.sum(s.alive[:HALF]).astype(jnp.int32)
    away = jnp.sum(s.alive[HALF:]).astype(jnp.int32)
    return home, away


def _decided(s: FightState) -> jax.Array:
    home, away = _counts(s)
    return (home == 0) | (away == 0)


def _result(s: FightState, ticks) -> FightResult:
    home, away = _counts(s)
    winner = jnp.where((home > 0) & (away == 0), 0, jnp.where((home == 0) & (away > 0), 1, 2))
    return FightResult(
        winner=winner.astype(jnp.int32),
        home_survivors=home,
        away_survivors=away,
        home_damage=s.home_damage,
        away_damage=s.away_damage,
        ticks=jnp.asarray(ticks, jnp.int32),
    )


def simulate_fight(home_species, home_stars, away_species, away_stars, key, max_ticks: int = 400) -> FightResult:
    """Fight two boards (int32[24] species, -1 empty; int32[24] stars) until one side is wiped or max_ticks."""
    f, s0 = init_fight(home_species, home_stars, away_species, away_stars)

    def cond(carry):
        t, _, done = carry
        return ~done & (t < max_ticks)

    def body(carry):
        t, s, _ = carry
        s = tick(f, s, t, key)
        return t + 1, s, _decided(s)

    t, s, _ = jax.lax.while_loop(cond, body, (jnp.int32(0), s0, _decided(s0)))
    return _result(s, t)


def record_fight(
    home_species, home_stars, away_species, away_stars, key, max_ticks: int = 400
) -> tuple[FightResult, FightReplay]:
    """Like :func:`simulate_fight` but keeps all ``max_ticks + 1`` frames (after the end they repeat)."""
    f, s0 = init_fight(home_species, home_stars, away_species, away_stars)

    def body(carry, t):
        n, s, done = carry
        s = jax.lax.cond(done, lambda st: st, lambda st: tick(f, st, t, key), s)
        n = n + jnp.where(done, 0, 1).astype(jnp.int32)
        done = done | _decided(s)
        return (n, s, done), (s.x, s.y, s.hp, s.alive)

    (n, s, _), (xs, ys, hps, alives) = jax.lax.scan(
        body, (jnp.int32(0), s0, _decided(s0)), jnp.arange(max_ticks, dtype=jnp.int32)
    )

    def frames(first, rest):
        return jnp.concatenate([first[None], rest], axis=0)

    replay = FightReplay(
        x=frames(s0.x, xs),
        y=frames(s0.y, ys),
        hp=frames(s0.hp, hps),
        max_hp=f.max_hp,
        alive=frames(s0.alive, alives),
        species=f.species,
        stars=f.stars,
        team=f.team,
    )
    return _result(s, n), replay
