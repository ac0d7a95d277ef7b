"""Vector observations: one float32[OBS_SIZE] per seat.

Layout (offsets in ``OBS_LAYOUT``; see docs/observation.md):

=================  =====  ===================================================
block              size   content
=================  =====  ===================================================
self               12     life/100, gold/50, level/9, xp progress, streak/5,
                          round/max_rounds, step_in_round/steps, shop locked,
                          turn ended, alive, board units/level, bench units/8
shop               6x12   one unit record per shop slot
slots              32x12  one unit record per bench (0..7) and board (8..31) slot
synergies          16     distinct species per type / 7, synergy level / 3
pool               28     copies on no bench or board and not in this seat's
                          shop / initial copies (public: scouting counts it)
owned              28     base copies owned per species / 9
opponents          7x6    seats p+1..p+7 (mod 8): life/100, level/9, alive,
                          board units/9, streak/5, was my last opponent
=================  =====  ===================================================

A unit record is 12 floats: present, stars/3, cost/5, 8 type flags,
(species + 1)/28; all zeros for an empty slot.

Every block is public information (docs/observation.md, "What is public"): the
other seats' shops and the pool's remainder, which no player sees, change no
seat's vector but their owner's own shop and pool blocks.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxgame import constants as C
from jaxgame import economy, rounds, synergy, units
from jaxgame import species as sp
from jaxgame.config import GameConfig
from jaxgame.state import GameState

UNIT_FEATURES = 12
OPPONENT_FEATURES = 6
OBS_LAYOUT = {}
_offset = 0
for _name, _size in [
    ("self", 12),
    ("shop", C.SHOP_SIZE * UNIT_FEATURES),
    ("slots", C.NUM_SLOTS * UNIT_FEATURES),
    ("synergies", 2 * sp.NUM_TYPES),
    ("pool", sp.NUM_SPECIES),
    ("owned", sp.NUM_SPECIES),
    ("opponents", (C.NUM_PLAYERS - 1) * OPPONENT_FEATURES),
]:
    OBS_LAYOUT[_name] = (_offset, _offset + _size)
    _offset += _size
OBS_SIZE = _offset

#: the oracle block (``oracle_block``): per other seat gold, xp progress, next-opponent flag, shop and slots
ORACLE_SEAT_FEATURES = 3 + (C.SHOP_SIZE + C.NUM_SLOTS) * UNIT_FEATURES
ORACLE_SIZE = (C.NUM_PLAYERS - 1) * ORACLE_SEAT_FEATURES


def unit_records(species: jnp.ndarray, stars: jnp.ndarray) -> jnp.ndarray:
    """species, stars int32[n] -> float32[n, UNIT_FEATURES]."""
    present = species >= 0
    s = jnp.maximum(species, 0)
    types = jnp.asarray(sp.SPECIES_TYPE_MASK, jnp.float32)[s]
    record = jnp.concatenate(
        [
            jnp.ones_like(species, jnp.float32)[:, None],
            (stars / sp.MAX_STARS)[:, None],
            (jnp.asarray(sp.SPECIES_COST)[s] / 5.0)[:, None],
            types,
            ((s + 1) / sp.NUM_SPECIES)[:, None],
        ],
        axis=1,
    )
    return jnp.where(present[:, None], record, 0.0).astype(jnp.float32)


def visible_pool(state: GameState, seat) -> jnp.ndarray:
    """int32[NUM_SPECIES]: the copies of each species ``seat`` can count as neither owned nor offered to it.

    Public: the initial copies less the copies on every seat's bench and board
    (a player can scout them) and in its own shop. Computed as the pool plus
    the copies in the other seats' shops, the same number (the pool is
    conserved: pool + shops + owned copies = the initial copies); the raw pool
    alone would reveal what the other seats were offered. The public bot
    ``expert_public`` uses the same count (``bots.public_pool``).
    """
    in_shops = jnp.sum(state.players.shop[..., None] == jnp.arange(sp.NUM_SPECIES), axis=1)  # [8, 28]
    return state.pool + in_shops.sum(axis=0) - in_shops[seat]


def seat_observation(state: GameState, seat: jnp.ndarray, config: GameConfig) -> jnp.ndarray:
    """float32[OBS_SIZE] for one seat."""
    all_players = state.players
    p = jax.tree_util.tree_map(lambda x: x[seat], all_players)
    board_units = units.board_count(p.species)
    self_block = jnp.stack(
        [
            p.life / 100.0,
            p.gold / 50.0,
            p.level / C.MAX_LEVEL,
            economy.xp_fraction(p.level, p.xp),
            p.streak / 5.0,
            state.round / config.max_rounds,
            state.step_in_round / config.steps_per_round,
            p.shop_locked,
            p.turn_ended,
            p.alive,
            board_units / jnp.maximum(p.level, 1),
            units.bench_count(p.species) / C.BENCH_SIZE,
        ]
    ).astype(jnp.float32)
    counts = synergy.type_counts(p.species[units.BOARD])
    synergy_block = jnp.concatenate([counts / 7.0, synergy.synergy_levels(counts) / 3.0])
    pool_block = visible_pool(state, seat) / jnp.asarray(sp.SPECIES_POOL_COPIES, jnp.float32)
    owned_block = units.owned_copies(p.species, p.stars) / 9.0

    others = (seat + jnp.arange(1, C.NUM_PLAYERS)) % C.NUM_PLAYERS
    opponents = jnp.stack(
        [
            all_players.life[others] / 100.0,
            all_players.level[others] / C.MAX_LEVEL,
            all_players.alive[others],
            units.board_count(all_players.species[others]) / C.MAX_LEVEL,
            all_players.streak[others] / 5.0,
            others == p.last_opponent,
        ],
        axis=1,
    )
    return jnp.concatenate(
        [
            self_block,
            unit_records(p.shop, jnp.where(p.shop >= 0, 1, 0)).reshape(-1),
            unit_records(p.species, p.stars).reshape(-1),
            synergy_block,
            pool_block,
            owned_block,
            opponents.reshape(-1),
        ]
    ).astype(jnp.float32)


def frame_view(obs: jnp.ndarray) -> jnp.ndarray:
    """float32[..., OBS_SIZE] -> the same observations cut down to what the seat's rendered frame shows
    (``jaxgame.render``; docs/pixels.md, "Rendered view"): a diagnostic that separates what the frame leaves out
    from learning to see (issue 43, ``ppo_pixels``).

    Kept: the self block (the HUD), the shop, bench and board records (the frame draws each unit's species and
    stars, of which cost and types are functions), the synergies (the bars) and the owned copies (a function of
    the bench and board). Zeroed: the pool (the frame has no pool), and every opponent row but the last
    opponent's, of which the life, level, board units (the frame draws its board), alive and the flag itself are
    kept and the streak zeroed. The frame's count of players alive is not kept (the vector has no such count).
    """
    obs = jnp.asarray(obs, jnp.float32)
    keep = np.ones(OBS_SIZE, np.float32)
    keep[slice(*OBS_LAYOUT["pool"])] = 0.0
    start, end = OBS_LAYOUT["opponents"]
    lead = obs.shape[:-1]
    opponents = obs[..., start:end].reshape(*lead, C.NUM_PLAYERS - 1, OPPONENT_FEATURES)
    last = opponents[..., 5:6]  # "was my last opponent": 1 on at most one row
    columns = jnp.asarray([1, 1, 1, 1, 0, 1], jnp.float32)  # life, level, alive, board units, (streak), the flag
    shown = (opponents * last * columns).reshape(*lead, end - start)
    return jnp.concatenate([obs[..., :start] * jnp.asarray(keep[:start]), shown, obs[..., end:]], axis=-1)


def vector_observation(state: GameState, config: GameConfig) -> jnp.ndarray:
    """float32[8, OBS_SIZE]: every seat's observation."""
    return jax.vmap(lambda seat: seat_observation(state, seat, config))(jnp.arange(C.NUM_PLAYERS))


def next_pvp_opponents(state: GameState, config: GameConfig) -> jnp.ndarray:
    """int32[8]: the seat each seat meets in the fight at the end of this round, -1 when there is none to know
    (a PvE round, a ghost fight, an eliminated seat). The pairing is the round-robin of
    ``jaxgame.rounds.pvp_pairing``, a function of the alive seats, the seat order and the PvP round: the fight
    plan computes the same pairing (tests/test_oracle.py checks it against the plan)."""
    opponent, _ = rounds.pvp_pairing(state.players.alive, state.seat_order, state.pvp_round, jax.random.key(0))
    creep = jnp.asarray(rounds.pve_index_table(config))[jnp.minimum(state.round, config.max_rounds + 1)]
    return jnp.where(creep >= 0, -1, opponent).astype(jnp.int32)


def oracle_block(state: GameState, seat: jnp.ndarray, config: GameConfig) -> jnp.ndarray:
    """float32[ORACLE_SIZE]: what the vector does not show ``seat``, per other seat in the order of the public
    opponents block (seats p+1..p+7 mod 8), ``ORACLE_SEAT_FEATURES`` each: gold/50, xp progress, whether it is this
    seat's next PvP opponent (``next_pvp_opponents``), its shop (6 unit records) and its bench and board (32 unit
    records). Gold, XP, bench and board are public (not in the vector); the shop and the next opponent (it follows
    the seat order, drawn at reset and not shown) are hidden (docs/observation.md, "What is public")."""
    players = state.players
    others = (seat + jnp.arange(1, C.NUM_PLAYERS)) % C.NUM_PLAYERS
    next_opponent = next_pvp_opponents(state, config)[seat]

    def one(other):
        p = jax.tree_util.tree_map(lambda x: x[other], players)
        scalars = jnp.stack([p.gold / 50.0, economy.xp_fraction(p.level, p.xp), (other == next_opponent) * 1.0])
        return jnp.concatenate(
            [
                scalars.astype(jnp.float32),
                unit_records(p.shop, jnp.where(p.shop >= 0, 1, 0)).reshape(-1),
                unit_records(p.species, p.stars).reshape(-1),
            ]
        )

    return jax.vmap(one)(others).reshape(-1)


def oracle_observation(state: GameState, config: GameConfig) -> jnp.ndarray:
    """float32[8, OBS_SIZE + ORACLE_SIZE]: every seat's public observation (``vector_observation``) followed by
    its ``oracle_block`` (what the vector does not show, hidden information included: an oracle teacher's input; a
    student reads the first OBS_SIZE)."""
    hidden = jax.vmap(lambda seat: oracle_block(state, seat, config))(jnp.arange(C.NUM_PLAYERS))
    return jnp.concatenate([vector_observation(state, config), hidden], axis=1)


def observation_bounds(config: GameConfig) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) float32[OBS_SIZE]: bounds every vector observation of a game with ``config`` lies within
    (what a Gymnasium ``Box`` declares). Gold is bounded by the most a seat can earn: the starting gold plus
    every round's largest income and win gold (selling never returns more than the units cost)."""
    low, high = np.zeros(OBS_SIZE, np.float32), np.ones(OBS_SIZE, np.float32)
    life = config.starting_life / 100.0
    streak = config.max_rounds / 5.0  # one win or loss a round at most
    start, _ = OBS_LAYOUT["self"]
    # life, gold, level, xp, streak, round, step, locked, ended, alive, board/level, bench/8
    most_income = economy.BASE_INCOME + economy.MAX_INTEREST + economy.MAX_STREAK_BONUS + economy.WIN_GOLD
    high[start + 0] = life
    high[start + 1] = (config.starting_gold + (config.max_rounds + 1) * most_income) / 50.0
    low[start + 4], high[start + 4] = -streak, streak
    high[start + 5] = (config.max_rounds + 1) / config.max_rounds  # a finished game's round may be one past
    start, end = OBS_LAYOUT["synergies"]
    species_per_type = sp.SPECIES_TYPE_MASK.sum(axis=0)
    high[start : start + sp.NUM_TYPES] = np.minimum(species_per_type, C.MAX_LEVEL) / 7.0
    start, end = OBS_LAYOUT["owned"]
    high[start:end] = sp.SPECIES_POOL_COPIES / 9.0
    start, end = OBS_LAYOUT["opponents"]
    per_opponent = np.array([life, 1.0, 1.0, 1.0, streak, 1.0], np.float32)
    low[start:end] = np.tile(np.array([0, 0, 0, 0, -streak, 0], np.float32), C.NUM_PLAYERS - 1)
    high[start:end] = np.tile(per_opponent, C.NUM_PLAYERS - 1)
    return low, high
