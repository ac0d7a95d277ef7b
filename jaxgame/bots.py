"""Scripted policies, pure JAX: ``policy(key, state, mask) -> int32[8]``.

They take the game state (they are for evaluation and as self-play
opponents, not for learning) and the legal-action mask bool[8, NUM_ACTIONS],
and only ever pick legal actions. Use ``BOTS[name]``. Keys may be typed
(``jax.random.key``) or legacy (``jax.random.PRNGKey``). Each scripted bot
scores every action of one seat (``greedy_scores``, ``expert_scores``,
vmapped over the seats) and plays the best legal one, ties broken at random.

* ``random``: uniform over the legal actions.
* ``greedy``: fills the board with its strongest units (cost x 3^(stars-1)),
  front row first; buys toward merges and higher costs, keeps interest gold
  loosely, levels and rolls with spare gold, sells the weakest bench unit
  when the bench is full.
* ``expert``: a player with a plan, one action per step in this order of
  priority:

  1. *Board*: fill empty cells while the level allows, each unit in the cell
     that suits it (``_CELL_PREF``: range 1 in the front row, the most
     durable first; range 2 in the middle row; range 3 in the back row;
     centre columns first); when the board is full, swap in a bench unit
     worth more than a board unit. A unit's worth is its combat power from
     the stat table (``_POWER``: sqrt(effective hp x damage per second) with
     the stars) plus the synergy value it brings: each active synergy level
     and the progress toward the next one count (``_synergy_per_type``).
  2. *Merges*: buy a copy that completes a merge (two 1-stars owned),
     whatever the interest.
  3. *Levelling curve* (``expert_target_level``): buy XP while below the
     level wanted by the round (3 from round 2, 4 from round 4, 5 from round
     7, 6 from round 10, 7 from round 14, 8 from round 19), with the gold
     above the interest step kept (one step lower on a win streak of 2 or
     more); with 54 gold or more, up to one level above the curve.
  4. *Synergy-aware buying* with the gold above the interest step kept: a
     shop unit is worth its merge value (copies owned: a pair is worth more
     when the 2-star would make the board) plus what it adds to the board
     (its power and synergy gain, less the weakest board unit's when the
     board is full); units worth less than ``BUY_MIN_VALUE`` are not bought.
  5. *Positioning*: recall a board unit standing in the wrong row, to place
     it again in the right one.
  6. *Selling*: bench units that do not fit (no copies toward a merge,
     nothing to add to the board) are sold for their gold.
  7. *Rolling*: once on the curve, reroll with the gold above 50; from
     level 8 roll down to 30, and below 50 life spend down to the reserve.

  *Economy* (``expert_reserve``): keep the interest step reached,
  ``min(50, 10 * (gold // 10))``; on a loss streak of 3 or more (from round
  6, above 60 life) save everything up to 50 (the streak pays, merges are
  still bought); below 50 life keep at most 20, below 30 life nothing. It
  never locks the shop.

  **It reads hidden information**: the raw ``state.pool``, the copies left
  once every shop is drawn, so it depends on what the *other* seats' shops
  hold, which no player sees (docs/observation.md, "What is public"). It
  uses it in one place: whether a third copy is left for a pair
  (``_merge_value``, which weighs buying and keeping units). It is kept as
  it is: recorded games and published results were played with it.
* ``expert_public``: the expert's rules on public information only: the
  pool is replaced by ``public_pool``, what a seat can count (the initial
  copies less those on every seat's bench and board and in its own shop),
  the same number as the vector observation's pool block. Where no copy of
  a species it pairs sits in another seat's shop, it plays as ``expert``
  (same key, same action).

``random`` and ``greedy`` read only their own seat (its units, gold, level
and shop: the legal mask) and the round. ``mixed_policy`` plays a different
bot in each seat.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxgame import constants as C
from jaxgame import species as sp
from jaxgame import synergy, units
from jaxgame.state import GameState, Players
from jaxgame.validation import as_key


# The bots are jitted (inlined under an outer jit or vmap): called eagerly, e.g. in a notebook, they would
# otherwise dispatch op by op.
@jax.jit
def random_policy(key: jax.Array, state: GameState, mask: jnp.ndarray) -> jnp.ndarray:
    """Uniform over each seat's legal actions. Returns int32[8].

    One uniform draw per seat picks the k-th legal action (``jax.random.categorical`` would draw one
    Gumbel per action: 258 draws a seat, most of a non-fight step's time at 64 envs on a CPU)."""
    counts = jnp.sum(mask, axis=-1, dtype=jnp.int32)
    u = jax.random.uniform(as_key(key, "random_policy key"), counts.shape)
    k = jnp.minimum((u * counts).astype(jnp.int32), counts - 1)  # which legal action, 0-based
    return jnp.argmax(jnp.cumsum(mask, axis=-1, dtype=jnp.int32) > k[..., None], axis=-1).astype(jnp.int32)


def unit_strength(species: jnp.ndarray, stars: jnp.ndarray) -> jnp.ndarray:
    """float32 heuristic value of a unit: cost x 3^(stars-1); 0 for an empty slot."""
    cost = jnp.asarray(sp.SPECIES_COST)[jnp.maximum(species, 0)]
    value = cost * jnp.asarray([0.0, 1.0, 3.0, 9.0])[stars]
    return jnp.where(species >= 0, value, 0.0)


def greedy_scores(p: Players, round_: jnp.ndarray) -> jnp.ndarray:
    """float32[NUM_ACTIONS] heuristic score of every action for one seat (higher = better).

    Priorities: fill the board with the strongest units (front row first),
    swap in bench units stronger than the weakest board unit, buy copies
    toward merges and higher-cost units while keeping interest gold, level up
    with spare gold, sell the weakest bench unit when the bench is full, and
    roll only when rich. End turn is the fallback (score 0).
    """
    strength = unit_strength(p.species, p.stars)  # [32]
    bench_strength = strength[units.BENCH]
    board_strength = strength[units.BOARD]
    board_full = units.board_count(p.species) >= p.level
    bench_free = jnp.sum(p.species[units.BENCH] < 0)

    # place: into an empty cell (earliest cell = front row first) while the board has room
    cell_empty = p.species[units.BOARD] < 0
    cell_bias = -0.01 * jnp.arange(C.BOARD_CELLS)
    place_empty = jnp.where(cell_empty[None, :] & ~board_full, 100.0 + bench_strength[:, None] + cell_bias, -1.0)
    # swap: a stronger bench unit replaces a weaker board unit
    gain = bench_strength[:, None] - board_strength[None, :]
    place_swap = jnp.where(~cell_empty[None, :] & (gain > 0), 90.0 + gain, -1.0)
    place = jnp.where(p.species[units.BENCH][:, None] >= 0, jnp.maximum(place_empty, place_swap), -1.0)

    # buy: copies owned push toward merges; keep 10-gold interest steps when possible
    owned = units.owned_copies(p.species, p.stars)
    shop_species = jnp.maximum(p.shop, 0)
    cost = jnp.asarray(sp.SPECIES_COST)[shop_species]
    copies_owned = owned[shop_species]
    gold_after = p.gold - cost
    keeps_interest = (gold_after // 10 >= jnp.minimum(p.gold // 10, 5)) | (round_ < 5)
    wanted = (copies_owned > 0) | keeps_interest | (bench_free > 2)
    buy = jnp.where(wanted, 50.0 + 8.0 * copies_owned + 2.0 * cost, -1.0)

    # level: with gold above the 50 interest cap, or when the board is full and gold allows
    level_up = ((p.gold >= 54) | (board_full & (p.gold >= 14) & (round_ >= 4))) & (p.level < C.MAX_LEVEL)
    level_score = jnp.where(level_up, 40.0, -1.0)
    roll_score = jnp.where(p.gold >= 52, 30.0, -1.0)

    # sell the weakest bench unit when the bench is full
    weakest = jnp.argmin(jnp.where(p.species[units.BENCH] >= 0, bench_strength, jnp.inf))
    sell_bench = jnp.where((bench_free == 0) & (jnp.arange(C.BENCH_SIZE) == weakest), 20.0, -1.0)

    def never(n):
        return jnp.full(n, -1.0)

    # in action order (one concatenation: a chain of .at[].set would be a chain of copies)
    return jnp.concatenate([
        jnp.zeros(1),  # end turn: the fallback
        buy,  # ACTION_BUY
        roll_score[None],  # ACTION_REROLL
        level_score[None],  # ACTION_BUY_XP
        never(1),  # ACTION_LOCK
        sell_bench,  # ACTION_SELL: bench slots
        never(C.NUM_SLOTS - C.BENCH_SIZE),  # ... board slots
        place.reshape(-1),  # ACTION_PLACE
        never(C.BOARD_CELLS),  # ACTION_RECALL
    ])


@jax.jit
def greedy_policy(key: jax.Array, state: GameState, mask: jnp.ndarray) -> jnp.ndarray:
    """Best legal action by ``greedy_scores``; ties broken at random. Returns int32[8]."""
    scores = jax.vmap(greedy_scores, in_axes=(0, None))(state.players, state.round)
    noise = jax.random.uniform(as_key(key, "greedy_policy key"), scores.shape, maxval=1e-3)
    return jnp.argmax(jnp.where(mask, scores + noise, -jnp.inf), axis=-1).astype(jnp.int32)


# ---------------------------------------------------------------------------------------------------------
# expert: economy, levelling curve, synergy-aware buying, roll-downs, positioning and selling
# ---------------------------------------------------------------------------------------------------------


def _unit_power_table() -> np.ndarray:
    """float32[NUM_SPECIES, 4]: combat power of a unit by species and stars (index 0, no unit: 0).

    ``sqrt(effective hp x damage per second)`` from the stat table: hp and atk scaled by the stars, def and
    spdef as damage reduction, basic attacks at ``0.4 + 0.007 * speed`` per second plus the ability's power
    times its casts per second; normalised so that the average one-star common is 1. Powers add up across
    a board (Lanchester's square law): a one-star 5-cost is about 3.6, a 2-star about 1.8 times its one-star.
    """
    aps = 0.4 + 0.007 * sp.SPECIES_SPEED
    casts = (10.0 + 5.0 * aps) / sp.SPECIES_MAX_MANA  # mana per second / mana per cast
    power = np.zeros((sp.NUM_SPECIES, sp.MAX_STARS + 1), np.float64)
    for k in range(1, sp.MAX_STARS + 1):
        ehp = sp.SPECIES_HP * sp.STAR_HP_TENTHS[k] / 10 * (1 + 0.025 * (sp.SPECIES_DEF + sp.SPECIES_SPDEF))
        dps = sp.SPECIES_ATK * sp.STAR_ATK_MULT[k] * aps + sp.SPECIES_POWER * casts
        power[:, k] = np.sqrt(ehp * dps)
    return (power / power[sp.SPECIES_RARITY == 0, 1].mean()).astype(np.float32)


def _cell_preference_table() -> np.ndarray:
    """float32[NUM_SPECIES, BOARD_CELLS]: how well each board cell suits each species (higher = better).

    Row: a unit belongs in the row from which its range reaches the enemy's front row without moving
    (range 1 -> row 0, the front; range 2 -> row 1; range 3 -> row 2), one point off per row away. Durable
    melee units (hp x (1 + (def + spdef) / 40), relative to the most durable) get up to one more point in
    the front row, so the tanks take it first. Column: the centre first, a tenth of a point off per column.
    """
    row = np.arange(C.BOARD_CELLS) // C.BOARD_COLS
    col = np.arange(C.BOARD_CELLS) % C.BOARD_COLS
    ideal = np.minimum(sp.SPECIES_RANGE, C.BOARD_ROWS) - 1
    durability = sp.SPECIES_HP * (1 + 0.025 * (sp.SPECIES_DEF + sp.SPECIES_SPDEF))
    tank = durability / durability.max() * (sp.SPECIES_RANGE == 1)
    pref = -np.abs(row[None, :] - ideal[:, None]).astype(np.float64)
    pref += np.where(row[None, :] == 0, tank[:, None], 0.0)
    pref -= 0.1 * np.abs(col - (C.BOARD_COLS - 1) / 2)[None, :]
    return pref.astype(np.float32)


# numpy tables (``import jaxgame.bots`` starts no JAX work); constants of the traced programs
_POWER = _unit_power_table()
_CELL_PREF = _cell_preference_table()
_TYPE_MASK = sp.SPECIES_TYPE_MASK.astype(np.int32)  # int32[NUM_SPECIES, NUM_TYPES]
#: The expert's levelling curve: the level it wants by each round (index = round; later rounds: the last entry).
EXPERT_LEVEL_CURVE = np.array([2, 2, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7, 7, 8], np.int32)
SYNERGY_LEVEL_VALUE = 0.8  # power of one active synergy level
SYNERGY_PROGRESS_VALUE = 0.25  # power of the way from one synergy level to the next, counted pro rata
BUY_MIN_VALUE = 0.3  # a unit worth less is not bought ...
SELL_MAX_VALUE = 0.2  # ... and a bench unit worth less is sold (lower, so a unit just bought is not sold again)


def _synergy_per_type(counts: jnp.ndarray) -> jnp.ndarray:
    """float32[..., NUM_TYPES]: value of each type's count (int32[..., NUM_TYPES]) on a board:
    ``SYNERGY_LEVEL_VALUE`` per active synergy level plus ``SYNERGY_PROGRESS_VALUE`` times the progress toward
    the next level (sharing a type with the board is worth something before the threshold)."""
    thresh = jnp.asarray(sp.SYNERGY_THRESHOLDS)  # [T, 3], 99 = no such level
    reached = counts[..., None] >= thresh  # [..., T, 3]
    level = jnp.sum(reached, axis=-1)
    low = jnp.max(jnp.where(reached, thresh, 0), axis=-1)  # the threshold of the active level (0 at level 0)
    high = jnp.min(jnp.where(reached, 99, thresh), axis=-1)  # the next one (99: none)
    progress = jnp.where(high < 99, (counts - low) / jnp.maximum(high - low, 1), 0.0)
    return SYNERGY_LEVEL_VALUE * level + SYNERGY_PROGRESS_VALUE * progress


def _board_values(p: Players):
    """What the board holds: (contrib float32[24], syn_gain float32[NUM_SPECIES], swap_gain float32[8, 24]).

    ``contrib[c]``: the power of the unit in cell c plus the synergy value the board loses without it (0 for
    an empty cell). ``syn_gain[s]``: the synergy value species s adds to the board (0 when already there).
    ``swap_gain[b, c]``: how much the board gains when bench unit b takes the place of the unit in cell c.
    The synergy value is a sum over types and a species adds 1 to its two types, so gains are sums of
    per-type marginal values.
    """
    board, board_stars = p.species[units.BOARD], p.stars[units.BOARD]
    bench, bench_stars = p.species[units.BENCH], p.stars[units.BENCH]
    occupied = board >= 0
    type_mask = jnp.asarray(_TYPE_MASK, jnp.float32)  # [S, T]
    counts = synergy.type_counts(board)  # [T]
    per_type = _synergy_per_type(counts)
    same = (board[:, None] == board[None, :]) & occupied[None, :]
    only_copy = occupied & (jnp.sum(same, axis=1) == 1)  # the only unit of its species on the board
    removed = only_copy[:, None] * jnp.asarray(_TYPE_MASK)[jnp.maximum(board, 0)]  # [24, T]: types cell c takes away
    per_type_without = _synergy_per_type(counts[None, :] - removed)  # [24, T]
    loss = jnp.sum(per_type[None, :] - per_type_without, axis=1)  # [24]
    power = jnp.asarray(_POWER)[jnp.maximum(board, 0), board_stars]
    contrib = jnp.where(occupied, power + loss, 0.0)
    present = jnp.any(board[None, :] == jnp.arange(sp.NUM_SPECIES)[:, None], axis=1)  # [S]
    syn_gain = jnp.where(present, 0.0, type_mask @ (_synergy_per_type(counts + 1) - per_type))
    # bench b into cell c: b's types gain their marginal value on the board without c, unless b's species
    # stays on the board in another cell
    marginal = _synergy_per_type(counts[None, :] - removed + 1) - per_type_without  # [24, T]
    in_cell = (board[None, :] == bench[:, None]) & (bench >= 0)[:, None]  # [8, 24]
    still_there = jnp.sum(in_cell, axis=1, keepdims=True) - in_cell > 0
    added = jnp.where(still_there, 0.0, type_mask[jnp.maximum(bench, 0)] @ marginal.T)  # [8, 24]
    bench_power = jnp.asarray(_POWER)[jnp.maximum(bench, 0), bench_stars]
    swap_gain = bench_power[:, None] + added - contrib[None, :]
    return contrib, syn_gain, swap_gain


def _field_potential(p: Players, contrib: jnp.ndarray, syn_gain: jnp.ndarray) -> jnp.ndarray:
    """float32[NUM_SPECIES, 4]: what a unit of species s with k stars would add to the board: its power and
    synergy gain, less the weakest board unit's contribution when the board is full (it would replace it)."""
    full = units.board_count(p.species) >= p.level
    weakest = jnp.min(jnp.where(p.species[units.BOARD] >= 0, contrib, jnp.inf))
    displaced = jnp.where(full & jnp.isfinite(weakest), weakest, 0.0)
    return jnp.asarray(_POWER) + syn_gain[:, None] - displaced


def expert_target_level(round_: jnp.ndarray) -> jnp.ndarray:
    """int32 level the expert wants by ``round_`` (``EXPERT_LEVEL_CURVE``): 3 from round 2, 4 from round 4,
    5 from round 7, 6 from round 10, 7 from round 14, 8 from round 19."""
    curve = jnp.asarray(EXPERT_LEVEL_CURVE)
    return curve[jnp.clip(round_, 0, curve.shape[0] - 1)]


def expert_reserve(p: Players, round_: jnp.ndarray):
    """(keep, roll_keep) int32: the gold the expert keeps when buying units or XP, and when rolling.

    ``keep`` is the interest step reached, ``min(50, 10 * (gold // 10))``, so spending never lowers the
    interest; on a loss streak of 3 or more from round 6 with more than 60 life it is all the gold up to 50
    (losing pays the streak bonus: save, spend only on merges and with 54 gold or more); below 50 life at
    most 20 and below 30 life 0 (the life is worth more than the interest). ``roll_keep``: rolls spend only
    the gold above 50; from level 8 the gold above 30 (the roll-down for upgrades), below 50 life the gold
    above ``keep``.
    """
    step = jnp.minimum(50, 10 * (p.gold // 10))
    loss_streaking = (p.streak <= -3) & (p.life > 60) & (round_ >= 6)
    keep = jnp.where(loss_streaking, jnp.minimum(p.gold, 50), step)
    keep = jnp.where(p.life < 50, jnp.minimum(keep, 20), keep)
    keep = jnp.where(p.life < 30, 0, keep)
    roll_keep = jnp.where(p.level >= 8, 30, 50)
    roll_keep = jnp.where(p.life < 50, keep, roll_keep)
    return keep.astype(jnp.int32), roll_keep.astype(jnp.int32)


def _copies_by_stars(p: Players):
    """(one_star, two_star) int32[NUM_SPECIES]: how many 1-star and 2-star units of each species the seat has."""
    one_hot = p.species[:, None] == jnp.arange(sp.NUM_SPECIES)
    one = jnp.sum(one_hot & (p.stars == 1)[:, None], axis=0)
    two = jnp.sum(one_hot & (p.stars == 2)[:, None], axis=0)
    return one.astype(jnp.int32), two.astype(jnp.int32)


def _merge_value(potential: jnp.ndarray, one: jnp.ndarray, two: jnp.ndarray, pool: jnp.ndarray) -> jnp.ndarray:
    """float32[NUM_SPECIES]: what one more copy of each species is worth toward merges.

    A copy that completes a merge (two 1-stars owned): 1 + the merged unit's gain (a 3-star when two 2-stars
    are owned). A copy that makes a pair, with a third copy left in the pool: 0.4 + half of what the 2-star
    would add to the board. A copy toward a second 2-star, when the 3-star would make the board: 0.2.
    """
    power = jnp.asarray(_POWER)
    merged_stars = jnp.where(two >= 2, 3, 2)
    upgrade = jnp.take_along_axis(power, merged_stars[:, None], axis=1)[:, 0] - power[:, 1]
    merged_potential = jnp.take_along_axis(potential, merged_stars[:, None], axis=1)[:, 0]
    completes = 1.0 + jnp.maximum(upgrade, merged_potential)
    pair = 0.4 + 0.5 * jnp.maximum(potential[:, 2], 0.0)
    toward_three = (two >= 1) & (potential[:, 3] > 0)
    return jnp.where(one >= 2, completes, jnp.where((one == 1) & (pool >= 1), pair, jnp.where(toward_three, 0.2, 0.0)))


def _buy_scores(p: Players, keep, potential, merge, one) -> jnp.ndarray:
    """float32[6] scores of buying each shop slot: copies that complete a merge first, whatever the gold kept
    (80 + value), then units worth at least ``BUY_MIN_VALUE`` (60 + value: their merge value plus what they
    add to the board) with the gold above ``keep``; the last free bench slot only for a unit worth 1 or more.
    (The legal mask checks that the gold covers the cost.)"""
    s = jnp.maximum(p.shop, 0)
    cost = jnp.asarray(sp.SPECIES_COST)[s]
    completes = one[s] >= 2
    value = merge[s] + jnp.maximum(potential[s, 1], 0.0)
    bench_free = jnp.sum(p.species[units.BENCH] < 0)
    room = (bench_free >= 2) | (value >= 1.0) | completes
    affordable = completes | (p.gold - cost >= keep)
    wanted = (p.shop >= 0) & affordable & room & (value >= BUY_MIN_VALUE)
    return jnp.where(wanted, jnp.where(completes, 80.0, 60.0) + jnp.minimum(value, 9.0), -1.0)


def _keep_values(p: Players, potential, merge, one, two) -> jnp.ndarray:
    """float32[8]: what each bench unit is worth to the seat: what it would add to the board (at least 0),
    plus, when other copies make it part of a merge, the merge value of its species (at least 0.2): a 1-star
    with another 1-star, or with a 2-star whose 3-star would make the board; a 2-star when one more copy is
    worth something (``_merge_value``). ``inf`` for empty slots."""
    bench, stars = p.species[units.BENCH], p.stars[units.BENCH]
    s = jnp.maximum(bench, 0)
    field = jnp.maximum(potential[s, stars], 0.0)
    three_star_path = (two[s] >= 1) & (potential[s, 3] > 0)
    paired = jnp.where(stars == 1, (one[s] >= 2) | three_star_path, (stars == 2) & (merge[s] > 0))
    value = field + jnp.where(paired, jnp.maximum(merge[s], 0.2), 0.0)
    return jnp.where(bench >= 0, value, jnp.inf)


def _sell_scores(p: Players, keep_value) -> jnp.ndarray:
    """float32[32] scores of selling each slot: bench units that do not fit, worth less than
    ``SELL_MAX_VALUE`` (no copies toward a merge, nothing to add to the board), 36 - their value (the least
    useful first), whether the bench is full or not: a 1-star sells for what it cost and the gold counts
    toward interest. Board units are never sold directly (a better unit swaps them to the bench first)."""
    junk = keep_value < SELL_MAX_VALUE
    bench = jnp.where(junk, 36.0 - keep_value, -1.0)
    return jnp.concatenate([bench, jnp.full(C.BOARD_CELLS, -1.0)])


def _recall_scores(p: Players) -> jnp.ndarray:
    """float32[24] scores of recalling each board cell to reposition its unit: when an empty cell fits the unit
    at least 0.75 better (``_CELL_PREF``: a unit in the wrong row) and a bench slot is free, 45 + the
    improvement; the placement rule then puts it in the better cell (placing scores higher than recalling,
    so bench units waiting for room go first)."""
    board = p.species[units.BOARD]
    pref = jnp.asarray(_CELL_PREF)[jnp.maximum(board, 0)]  # [24 units, 24 cells]
    current = jnp.diagonal(pref)
    best_empty = jnp.max(jnp.where((board < 0)[None, :], pref, -jnp.inf), axis=1)
    improvement = best_empty - current
    bench_free = jnp.any(p.species[units.BENCH] < 0)
    return jnp.where((board >= 0) & (improvement >= 0.75) & bench_free, 45.0 + improvement, -1.0)


def _placement_scores(p: Players, syn_gain, swap_gain) -> jnp.ndarray:
    """float32[8, 24] scores of "bench b -> cell c": while the board has room, fill the empty cell that fits
    the unit best (100 + its power and synergy gain + a tenth of the cell's fit); when it is full, swap a
    bench unit for a board unit worth at least 0.2 less (90 + the gain + a twentieth of the cell's fit)."""
    bench = p.species[units.BENCH]
    s = jnp.maximum(bench, 0)
    pref = jnp.asarray(_CELL_PREF)[s]  # [8, 24]
    power = jnp.asarray(_POWER)[s, p.stars[units.BENCH]]
    cell_empty = p.species[units.BOARD] < 0
    room = units.board_count(p.species) < p.level
    place_empty = jnp.where(cell_empty[None, :] & room, 100.0 + (power + syn_gain[s])[:, None] + 0.1 * pref, -1.0)
    place_swap = jnp.where(~cell_empty[None, :] & (swap_gain > 0.2), 90.0 + swap_gain + 0.05 * pref, -1.0)
    return jnp.where((bench >= 0)[:, None], jnp.maximum(place_empty, place_swap), -1.0)


def _level_and_roll_scores(p: Players, round_, keep, roll_keep):
    """(buy XP, reroll) float32 scores. XP (70) while below the levelling curve (``expert_target_level``)
    with the gold above ``keep`` (above ``keep - 10`` on a win streak of 2 or more: keep it going), or with
    54 gold or more up to one level above the curve. Reroll (20, below every buy) with the gold above
    ``roll_keep``, once on the curve."""
    target = expert_target_level(round_)
    xp_keep = jnp.where(p.streak >= 2, keep - 10, keep)
    behind = (p.level < target) & (p.gold - 4 >= xp_keep)
    rich = (p.gold >= 54) & (p.level <= target)
    xp = jnp.where((behind | rich) & (p.level < C.MAX_LEVEL), 70.0, -1.0)
    roll = jnp.where((p.level >= target) & (p.gold - 1 >= roll_keep), 20.0, -1.0)
    return xp, roll


def expert_scores(p: Players, round_: jnp.ndarray, pool: jnp.ndarray) -> jnp.ndarray:
    """float32[NUM_ACTIONS] score of every action for one seat (higher = better; end turn = 0 is the fallback).

    In order: place units (fill the board, then swap in better units), buy copies that complete a merge,
    buy XP on the levelling curve, buy units worth it (merges, the board, synergies) above the interest step
    kept, reposition misplaced units, sell bench units worth nothing, roll with the gold above the roll
    reserve. The gold kept depends on life and streaks (``expert_reserve``). ``pool`` int32[NUM_SPECIES]: the
    copies the seat counts as left to draw (``expert``: the raw pool; ``expert_public``: ``public_pool``).
    """
    keep, roll_keep = expert_reserve(p, round_)
    contrib, syn_gain, swap_gain = _board_values(p)
    potential = _field_potential(p, contrib, syn_gain)
    one, two = _copies_by_stars(p)
    merge = _merge_value(potential, one, two, pool)
    xp, roll = _level_and_roll_scores(p, round_, keep, roll_keep)
    scores = jnp.full(C.NUM_ACTIONS, -1.0)
    scores = scores.at[C.ACTION_END_TURN].set(0.0)
    scores = scores.at[C.ACTION_BUY : C.ACTION_REROLL].set(_buy_scores(p, keep, potential, merge, one))
    scores = scores.at[C.ACTION_REROLL].set(roll)
    scores = scores.at[C.ACTION_BUY_XP].set(xp)
    scores = scores.at[C.ACTION_SELL : C.ACTION_PLACE].set(_sell_scores(p, _keep_values(p, potential, merge, one, two)))
    scores = scores.at[C.ACTION_PLACE : C.ACTION_RECALL].set(_placement_scores(p, syn_gain, swap_gain).reshape(-1))
    scores = scores.at[C.ACTION_RECALL :].set(_recall_scores(p))
    return scores


@jax.jit
def expert_policy(key: jax.Array, state: GameState, mask: jnp.ndarray) -> jnp.ndarray:
    """Best legal action by ``expert_scores``; ties broken at random. Returns int32[8].

    Reads hidden information: ``state.pool``, the copies left after every seat's shop was drawn (it depends on
    the other seats' shops). ``expert_public_policy`` is the same bot on public information."""
    scores = jax.vmap(expert_scores, in_axes=(0, None, None))(state.players, state.round, state.pool)
    noise = jax.random.uniform(as_key(key, "expert_policy key"), scores.shape, maxval=1e-3)
    return jnp.argmax(jnp.where(mask, scores + noise, -jnp.inf), axis=-1).astype(jnp.int32)


def public_pool(state: GameState) -> jnp.ndarray:
    """int32[8, NUM_SPECIES]: per seat, the copies of each species it can count as neither owned nor offered to it:
    the initial copies less the copies on every seat's bench and board (public: they can be scouted) and in its
    own shop. The copies in the other seats' shops, which it cannot see, are counted as left. Equal to the vector
    observation's pool block (``observation.visible_pool``; the pool is conserved: pool + shops + owned copies =
    the initial copies), so a learner and this estimate see the same number."""
    owned = jnp.sum(units.owned_copies(state.players.species, state.players.stars), axis=0)  # [S]: every seat's
    own_shop = jnp.sum(state.players.shop[..., None] == jnp.arange(sp.NUM_SPECIES), axis=1)  # [8, S]
    return (jnp.asarray(sp.SPECIES_POOL_COPIES, jnp.int32) - owned - own_shop).astype(jnp.int32)


@jax.jit
def expert_public_policy(key: jax.Array, state: GameState, mask: jnp.ndarray) -> jnp.ndarray:
    """``expert_policy`` on public information: each seat's ``expert_scores`` with its ``public_pool`` in place of
    the raw pool; the same tie-breaking noise for the same key. Returns int32[8]."""
    scores = jax.vmap(expert_scores, in_axes=(0, None, 0))(state.players, state.round, public_pool(state))
    noise = jax.random.uniform(as_key(key, "expert_public_policy key"), scores.shape, maxval=1e-3)
    return jnp.argmax(jnp.where(mask, scores + noise, -jnp.inf), axis=-1).astype(jnp.int32)


BOTS = {"random": random_policy, "greedy": greedy_policy, "expert": expert_policy,
        "expert_public": expert_public_policy}
#: the bots that read information no player has (docs/observation.md, "What is public")
READS_HIDDEN = ("expert",)


def mixed_policy(policies_by_seat):
    """Combine bots per seat: ``policies_by_seat`` is a tuple of 8 bot names.

    Returns ``policy(key, state, mask) -> int32[8]`` running each distinct bot
    once and picking each seat's action from its own bot.
    """
    names = tuple(policies_by_seat)
    if len(names) != C.NUM_PLAYERS or any(n not in BOTS for n in names):
        raise ValueError(f"need {C.NUM_PLAYERS} bot names from {sorted(BOTS)}, got {names!r}")
    distinct = sorted(set(names))

    @jax.jit
    def policy(key, state, mask):
        keys = jax.random.split(as_key(key, "mixed_policy key"), len(distinct))
        per_bot = {n: BOTS[n](k, state, mask) for n, k in zip(distinct, keys)}
        choice = jnp.stack([per_bot[n][seat] for seat, n in enumerate(names)])
        return choice.astype(jnp.int32)

    return policy
