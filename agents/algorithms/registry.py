"""One entry point for every algorithm: ``make_train(config, env)`` by ``config.run.algo``.

The result is callable as ``train(key, hparams=None) -> (runner, metrics)``
(the whole run, one jittable call) and has ``init(key, hparams=None)`` and
``run(runner, num_updates)`` (a chunk of updates, which the caller jits) for the chunked loop; metrics
are dicts of float32[num_updates] arrays, turned into floats by ``summarize``.
"""

from __future__ import annotations

import dataclasses
import functools

from agents.algorithms.a2c import StreamingA2C
from agents.algorithms.base import Trainer, make_network
from agents.algorithms.bc import DatasetCloning, behaviour_cloning
from agents.algorithms.distill import FrozenPolicies, distilled_ppo
from agents.algorithms.ppo import PPO
from agents.config import TrainConfig
from agents.core.rollout import summarize
from agents.envs.make import make_env

#: ``config.algo`` -> what builds its trainer from ``(config, env)`` (each an ``agents.algorithms.base.Trainer``).
#: PPO's machinery is composed with a loss and the way it makes its samples (``agents.algorithms.ppo.PPO``).
TRAINERS = {"ppo": PPO, "a2c": StreamingA2C, "bc": behaviour_cloning}


def make_train(config: TrainConfig, env) -> Trainer:
    """The trainer of ``config`` on ``env`` (an ``agents.envs.api.BatchedEnv``), by ``config.run.algo``:

    * ``"ppo"``: ``PPO`` (``PPOLoss``, the policy's own play); with a teacher or an anchor,
      ``agents.algorithms.distill.distilled_ppo`` (``KLTerms`` around ``PPOLoss``, ``FrozenPolicies``);
    * ``"bc"``: ``agents.algorithms.bc.behaviour_cloning`` (``BCLoss``, ``TeacherPlay``); cloning a recording
      (``config.bc.bc_dataset``): ``agents.algorithms.bc.DatasetCloning``;
    * ``"a2c"``: ``agents.algorithms.a2c.StreamingA2C``.

    Example::

        env = agents.make_env(config)
        trainer = agents.make_train(config, env)
        runner, metrics = jax.jit(trainer)(jax.random.key(0))   # the whole run as one compiled call
    """
    if config.run.algo not in TRAINERS:
        raise ValueError(f"unknown algo {config.run.algo!r}; choose from {sorted(TRAINERS)}")
    if config.bc.bc_dataset:
        return DatasetCloning(config, env)
    if config.distill.teacher or config.distill.anchor:
        return distilled_ppo(config, env)
    return TRAINERS[config.run.algo](config, env)


def trainer_network(config: TrainConfig, num_actions: int):
    """The network ``make_train(config, env)``'s trainer trains, on an env of ``num_actions`` actions, built without
    the env or the trainer (``agents.policies.network``): ``agents.algorithms.base.make_network``'s, seen through a
    distillation's public-observation view when the run has a teacher."""
    network = make_network(config, num_actions)
    if not config.bc.bc_dataset and (config.distill.teacher or config.distill.anchor):
        network = FrozenPolicies(config).network(network)
    return network


def built_trainer(config: TrainConfig) -> tuple:
    """``(env, trainer)`` of ``config``, cached: runs, loaded policies and baselines of one config in one process
    share them (and the run library's jitted chunks, ``agents.run.build``) instead of retracing them. Configs that
    differ only in where they log (``wandb_project``) share them."""
    return _built_trainer(dataclasses.replace(config, wandb_project=""))


@functools.lru_cache(maxsize=4)
def _built_trainer(config: TrainConfig) -> tuple:
    env = make_env(config)
    return env, make_train(config, env)


__all__ = ["TRAINERS", "built_trainer", "make_train", "summarize", "trainer_network"]
