"""Game state: flax struct dataclasses of fixed-shape arrays.

``Players`` holds one row per seat (leading axis 8), so per-player rule
functions are written for one player and ``jax.vmap``-ed over seats.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax
from flax import struct

# results of a player's last fight
RESULT_NONE, RESULT_WIN, RESULT_LOSS, RESULT_DRAW = 0, 1, 2, 3


@struct.dataclass
class Players:
    """Per-seat state; shapes below are for one player (add a leading [8] in ``GameState``)."""

    life: jax.Array  # int32[]    0 once eliminated
    gold: jax.Array  # int32[]
    level: jax.Array  # int32[]    1..9, also the board unit cap
    xp: jax.Array  # int32[]    progress towards the next level
    streak: jax.Array  # int32[]    >0 consecutive PvP wins, <0 consecutive losses
    alive: jax.Array  # bool[]
    rank: jax.Array  # int32[]    final placement 1..8, 0 while in the game
    species: jax.Array  # int32[32]  unit species per slot (bench 0..7, board 8..31), -1 empty
    stars: jax.Array  # int32[32]  1..3, 0 for an empty slot
    shop: jax.Array  # int32[6]   species offered per shop slot, -1 empty (bought)
    shop_locked: jax.Array  # bool[]     keep the shop at the next round start
    turn_ended: jax.Array  # bool[]     ended its shop phase: remaining steps are no-ops
    actions_this_turn: jax.Array  # int32[]    effective (legal, non-no-op) actions this shop phase
    last_opponent: jax.Array  # int32[]    seat of the last opponent (ghost owner for ghosts), -1 for PvE/none
    last_result: jax.Array  # int32[]    RESULT_* of the last fight

    if TYPE_CHECKING:  # flax.struct.dataclass adds it; declared for the type checker only

        def replace(self, **changes) -> Players: ...


@struct.dataclass
class GameState:
    """One game. ``players`` fields carry a leading seat axis of size 8."""

    players: Players
    pool: jax.Array  # int32[28]  copies of each species left in the shared pool
    round: jax.Array  # int32[]    current round, 1-based
    step_in_round: jax.Array  # int32[]    decision step 0..steps_per_round-1 of this round
    pvp_round: jax.Array  # int32[]    PvP rounds played (drives the round-robin schedule)
    seat_order: jax.Array  # int32[8]   random seat order used by the pairing schedule
    done: jax.Array  # bool[]     game over (only ever seen inside ``step``; it auto-resets)
    key: jax.Array  # PRNG key of this game

    if TYPE_CHECKING:  # flax.struct.dataclass adds it; declared for the type checker only

        def replace(self, **changes) -> GameState: ...
