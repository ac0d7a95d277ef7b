"""What a training config builds (the env, the trainer, the bot evaluator), cached per config, and the helpers a
restored run or a loaded policy shares with a new run. Below ``agents.run``, ``agents.policies`` and
``agents.baselines``, which all build runs (``agents.run`` re-exports these names)."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from agents import trainers
from agents.config import TrainConfig
from agents.envs import make_env, make_game
from agents.evaluation import make_evaluator, make_rating_evaluator

#: a run directory's checkpoints (``agents.checkpoints``) live in this subdirectory
CHECKPOINT_DIR = "checkpoints"


def fresh_arrays(tree):
    """``tree`` with every leaf copied into a new, uncommitted array (typed keys stay typed).

    Restored (committed) arrays make jit lower a program with explicit shardings, which misses the
    compilation cache; fresh arrays give exactly the program of a new run."""

    def fresh(x):
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            data = jnp.asarray(np.asarray(jax.random.key_data(x)))
            return jax.random.wrap_key_data(data, impl=jax.random.key_impl(x))
        return jnp.asarray(np.asarray(x))

    return jax.tree_util.tree_map(fresh, tree)


@dataclasses.dataclass(frozen=True)
class Built:
    """What a config builds: the batched env, the trainer (``agents.trainers.make_train``) and the bot
    evaluator (None for gymnax envs or ``eval_every=0``; with ``.rate`` for a league)."""

    env: object
    trainer: object
    evaluator: object | None


def build(config: TrainConfig) -> Built:
    """The env, trainer and evaluator of ``config``; cached, so that runs of the same config in one process
    (a resume after a crash, notebooks, tests, loading policies) reuse the jitted functions instead of retracing.
    Configs that differ only in where they log (``wandb_project``) share them."""
    return _build(dataclasses.replace(config, wandb_project=""))


@functools.lru_cache(maxsize=4)
def _build(config: TrainConfig) -> Built:
    env = make_env(config)
    trainer = trainers.make_train(config, env)
    evaluator = None
    if not config.is_gymnax and config.eval_every > 0:
        evaluator = make_evaluator(make_game(config), trainer.network, config.eval_games)
        if config.league_size:
            evaluator.rate = make_rating_evaluator(make_game(config), trainer.network, config.eval_games,
                                                   config.league_size)
    return Built(env, trainer, evaluator)


__all__ = ["CHECKPOINT_DIR", "Built", "build", "fresh_arrays"]
