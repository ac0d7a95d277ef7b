"""``VecEnv``: ``num_envs`` games stepped together, paying for the combat only on fight steps.

Its step is ``jaxgame.batched_step.step_batch``, which branches once for the
whole batch (fight or skip, reset or not); ``jax.vmap(env.step)`` runs the same
function (``AutoChessEnv.step`` carries it as its vmap rule). ``sync_axes``
names vmapped axes around the VecEnv (e.g. a sweep's) over which these
decisions are shared too (see ``jaxgame.batching``).
"""

from __future__ import annotations

import jax

from jaxgame import constants as C
from jaxgame.batched_step import step_batch
from jaxgame.batching import check_sync_axes
from jaxgame.env import AutoChessEnv
from jaxgame.validation import as_key, check_actions


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
        actions = check_actions(actions, (self.num_envs, C.NUM_PLAYERS), "VecEnv.step")
        return step_batch(self.env, states, actions, self.sync_axes)
