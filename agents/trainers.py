"""One entry point for every algorithm: ``make_train(config, env)`` by ``config.algo``.

The result is callable as ``train(key, hparams=None) -> (runner, metrics)``
(the whole run, one jittable call) and has ``init(key, hparams=None)`` and
``run(runner, num_updates)`` (a jitted chunk) for the chunked loop; metrics
are dicts of float32[num_updates] arrays, turned into floats by ``summarize``.
"""

from __future__ import annotations

from agents.config import TrainConfig
from agents.rollout import summarize


def make_train(config: TrainConfig, env):
    if config.algo == "ppo":
        from agents.ppo import PPO

        return PPO(config, env)
    if config.algo == "a2c":
        from agents.a2c import StreamingA2C

        return StreamingA2C(config, env)
    raise ValueError(f"unknown algo {config.algo!r}")


__all__ = ["make_train", "summarize"]
