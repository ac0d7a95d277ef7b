"""Distillation and anchors (agents.algorithms.distill): the KL term on hand-checked values, the decays and the feature
dropout, the loss of ``distilled_ppo`` (``KLTerms`` around ``PPOLoss``) = PPO's + the decaying KL terms, and the
rollout that fades the hidden information for the teacher only. The run library's side (loading, resume, refusals)
is in tests/test_train.py."""

import copy

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from agents.algorithms import distill
from agents.algorithms.base import TrainerFacts
from agents.algorithms.registry import make_train
from agents.config import TrainConfig
from agents.core import losses, networks
from agents.core.rollout import Transition
from agents.envs.make import make_env
from agents.policies import frozen as phases
from jaxgame import constants as C
from jaxgame.observation import OBS_SIZE, ORACLE_SIZE


def numpy_kl(p_logits, q_logits, mask, temperature):
    def softmax(z):
        z = np.where(mask, z / temperature, -np.inf)
        e = np.exp(z - z.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    p, q = softmax(np.asarray(p_logits, np.float64)), softmax(np.asarray(q_logits, np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(mask, p * (np.log(p) - np.log(q)), 0.0).sum(-1)


def test_policy_kl_is_the_masked_kl_of_the_softened_policies():
    logits = np.array([[1.0, 2.0, 0.5, 9.0], [0.0, 0.0, 0.0, 0.0], [3.0, -1.0, 2.0, 0.0]], np.float32)
    reference = np.array([[0.0, 1.0, 2.0, -9.0], [1.0, 0.0, 0.0, 5.0], [3.0, -1.0, 2.0, 0.0]], np.float32)
    mask = np.array([[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]], bool)
    weight = np.array([1.0, 1.0, 0.0], np.float32)
    for temperature in (1.0, 2.0, 0.5):
        want = numpy_kl(logits, reference, mask, temperature)
        got = losses.policy_kl(logits, reference, mask, None, temperature)
        np.testing.assert_allclose(got, want.mean(), rtol=1e-5)
        # the weighted mean leaves the third row (equal policies, KL 0) out of the denominator too
        np.testing.assert_allclose(
            losses.policy_kl(logits, reference, mask, weight, temperature), want[:2].mean(), rtol=1e-5
        )
    # a hand value: p = (1/2, 1/2) over two legal actions, q = softmax(1, 0): KL = log 2 - ... written out
    q = np.exp([1.0, 0.0]) / np.exp([1.0, 0.0]).sum()
    hand = 0.5 * np.log(0.5 / q[0]) + 0.5 * np.log(0.5 / q[1])
    np.testing.assert_allclose(losses.policy_kl(logits[1:2], reference[1:2], mask[1:2], None), hand, rtol=1e-5)
    assert float(losses.policy_kl(reference, reference, mask, None)) == pytest.approx(0.0, abs=1e-6)
    # no gradient into the reference; the student's gradient is finite even with illegal logits far off
    grad_student, grad_reference = jax.grad(lambda a, b: losses.policy_kl(a, b, mask, weight), argnums=(0, 1))(
        jnp.asarray(logits), jnp.asarray(reference)
    )
    assert not np.asarray(grad_reference).any() and np.isfinite(grad_student).all()
    assert not np.asarray(grad_student)[~mask].any()


def test_linear_decay_and_feature_dropout():
    assert float(distill.linear_decay(0.8, 0, 1000)) == pytest.approx(0.8)
    assert [float(distill.linear_decay(2.0, 4, u)) for u in (0, 1, 4, 9)] == [2.0, 1.5, 0.0, 0.0]
    obs = jax.random.uniform(jax.random.key(0), (64, 8, 100)) + 0.5  # no zero to start with
    for keep in (0.0, 0.3, 1.0):
        dropped = np.asarray(distill.drop_features(jax.random.key(1), obs, 40, keep))
        np.testing.assert_array_equal(dropped[..., :40], obs[..., :40])
        kept = dropped[..., 40:] != 0
        np.testing.assert_array_equal(dropped[..., 40:][kept], np.asarray(obs)[..., 40:][kept])  # not rescaled
        assert abs(kept.mean() - keep) < 0.01, (keep, kept.mean())


@pytest.mark.parametrize(
    "overrides, message",
    [
        (
            dict(teacher="run", algo="a2c"),
            r"TrainConfig\.distill\.teacher \(a KL term in PPO's loss\) needs algo='ppo'",
        ),
        (dict(anchor="run", obs="oracle"), r"TrainConfig\.distill\.anchor .* obs='vector'"),
        (dict(teacher="run", league_size=4), r"a league run cannot distil a teacher"),
        (dict(teacher="run", teacher_kl=0.0), r"teacher_kl must be > 0 with a teacher"),
        (dict(oracle_dropout_updates=5), r"oracle_dropout_updates fades an oracle teacher's inputs: set teacher"),
        (dict(teacher=3), r"TrainConfig\.distill\.teacher must be a saved policy's name"),
        (dict(teacher="run", teacher_temperature=0.0), r"teacher_temperature must be a number in \[0\.01, 100"),
    ],
)
def test_bad_distillation_configs_name_the_field(overrides, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig.from_fields(**overrides)


SMALL = dict(
    num_envs=2,
    num_steps=4,
    total_steps=2 * 4 * 40,
    hidden=(16,),
    num_minibatches=1,
    update_epochs=1,
    max_rounds=4,
    steps_per_round=2,
    max_combat_ticks=60,
    eval_every=0,
)


def synthetic_references(trainer, oracle_teacher: bool):
    """A random oracle (or vector) teacher and a random vector anchor of another width, as ``load_references``
    would give them."""

    def reference(role, width, seed, oracle):
        net = networks.actor_critic("mlp", C.NUM_ACTIONS, (width,), "relu", False)
        params = net.init(jax.random.key(seed), np.zeros((1, OBS_SIZE + (ORACLE_SIZE if oracle else 0)), np.float32))
        # away from the near-uniform policy of a fresh head, so the KL terms are not ~0
        leaves, tree = jax.tree_util.tree_flatten(params)
        noise = [x + 0.3 * jax.random.normal(jax.random.key(seed + i), x.shape) for i, x in enumerate(leaves)]
        params = jax.tree_util.tree_unflatten(tree, noise)
        return phases.Reference(
            role, f"{role}:synthetic", net if oracle else networks.PublicView(net, OBS_SIZE), oracle, params
        )

    return {"teacher": reference("teacher", 24, 10, oracle_teacher), "anchor": reference("anchor", 8, 11, False)}


def test_the_distilled_loss_is_ppo_plus_the_decaying_kl_terms():
    config = TrainConfig.from_fields(
        **SMALL,
        teacher="t",
        teacher_kl=0.7,
        teacher_kl_updates=10,
        teacher_temperature=2.0,
        anchor="a",
        anchor_kl=0.3,
        anchor_kl_updates=4,
    )
    trainer = make_train(config, make_env(config))
    assert isinstance(trainer.loss, distill.KLTerms) and isinstance(trainer.samples, distill.FrozenPolicies)
    # what the run library reads: the frozen policies to load, throughput in seat-steps of 8 seats
    assert trainer.facts == TrainerFacts(players_per_step=8, roles=("teacher", "anchor"))
    assert make_train(TrainConfig.from_fields(**SMALL), make_env(config)).facts.roles == ()
    assert trainer.env.obs_shape == (OBS_SIZE + ORACLE_SIZE,)
    with pytest.raises(ValueError, match="call use_references"):
        trainer.chunk_inputs()
    references = synthetic_references(trainer, oracle_teacher=True)
    trainer.use_references(references)
    (frozen,) = trainer.chunk_inputs()
    runner = trainer.init(jax.random.key(0))
    kernel = runner.params["params"]["actor_torso"]["Dense_0"]["kernel"]
    assert kernel.shape == (OBS_SIZE, 16)  # the student is a vector policy

    b = 32
    keys = jax.random.split(jax.random.key(1), 6)
    obs = jax.random.normal(keys[0], (b, OBS_SIZE + ORACLE_SIZE))
    mask = jax.random.bernoulli(keys[1], 0.3, (b, C.NUM_ACTIONS)).at[:, 0].set(True)
    traj = Transition(
        obs=obs,
        mask=mask,
        action=jnp.zeros(b, jnp.int32),
        log_prob=jax.random.normal(keys[2], (b,)),
        value=jnp.zeros(b),
        reward=jnp.zeros(b),
        terminal=jnp.zeros(b, bool),
        weight=jax.random.bernoulli(keys[3], 0.7, (b,)).astype(jnp.float32),
    )
    advantages, targets = jax.random.normal(keys[4], (b,)), jax.random.normal(keys[5], (b,))
    hp = config.hparams.traced()
    batch = jax.jit(lambda u: trainer.training_batch(traj, advantages, targets, u, (frozen,)))(0)
    assert batch.traj.obs.shape == (b, OBS_SIZE) and set(batch.extra) == {"teacher", "anchor"}  # the public part only
    loss = jax.jit(lambda u: trainer.minibatch_loss(trainer.network, runner.params, batch, hp, u))
    logits, value = trainer.network.base.apply(runner.params, obs[:, :OBS_SIZE])
    ppo, _ = losses.ppo_loss(
        logits,
        value,
        mask,
        traj.action,
        traj.log_prob,
        traj.value,
        advantages,
        targets,
        traj.weight,
        hp.clip_eps,
        hp.vf_coef,
        hp.ent_coef,
        clip_value=True,
        normalize_advantages=True,
    )
    teacher_logits, _ = references["teacher"].network.apply(frozen["teacher"], obs)  # the whole oracle observation
    anchor_logits, _ = references["anchor"].network.base.apply(frozen["anchor"], obs[:, :OBS_SIZE])
    teacher_kl = numpy_kl(logits, teacher_logits, np.asarray(mask), 2.0)
    anchor_kl = numpy_kl(logits, anchor_logits, np.asarray(mask), 1.0)
    w = np.asarray(traj.weight)
    teacher_kl, anchor_kl = (teacher_kl * w).sum() / w.sum(), (anchor_kl * w).sum() / w.sum()
    assert teacher_kl > 0.01 and anchor_kl > 0.01
    for update, teacher_coef, anchor_coef in [(0, 0.7, 0.3), (2, 0.56, 0.15), (5, 0.35, 0.0), (12, 0.0, 0.0)]:
        total, metrics = loss(update)
        np.testing.assert_allclose(metrics["teacher_kl"], teacher_kl, rtol=1e-4)
        np.testing.assert_allclose(metrics["anchor_kl"], anchor_kl, rtol=1e-4)
        np.testing.assert_allclose(
            [metrics["teacher_coef"], metrics["anchor_coef"]], [teacher_coef, anchor_coef], rtol=1e-6, atol=1e-7
        )
        np.testing.assert_allclose(total, ppo + teacher_coef * teacher_kl + anchor_coef * anchor_kl, rtol=1e-4)
    with pytest.raises(ValueError, match=r"needs the frozen policies \['teacher', 'anchor'\]"):
        trainer.use_references({"teacher": references["teacher"]})


def test_the_rollout_fades_the_hidden_block_for_the_teacher_only():
    """Update u's rollout keeps each hidden feature with probability 1 - u / oracle_dropout_updates; the public
    part, the actions and everything else are the undropped rollout's."""
    config = TrainConfig.from_fields(**SMALL, teacher="t", anchor="", oracle_dropout_updates=8)
    trainer = make_train(config, make_env(config))
    trainer.use_references({"teacher": synthetic_references(trainer, True)["teacher"]})
    runner = trainer.init(jax.random.key(0))
    undropped = copy.copy(trainer)  # the same trainer, its samples without the feature dropout
    undropped.samples = copy.copy(trainer.samples)
    undropped.samples.dropout_updates = 0
    plain = jax.jit(lambda r, k: undropped.rollout(r, k)[1])
    faded = jax.jit(lambda r, k: trainer.rollout(r, k)[1])
    key = jax.random.key(5)
    for update, keep in [(0, 1.0), (2, 0.75), (6, 0.25), (8, 0.0)]:
        at = runner.replace(update=jnp.int32(update))
        want, got = plain(at, key), faded(at, key)
        for name in ("action", "mask", "reward", "weight", "log_prob"):
            np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
        np.testing.assert_array_equal(got.obs[..., :OBS_SIZE], want.obs[..., :OBS_SIZE])
        hidden, original = np.asarray(got.obs[..., OBS_SIZE:]), np.asarray(want.obs[..., OBS_SIZE:])
        nonzero = original != 0
        assert nonzero.sum() > 1000
        np.testing.assert_array_equal(hidden[hidden != 0], original[hidden != 0])
        share = (hidden[nonzero] != 0).mean()
        assert abs(share - keep) < 0.03, (update, share)


def test_a_sweep_refuses_frozen_policies_and_a_teacher_steps_oracle_observations():
    from agents.run.sweep import Sweep, SweepSpec

    config = TrainConfig.from_fields(**SMALL, teacher="t")
    with pytest.raises(ValueError, match="a sweep does not read frozen policies"):
        Sweep(config, SweepSpec(seeds=(0, 1)))
    assert config.env_obs == "oracle" and config.with_overrides({"teacher": ""}).env_obs == "vector"
