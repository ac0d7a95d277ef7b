"""One entry point for every algorithm: ``make_train(config, env)`` by ``config.algo``.

The result is callable as ``train(key, hparams=None) -> (runner, metrics)``
(the whole run, one jittable call) and has ``init(key, hparams=None)`` and
``run(runner, num_updates)`` (a jitted chunk) for the chunked loop; metrics
are dicts of float32[num_updates] arrays, turned into floats by ``summarize``.
"""

from __future__ import annotations

from agents.a2c import StreamingA2C
from agents.bc import BehaviourCloning, DatasetCloning
from agents.config import TrainConfig
from agents.distill import DistilledPPO
from agents.ppo import PPO
from agents.rollout import summarize
from agents.trainer_base import Trainer

#: ``config.algo`` -> its trainer class (each an ``agents.trainer_base.Trainer``).
TRAINERS = {"ppo": PPO, "a2c": StreamingA2C, "bc": BehaviourCloning}


def make_train(config: TrainConfig, env) -> Trainer:
    """The trainer of ``config.algo`` on ``env`` (an ``agents.env_api.BatchedEnv``); behaviour cloning of a
    recording (``config.bc_dataset``) is ``agents.bc.DatasetCloning``; PPO with a teacher or an anchor is
    ``agents.distill.DistilledPPO``."""
    if config.algo not in TRAINERS:
        raise ValueError(f"unknown algo {config.algo!r}; choose from {sorted(TRAINERS)}")
    if config.bc_dataset:
        return DatasetCloning(config, env)
    if config.teacher or config.anchor:
        return DistilledPPO(config, env)
    return TRAINERS[config.algo](config, env)


__all__ = ["TRAINERS", "make_train", "summarize"]
