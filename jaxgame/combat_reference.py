"""Plain-Python reference of the combat rules (docs/combat.md), for conformance tests.

Deliberately simple and independent of ``jaxgame/combat.py``: Python ints,
lists and loops over units. The only shared piece is the random draw
(``combat.tick_uniforms``), turned into numpy float32 here.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxgame import species as sp
from jaxgame.combat import tick_uniforms

NUKE, AREA, SHIELD, HEAL, STUN = sp.NUKE, sp.AREA, sp.SHIELD, sp.HEAL, sp.STUN
NEIGHBOURS = [(-1, -1), (0, -1), (1, -1), (-1, 0), (1, 0), (-1, 1), (0, 1), (1, 1)]  # (dx, dy)

_HP = sp.SPECIES_HP.tolist()
_ATK = sp.SPECIES_ATK.tolist()
_DEF = sp.SPECIES_DEF.tolist()
_SPDEF = sp.SPECIES_SPDEF.tolist()
_RANGE = sp.SPECIES_RANGE.tolist()
_SPEED = sp.SPECIES_SPEED.tolist()
_MANA = sp.SPECIES_MAX_MANA.tolist()
_ABILITY = sp.SPECIES_ABILITY.tolist()
_POWER = sp.SPECIES_POWER.tolist()
_TYPES = sp.SPECIES_TYPES.tolist()
_THRESH = sp.SYNERGY_THRESHOLDS.tolist()
_VALUES = sp.SYNERGY_VALUES.tolist()
_STAR_HP = sp.STAR_HP_TENTHS.tolist()
_STAR_ATK = sp.STAR_ATK_MULT.tolist()


@functools.lru_cache(maxsize=None)
def _draw_fn(max_ticks: int):
    return jax.jit(lambda key: jax.vmap(lambda t: tick_uniforms(key, t))(jnp.arange(max_ticks, dtype=jnp.int32)))


def draws(key, max_ticks: int) -> np.ndarray:
    """float32[max_ticks, 48]: row t = tick_uniforms(key, t)."""
    if max_ticks <= 0:
        return np.zeros((0, 48), np.float32)
    return np.asarray(_draw_fn(int(max_ticks))(key), dtype=np.float32)


class Unit:
    pass


def _synergy_values(species, stars):
    present = {s for s, k in zip(species, stars) if s >= 0 and k > 0}
    values = []
    for ty in range(sp.NUM_TYPES):
        count = sum(1 for s in present if ty in _TYPES[s])
        level = sum(1 for th in _THRESH[ty] if count >= th)
        values.append(_VALUES[ty][level])
    return values


def _make_units(home_species, home_stars, away_species, away_stars):
    units = []
    for team, (spc, stars) in enumerate(((home_species, home_stars), (away_species, away_stars))):
        syn = _synergy_values(spc, stars)
        for c in range(24):
            u = Unit()
            u.index = team * 24 + c
            u.team = team
            row, col = c // 8, c % 8
            if team == 0:
                u.x, u.y = col, 2 - row
            else:
                u.x, u.y = 7 - col, 3 + row
            s, k = spc[c], stars[c]
            u.alive = s >= 0 and k > 0
            if not u.alive:
                units.append(u)
                continue
            k = min(k, 3)
            u.max_hp = _HP[s] * _STAR_HP[k] // 10
            u.hp = u.max_hp
            u.atk = _ATK[s] * _STAR_ATK[k]
            u.defense, u.spdef, u.range = _DEF[s], _SPDEF[s], _RANGE[s]
            u.max_mana, u.ability, u.power = _MANA[s], _ABILITY[s], _POWER[s]
            u.atk_interval = round(1000 / (0.4 + 0.007 * _SPEED[s]))
            u.move_interval = 40000 // _SPEED[s]
            types = _TYPES[s]

            def v(ty):
                return syn[ty] if ty in types else 0  # noqa: B023 (called in this iteration)

            u.shield = v(sp.NORMAL)
            u.fire, u.water, u.grass = v(sp.FIRE), v(sp.WATER), v(sp.GRASS)
            u.block, u.ap, u.steel, u.monster = v(sp.FIGHTING), v(sp.PSYCHIC), v(sp.STEEL), v(sp.MONSTER)
            u.mana = 0
            u.stun = 0
            u.atk_cd = 0
            u.move_cd = 0
            u.target = -1
            units.append(u)
    return units


def _cheb(a, b):
    return max(abs(a.x - b.x), abs(a.y - b.y))


def _run(home_species, home_stars, away_species, away_stars, key, max_ticks=400):
    """Returns (result dict, stats dict with casts per ability, crits, moves, kills and ``events``: every
    action as (tick, fighter index, 1 basic attack / 2 cast, target fighter index), in tick then index order)."""
    boards = [[int(v) for v in np.asarray(a).reshape(-1)] for a in (home_species, home_stars, away_species, away_stars)]
    units = _make_units(*boards)
    stats = {"casts": [0] * 5, "crits": 0, "moves": 0, "kills": 0, "events": []}
    totals = [0, 0]

    def counts():
        home = sum(1 for u in units[:24] if u.alive)
        away = sum(1 for u in units[24:] if u.alive)
        return home, away

    rng = draws(key, max_ticks) if min(counts()) > 0 else None
    t = 0
    while min(counts()) > 0 and t < max_ticks:
        _tick(units, t, rng[t], totals, stats)
        t += 1

    home, away = counts()
    if home > 0 and away == 0:
        winner = 0
    elif home == 0 and away > 0:
        winner = 1
    else:
        winner = 2
    result = dict(
        winner=winner, home_survivors=home, away_survivors=away, home_damage=totals[0], away_damage=totals[1], ticks=t
    )
    return result, stats


def reference_fight(home_species, home_stars, away_species, away_stars, key, max_ticks=400) -> dict:
    return _run(home_species, home_stars, away_species, away_stars, key, max_ticks)[0]


def _tick(units, t, u_draw, totals, stats):
    live = [u for u in units if u.alive]
    occupied = {(u.x, u.y) for u in live}
    hits = []  # (attacker index, victim index, amount)
    shield_gain = {}
    heal = {}
    stunned_now = set()
    atk_gain = {}
    wanted = []  # (index, (x, y))

    for u in live:
        u.atk_cd = max(0, u.atk_cd - 100)
        u.move_cd = max(0, u.move_cd - 100)
        if u.stun > 0:
            u.stun -= 1
            continue
        enemies = [e for e in live if e.team != u.team]
        # target
        tgt = units[u.target] if u.target >= 0 else None
        if tgt is None or not tgt.alive or _cheb(u, tgt) > u.range:
            tgt = None
            for e in enemies:
                if _cheb(u, e) <= u.range and (tgt is None or _cheb(u, e) < _cheb(u, tgt)):
                    tgt = e
        u.target = tgt.index if tgt is not None else -1

        if tgt is not None:
            if u.atk_cd != 0:
                continue
            u.atk_cd += u.atk_interval
            if u.mana >= u.max_mana:
                u.mana -= u.max_mana
                stats["casts"][u.ability] += 1
                stats["events"].append((t, u.index, 2, tgt.index))
                amount = u.power * (100 + u.ap) // 100

                def spell(v):
                    d = max(1, u.power * (100 + u.ap) // (100 + 5 * v.spdef))  # noqa: B023 (called in this iteration)
                    return max(1, d - v.block)

                if u.ability == NUKE or u.ability == STUN:
                    hits.append((u.index, tgt.index, spell(tgt)))
                if u.ability == STUN:
                    stunned_now.add(tgt.index)
                if u.ability == AREA:
                    for e in enemies:
                        if _cheb(tgt, e) <= 1:
                            hits.append((u.index, e.index, spell(e)))
                if u.ability == SHIELD:
                    for a in live:
                        if a.team == u.team and _cheb(u, a) <= 1:
                            shield_gain[a.index] = shield_gain.get(a.index, 0) + amount
                if u.ability == HEAL:
                    best = None
                    for a in live:
                        if a.team == u.team:
                            r = a.hp * 1000 // a.max_hp
                            if best is None or r < best[0]:
                                best = (r, a)
                    heal[best[1].index] = heal.get(best[1].index, 0) + amount
            else:
                stats["events"].append((t, u.index, 1, tgt.index))
                crit = u_draw[u.index] < np.float32(0.1)
                stats["crits"] += int(crit)
                m = 2 if crit else 1
                raw = max(1, u.atk * m * 100 // (100 + 5 * tgt.defense))
                amt = max(1, raw - tgt.block) + u.atk * u.steel // 100
                hits.append((u.index, tgt.index, amt))
                u.mana += 5
                atk_gain[u.index] = atk_gain.get(u.index, 0) + u.fire
        else:
            if u.move_cd != 0 or not enemies:
                continue
            near = None
            for e in enemies:
                if near is None or _cheb(u, e) < _cheb(u, near):
                    near = e
            here = (_cheb(u, near), (u.x - near.x) ** 2 + (u.y - near.y) ** 2)
            best = None
            for order, (dx, dy) in enumerate(NEIGHBOURS):
                nx, ny = u.x + dx, u.y + dy
                if not (0 <= nx < 8 and 0 <= ny < 6) or (nx, ny) in occupied:
                    continue
                cand = (max(abs(nx - near.x), abs(ny - near.y)), (nx - near.x) ** 2 + (ny - near.y) ** 2, order, nx, ny)
                if best is None or cand < best:
                    best = cand
            if best is not None and (best[0] < here[0] or (best[0] == here[0] and best[1] < here[1])):
                wanted.append((u.index, (best[3], best[4])))

    taken = set()
    for i, cell in sorted(wanted):
        if cell in taken:
            continue
        taken.add(cell)
        units[i].x, units[i].y = cell
        units[i].move_cd += units[i].move_interval
        stats["moves"] += 1

    # end of tick
    incoming = {}
    mana_hit = {}
    first_hitter = {}
    for a, v, amt in hits:
        incoming[v] = incoming.get(v, 0) + amt
        mana_hit[v] = mana_hit.get(v, 0) + (amt + 9) // 10
        first_hitter[v] = min(first_hitter.get(v, a), a)
        totals[units[a].team] += amt
    for v, amt in incoming.items():
        u = units[v]
        absorbed = min(u.shield, amt)
        u.shield -= absorbed
        u.hp -= amt - absorbed
    kills = {}
    for u in live:
        if u.hp <= 0:
            u.alive = False
            u.hp = 0
            u.shield = 0
            u.target = -1
            k = first_hitter[u.index]
            kills[k] = kills.get(k, 0) + 1
            stats["kills"] += 1
    second = t % 10 == 9
    for u in live:
        if not u.alive:
            continue
        i = u.index
        k = kills.get(i, 0)
        u.mana += mana_hit.get(i, 0) + ((10 + u.water) if second else 0)
        u.atk += atk_gain.get(i, 0) + k * u.monster
        u.shield += shield_gain.get(i, 0)
        u.hp = min(u.max_hp, u.hp + heal.get(i, 0) + (u.grass if second else 0) + k * 10 * u.monster)
        if i in stunned_now:
            u.stun = max(u.stun, 15)
