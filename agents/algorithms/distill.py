"""Distillation and anchors: PPO with KL terms to frozen policies (``TrainConfig.teacher`` and ``.anchor``).

The design's phase 2 trains a public-observation student with PPO plus ``lambda_kl x KL(student || teacher)``,
the teacher a frozen policy that may see the hidden information (``obs="oracle"``); an optional anchor (e.g. the
BC policy, or in phase 3 the previous phase's policy) adds ``anchor_kl x KL(student || anchor)``. Each minibatch
loss of ``distilled_ppo`` (``KLTerms`` around ``PPOLoss``) is PPO's (``losses.ppo_loss``) plus, over the minibatch's
decisions,

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

**Cost.** The frozen policies run once per sample and update (``FrozenPolicies.extras``: their logits join the batch),
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

from agents.algorithms.ppo import PPO, OwnPlay, PPOLoss
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


class KLTerms:
    """A loss plus decaying KL terms to frozen policies' logits (module docstring): composes with any ``base`` loss
    (PPO's here). ``extra`` carries ``{role: logits float32[B, A]}`` of the roles in ``kl_roles``."""

    def __init__(self, base, config: TrainConfig, kl_roles: tuple[str, ...]):
        self.base = base
        self.kl_roles = kl_roles
        self.schedule = {
            "teacher": (
                config.distill.teacher_kl,
                config.distill.teacher_kl_updates,
                config.distill.teacher_temperature,
            ),
            "anchor": (config.distill.anchor_kl, config.distill.anchor_kl_updates, 1.0),
        }
        #: the feature dropout's keep probability is reported too (``FrozenPolicies.oracle_keep``)
        self.dropout_updates = config.distill.oracle_dropout_updates if config.distill.teacher else 0
        extra = [f"{r}_{what}" for r in kl_roles for what in ("kl", "coef")]
        self.names = tuple(base.names) + tuple(extra) + (("oracle_keep",) if self.dropout_updates else ())

    def __call__(self, logits, value, batch, hp, update):
        total, metrics = self.base(logits, value, batch, hp, update)
        for role in self.kl_roles:
            coef, decay_updates, temperature = self.schedule[role]
            kl = losses.policy_kl(logits, batch.extra[role], batch.traj.mask, batch.traj.weight, temperature)
            coef = linear_decay(coef, decay_updates, update)
            total = total + coef * kl
            metrics = {**metrics, f"{role}_kl": kl, f"{role}_coef": coef}
        if self.dropout_updates:
            metrics["oracle_keep"] = linear_decay(1.0, self.dropout_updates, update)
        return total, metrics

    def log(self, mean, traj, targets):
        names = {
            "teacher_kl": "loss/teacher_kl",
            "anchor_kl": "loss/anchor_kl",
            "teacher_coef": "train/teacher_kl",
            "anchor_coef": "train/anchor_kl",
            "oracle_keep": "train/oracle_keep",
        }
        return {**self.base.log(mean, traj, targets), **{names[k]: mean[k] for k in self.names if k in names}}


class FrozenPolicies(OwnPlay):
    """PPO's own play, with frozen policies (``TrainConfig.teacher`` and ``.anchor``) as the chunk's inputs: their
    logits join each update's batch (``extras``), a teacher's env steps oracle observations of which the student
    reads the public part (``network``), and the teacher's hidden-information inputs fade out
    (``after_rollout``). The run library loads the policies (``agents.policies.frozen.load_references``) and gives
    them with ``use_references``; in a league the anchor's also play its share of the games
    (``agents.league.pool.LeaguePlayers.start``)."""

    def __init__(self, config: TrainConfig):
        self.teacher = bool(config.distill.teacher)
        self.dropout_updates = config.distill.oracle_dropout_updates if config.distill.teacher else 0
        self.roles = tuple(r for r in REFERENCE_ROLES if config.get(r))  # the frozen policies it reads
        # those with a KL term (a league's anchor may only play games: anchor_kl=0)
        self.kl_roles = tuple(r for r in self.roles if config.get(f"{r}_kl") > 0)
        self.references = None  # {role: Reference}, given by use_references

    def network(self, network):
        return networks.PublicView(network, OBS_SIZE) if self.teacher else network

    def use_references(self, references: dict) -> None:
        """``{role: agents.policies.frozen.Reference}`` for every role in ``roles``."""
        if sorted(references) != sorted(self.roles):
            raise ValueError(f"this trainer needs the frozen policies {list(self.roles)}, got {sorted(references)}")
        self.references = references

    def inputs(self) -> tuple:
        """``({role: params},)``: the frozen policies' parameters (``use_references`` first)."""
        if self.references is None:
            raise ValueError(
                "the trainer's frozen policies are missing: call use_references("
                "agents.policies.frozen.load_references(config)) before running (the run library does)"
            )
        return ({role: ref.params for role, ref in self.references.items()},)

    def identity(self) -> dict:
        return {"frozen_policies": {role: ref.name for role, ref in self.references.items()}}

    def oracle_keep(self, update) -> jax.Array:
        """float32[]: the probability that a hidden-information feature reaches the teacher at ``update``."""
        return linear_decay(1.0, self.dropout_updates, update)

    def after_rollout(self, traj, key, update):
        if not self.dropout_updates:
            return traj
        obs = drop_features(jax.random.fold_in(key, DROPOUT_STREAM), traj.obs, OBS_SIZE, self.oracle_keep(update))
        return traj.replace(obs=obs)

    def extras(self, traj, update, inputs):
        """The frozen policies' logits on every sample, once an update (``{role: float32[T, N, P, A]}``); then the
        student's samples keep only the public part of their observations (all it reads), so the minibatches move
        no hidden information around."""
        (frozen,) = inputs
        extra = {role: self.references[role].network.apply(frozen[role], traj.obs)[0] for role in self.kl_roles}
        if self.teacher:
            traj = traj.replace(obs=traj.obs[..., :OBS_SIZE])
        return traj, extra


def distilled_ppo(config: TrainConfig, env) -> PPO:
    """PPO with a teacher's and/or an anchor's KL term (module docstring): ``FrozenPolicies`` samples and
    ``KLTerms`` around ``PPOLoss``; ``make_train`` builds it for a ``ppo`` config with ``teacher`` or ``anchor``.
    ``run(runner, num_updates, frozen)``: ``frozen`` is ``{role: parameters}`` (``chunk_inputs``)."""
    samples = FrozenPolicies(config)
    loss = KLTerms(PPOLoss(config.ppo.clip_value, config.loss.normalize_advantages), config, samples.kl_roles)
    return PPO(config, env, loss=loss, samples=samples)


__all__ = ["DROPOUT_STREAM", "FrozenPolicies", "KLTerms", "distilled_ppo", "drop_features", "linear_decay"]
