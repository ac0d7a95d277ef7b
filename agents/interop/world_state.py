"""The game as a centralised critic may see it, shared by the PettingZoo adapter (``state()``) and the JaxMARL
view (``get_world_state``). Pure JAX: no optional dependency.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxgame import constants as C
from jaxgame import observation as observation_lib
from jaxgame.config import GameConfig
from jaxgame.state import GameState

#: ``world_state``: every seat's vector observation (seat 0 first), then one row per seat naming its next PvP opponent
STATE_SIZE = C.NUM_PLAYERS * observation_lib.OBS_SIZE + C.NUM_PLAYERS * C.NUM_PLAYERS


@functools.partial(jax.jit, static_argnums=1)
def world_state(state: GameState, config: GameConfig) -> jax.Array:
    """float32[STATE_SIZE], the game as a centralised critic may see it: every seat's vector observation in
    seat order (float32[8 * obs_size]: each seat's own gold, XP, shop, bench and board, so every seat's hidden
    shop too, and the public facts), then float32[8, 8] one-hot rows, row p naming the seat p fights in this
    round's PvP fight (``jaxgame.observation.next_pvp_opponents``; all zeros for a PvE round, a ghost fight or
    a seat out of the game). Left out: the PRNG key and the seat order beyond the next pairing."""
    vectors = observation_lib.vector_observation(state, config)
    opponent = observation_lib.next_pvp_opponents(state, config)
    pairing = (opponent[:, None] == jnp.arange(C.NUM_PLAYERS)[None, :]).astype(jnp.float32)
    return jnp.concatenate([vectors.reshape(-1), pairing.reshape(-1)])


def world_state_bounds(config: GameConfig) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) float32[STATE_SIZE]: the vector observation's bounds per seat, [0, 1] for the pairing."""
    low, high = observation_lib.observation_bounds(config)
    pairs = C.NUM_PLAYERS * C.NUM_PLAYERS
    return (
        np.concatenate([np.tile(low, C.NUM_PLAYERS), np.zeros(pairs, np.float32)]),
        np.concatenate([np.tile(high, C.NUM_PLAYERS), np.ones(pairs, np.float32)]),
    )


__all__ = ["STATE_SIZE", "world_state", "world_state_bounds"]
