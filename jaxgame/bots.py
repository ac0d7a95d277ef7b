"""Scripted policies, pure JAX: ``policy(key, state, mask) -> int32[8]``.

Both take the game state (they are for evaluation and as self-play
opponents, not for learning) and the legal-action mask bool[8, NUM_ACTIONS],
and only ever pick legal actions. Use ``BOTS[name]``. Keys may be typed
(``jax.random.key``) or legacy (``jax.random.PRNGKey``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxgame import constants as C
from jaxgame import species as sp
from jaxgame import units
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
    scores = jnp.full(C.NUM_ACTIONS, -1.0)
    scores = scores.at[C.ACTION_END_TURN].set(0.0)
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
    scores = scores.at[C.ACTION_PLACE : C.ACTION_RECALL].set(place.reshape(-1))

    # buy: copies owned push toward merges; keep 10-gold interest steps when possible
    owned = units.owned_copies(p.species, p.stars)
    shop_species = jnp.maximum(p.shop, 0)
    cost = jnp.asarray(sp.SPECIES_COST)[shop_species]
    copies_owned = owned[shop_species]
    gold_after = p.gold - cost
    keeps_interest = (gold_after // 10 >= jnp.minimum(p.gold // 10, 5)) | (round_ < 5)
    wanted = (copies_owned > 0) | keeps_interest | (bench_free > 2)
    buy = jnp.where(wanted, 50.0 + 8.0 * copies_owned + 2.0 * cost, -1.0)
    scores = scores.at[C.ACTION_BUY : C.ACTION_REROLL].set(buy)

    # level: with gold above the 50 interest cap, or when the board is full and gold allows
    level_up = ((p.gold >= 54) | (board_full & (p.gold >= 14) & (round_ >= 4))) & (p.level < C.MAX_LEVEL)
    scores = scores.at[C.ACTION_BUY_XP].set(jnp.where(level_up, 40.0, -1.0))
    scores = scores.at[C.ACTION_REROLL].set(jnp.where(p.gold >= 52, 30.0, -1.0))

    # sell the weakest bench unit when the bench is full
    weakest = jnp.argmin(jnp.where(p.species[units.BENCH] >= 0, bench_strength, jnp.inf))
    sell_bench = jnp.where((bench_free == 0) & (jnp.arange(C.BENCH_SIZE) == weakest), 20.0, -1.0)
    scores = scores.at[C.ACTION_SELL : C.ACTION_SELL + C.BENCH_SIZE].set(sell_bench)
    return scores


@jax.jit
def greedy_policy(key: jax.Array, state: GameState, mask: jnp.ndarray) -> jnp.ndarray:
    """Best legal action by ``greedy_scores``; ties broken at random. Returns int32[8]."""
    scores = jax.vmap(greedy_scores, in_axes=(0, None))(state.players, state.round)
    noise = jax.random.uniform(as_key(key, "greedy_policy key"), scores.shape, maxval=1e-3)
    return jnp.argmax(jnp.where(mask, scores + noise, -jnp.inf), axis=-1).astype(jnp.int32)


BOTS = {"random": random_policy, "greedy": greedy_policy}


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
