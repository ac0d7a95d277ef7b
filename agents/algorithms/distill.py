"""Distillation and anchors: PPO with KL terms to frozen policies (``TrainConfig.teacher`` and ``.anchor``).

The design's phase 2 trains a public-observation student with PPO plus ``lambda_kl x KL(student || teacher)``,
the teacher a frozen policy that may see the hidden information (``obs="oracle"``); an optional anchor (e.g. the
BC policy, or in phase 3 the previous phase's policy) adds ``anchor_kl x KL(student || anchor)``. Each minibatch
loss of ``DistilledPPO`` is PPO's (``losses.ppo_loss``) plus, over the minibatch's decisions,

    teacher_kl(u) x policy_kl(student, teacher, T = teacher_temperature)
  + anchor_kl(u)  x policy_kl(student, anchor, T = 1)

with both coefficients decaying linearly to 0 (``linear_decay``; ``teacher_kl_updates``, ``anchor_kl_updates``)
at update u. ``losses.policy_kl`` is over the legal actions; no gradient reaches a frozen policy.

**Observations.** With a teacher the training env steps oracle observations (``TrainConfig.env_obs``): each is
the seat's public vector (``jaxgame.observation.OBS_SIZE`` floats) then the hidden-information block. The
student reads the public part only (``networks.PublicView``: its parameters are exactly a vector policy's, so
its checkpoints load, evaluate and export as any ``obs="vector"`` run's). An oracle teacher reads the whole
observation; a vector teacher and the anchor read the public part.

**Feature dropout.** ``oracle_dropout_updates`` fades the hidden information out of the teacher's inputs: in the
rollout of update u each feature of the block is kept with probability ``linear_decay(1, oracle_dropout_updates,
u)`` and set to 0 otherwise (not rescaled: at the end the teacher sees no hidden information at all, as its
zero-widened inputs saw before it learned to use them, ``agents.policies.frozen``). The mask is drawn once per sample,
in the rollout that collected it, and stored with it, so every epoch (and a decision carried to the next rollout)
sees the same teacher input. The student never reads the block, so acting is unchanged.

**Cost.** The frozen policies run once per sample and update (``training_batch``: their logits join the batch),
not once per epoch; the student's minibatches then carry the public part of the observations only.

**Frozen policies as inputs.** The teacher's and the anchor's parameters are the chunk's arguments
(``chunk_inputs``), loaded once by the run library (``agents.policies.frozen.load_references``, given to the trainer
with
``use_references``) and never saved in the runner; every checkpoint
records their names (``RUN_DIR:STEP``) and a resume that would load others is refused.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from agents.algorithms.ppo import MINIBATCH_METRICS, PPO
from agents.config import REFERENCE_ROLES, TrainConfig
from agents.core import losses, networks
from jaxgame.observation import OBS_SIZE

#: ``fold_in`` of a rollout's key that draws the feature-dropout mask
DROPOUT_STREAM = 3


def linear_decay(value, updates: int, update) -> jax.Array:
    """float32[]: ``value x max(1 - update / updates, 0)`` (``updates`` static; 0 = ``value`` throughout)."""
    value = jnp.asarray(value, jnp.float32)
    if not updates:
        return value
    return value * jnp.maximum(1.0 - jnp.asarray(update, jnp.float32) / updates, 0.0)


def drop_features(key, obs: jax.Array, start: int, keep_prob) -> jax.Array:
    """``obs`` float32[..., F] with each feature from ``start`` on kept with probability ``keep_prob`` (float32[])
    and set to 0 otherwise (independently per element, not rescaled); features before ``start`` untouched."""
    kept = jax.random.bernoulli(key, keep_prob, obs[..., start:].shape)
    return obs.at[..., start:].set(jnp.where(kept, obs[..., start:], 0.0))


class DistilledPPO(PPO):
    """PPO with a teacher's and/or an anchor's KL term (see the module docstring); ``make_train`` picks it for a
    ``ppo`` config with ``teacher`` or ``anchor``. ``run(runner, num_updates, frozen)``: ``frozen`` is
    ``{role: parameters}`` (``chunk_inputs``); in a league the anchor's also play its share of the games
    (``agents.league.pool.LeaguePlayers.start``)."""

    def __init__(self, config: TrainConfig, env):
        super().__init__(config, env)
        if config.teacher:  # the env steps oracle observations; the student reads their public part
            self.network = networks.PublicView(self.network, OBS_SIZE)
        self.roles = tuple(r for r in REFERENCE_ROLES if getattr(config, r))  # the frozen policies it reads
        # those with a KL term (a league's anchor may only play games: anchor_kl=0)
        self.kl_roles = tuple(r for r in self.roles if getattr(config, f"{r}_kl") > 0)
        self.references = None  # {role: Reference}, given by use_references
        extra = [f"{r}_{what}" for r in self.kl_roles for what in ("kl", "coef")]
        if config.teacher and config.oracle_dropout_updates:
            extra.append("oracle_keep")
        self.minibatch_metrics = MINIBATCH_METRICS + tuple(extra)

    def use_references(self, references: dict) -> None:
        """Give the trainer its frozen policies, ``{role: agents.policies.frozen.Reference}`` for every role it needs
        (``roles``; ``agents.policies.frozen.load_references``); the run library does it before the first chunk."""
        if sorted(references) != sorted(self.roles):
            raise ValueError(f"DistilledPPO needs the frozen policies {list(self.roles)}, got {sorted(references)}")
        self.references = references

    def chunk_inputs(self) -> tuple:
        """``({role: params},)``: the frozen policies' parameters (``use_references`` first)."""
        if self.references is None:
            raise ValueError("DistilledPPO: call use_references(agents.policies.frozen.load_references(config)) before "
                             "running (the run library does)")
        return ({role: ref.params for role, ref in self.references.items()},)

    def input_identity(self) -> dict:
        return {"frozen_policies": {role: ref.name for role, ref in self.references.items()}}

    def oracle_keep(self, update) -> jax.Array:
        """float32[]: the probability that a hidden-information feature reaches the teacher at ``update``."""
        return linear_decay(1.0, self.config.oracle_dropout_updates, update)

    def rollout(self, runner, key, *inputs):
        runner, traj, sums = super().rollout(runner, key, *inputs)
        if self.config.teacher and self.config.oracle_dropout_updates:
            obs = drop_features(jax.random.fold_in(key, DROPOUT_STREAM), traj.obs, OBS_SIZE,
                                self.oracle_keep(runner.update))
            traj = traj.replace(obs=obs)
        return runner, traj, sums

    def training_batch(self, traj, advantages, targets, update, inputs):
        """The frozen policies' logits on every sample, once an update (``extra``: ``{role: float32[T, N, P, A]}``);
        then the student's samples keep only the public part of their observations (all it reads), so the
        minibatches move no hidden information around."""
        (frozen,) = inputs
        extra = {role: self.references[role].network.apply(frozen[role], traj.obs)[0] for role in self.kl_roles}
        if self.config.teacher:
            traj = traj.replace(obs=traj.obs[..., :OBS_SIZE])
        return traj, advantages, targets, extra

    def loss_terms(self, logits, value, traj, advantages, targets, extra, hp, update):
        """PPO's loss plus the decaying KL terms to the frozen policies' logits (``extra``)."""
        total, metrics = super().loss_terms(logits, value, traj, advantages, targets, extra, hp, update)
        config = self.config
        schedule = {"teacher": (config.teacher_kl, config.teacher_kl_updates, config.teacher_temperature),
                    "anchor": (config.anchor_kl, config.anchor_kl_updates, 1.0)}
        for role in self.kl_roles:
            coef, decay_updates, temperature = schedule[role]
            kl = losses.policy_kl(logits, extra[role], traj.mask, traj.weight, temperature)
            coef = linear_decay(coef, decay_updates, update)
            total = total + coef * kl
            metrics = {**metrics, f"{role}_kl": kl, f"{role}_coef": coef}
        if "oracle_keep" in self.minibatch_metrics:
            metrics["oracle_keep"] = self.oracle_keep(update)
        return total, metrics

    def update_metrics(self, mean, traj, targets):
        names = {"teacher_kl": "loss/teacher_kl", "anchor_kl": "loss/anchor_kl", "teacher_coef": "train/teacher_kl",
                 "anchor_coef": "train/anchor_kl", "oracle_keep": "train/oracle_keep"}
        return {**super().update_metrics(mean, traj, targets),
                **{names[k]: mean[k] for k in self.minibatch_metrics if k in names}}


__all__ = ["DROPOUT_STREAM", "DistilledPPO", "drop_features", "linear_decay"]
