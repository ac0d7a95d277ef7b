"""A2C for a recurrent policy: windows of ``a2c.update_every`` steps, truncated back-propagation through time.

    trainer = make_train(config, env)   # config.run.algo == "a2c", config.net.network == "gru"
    runner, metrics = jax.jit(trainer)(key)

The streaming A2C (``agents.algorithms.a2c``) keeps no steps: a decision's gradient re-runs only its own step, so
no gradient reaches what a memory keeps from earlier steps. A recurrent policy's A2C therefore keeps the last
``update_every`` steps of every (env, seat), a window, and takes ONE optimizer step on it: the network is re-run over
each seat's window from the carry the window started with (truncated back-propagation through ``update_every``
steps; memory O(update_every x N x P)), the way PureJaxRL's ``ppo_rnn`` re-runs its minibatch sequences. This is
PPO's machinery (``agents.algorithms.ppo.PPO`` with ``agents.algorithms.sequences.RecurrentSequences``) composed
with:

- ``A2CLoss``: ``losses.a2c_loss`` (``-log pi(a|s) sg(A)``, ``0.5 (V(s) - sg(target))^2``, minus ``ent_coef`` x
  entropy), the advantages normalised as ``loss.normalize_advantages`` says, as in the streaming A2C;
- targets with lambda = 0: each decision's TD target is the seat's rewards up to its next decision and V there
  (the semi-MDP TD(0) of the streaming A2C, ``agents.core.gae.semi_mdp_gae``); a decision whose next decision is
  past the window's end completes in the next window, with the carry it was taken with;
- one epoch of one minibatch: every window is one gradient step on all its (env, seat) sequences. The values in
  the advantages are those the window was played with, by the same parameters (one step per window).

What differs from the streaming A2C: the window is stored (the streaming A2C's memory is O(N)), and an update
sees the window's decisions whose next decision came within it (the streaming A2C also completes them step by
step within an update). ``a2c.n_step`` > 1 and ``a2c.target_tau`` < 1 are the streaming A2C's and refused here
(``agents.config``).
"""

from __future__ import annotations

import jax.numpy as jnp

from agents.algorithms.ppo import PPO
from agents.config import HParams, TrainConfig
from agents.core import losses
from agents.core.rollout import Batch, Transition


class A2CLoss:
    """The advantage actor-critic loss of one minibatch (``losses.a2c_loss``) in PPO's machinery; ``names``: its
    metrics, in order, as ``agents.algorithms.ppo.PPOLoss``'s."""

    names = ("policy_loss", "value_loss", "entropy", "advantage_std")

    def __init__(self, normalize_advantages: bool = True):
        self.normalize_advantages = normalize_advantages

    def __call__(self, logits, value, batch: Batch, hp: HParams, update):
        """``(loss float32[], metrics)``: ``logits`` float32[B, A], ``value`` float32[B] of the network on ``batch``
        (leaves [B, ...]); a dense batch (``weight`` None: every sample a decision) weighs every sample 1."""
        traj = batch.traj
        weight = jnp.ones_like(batch.advantages) if traj.weight is None else traj.weight
        total, metrics = losses.a2c_loss(
            logits,
            value,
            traj.mask,
            traj.action,
            batch.advantages,
            batch.targets,
            weight,
            hp.vf_coef,
            hp.ent_coef,
            normalize_advantages=self.normalize_advantages,
        )
        return total, {**metrics, "advantage_std": losses.weighted_std(batch.advantages, weight)}

    def log(self, mean: dict, traj: Transition, targets) -> dict:
        """An update's logged losses, under the streaming A2C's names (``agents.algorithms.a2c``)."""
        return {
            "loss/policy": mean["policy_loss"],
            "loss/value": mean["value_loss"],
            "loss/entropy": mean["entropy"],
            "loss/grad_norm": mean["grad_norm"],
            "loss/explained_variance": losses.explained_variance(traj.value, targets, traj.weight),
            "loss/advantage_std": mean["advantage_std"],
            "train/lr": mean["lr"],
        }


def window_config(config: TrainConfig) -> TrainConfig:
    """The PPO machinery's reading of a recurrent A2C config: rollouts of ``a2c.update_every`` steps, one epoch of
    one minibatch (every field else unchanged; ``steps_per_update`` is the same)."""
    return config.with_overrides({"num_steps": config.a2c.update_every, "update_epochs": 1, "num_minibatches": 1})


def windowed_a2c(config: TrainConfig, env) -> PPO:
    """``algo="a2c"`` with a recurrent network (module docstring): PPO's machinery over windows of
    ``a2c.update_every`` steps with ``A2CLoss`` and TD(0) targets. ``ValueError`` for a feed-forward network (the
    streaming A2C, ``agents.algorithms.a2c.StreamingA2C``, trains it)."""
    if config.run.algo != "a2c":
        raise ValueError(f"windowed_a2c trains algo='a2c', got config.run.algo={config.run.algo!r}")
    return PPO(window_config(config), env, loss=A2CLoss(config.loss.normalize_advantages), gae_lambda=0.0)


__all__ = ["A2CLoss", "window_config", "windowed_a2c"]
