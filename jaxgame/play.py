"""Batches of whole games and random boards for benchmarks, notebooks and tests (pure JAX, no training code).

``rollout_fn(venv, policy, steps)`` is a jitted scan of ``steps`` batched env steps with a bot policy;
``random_boards`` draws boards for the combat's benchmarks and tests. ``agents.arena.bot_games.play_games``
plays such rollouts until every game has finished, with a progress bar.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxgame import constants as C
from jaxgame import species as sp
from jaxgame.vec_env import VecEnv


def random_board(key, units, max_stars: int = 3):
    """One random board: int32[24] species and int32[24] stars (1..max_stars), ``units`` units on random cells."""
    k1, k2, k3 = jax.random.split(key, 3)
    occupied = jax.random.permutation(k3, C.BOARD_CELLS) < units
    species = jnp.where(occupied, jax.random.randint(k1, (C.BOARD_CELLS,), 0, sp.NUM_SPECIES), -1)
    stars = jnp.where(occupied, jax.random.randint(k2, (C.BOARD_CELLS,), 1, max_stars + 1), 0)
    return species.astype(jnp.int32), stars.astype(jnp.int32)


def random_boards(key, n: int, units, max_stars: int = 3):
    """``n`` random boards: int32[n, 24] species and stars."""
    return jax.vmap(lambda k: random_board(k, units, max_stars))(jax.random.split(key, n))


def rollout_fn(venv: VecEnv, policy, steps: int):
    """Jitted ``(states, ts, key) -> (states, ts, done[T, E], rank[T, E, 8])`` playing ``steps`` steps.

    ``policy(key, state, mask) -> int32[8]`` is a bot from ``jaxgame.bots`` (vmapped over envs).
    """

    @jax.jit
    def rollout(states, ts, key):
        def body(carry, k):
            states, ts = carry
            actions = jax.vmap(policy)(jax.random.split(k, venv.num_envs), states, ts.action_mask)
            states, ts = venv.step(states, actions)
            return (states, ts), (ts.done, ts.info["rank"])

        (states, ts), (done, rank) = jax.lax.scan(body, (states, ts), jax.random.split(key, steps))
        return states, ts, done, rank

    return rollout


__all__ = ["random_board", "random_boards", "rollout_fn"]
