"""jaxgame's learning library: train, evaluate, load and check policies for the auto-battler (and gymnax envs).

The public API is the handful of names below; everything else lives in sub-packages whose names say what is there
(docs/architecture.md has the map):

- ``agents.core``: distributions, networks, GAE, losses, the rollout scan;
- ``agents.envs``: the batched-env protocol and ``make_env``; ``agents.algorithms``: PPO, A2C, BC, distillation;
- ``agents.run``: the training loop, sweeps; ``agents.storage``: run directories, checkpoints, metrics, datasets;
- ``agents.policies``: loading, baselines, export; ``agents.arena``: tables, evaluation, ratings, tournaments;
- ``agents.league``, ``agents.pipeline``, ``agents.interop`` (Gymnasium, PettingZoo, JaxMARL), ``agents.utils``.

Importing ``agents`` is cheap: each public name imports its module when first used.

    import agents
    config = agents.preset("smoke")                        # a TrainConfig
    summary = agents.train(config, "runs/nb")              # the CLI's run: returns its JSON summary
    policy = agents.load_policy("runs/nb")                 # .network, .params, .config of the latest checkpoint
    result = agents.evaluate("runs/nb", vs=["greedy"])     # 1 vs 7 greedy bots, 8 seat rotations per game seed
"""

from __future__ import annotations

import importlib

#: public name -> (module, attribute)
_API = {
    "TrainConfig": ("agents.config", "TrainConfig"),
    "preset": ("agents.presets", "preset_config"),
    "train": ("agents.run.training", "train"),
    "load_config": ("agents.run.preflight", "load_config"),
    "make_train": ("agents.algorithms.registry", "make_train"),
    "make_env": ("agents.envs.make", "make_env"),
    "load_policy": ("agents.policies.load", "load_policy"),
    "evaluate": ("agents.arena.tournament", "evaluate"),
    "check_env": ("agents.envs.api", "check_env"),
}

__all__ = sorted(_API)


def __getattr__(name: str):
    if name not in _API:
        raise AttributeError(f"module 'agents' has no attribute {name!r}")
    module, attribute = _API[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_API))
