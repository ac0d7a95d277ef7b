"""Behaviour cloning (agents.algorithms.bc): the loss on hand-checked batches (agents.core.losses.bc_loss), the split by
game, cloning
a dataset's samples with validation and early stopping, and the trainer on generated games (algo="bc")."""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from agents.algorithms import bc
from agents.core import losses

# two samples, four actions; sample 0 may play 0, 1 or 3, sample 1 only 2 and 3
LOGITS = jnp.array([[0.0, math.log(2.0), 5.0, math.log(5.0)], [1.0, -1.0, math.log(3.0), 0.0]])
MASK = jnp.array([[True, True, False, True], [False, False, True, True]])
ACTIONS = jnp.array([1, 2])
VALUE = jnp.array([0.5, -1.0])
TARGETS = jnp.array([1.5, 1.0])
# legal probabilities: sample 0 (1, 2, 5)/8 over actions 0, 1, 3; sample 1 (3, 1)/4 over actions 2, 3
NLL = [-math.log(2 / 8), -math.log(3 / 4)]
SQ = [0.5 * 1.0**2, 0.5 * 2.0**2]


def entropy(p):
    return -sum(x * math.log(x) for x in p)


def test_bc_loss_by_hand():
    total, m = losses.bc_loss(LOGITS, VALUE, MASK, ACTIONS, TARGETS, None, vf_coef=0.5)
    assert float(m["cross_entropy"]) == pytest.approx(np.mean(NLL), rel=1e-6)
    assert float(m["value_loss"]) == pytest.approx(np.mean(SQ), rel=1e-6)
    assert float(total) == pytest.approx(np.mean(NLL) + 0.5 * np.mean(SQ), rel=1e-6)
    # the most likely legal actions are 3 (5/8; the illegal action 2 has the largest logit), a miss, and 2, a hit
    assert float(m["accuracy"]) == 0.5
    assert float(m["entropy"]) == pytest.approx(
        (entropy([1 / 8, 2 / 8, 5 / 8]) + entropy([3 / 4, 1 / 4])) / 2, rel=1e-6
    )


def test_held_out_sums_are_the_accuracy_and_cross_entropy_of_the_weighted_samples():
    """``BCLoss.held_out`` on the hand-checked batch: a miss and a hit, cross-entropies NLL; weight 0 drops sample 0
    (its sums and its count)."""
    from agents.core.rollout import Transition

    def traj(weight):
        return Transition(
            obs=None, mask=MASK, action=ACTIONS, log_prob=None, value=None, reward=None, terminal=None, weight=weight
        )

    sums = bc.BCLoss.held_out(LOGITS, traj(jnp.ones(2)))
    assert [float(x) for x in sums["val/accuracy"]] == [1.0, 2.0]
    assert [float(x) for x in sums["val/cross_entropy"]] == pytest.approx([sum(NLL), 2.0], rel=1e-6)
    sums = bc.BCLoss.held_out(LOGITS, traj(jnp.array([0.0, 1.0])))
    assert [float(x) for x in sums["val/accuracy"]] == [1.0, 1.0]
    assert [float(x) for x in sums["val/cross_entropy"]] == pytest.approx([NLL[1], 1.0], rel=1e-6)
    assert [float(x) for x in bc.BCLoss.held_out(LOGITS, traj(None))["val/accuracy"]] == [1.0, 2.0]


def test_bc_loss_weights_drop_samples_and_targets_carry_no_gradient():
    total, m = losses.bc_loss(LOGITS, VALUE, MASK, ACTIONS, TARGETS, jnp.array([0.0, 1.0]), vf_coef=1.0)
    assert float(m["cross_entropy"]) == pytest.approx(NLL[1], rel=1e-6)
    assert float(total) == pytest.approx(NLL[1] + SQ[1], rel=1e-6)
    assert float(m["accuracy"]) == 1.0
    grads = jax.grad(lambda t: losses.bc_loss(LOGITS, VALUE, MASK, ACTIONS, t, None, 1.0)[0])(TARGETS)
    assert not np.asarray(grads).any()
    # d/dv of mean(0.5 (v - t)^2) = (v - t) / B; d/dlogits of the cross-entropy = (p - onehot) / B on legal actions
    gv = jax.grad(lambda v: losses.bc_loss(LOGITS, v, MASK, ACTIONS, TARGETS, None, 1.0)[0])(VALUE)
    np.testing.assert_allclose(gv, (VALUE - TARGETS) / 2, rtol=1e-6)
    gl = jax.grad(lambda x: losses.bc_loss(x, VALUE, MASK, ACTIONS, TARGETS, None, 1.0)[0])(LOGITS)
    expected = np.array([[1 / 8, 2 / 8 - 1, 0, 5 / 8], [0, 0, 3 / 4 - 1, 1 / 4]]) / 2
    np.testing.assert_allclose(gl, expected, atol=1e-6)


def test_the_split_holds_out_whole_games():
    game = np.repeat(np.arange(10), np.arange(1, 11))  # game g has g + 1 samples
    train, val = bc.split_by_game(game, 0.2, seed=3)
    assert np.array_equal(np.sort(np.concatenate([train, val])), np.arange(game.size))
    assert len(np.unique(game[val])) == 2 and not set(game[val]) & set(game[train])
    again = bc.split_by_game(game, 0.2, seed=3)
    assert np.array_equal(again[1], val)
    other = [set(game[bc.split_by_game(game, 0.2, seed=s)[1]]) for s in range(20)]
    assert len({frozenset(o) for o in other}) > 5  # the seed picks the games
    train, val = bc.split_by_game(game, 0.0, seed=0)
    assert val.size == 0 and train.size == game.size
    assert len(np.unique(game[bc.split_by_game(game, 0.01, seed=0)[1]])) == 1  # at least one game when > 0


@pytest.mark.parametrize(
    "game, fraction, message",
    [
        (np.zeros(5, np.int32), 0.5, "leaves none to train on"),
        (np.arange(4), 1.0, "val_fraction must be in"),
        (np.arange(4), -0.1, "val_fraction must be in"),
        (np.arange(4.0), 0.5, "1-d int array"),
    ],
)
def test_a_bad_split_is_refused(game, fraction, message):
    with pytest.raises(ValueError, match=message):
        bc.split_by_game(game, fraction, 0)


def synthetic(n, seed):
    """A teacher that plays the legal action with the largest ``obs @ W`` (W fixed), 6 actions, some illegal;
    the outcome is linear in the observation; every fourth sample is not a decision (weight 0: its recorded action
    is junk)."""
    rng = np.random.default_rng(seed)
    w = np.random.default_rng(99).normal(size=(8, 6))
    obs = rng.normal(size=(n, 8)).astype(np.float32)
    mask = rng.random((n, 6)) < 0.7
    mask[np.arange(n), rng.integers(0, 6, n)] = True
    action = np.where(mask, obs @ w, -np.inf).argmax(1)
    decision = np.arange(n) % 4 != 0
    action = np.where(decision, action, (action + 1) % 6)
    return {
        "obs": obs,
        "mask": mask,
        "action": action.astype(np.int16),
        "decision": decision,
        "outcome": (obs[:, 0] - obs[:, 1]).astype(np.float32),
    }


def synthetic_config(**overrides):
    from agents.config import TrainConfig

    fields = dict(
        algo="bc",
        bc_dataset="synthetic",
        bc_batch_size=128,
        total_steps=128 * 600,
        lr=3e-3,
        warmup_updates=20,
        lr_schedule="cosine",
        weight_decay=1e-4,
        max_grad_norm=1.0,
        vf_coef=0.5,
        eval_every=0,
    )
    return TrainConfig.from_fields(**{**fields, **overrides})


@functools.cache
def synthetic_chunk(config):
    from agents.core.networks import actor_critic

    network = actor_critic("mlp", 6, (64,), "tanh")
    chunk = jax.jit(functools.partial(bc.clone_chunk, config, network), static_argnums=1)
    return network, chunk


def test_cloning_learns_a_teacher_and_validation_sees_held_out_samples():
    """600 optimizer steps on a synthetic teacher: held-out accuracy over 85%, the validation inside the chunk is the
    one-batch mean over the held-out decisions, the runner keeps the best, the learning rate is the trainer's
    warmup-cosine by hand, and the same key trains the same parameters."""
    config = synthetic_config()
    network, chunk = synthetic_chunk(config)
    train, val = bc.device_samples(synthetic(4096, 0)), bc.device_samples(synthetic(1000, 1))
    runner = bc.init_dataset_runner(config, network, train["obs"][:1], jax.random.key(0))
    before = bc.validate(network, runner.params, val, batch_size=256)  # 1000 samples: the last batch is padded
    runner, metrics = chunk(runner, 600, train, val)
    after = bc.validate(network, runner.params, val, batch_size=256)
    assert int(runner.update) == 600 and metrics["loss/cross_entropy"].shape == (600,)
    assert float(before["accuracy"]) < 0.5 and float(after["accuracy"]) > 0.85, (before, after)
    assert float(after["cross_entropy"]) < 0.5 * float(before["cross_entropy"])
    assert float(after["value_loss"]) < 0.2 * float(before["value_loss"])
    # validation is the weighted mean over every decision sample, as one full batch computes it
    _, full = losses.bc_loss(
        *network.apply(runner.params, val["obs"]), val["mask"], val["action"], val["outcome"], val["weight"], 0.0
    )
    for name in bc.VALIDATION_METRICS:
        assert float(after[name]) == pytest.approx(float(full[name]), rel=1e-5)
        np.testing.assert_allclose(metrics[f"val/{name}"], float(full[name]), rtol=1e-5)
    assert float(runner.best) == pytest.approx(float(full["cross_entropy"]), rel=1e-5) and int(runner.since_best) == 0
    # per decision kind (the label's: actions 0 = end, 1..5 = buy here): the accuracy on those decisions and their
    # share, by hand; a kind no label has is NaN with share 0; the shares weight the kinds back to the accuracy
    logits = np.asarray(network.apply(runner.params, val["obs"])[0], np.float64)
    mask, label, weight = np.asarray(val["mask"]), np.asarray(val["action"]), np.asarray(val["weight"])
    hit = np.where(mask, logits, -np.inf).argmax(1) == label
    kind_of_label = np.where(label == 0, "end", "buy")
    for kind in ("end", "buy"):
        picked = (kind_of_label == kind) & (weight > 0)
        assert picked.sum() > 50
        assert float(after[f"accuracy_{kind}"]) == pytest.approx(hit[picked].mean(), abs=1e-6)
        assert float(after[f"share_{kind}"]) == pytest.approx(picked.sum() / (weight > 0).sum(), abs=1e-6)
        np.testing.assert_allclose(metrics[f"val/accuracy_{kind}"], hit[picked].mean(), atol=1e-6)
    for kind in ("reroll", "xp", "lock", "sell", "place", "recall"):
        assert np.isnan(float(after[f"accuracy_{kind}"])) and float(after[f"share_{kind}"]) == 0.0
    assert set(bc.KIND_METRICS) <= set(after)
    mixed = sum(float(after[f"share_{k}"]) * float(after[f"accuracy_{k}"]) for k in ("end", "buy"))
    assert mixed == pytest.approx(float(after["accuracy"]), abs=1e-6)
    lr = [3e-3 * min((u + 1) / 20, 1.0) * 0.5 * (1 + math.cos(math.pi * u / 600)) for u in range(600)]
    np.testing.assert_allclose(metrics["train/lr"], lr, rtol=1e-4, atol=1e-9)
    assert float(metrics["train/decisions"].mean()) == pytest.approx(0.75 * 128, rel=0.1)  # every 4th is no decision
    # the same key, the same run
    again, _ = chunk(bc.init_dataset_runner(config, network, train["obs"][:1], jax.random.key(0)), 600, train, val)
    jax.tree_util.tree_map(np.testing.assert_array_equal, again.params, runner.params)


def test_the_runner_counts_validations_without_improvement():
    """With a learning rate of 0 the validation cross-entropy never falls below the first one: the best stays, and
    each later validation adds one to the count that bc_patience ends the run at."""
    config = synthetic_config(lr=0.0, total_steps=128 * 4, warmup_updates=0, bc_patience=2, best_by="validation")
    network, chunk = synthetic_chunk(config)
    train, val = bc.device_samples(synthetic(256, 0)), bc.device_samples(synthetic(100, 1))
    runner = bc.init_dataset_runner(config, network, train["obs"][:1], jax.random.key(0))
    assert float(runner.best) == np.inf
    runner, metrics = chunk(runner, 2, train, val)
    first = float(runner.best)
    assert (first, int(runner.since_best)) == (float(metrics["val/cross_entropy"][0]), 0)
    for since in (1, 2):
        runner, metrics = chunk(runner, 2, train, val)
        assert float(runner.best) == first and int(runner.since_best) == since
    runner, _ = chunk(runner, 2, train, None)  # no validation: nothing counted
    assert int(runner.since_best) == 2


# ---------------------------------------------------------------- the trainer on generated games (algo="bc")


def tiny_bc_config(**overrides):
    from agents.config import TrainConfig
    from tests.tiny_games import TINY

    fields = dict(
        algo="bc",
        bc_teacher="expert",
        opponents="greedy",
        num_envs=8,
        num_steps=8,
        total_steps=8 * 8 * 12,
        hidden=(64,),
        lr=3e-3,
        update_epochs=2,
        num_minibatches=2,
        updates_per_chunk=12,
        eval_every=0,
        warmup_updates=3,
        lr_schedule="cosine",
        weight_decay=1e-3,
        **{k: v for k, v in TINY.items() if k in ("steps_per_round", "max_rounds", "max_combat_ticks")},
    )
    return TrainConfig.from_fields(**{**fields, **overrides})


@pytest.mark.slow(
    reason="~50 s: compiles a rollout and a replay; the default suite checks "
    " that the teacher plays the learner's seat by its placement "
    "(test_bc_training_learns_the_teacher_with_the_warmup_and_cosine_schedule)"
)
def test_the_teacher_plays_the_learner_seats_and_its_actions_are_the_samples():
    """The rollout's sample actions are the ones the games were played with (replaying them from the same states
    gives the same observations), legal, and the greedy teacher's choices on those states with the rollout's keys."""
    from agents.run.build import build
    from jaxgame import bots as game_bots

    trainer = build(tiny_bc_config(opponents="self", bc_teacher="greedy", num_envs=4)).trainer
    runner = jax.jit(trainer.init)(jax.random.key(1))
    key = jax.random.key(7)
    _, traj, _ = jax.jit(trainer.rollout)(runner, key)
    steps, envs, seats = traj.action.shape
    assert (steps, envs, seats) == (8, 4, 8)
    assert bool(jnp.take_along_axis(traj.mask, traj.action[..., None], axis=-1).all())
    step_keys = jax.random.split(key, steps)  # the rollout's stream: PPO.rollout, then TeacherPlay.act

    def replay(carry, t):
        state, mask = carry
        _, teacher_key = jax.random.split(step_keys[t])
        teacher = jax.vmap(game_bots.BOTS["greedy"])(jax.random.split(teacher_key, envs), state.games, mask)
        state, ts = trainer.env.step(state, traj.action[t])
        return (state, ts.action_mask), (ts.observation, teacher)

    _, (observations, teachers) = jax.jit(lambda c: jax.lax.scan(replay, c, jnp.arange(steps)))(
        (runner.env_state, runner.mask)
    )
    np.testing.assert_array_equal(observations[:-1], traj.obs[1:])
    np.testing.assert_array_equal(teachers, traj.action)


def test_bc_training_learns_the_teacher_with_the_warmup_and_cosine_schedule():
    """12 updates on tiny games, the expert teaching in seat 0 against 7 greedy bots: the teacher plays that seat
    (its training placement is the expert's, not an untrained policy's), the teacher's actions' cross-entropy falls
    and the policy grows more certain; the logged learning rate is the warmup then the cosine, by hand."""
    from agents.algorithms.registry import summarize
    from agents.run.build import build

    config = tiny_bc_config()
    trainer = build(config).trainer
    runner, metrics = jax.jit(trainer.run, static_argnums=1)(jax.jit(trainer.init)(jax.random.key(0)), 12)
    metrics = jax.device_get(metrics)
    first = summarize({k: v[:3] for k, v in metrics.items()})
    last = summarize({k: v[-3:] for k, v in metrics.items()})
    whole = summarize(metrics)
    assert whole["train/placement"] < 4.5, whole  # the expert's seat; with the policy in it: 8.0 (checked by hand)
    assert last["loss/cross_entropy"] < first["loss/cross_entropy"] - 0.3, (first, last)
    assert last["loss/entropy"] < first["loss/entropy"], (first, last)
    lr = [config.hparams.lr * min((u + 1) / 3, 1.0) * 0.5 * (1 + math.cos(math.pi * u / 12)) for u in range(12)]
    np.testing.assert_allclose(metrics["train/lr"], lr, rtol=1e-5)
    assert int(runner.update) == 12


def test_held_out_metrics_are_the_given_parameters_accuracy_on_the_learner_decisions():
    """``PPO.held_out_metrics`` (what a BC update logs as ``val/accuracy`` before it trains) on made-up samples of
    the tiny BC trainer (seat 0 learns, 7 greedy bots): the accuracy of the parameters given, by hand, over the
    learner seat's weighted decisions only; the bots' seats and weight-0 samples do not count."""
    from agents.core.rollout import Transition
    from agents.run.build import build

    trainer = build(tiny_bc_config()).trainer
    params = jax.jit(trainer.init)(jax.random.key(0)).params
    steps, envs, seats, actions = 3, 8, 8, trainer.env.num_actions
    rng = np.random.default_rng(0)
    _, ts = jax.eval_shape(trainer.env.reset, jax.random.key(0))
    obs = rng.normal(size=(steps, envs, seats) + ts.observation.shape[2:]).astype(ts.observation.dtype)
    mask = rng.random((steps, envs, seats, actions)) < 0.5
    mask[..., 0] = True
    action = np.argmax(mask * rng.random(mask.shape), axis=-1).astype(np.int32)  # a legal action each
    weight = (rng.random((steps, envs, seats)) < 0.7).astype(np.float32)
    zeros = np.zeros((steps, envs, seats), np.float32)
    traj = Transition(
        obs=jnp.asarray(obs),
        mask=jnp.asarray(mask),
        action=jnp.asarray(action),
        log_prob=zeros,
        value=zeros,
        reward=zeros,
        terminal=zeros.astype(bool),
        weight=jnp.asarray(weight),
    )
    out = jax.jit(trainer.held_out_metrics)(params, traj)

    logits, _ = trainer.network.apply(params, jnp.asarray(obs))
    masked = np.where(mask, np.asarray(logits), -np.inf)
    hit = np.argmax(masked, axis=-1) == action
    logp = masked - np.logaddexp.reduce(masked, axis=-1, keepdims=True)
    nll = -np.take_along_axis(logp, action[..., None], axis=-1)[..., 0]
    learner = np.asarray(trainer.learner)
    assert learner.tolist() == [True] + [False] * 7
    counted = (weight > 0) & learner
    assert float(out["val/accuracy"]) == pytest.approx(hit[counted].mean(), rel=1e-6)
    assert float(out["val/cross_entropy"]) == pytest.approx(nll[counted].mean(), rel=1e-5)
    assert hit[counted].mean() != hit[weight > 0].mean()  # the bots' seats would change it


@pytest.mark.slow(
    reason="~50 s: compiles an update and a rollout beside it; the default suite checks the "
    "measure on made-up samples (test_held_out_metrics_are_the_given_parameters_accuracy...)"
)
def test_a_bc_update_logs_the_accuracy_of_the_parameters_before_it_trained_on_its_samples():
    """One update of the tiny BC run: ``val/accuracy`` is the accuracy, on the update's own decisions, of the
    parameters before the update (none of those samples trained on yet), not of those after it (17% and 33% here),
    while ``loss/accuracy``, the minibatches' over both epochs, is neither."""
    from agents.algorithms.ppo import targets_with_pending
    from agents.core import distributions
    from agents.run.build import build

    trainer = build(tiny_bc_config()).trainer
    runner = jax.jit(trainer.init)(jax.random.key(0))

    def update_and_its_samples(runner):  # the update, and its samples rebuilt as PPO.update builds them
        after, metrics = trainer.update(runner)
        act_key, _ = jax.random.split(jax.random.fold_in(runner.key, runner.update))
        rolled, traj, _ = trainer.rollout(runner, act_key)
        _, end_value = trainer.network.apply(rolled.params, rolled.obs)
        traj, *_ = targets_with_pending(
            traj, runner.pending, end_value, rolled.mask.sum(-1) > 1, runner.hparams.gamma, runner.hparams.gae_lambda
        )
        return after, metrics, traj

    after, metrics, traj = jax.jit(update_and_its_samples)(runner)
    trained = np.asarray(traj.weight)[:, :, 0] > 0  # seat 0 learns

    def accuracy(params):
        logits, _ = trainer.network.apply(params, traj.obs)
        return float(np.asarray(distributions.greedy(logits, traj.mask) == traj.action)[:, :, 0][trained].mean())

    before, later = accuracy(runner.params), accuracy(after.params)
    assert trained.sum() > 30 and later > before + 0.05, (before, later)
    assert float(metrics["val/accuracy"]) == pytest.approx(before, abs=1e-6)
    assert float(metrics["loss/accuracy"]) not in (pytest.approx(before), pytest.approx(later))


def test_weight_decay_is_decoupled_and_the_warmup_scales_any_schedule():
    """``apply_gradients`` with weight_decay subtracts lr x wd x p beside Adam's step (AdamW), for any algo; the
    warmup multiplies the linear decay too."""
    from agents.algorithms import base as trainer_base
    from agents.config import TrainConfig

    params = {"w": jnp.array([1.0, -2.0, 0.5])}
    grads = {"w": jnp.array([0.3, -0.1, 0.2])}

    def step(config):
        hp = config.hparams.traced()
        opt_state = trainer_base.make_optimizer(hp).init(params)
        return trainer_base.apply_gradients(config, hp, params, opt_state, grads, jnp.int32(1))

    plain, decayed = step(TrainConfig.from_fields(lr=0.01)), step(TrainConfig.from_fields(lr=0.01, weight_decay=0.1))
    np.testing.assert_allclose(decayed[0]["w"] - plain[0]["w"], -0.01 * 0.1 * params["w"], atol=1e-7)  # float32
    config = TrainConfig.from_fields(lr=0.01, lr_schedule="linear", warmup_updates=4)  # 195 updates
    lr = [float(trainer_base.lr_schedule(config, config.hparams.traced())(jnp.int32(u))) for u in (0, 3, 97, 195)]
    np.testing.assert_allclose(
        lr, [0.01 * 0.25 * (1 - 0 / 195), 0.01 * (1 - 3 / 195), 0.01 * (1 - 97 / 195), 0.0], rtol=1e-5, atol=1e-9
    )
    config = TrainConfig.from_fields(lr=0.01, lr_schedule="cosine")
    lr = [float(trainer_base.lr_schedule(config, config.hparams.traced())(jnp.int32(u))) for u in (0, 97, 195, 300)]
    cosine = [0.01 * 0.5 * (1 + math.cos(math.pi * u / 195)) for u in (0, 97, 195, 195)]
    np.testing.assert_allclose(lr, cosine, rtol=1e-5, atol=1e-9)
    lr = float(trainer_base.lr_schedule(TrainConfig.from_fields(lr=0.01), config.hparams.traced())(jnp.int32(97)))
    assert lr == np.float32(0.01)


@pytest.mark.slow(
    reason="~40 s: compiles a second bc chunk; the default suite checks bc_teacher_prob's range (tests/test_train.py)"
)
def test_with_teacher_prob_0_the_policy_plays_and_the_teacher_still_labels():
    """bc_teacher_prob=0 (DAgger-style): the untrained policy plays seat 0, so it places as an untrained policy does
    (8.0 on these games; the expert in that seat places 3.5), while the loss still trains on the teacher's actions."""
    from agents.algorithms.registry import summarize
    from agents.run.build import build

    trainer = build(
        tiny_bc_config(bc_teacher_prob=0.0, total_steps=8 * 8 * 6, updates_per_chunk=6, warmup_updates=0)
    ).trainer
    runner, metrics = jax.jit(trainer.run, static_argnums=1)(jax.jit(trainer.init)(jax.random.key(0)), 6)
    whole = summarize(jax.device_get(metrics))
    assert whole["train/placement"] > 6.0, whole
    assert whole["loss/cross_entropy"] > 1.0 and whole["loss/accuracy"] < 0.5, whole
