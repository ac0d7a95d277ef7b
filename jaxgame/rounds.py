"""The end of a round: pairing, fights, damage, eliminations, placements and
the start of the next round. Each function maps a ``GameState`` to the next.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxgame import combat, economy, units
from jaxgame import constants as C
from jaxgame import shop as shop_lib
from jaxgame.config import GameConfig
from jaxgame.state import RESULT_DRAW, RESULT_LOSS, RESULT_NONE, RESULT_WIN, GameState


def _creep_board(species_ids, stars) -> tuple[np.ndarray, np.ndarray]:
    board_species = np.full(C.BOARD_CELLS, -1, np.int32)
    board_stars = np.zeros(C.BOARD_CELLS, np.int32)
    start = (C.BOARD_COLS - len(species_ids)) // 2 if len(species_ids) <= C.BOARD_COLS else 0
    for i, s in enumerate(species_ids):
        board_species[start + i] = s
        board_stars[start + i] = stars
    return board_species, board_stars


#: Creep boards of the PvE rounds, in order (config.pve_rounds[k] uses board k),
#: placed centred on the front row.
CREEP_BOARDS = [
    _creep_board([0, 4], 1),  # 2 one-star commons
    _creep_board([2, 7], 1),  # 2 one-star commons
    _creep_board([0, 1, 4], 1),  # 3 one-star commons
    _creep_board([4, 2, 7, 6], 2),  # 4 two-star commons
    _creep_board([8, 9, 12, 14, 10], 2),  # 5 two-star uncommons
    _creep_board([15, 16, 17, 18, 19, 20], 2),  # 6 two-star rares
]
CREEP_SPECIES = np.stack([b[0] for b in CREEP_BOARDS])  # int32[6, 24]
CREEP_STARS = np.stack([b[1] for b in CREEP_BOARDS])


def pve_index_table(config: GameConfig) -> np.ndarray:
    """int32[max_rounds + 2]: creep board of each round, -1 for PvP rounds."""
    table = np.full(config.max_rounds + 2, -1, np.int32)
    for k, r in enumerate(config.pve_rounds):
        if r < table.shape[0]:
            table[r] = k
    return table


def pvp_pairing(alive, seat_order, pvp_round, key):
    """Round-robin (circle method) pairing of the alive seats.

    Alive seats take schedule positions 0..n-1 in ``seat_order`` order; with
    an odd count a 'bye' position n is added, and the seat paired with it
    fights a ghost: a copy of another random alive seat's board. While the
    alive set does not change, no two seats meet twice in m-1 consecutive
    PvP rounds (m = n rounded up to even).

    Returns (opponent int32[8]: seat, or -1 for a ghost / dead seat,
             ghost_source int32[8]: seat whose board the ghost copies, else -1).
    """
    seats = jnp.arange(C.NUM_PLAYERS)
    order_position = jnp.argsort(seat_order)
    sort_key = jnp.where(alive, order_position, C.NUM_PLAYERS + order_position)
    pos = jnp.argsort(jnp.argsort(sort_key))  # schedule position of each seat
    seat_at_pos = jnp.argsort(sort_key)
    n = jnp.sum(alive)
    m = n + (n % 2)
    cycle = jnp.maximum(m - 1, 1)
    r = pvp_round % cycle
    opp_pos = jnp.where(pos == m - 1, r, (2 * r - pos) % cycle)
    opp_pos = jnp.where(opp_pos == pos, m - 1, opp_pos)
    has_real_opponent = alive & (opp_pos < n)
    opponent = jnp.where(has_real_opponent, seat_at_pos[jnp.clip(opp_pos, 0, C.NUM_PLAYERS - 1)], -1)
    # ghost: uniform over the other alive seats
    is_ghost_fight = alive & ~has_real_opponent
    ghost_logits = jnp.where(alive[None, :] & (seats[None, :] != seats[:, None]), 0.0, -jnp.inf)
    ghost_pick = jax.random.categorical(key, ghost_logits, axis=-1)
    ghost_source = jnp.where(is_ghost_fight & (n > 1), ghost_pick, -1)
    return opponent.astype(jnp.int32), ghost_source.astype(jnp.int32)


def _board(state: GameState):
    return state.players.species[:, C.BENCH_SIZE :], state.players.stars[:, C.BENCH_SIZE :]


@struct.dataclass
class FightPlan:
    """This round's fights of one game, one combat slot per seat.

    Slot p is active when seat p is alive and is the 'home' side: a PvE fight,
    a ghost fight, or the lower seat of a PvP pair (each pair fights once).
    """

    home_species: jax.Array  # int32[8, 24]
    home_stars: jax.Array  # int32[8, 24]
    away_species: jax.Array  # int32[8, 24]  opponent, ghost or creep board
    away_stars: jax.Array  # int32[8, 24]
    active: jax.Array  # bool[8]
    opponent: jax.Array  # int32[8]  PvP opponent seat, -1 for ghost/PvE/out
    ghost_source: jax.Array  # int32[8]  seat copied by a ghost, else -1
    is_pve: jax.Array  # bool[]
    key: jax.Array  # PRNG key; slot p fights with fold_in(key, p)


def plan_fights(state: GameState, config: GameConfig, key) -> FightPlan:
    """Pair the seats and pick every active slot's two boards."""
    pair_key, fight_key = jax.random.split(key)
    alive = state.players.alive
    seats = jnp.arange(C.NUM_PLAYERS)
    creep_index = jnp.asarray(pve_index_table(config))[jnp.minimum(state.round, config.max_rounds + 1)]
    is_pve = creep_index >= 0

    opponent, ghost_source = pvp_pairing(alive, state.seat_order, state.pvp_round, pair_key)
    opponent = jnp.where(is_pve, -1, opponent)
    ghost_source = jnp.where(is_pve, -1, ghost_source)
    is_ghost = (opponent < 0) & (ghost_source >= 0)
    active = alive & (is_pve | is_ghost | ((opponent >= 0) & (seats < opponent)))

    board_species, board_stars = _board(state)
    away_seat = jnp.where(opponent >= 0, opponent, jnp.maximum(ghost_source, 0))
    creep_species = jnp.asarray(CREEP_SPECIES)[jnp.maximum(creep_index, 0)]
    creep_stars = jnp.asarray(CREEP_STARS)[jnp.maximum(creep_index, 0)]
    return FightPlan(
        home_species=board_species,
        home_stars=board_stars,
        away_species=jnp.where(is_pve, creep_species[None], board_species[away_seat]),
        away_stars=jnp.where(is_pve, creep_stars[None], board_stars[away_seat]),
        active=active,
        opponent=opponent.astype(jnp.int32),
        ghost_source=ghost_source.astype(jnp.int32),
        is_pve=is_pve,
        key=fight_key,
    )


#: Fight lanes per game (``combat.simulate_fights``' ``lanes``): a PvP round has at most 4 fights a game
#: (4 pairs, or 3 pairs and a ghost) and a PvE round 8; lanes take the next pending fight when theirs
#: ends, so fewer lanes than fights spend less work on fights that already ended.
LANES_PER_GAME = 4
#: On a CPU, at most this many lanes: a lane's tick costs more in wider loops (at 1,024 lanes about 1.3x its cost
#: at 256 on the 2-core CI machine: the tick's [9, 9, lanes] blocks no longer stay in cache), so the fights of a
#: large batch queue for 256 lanes instead. Accelerators take ``LANES_PER_GAME`` lanes a game however many games.
CPU_MAX_LANES = 256


def run_fights(plan: FightPlan, max_ticks: int, sync_axes: tuple[str, ...] = ()) -> combat.FightResult:
    """Simulate the active slots of a batch of plans (any leading batch shape).

    The 8 slots of every game form one batch of fights; inactive slots are
    empty boards, decided at tick 0 (winner 2, all zeros) without being
    simulated. The active fights run in ``LANES_PER_GAME`` lanes per game, at
    most ``CPU_MAX_LANES`` on a CPU (``combat.simulate_fights``), so the work follows the fights actually
    played (PvP rounds half of PvE ones, fewer as players are eliminated)
    and their lengths, not the longest fight. The fights simulate
    ``MAX_LEVEL`` units a side, exact for every board the rules allow (a
    board holds at most ``level <= MAX_LEVEL`` units; creep boards fewer;
    a hand-made board with more fights with its first 9 units in cell order).
    ``sync_axes``: vmapped axes around the call that share the fight loop's
    trip count (``jaxgame.batching``). Returns a FightResult with fields of
    shape [*batch, 8].
    """
    batch = plan.active.shape[:-1]
    n = C.NUM_PLAYERS
    flat = jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[len(batch) :]), plan)
    games = flat.active.shape[0]
    slot_keys = jax.vmap(lambda key: jax.vmap(lambda s: jax.random.fold_in(key, s))(jnp.arange(n)))(
        flat.key.reshape(-1)
    )
    boards = [flat.home_species, flat.home_stars, flat.away_species, flat.away_stars]
    boards = [jnp.where(flat.active[..., None], b, -1 if i % 2 == 0 else 0) for i, b in enumerate(boards)]
    lanes = LANES_PER_GAME * games

    def simulate(lanes, *boards_and_keys):
        return combat.simulate_fights(*boards_and_keys, max_ticks, C.MAX_LEVEL, lanes=lanes, sync_axes=sync_axes)

    args = [b.reshape(-1, C.BOARD_CELLS) for b in boards] + [slot_keys.reshape(-1)]
    if lanes <= CPU_MAX_LANES:
        result = simulate(lanes, *args)
    else:
        result = jax.lax.platform_dependent(
            *args, cpu=functools.partial(simulate, CPU_MAX_LANES), default=functools.partial(simulate, lanes)
        )
    return jax.tree_util.tree_map(lambda x: x.reshape(batch + (n,)), result)


def settle_fights(state: GameState, plan: FightPlan, result: combat.FightResult):
    """Each seat's outcome: its own slot if home, else its PvP opponent's slot mirrored.

    Returns (state with last_opponent/last_result/pvp_round updated, outcome dict).
    """
    players = state.players
    alive = players.alive
    seats = jnp.arange(C.NUM_PLAYERS)
    is_home = plan.active
    opponent = plan.opponent
    slot = jnp.where(is_home, seats, jnp.maximum(opponent, 0))
    winner = result.winner[slot]
    fought = alive & (is_home | (opponent >= 0))
    won = jnp.where(is_home, winner == 0, winner == 1) & fought
    lost = jnp.where(is_home, winner == 1, winner == 0) & fought
    drew = (winner == 2) & fought
    enemy_survivors = jnp.where(is_home, result.away_survivors[slot], result.home_survivors[slot])

    last_result = jnp.where(won, RESULT_WIN, jnp.where(lost, RESULT_LOSS, jnp.where(drew, RESULT_DRAW, RESULT_NONE)))
    last_opponent = jnp.where(opponent >= 0, opponent, plan.ghost_source)
    players = players.replace(
        last_result=jnp.where(fought, last_result, players.last_result).astype(jnp.int32),
        last_opponent=jnp.where(fought, last_opponent, players.last_opponent).astype(jnp.int32),
    )
    outcome = dict(won=won, lost=lost, drew=drew, enemy_survivors=enemy_survivors, is_pve=plan.is_pve)
    pvp_round = state.pvp_round + jnp.where(plan.is_pve, 0, 1)
    return state.replace(players=players, pvp_round=pvp_round), outcome


def apply_fight_results(state: GameState, outcome) -> tuple[GameState, jnp.ndarray]:
    """Life loss, the PvP win gold and streaks.

    Returns (state, life_lost int32[8]): the life actually lost, at most the
    life the player had (the state's life itself may go below 0).
    """
    p = state.players
    base_damage = (state.round + 1) // 2
    hurt = outcome["lost"] | outcome["drew"]
    damage = jnp.where(hurt, base_damage + outcome["enemy_survivors"], 0)
    # life goes below 0 (the depth orders same-round eliminations); the life lost stops at 0
    life_lost = jnp.minimum(damage, jnp.maximum(p.life, 0)).astype(jnp.int32)
    pvp = ~outcome["is_pve"]
    gold = p.gold + jnp.where(pvp & outcome["won"], economy.WIN_GOLD, 0)
    fought = outcome["won"] | outcome["lost"] | outcome["drew"]
    streak = jnp.where(pvp & fought, economy.update_streak(p.streak, outcome["won"], outcome["lost"]), p.streak)
    p = p.replace(life=p.life - damage.astype(jnp.int32), gold=gold.astype(jnp.int32), streak=streak)
    return state.replace(players=p), life_lost


def placement_key(alive, life, level) -> jnp.ndarray:
    """int32 sort key, larger = better placement: alive, then life, then level, then lower seat."""
    seats = jnp.arange(C.NUM_PLAYERS)
    life_term = jnp.clip(life, -1000, 1000) + 1000  # 0..2000
    return ((alive.astype(jnp.int32) * 2048 + life_term) * 16 + level) * 8 + (C.NUM_PLAYERS - 1 - seats)


def eliminate_and_rank(state: GameState, config: GameConfig) -> tuple[GameState, jnp.ndarray]:
    """Knock out seats at 0 life, return their units and shop to the pool,
    and give final ranks to everyone who finished this round.

    Seats that go out together take the lowest free ranks, ordered by life
    (before clipping at 0), then level, then seat. When at most one seat is
    left, or the round cap is reached, the game is over and the survivors take
    ranks 1.. by the same key.

    Returns (state, newly_ranked bool[8]).
    """
    p = state.players
    unranked = p.rank == 0
    survives = p.alive & (p.life > 0)
    knocked_out = p.alive & ~survives
    game_over = (jnp.sum(survives) <= 1) | (state.round >= config.max_rounds)
    finishing = unranked & (knocked_out | (game_over & survives))
    key = placement_key(survives, p.life, p.level)
    better_finishers = jnp.sum(finishing[None, :] & (key[None, :] > key[:, None]), axis=1)
    rank = jnp.sum(unranked) - jnp.sum(finishing) + 1 + better_finishers
    new_rank = jnp.where(finishing, rank, p.rank).astype(jnp.int32)

    pool = state.pool
    out_species = jnp.where(knocked_out[:, None], p.species, -1)
    out_stars = jnp.where(knocked_out[:, None], p.stars, 0)
    returned = units.owned_copies(out_species, out_stars).sum(axis=0)
    pool = shop_lib.return_to_pool(pool + returned, jnp.where(knocked_out[:, None], p.shop, -1))
    p = p.replace(
        life=jnp.maximum(p.life, 0),
        alive=survives,
        rank=new_rank,
        species=jnp.where(knocked_out[:, None], -1, p.species),
        stars=jnp.where(knocked_out[:, None], 0, p.stars),
        shop=jnp.where(knocked_out[:, None], -1, p.shop),
    )
    return state.replace(players=p, pool=pool, done=game_over), finishing


def start_next_round(state: GameState, key) -> GameState:
    """Round + 1: income, +2 XP, new shops (locked shops are kept once), fresh turns."""
    p = state.players
    alive = p.alive
    income = economy.round_income(p.gold, p.streak)
    gold = jnp.where(alive, p.gold + income, p.gold)
    level, xp = economy.add_xp(p.level, p.xp, jnp.where(alive, economy.XP_PER_ROUND, 0))
    refill = alive & ~p.shop_locked
    pool = shop_lib.return_to_pool(state.pool, jnp.where(refill[:, None], p.shop, -1))
    shops = jnp.where(refill[:, None], -1, p.shop)
    shops, pool = shop_lib.refill_shops(shops, level, pool, refill, key)
    p = p.replace(
        gold=gold.astype(jnp.int32),
        level=level,
        xp=xp,
        shop=shops,
        shop_locked=jnp.zeros_like(p.shop_locked),
        turn_ended=~alive,
        actions_this_turn=jnp.zeros_like(p.actions_this_turn),
    )
    return state.replace(players=p, pool=pool, round=state.round + 1, step_in_round=jnp.zeros_like(state.step_in_round))
