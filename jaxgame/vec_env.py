"""Batched stepping that pays for the combat only on fight steps.

Under ``jax.vmap(env.step)`` the per-env ``lax.cond`` becomes a select that
runs the combat on every step. ``VecEnv`` instead vmaps the cheap pieces and
branches ONCE for the whole batch: the fight phase runs only when at least
one env is on its fight step (with fixed-length rounds all envs are phase
aligned, so that is every ``steps_per_round``-th step), and the reset only
when some game ended; within the fight phase the fight loop runs only the
fights actually played (``rounds.run_fights``). ``sync_axes`` names vmapped axes around the VecEnv
(e.g. a sweep's) over which these decisions are shared too (see
``jaxgame.batching``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxgame import constants as C
from jaxgame.batching import any_in_batch, check_sync_axes
from jaxgame.env import AutoChessEnv
from jaxgame.validation import as_key, check_actions


def _select(mask, a, b):
    """Per-env select of two batched pytrees; mask bool[num_envs]."""
    return jax.tree_util.tree_map(lambda x, y: jnp.where(mask.reshape((-1,) + (1,) * (x.ndim - 1)), x, y), a, b)


class VecEnv:
    """``num_envs`` games stepped together; states carry a leading [num_envs] axis."""

    def __init__(self, env: AutoChessEnv, num_envs: int, sync_axes: tuple[str, ...] = ()):
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        self.env = env
        self.num_envs = num_envs
        self.sync_axes = check_sync_axes(sync_axes)
        self.num_players = env.num_players
        self.num_actions = env.num_actions
        self.obs_size = env.obs_size

    def reset(self, key: jax.Array):
        """One typed or legacy PRNG key -> (states, TimeStep), a leading [num_envs] axis on both."""
        key = as_key(key, "VecEnv.reset key")
        return jax.vmap(self.env.reset)(jax.random.split(key, self.num_envs))

    def step(self, states, actions):
        """actions int32[num_envs, 8] -> (states, TimeStep with a leading [num_envs] axis)."""
        env = self.env
        actions = check_actions(actions, (self.num_envs, C.NUM_PLAYERS), "VecEnv.step")
        states, fight_keys, reset_keys, due = jax.vmap(env.decision_step)(states, actions)

        def fight(states):
            plans = jax.vmap(env.prepare_fights)(states, fight_keys)
            plans = plans.replace(active=plans.active & due[:, None])  # no combat for envs not due
            results = env.run_fights(plans, self.sync_axes)  # one batch-level fight loop
            fought, reward = jax.vmap(env.finish_fights)(states, plans, results, fight_keys)
            return _select(due, fought, states), jnp.where(due[:, None], reward, 0.0)

        def skip(states):
            return states, jnp.zeros((self.num_envs, C.NUM_PLAYERS), jnp.float32)

        states, reward = jax.lax.cond(any_in_batch(due, self.sync_axes), fight, skip, states)
        done = states.done
        final_obs, final_mask = jax.vmap(env.observe)(states), jax.vmap(env.action_mask)(states)
        current = (states, final_obs, final_mask)
        fresh, obs, mask = jax.lax.cond(
            any_in_batch(done, self.sync_axes), lambda: _select(done, jax.vmap(env.start)(reset_keys), current), lambda: current
        )
        return fresh, jax.vmap(env.timestep)(states, final_obs, obs, mask, reward)
