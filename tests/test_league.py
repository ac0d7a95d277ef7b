"""The self-play league (agents.league): the pool ring buffer, snapshot sampling, seat roles, the batched
pool forward pass, the loss bookkeeping, and a league run's rollout, checkpoint and config checks."""

from __future__ import annotations

import functools
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from agents import league
from agents.config import TrainConfig
from experiments.presets import preset_config


def tiny_params(value):
    return {"w": jnp.full((2, 3), value, jnp.float32), "b": jnp.full((3,), value, jnp.float32)}


def test_pool_is_a_ring_buffer():
    pool = league.pool_init(tiny_params(0.0), 3)
    np.testing.assert_array_equal(pool.update, [0, -1, -1])
    for u in range(1, 6):
        pool = league.pool_insert(pool, tiny_params(float(u)), u)
    # slots 0, 1, 2 were written by updates 0 1 2, then 3 -> slot 0, 4 -> slot 1, 5 -> slot 2
    np.testing.assert_array_equal(pool.update, [3, 4, 5])
    np.testing.assert_array_equal(pool.params["w"][:, 0, 0], [3.0, 4.0, 5.0])
    assert int(pool.next) == 0
    same = league.pool_insert(pool, tiny_params(9.0), 9, insert=jnp.bool_(False))
    jax.tree_util.tree_map(np.testing.assert_array_equal, same, pool)
    jitted = jax.jit(league.pool_insert)(pool, tiny_params(6.0), 6, True)
    np.testing.assert_array_equal(jitted.update, [6, 4, 5])


def test_sampling_uses_filled_slots_uniformly_or_by_loss_rate():
    pool = league.pool_init(tiny_params(0.0), 4)
    pool = league.pool_insert(pool, tiny_params(1.0), 1)  # slots 0 and 1 filled, 2 and 3 empty
    draws = np.asarray(league.sample_snapshots(pool, jax.random.key(0), 4000))
    counts = np.bincount(draws, minlength=4)
    assert counts[2] == counts[3] == 0
    assert abs(counts[0] - 2000) < 4 * np.sqrt(1000)  # binomial(4000, 1/2): 4 standard deviations

    pool = pool.replace(games=jnp.array([8.0, 8.0, 0.0, 0.0]), losses=jnp.array([6.0, 0.0, 0.0, 0.0]))
    weights = np.asarray(league.sampling_weights(pool, prioritized=True))
    np.testing.assert_allclose(weights, np.array([0.7, 0.1, 0.0, 0.0]) / 0.8, rtol=1e-6)  # (l + 1) / (g + 2)
    np.testing.assert_allclose(league.sampling_weights(pool, prioritized=False), [0.5, 0.5, 0, 0])


def test_roles_give_each_game_its_learner_seats_and_the_configured_mix():
    num_envs, learner_seats, pool_prob = 4000, 3, 0.25
    roles = np.asarray(league.assign_roles(jax.random.key(1), num_envs, learner_seats, pool_prob))
    assert roles.shape == (num_envs, 8) and set(np.unique(roles)) == {0, 1, 2}
    np.testing.assert_array_equal((roles == league.ROLE_LEARNER).sum(1), learner_seats)
    others = roles != league.ROLE_LEARNER
    pool_share = (roles == league.ROLE_POOL).sum() / others.sum()
    n = others.sum()
    assert abs(pool_share - pool_prob) < 4 * np.sqrt(pool_prob * (1 - pool_prob) / n)
    per_seat = (roles == league.ROLE_LEARNER).mean(0)  # every seat is equally likely to be the learner's
    expected = learner_seats / 8
    assert np.all(np.abs(per_seat - expected) < 4 * np.sqrt(expected * (1 - expected) / num_envs))


class ScaleNetwork:
    def apply(self, params, obs):
        return obs * params["scale"], obs[..., 0]


def test_pool_logits_give_each_env_group_its_own_snapshot():
    obs = jnp.ones((6, 8, 5))  # 6 envs, 3 groups of 2
    logits = np.asarray(league.pool_logits(ScaleNetwork(), {"scale": jnp.array([1.0, 2.0, 3.0])}, obs))
    np.testing.assert_array_equal(logits[:, 0, 0], [1, 1, 2, 2, 3, 3])
    np.testing.assert_array_equal(league.group_of_env(6, 3), [0, 0, 1, 1, 2, 2])


def test_results_count_a_loss_when_the_snapshot_placed_better():
    pool = league.pool_init(tiny_params(0.0), 3)
    roles = jnp.array([[0, 0, 1, 1, 2, 2, 2, 2]] * 4)
    rank = jnp.array([[1, 2, 3, 4, 5, 6, 7, 8],  # learner better
                      [7, 8, 1, 2, 3, 4, 5, 6],  # snapshot better
                      [7, 8, 1, 2, 3, 4, 5, 6],  # not done
                      [3, 4, 1, 2, 5, 6, 7, 8]])  # snapshot better
    done = jnp.array([True, True, False, True])
    out = league.record_results(pool, jnp.array([2, 0]), roles, done, rank, groups=2)  # envs 0,1: slot 2
    np.testing.assert_array_equal(out.games, [1, 0, 2])
    np.testing.assert_array_equal(out.losses, [1, 0, 1])


def test_ratings_go_to_the_named_snapshots_and_a_new_snapshot_starts_unrated():
    pool = league.pool_init(tiny_params(0.0), 3)
    pool = league.pool_insert(pool, tiny_params(1.0), 5)  # slots: update 0, update 5, empty
    assert np.isnan(np.asarray(pool.rating)).all()
    names = {league.snapshot_name(5): 12.5, "greedy": 40.0, league.snapshot_name(7): 1.0}
    rated = league.with_ratings(pool, names)
    np.testing.assert_array_equal(rated.rating, [np.nan, 12.5, np.nan])  # no rating for update 0's slot
    rated = league.with_ratings(rated, {league.snapshot_name(0): -3.0})
    np.testing.assert_array_equal(rated.rating, [-3.0, 12.5, np.nan])  # the others keep theirs
    rated = league.pool_insert(rated, tiny_params(2.0), 9)  # slot 2
    rated = league.pool_insert(rated, tiny_params(3.0), 10)  # overwrites slot 0
    np.testing.assert_array_equal(rated.rating, [np.nan, 12.5, np.nan])


# ---- a league run on the smoke preset's shapes ----
SMALL = dict(league_size=3, league_learner_seats=1, league_groups=2, snapshot_every=1, num_steps=8)


@functools.cache
def league_trainer():
    from agents import trainers
    from agents.envs import make_env

    config = preset_config("smoke").with_overrides(SMALL)
    return trainers.make_train(config, make_env(config))


def test_only_the_learners_seats_are_training_data():
    trainer = league_trainer()
    runner = jax.jit(trainer.init)(jax.random.key(0))
    roles_before = np.asarray(runner.env_state.roles)
    runner, traj, _ = jax.jit(trainer.rollout)(runner, jax.random.key(1))
    weight = np.asarray(traj.weight)  # [T, N, 8]
    assert weight.sum() > 0
    assert np.all((weight > 0).sum(-1) <= 1)  # one learner seat per game
    # before any game ends the learner's seat is the one drawn at reset
    assert np.all((weight[0] > 0) <= (roles_before == league.ROLE_LEARNER))


@pytest.mark.xdist_group("smoke_run")  # with tests/test_train.py's smoke run: the same bot evaluation program
def test_a_league_run_rates_the_learner_and_its_snapshots(tmp_path):
    """Through the CLI with best_by='rating': every evaluation logs the ratings, and the checkpoint
    restores the pool exactly, with each snapshot's rating from the last evaluation."""
    import json

    from agents import trainers
    from agents.envs import make_env
    from experiments import train as train_cli
    from agents.checkpoints import CheckpointStore

    run_dir = tmp_path / "run"
    sets = [f"{k}={v}" for k, v in dict(SMALL, num_steps=16, best_by="rating").items()]
    summary = train_cli.main(["--preset=smoke", "--run-dir", str(run_dir), "--quiet",
                              *[a for s in sets for a in ("--set", s)]])
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()[1:]]
    assert [r["update"] for r in records] == [2, 4]
    for r in records:
        assert all(np.isfinite(r[k]) for k in ("eval/rating", "eval/rating_random", "eval/rating_greedy"))
    assert set(summary["final_eval"]) >= {"eval/rating", "eval/rating_random", "eval/rating_greedy"}

    config = TrainConfig.from_dict(json.loads((run_dir / "config.json").read_text()))
    trainer = trainers.make_train(config, make_env(config))
    with CheckpointStore(run_dir / "checkpoints", keep=2) as store:
        _, runner, _ = store.restore(jax.eval_shape(trainer.init, jax.random.key(0)), 4)
    assert np.asarray(runner.league.update).tolist() == [3, 4, 2]  # ring buffer after 4 updates
    assert np.isfinite(np.asarray(runner.league.rating)).all()  # all three were rated at update 4
    # the pool came back exactly: update 4's snapshot is the learner's parameters after update 4
    newest = jax.tree_util.tree_map(lambda stack: stack[1], runner.league.params)
    jax.tree_util.tree_map(np.testing.assert_array_equal, newest, runner.params)
    older = jax.tree_util.tree_map(lambda stack: stack[0], runner.league.params)
    assert not all(np.array_equal(a, b) for a, b in zip(jax.tree_util.tree_leaves(older),
                                                          jax.tree_util.tree_leaves(runner.params)))


@pytest.mark.parametrize("overrides, message", [
    (dict(algo="a2c"), "needs algo='ppo'"),
    (dict(opponents="greedy"), "opponents='self'"),
    (dict(league_groups=3), "league_groups must divide num_envs=8"),
    (dict(league_learner_seats=8), "league_learner_seats"),
    (dict(league_bot="nobody"), "league_bot"),
])
def test_league_config_errors_name_the_field(overrides, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(num_envs=8, num_steps=8, total_steps=1024, league_size=4, **overrides)


# ---- independent learners: one parameter set per seat ----
@functools.cache
def independent_trainer():
    from agents import trainers
    from agents.envs import make_env

    config = preset_config("smoke").with_overrides(dict(independent=True, num_steps=8))
    return trainers.make_train(config, make_env(config))


def test_independent_learners_changing_one_seats_data_leaves_every_other_seats_update_unchanged():
    trainer = independent_trainer()
    runner = jax.jit(trainer.init)(jax.random.key(0))
    kernels = jax.tree_util.tree_leaves(runner.params)  # one parameter set per seat, initialised apart
    assert all(k.shape[0] == 8 for k in kernels)
    assert not np.allclose(kernels[1][0], kernels[1][1]) or not np.allclose(kernels[-1][0], kernels[-1][1])
    # a made-up batch of the rollout's shapes (no need to compile the game): every seat acts every step
    shapes = jax.eval_shape(trainer.rollout, runner, jax.random.key(1))[1]
    keys = iter(jax.random.split(jax.random.key(1), 8))
    num_actions = shapes.mask.shape[-1]
    traj = shapes.replace(
        obs=jax.random.normal(next(keys), shapes.obs.shape, shapes.obs.dtype),
        mask=jnp.ones(shapes.mask.shape, bool),
        action=jax.random.randint(next(keys), shapes.action.shape, 0, num_actions, shapes.action.dtype),
        log_prob=jnp.full(shapes.log_prob.shape, -np.log(num_actions), jnp.float32),
        value=jax.random.normal(next(keys), shapes.value.shape),
        reward=jnp.zeros(shapes.reward.shape), terminal=jnp.zeros(shapes.terminal.shape, bool),
        weight=jnp.ones(shapes.weight.shape),
    )
    advantages = jax.random.normal(jax.random.key(2), traj.reward.shape)
    targets = jax.random.normal(jax.random.key(3), traj.reward.shape)
    optimize = jax.jit(lambda batch: trainer.optimize(runner.params, runner.opt_state, batch, jax.random.key(4),
                                                      runner.hparams, runner.update)[0])
    before = optimize((traj, advantages, targets))
    j = 5  # seat j's advantages, targets and observations change
    changed = (traj.replace(obs=traj.obs.at[:, :, j].add(1.0)), advantages.at[:, :, j].mul(-3.0),
               targets.at[:, :, j].add(2.0))
    after = optimize(changed)
    assert all(np.isfinite(np.asarray(leaf)).all() for leaf in jax.tree_util.tree_leaves(before))
    for b, a in zip(jax.tree_util.tree_leaves(before), jax.tree_util.tree_leaves(after)):
        others = np.arange(8) != j
        np.testing.assert_array_equal(np.asarray(b)[others], np.asarray(a)[others])
    assert any(not np.array_equal(np.asarray(b)[j], np.asarray(a)[j])
               for b, a in zip(jax.tree_util.tree_leaves(before), jax.tree_util.tree_leaves(after)))


@pytest.mark.skipif(os.environ.get("JAXGAME_SLOW_TESTS") != "1", reason="set JAXGAME_SLOW_TESTS=1 (~1 min)")
def test_independent_learners_train_a_whole_update():
    """The whole update (rollout, GAE, every seat's epochs) compiles and gives finite losses."""
    trainer = independent_trainer()
    runner, metrics = trainer.run(jax.jit(trainer.init)(jax.random.key(0)), 1)
    assert np.isfinite(np.asarray(metrics["loss/policy"])).all()
    assert int(runner.update) == 1


def test_independent_config_errors_name_the_field():
    with pytest.raises(ValueError, match="independent"):
        TrainConfig(num_envs=8, num_steps=8, total_steps=1024, independent=True, league_size=2)
    with pytest.raises(ValueError, match="one learner's samples"):
        TrainConfig(num_envs=8, num_steps=8, total_steps=1024, independent=True, num_minibatches=3)


def test_one_seat_of_a_per_seat_stack_plays_as_its_own_policy():
    from agents.networks import OneSeat, PerSeat

    stacked = {"scale": jnp.arange(8.0)}
    obs = jnp.ones((3, 8, 5))
    per_seat, _ = PerSeat(ScaleNetwork(), 8).apply(stacked, obs)
    np.testing.assert_array_equal(per_seat[0, :, 0], np.arange(8.0))  # seat p through params[p]
    seat3, _ = OneSeat(ScaleNetwork(), 3).apply(stacked, obs)
    np.testing.assert_array_equal(seat3, np.full((3, 8, 5), 3.0))  # seat 3's learner in every seat
