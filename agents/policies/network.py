"""The network of a saved policy and the shapes of its parameters, built from its config alone: no env steps,
no trainer, nothing compiled (``load_policy`` and ``load_baseline`` read the parameters into these shapes)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from agents.algorithms.registry import trainer_network
from agents.config import TrainConfig
from agents.envs.gymnax_env import make_gymnax_env
from agents.envs.make import make_game


class ShapeMismatchError(ValueError):
    """Saved parameters that are not the network's (another config, or another version of agents)."""


def policy_network(config: TrainConfig):
    """``(network, abstract parameters)`` of a run of ``config``: the network its trainer trains
    (``agents.algorithms.registry.trainer_network``) and ``jax.ShapeDtypeStruct`` leaves of its parameters, traced
    from the network's ``init`` on one observation of the run's env (the game's, or a gymnax env's)."""
    if config.is_gymnax:
        env = make_gymnax_env(config.task.env, 1)
        num_actions, obs_shape, dtype = env.num_actions, env.obs_shape, jnp.float32
    else:
        game = make_game(config)
        num_actions, obs_shape = game.num_actions, game.obs_shape
        dtype = jnp.uint8 if config.task.obs == "pixels" else jnp.float32
    network = trainer_network(config, num_actions)
    observation = jax.ShapeDtypeStruct((1, 1, *obs_shape), dtype)  # [N, P, *obs_shape], as a runner's init sees
    return network, jax.eval_shape(network.init, jax.random.key(config.run.seed), observation)


def check_params(abstract, params, what: str) -> None:
    """``ShapeMismatchError`` naming the first difference unless ``params`` has ``abstract``'s structure, shapes and
    dtypes."""

    def layout(tree):
        leaves = jax.tree_util.tree_leaves_with_path(tree)
        return {
            jax.tree_util.keystr(p): (tuple(np.shape(x)), np.dtype(x.dtype if hasattr(x, "dtype") else type(x)))
            for p, x in leaves
        }

    want, got = layout(abstract), layout(params)
    if want != got:
        diff = sorted(set(want.items()) ^ set(got.items()))[:3]
        raise ShapeMismatchError(f"{what}: its parameters do not fit its network ({diff})")


__all__ = ["ShapeMismatchError", "check_params", "policy_network"]
