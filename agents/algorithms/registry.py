"""One entry point for every algorithm: ``make_train(config, env)`` by ``config.run.algo``.

The result is callable as ``train(key, hparams=None) -> (runner, metrics)``
(the whole run, one jittable call) and has ``init(key, hparams=None)`` and
``run(runner, num_updates)`` (a chunk of updates, which the caller jits) for the chunked loop; metrics
are dicts of float32[num_updates] arrays, turned into floats by ``summarize``.
"""

from __future__ import annotations

import functools

from agents.algorithms.a2c import StreamingA2C
from agents.algorithms.a2c_windows import windowed_a2c
from agents.algorithms.base import Trainer, make_network
from agents.algorithms.bc import DatasetCloning, behaviour_cloning
from agents.algorithms.distill import FrozenPolicies, distilled_ppo
from agents.algorithms.ppo import PPO
from agents.config import TrainConfig
from agents.core.rollout import summarize
from agents.envs.make import make_env

#: a trainer's kind (``trainer_kind``) -> what builds it from ``(config, env)`` (each an
#: ``agents.algorithms.base.Trainer``). PPO's machinery is composed with a loss and the way it makes its samples
#: (``agents.algorithms.ppo.PPO``): distillation and online cloning are PPO with other ones.
TRAINERS = {
    "ppo": PPO,
    "distill": distilled_ppo,
    "a2c": StreamingA2C,
    "a2c_windows": windowed_a2c,
    "bc": behaviour_cloning,
    "bc_dataset": DatasetCloning,
}


def trainer_kind(config: TrainConfig) -> str:
    """Which of ``TRAINERS`` trains ``config``: its ``run.algo``, except that cloning a recording
    (``bc.bc_dataset``) is ``"bc_dataset"``, PPO with a teacher or an anchor is ``"distill"`` and A2C with a
    recurrent network is ``"a2c_windows"``."""
    if config.bc.bc_dataset:
        return "bc_dataset"
    if config.distill.teacher or config.distill.anchor:
        return "distill"
    if config.a2c_windows:
        return "a2c_windows"
    return config.run.algo


def make_train(config: TrainConfig, env) -> Trainer | DatasetCloning:
    """The trainer of ``config`` on ``env`` (an ``agents.envs.api.BatchedEnv``): ``TRAINERS[trainer_kind(config)]``.

    * ``"ppo"``: ``PPO`` (``PPOLoss``, the policy's own play); ``"distill"`` (a teacher or an anchor):
      ``agents.algorithms.distill.distilled_ppo`` (``KLTerms`` around ``PPOLoss``, ``FrozenPolicies``);
    * ``"bc"``: ``agents.algorithms.bc.behaviour_cloning`` (``BCLoss``, ``TeacherPlay``); ``"bc_dataset"`` (cloning a
      recording, ``config.bc.bc_dataset``): ``agents.algorithms.bc.DatasetCloning``;
    * ``"a2c"``: ``agents.algorithms.a2c.StreamingA2C``; with a recurrent network (``"a2c_windows"``):
      ``agents.algorithms.a2c_windows.windowed_a2c`` (``A2CLoss`` over windows of ``a2c.update_every`` steps).

    Example::

        env = agents.make_env(config)
        trainer = agents.make_train(config, env)
        runner, metrics = jax.jit(trainer)(jax.random.key(0))   # the whole run as one compiled call
    """
    return TRAINERS[trainer_kind(config)](config, env)


def trainer_network(config: TrainConfig, num_actions: int):
    """The network ``make_train(config, env)``'s trainer trains, on an env of ``num_actions`` actions, built without
    the env or the trainer (``agents.policies.network``): ``agents.algorithms.base.make_network``'s, seen through a
    distillation's public-observation view when the run has a teacher."""
    network = make_network(config, num_actions)
    if trainer_kind(config) == "distill":
        network = FrozenPolicies(config).network(network)
    return network


def built_trainer(config: TrainConfig) -> tuple:
    """``(env, trainer)`` of ``config``, cached: runs, loaded policies and baselines of one config in one process
    share them (and the run library's jitted chunks, ``agents.run.build``) instead of retracing them. Configs that
    differ only in where they log (``wandb_project``) share them."""
    return _built_trainer(config.with_overrides({"wandb_project": ""}))


@functools.lru_cache(maxsize=4)
def _built_trainer(config: TrainConfig) -> tuple:
    env = make_env(config)
    return env, make_train(config, env)


__all__ = ["TRAINERS", "built_trainer", "make_train", "summarize", "trainer_kind", "trainer_network"]
