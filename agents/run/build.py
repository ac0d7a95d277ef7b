"""What a training config builds (the env, the trainer, the bot evaluator), cached per config, and the helpers a
restored run or a loaded policy shares with a new run. Below ``agents.run.train_program``, ``agents.policies.load`` and
``agents.policies.baselines``, which all build runs."""

from __future__ import annotations

import dataclasses
import functools

import jax

from agents.algorithms.registry import built_trainer
from agents.arena.evaluation import make_evaluator, make_rating_evaluator
from agents.config import TrainConfig
from agents.envs.make import make_game
from agents.storage.checkpoints import CHECKPOINT_DIR, fresh_arrays


@dataclasses.dataclass(frozen=True)
class Built:
    """What a config builds: the batched env, the trainer (``agents.algorithms.registry.make_train``), its chunk
    jitted (``run``: ``jax.jit(trainer.run, static_argnums=1)``, and ``run_upto`` likewise: the trainers leave the
    jit to their caller), the bot evaluator (``agents.arena.evaluation.make_evaluator``; None for gymnax envs or
    ``eval_every=0``) and a league's rater (``make_rating_evaluator``; None without a league or evaluations)."""

    env: object
    trainer: object
    run: object
    run_upto: object
    evaluator: object | None
    rater: object | None = None


def build(config: TrainConfig) -> Built:
    """The env, trainer and evaluator of ``config``; cached, so that runs of the same config in one process
    (a resume after a crash, notebooks, tests, loading policies) reuse the jitted functions instead of retracing.
    Configs that differ only in where they log (``wandb_project``) share them."""
    return _build(config.with_overrides({"wandb_project": ""}))


@functools.lru_cache(maxsize=4)
def _build(config: TrainConfig) -> Built:
    env, trainer = built_trainer(config)
    evaluator = rater = None
    if not config.is_gymnax and config.log.eval_every > 0:
        evaluator = make_evaluator(make_game(config), trainer.network, config.log.eval_games)
        if config.league.league_size:
            rater = make_rating_evaluator(
                make_game(config), trainer.network, config.log.eval_games, config.league.league_size
            )
    run, run_upto = (jax.jit(f, static_argnums=1) for f in (trainer.run, trainer.run_upto))
    return Built(env, trainer, run, run_upto, evaluator, rater)


__all__ = ["CHECKPOINT_DIR", "Built", "build", "fresh_arrays"]
