"""Streaming A2C (agents.algorithms.a2c): semi-MDP TD(0) targets, one update by hand, chunking, determinism,
O(N) memory, a CartPole learning check and a short run on the game itself.

The game run (``game_run``: one compiled program, ~20-25 s on a 2-core CPU) is in the default suite;
``test_game_chunked_equals_whole`` (``-m slow``) compiles the chunked trainer on top of it.
"""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from agents.algorithms import registry as trainers
from agents.algorithms.a2c import Pending, PendingDecisions, StreamingA2C, TargetCriticRunner, n_step_step, td_step
from agents.algorithms.base import Runner
from agents.algorithms.ppo import PPO
from agents.config import TrainConfig
from agents.core import losses
from agents.core.gae import gae
from agents.core.rollout import EPISODE_SUMS, Transition, act_and_step
from agents.envs.make import learner_seats, make_env
from agents.utils import health
from tests.xla_flags import compile_as_users_do

CARTPOLE = "gymnax:CartPole-v1"


def _gymnax():
    pytest.importorskip("gymnax")


def _trainer(**overrides):
    _gymnax()
    fields = {"algo": "a2c", "env": CARTPOLE, "num_envs": 8, "update_every": 3, "hidden": (16,), "total_steps": 96}
    config = TrainConfig.from_fields(**{**fields, **overrides})
    return trainers.make_train(config, make_env(config))


def _random_stream(rng, T, N, P, A, learner, end_rate):
    """A random stream of T steps of N envs x P seats: decision states (2 legal actions, else 1) with probability
    0.6, rewards, episode ends with probability ``end_rate`` and values V(s_0..s_T); ``learner`` bool[P] marks the
    seats whose decision states are decisions. Returns (legal bool[T+1, N, P], mask bool[T+1, N, P, A], decision
    bool[T, N, P], reward, terminal, value, steps: a ``Transition`` whose ``obs`` is the step t)."""
    legal = rng.random((T + 1, N, P)) < 0.6
    mask = np.zeros((T + 1, N, P, A), bool)
    mask[..., 0] = True
    mask[..., 1] = legal
    decision = legal[:T] & learner
    reward = rng.normal(size=(T, N, P)).astype(np.float32)
    terminal = rng.random((T, N, P)) < end_rate
    value = rng.normal(size=(T + 1, N, P)).astype(np.float32)
    steps = Transition(
        obs=np.broadcast_to(np.arange(T, dtype=np.float32)[:, None, None, None], (T, N, P, 1)),  # obs = t
        mask=mask[:T],
        action=rng.integers(0, 2, (T, N, P)).astype(np.int32),
        log_prob=np.zeros((T, N, P), np.float32),
        value=value[:T],
        reward=reward,
        terminal=terminal,
        weight=decision.astype(np.float32),
    )
    return legal, mask, decision, reward, terminal, value, steps


# ---- the TD target: streaming pending decisions == semi-MDP GAE with lambda = 0 ----
def test_td_step_matches_semi_mdp_gae_lambda_0():
    T, N, P, A = 60, 4, 3, 3
    gamma = 0.9
    learner = np.array([True, True, False])
    legal, mask, decision, reward, terminal, value, steps = _random_stream(
        np.random.default_rng(0), T, N, P, A, learner, 0.1
    )

    def body(pending, xs):
        transition, next_mask, next_value = xs
        conflict = (transition.weight > 0) & pending.active  # a new decision while one is open: never
        samples, target, weight, pending = td_step(pending, transition, next_mask, next_value, gamma)
        return pending, (samples.obs[..., 0], samples.action, target, weight, conflict)

    empty = Pending.empty(jnp.zeros((N, P, 1)), jnp.zeros((N, P, A), bool))
    final, (origin, action, target, weight, conflict) = jax.jit(lambda xs: jax.lax.scan(body, empty, xs))(
        (steps, mask[1:], value[1:])
    )
    origin, action, target, weight = map(np.asarray, (origin, action, target, weight))
    assert not np.asarray(conflict).any()

    _, expected = gae(reward, value[:T], terminal, decision, value[T], gamma, 0.0)
    expected = np.asarray(expected)
    completed = np.zeros((T, N, P), int)
    for t, n, p in zip(*np.nonzero(weight > 0)):
        t0 = int(origin[t, n, p])
        assert decision[t0, n, p] and t0 <= t
        assert action[t, n, p] == steps.action[t0, n, p]
        np.testing.assert_allclose(target[t, n, p], expected[t0, n, p], rtol=1e-5, atol=1e-5)
        # completed exactly when the next state is a decision state or the episode ended
        assert legal[t + 1, n, p] or terminal[t0 : t + 1, n, p].any()
        completed[t0, n, p] += 1
    # every decision is completed exactly once, except the last ones still open at the end
    still_open = np.zeros((T, N, P), int)
    final_origin = np.asarray(final.obs[..., 0]).astype(int)
    for n, p in zip(*np.nonzero(np.asarray(final.active))):
        t0 = final_origin[n, p]
        still_open[t0, n, p] = 1
        assert not legal[t0 + 1 :, n, p].any() and not terminal[t0:, n, p].any()
        np.testing.assert_allclose(final.discount[n, p], gamma ** (T - t0), rtol=1e-5)
    np.testing.assert_array_equal(completed + still_open, decision.astype(int))
    assert completed.sum() > 50 and not (weight[:, :, ~learner] > 0).any()


# ---- n-step targets (a2c.n_step > 1): a ring of open decisions per seat ----
def _n_step_reference(decision, legal, reward, terminal, value, gamma, n):
    """Plain Python: for each decision (t0, env, seat), (completed at step, target), or None if still open at the
    end. The n-th next decision state u (legal[u], u > t0) bootstraps V[u]; an episode end j in [t0, u) stops the
    sum at r_j without a bootstrap."""
    T, N, P = reward.shape
    out = {}
    for t0, e, p in zip(*np.nonzero(decision)):
        later = [u for u in range(t0 + 1, T + 1) if legal[u, e, p]]
        u = later[n - 1] if len(later) >= n else None
        ends = [j for j in range(t0, T) if terminal[j, e, p] and (u is None or j < u)]
        stop = ends[0] if ends else (u - 1 if u is not None else None)
        if stop is None:
            out[t0, e, p] = None
            continue
        target = sum(gamma ** (i - t0) * float(reward[i, e, p]) for i in range(t0, stop + 1))
        if not ends:
            target += gamma ** (u - t0) * float(value[u, e, p])
        out[t0, e, p] = (stop, target)
    return out


@pytest.mark.parametrize(("n", "end_rate"), [(1, 0.06), (2, 0.06), (3, 0.06), (5, 0.06), (3, 0.3), (5, 0.5)])
def test_n_step_targets_match_a_plain_python_reference(n, end_rate):
    """``n_step_step`` over a random stream of decision states, non-decision steps, rewards and episode ends (often,
    in the last cases, so that many decisions end together): every decision is trained once, with the target of
    the plain-Python n-step reference, at the step its target became final or at most n - 1 steps later (the
    seat's earlier final decisions go first, one a step), or is still in the queue at the end where the reference
    has not finished it or its turn has not come; a new decision never lands on a queued one; one seat trains at
    most one decision a step; a queue of one slot gives ``td_step``'s targets."""
    T, N, P, A = 120, 3, 3, 3
    gamma = 0.9
    learner = np.array([True, True, False])
    legal, mask, decision, reward, terminal, value, steps = _random_stream(
        np.random.default_rng(10 * n + int(10 * end_rate)), T, N, P, A, learner, end_rate
    )

    def body(ring, xs):
        transition, next_mask, next_value = xs
        head = jax.nn.one_hot(ring.head, n, dtype=bool).transpose(0, 2, 1)  # [N, n, P]
        overwrite = head & ring.active & (transition.weight > 0)[:, None]
        samples, target, weight, ring = n_step_step(ring, transition, next_mask, next_value, gamma, n)
        return ring, (samples.obs[..., 0], samples.action, target, weight, overwrite)

    empty = PendingDecisions.empty(jnp.zeros((N, P, 1)), jnp.zeros((N, P, A), bool), n)
    final, (origin, action, target, weight, overwrite) = jax.jit(lambda xs: jax.lax.scan(body, empty, xs))(
        (steps, mask[1:], value[1:])
    )
    origin, action, target, weight = map(np.asarray, (origin, action, target, weight))
    assert not np.asarray(overwrite).any()
    assert weight.shape == (T, N, P)

    expected = _n_step_reference(decision, legal, reward, terminal, value, gamma, n)
    trained = {}
    for t, e, p in zip(*np.nonzero(weight > 0)):
        t0 = int(origin[t, e, p])
        assert (t0, e, p) not in trained and action[t, e, p] == steps.action[t0, e, p]
        trained[t0, e, p] = (int(t), float(target[t, e, p]))
    queued = {}
    final_origin = np.asarray(final.obs[..., 0]).astype(int)
    for e, k, p in zip(*np.nonzero(np.asarray(final.active))):
        queued[int(final_origin[e, k, p]), e, p] = float(final.target[e, k, p]) if final.ready[e, k, p] else None
    assert not set(trained) & set(queued) and set(trained) | set(queued) == set(expected)
    waited = 0
    for key, want in expected.items():
        if key in trained:
            step, got = trained[key]
            assert want is not None and want[0] <= step <= want[0] + n - 1, (key, step, want)
            waited += step > want[0]
            np.testing.assert_allclose(got, want[1], rtol=1e-5, atol=1e-5, err_msg=str(key))
        elif queued[key] is None:
            assert want is None, key  # still open: the reference has not finished it either
        else:  # final, waiting behind the seat's earlier final decisions
            assert want is not None and want[0] > T - n, key
            np.testing.assert_allclose(queued[key], want[1], rtol=1e-5, atol=1e-5, err_msg=str(key))
    assert len(trained) > 40
    if end_rate > 0.2 and n > 1:
        assert waited > 5  # episode ends made several decisions final at once: they queued
    if n == 1:  # the queue of one slot is td_step
        assert waited == 0

        def td_body(pending, xs):
            transition, next_mask, next_value = xs
            _, target, weight, pending = td_step(pending, transition, next_mask, next_value, gamma)
            return pending, (target, weight)

        plain = Pending.empty(jnp.zeros((N, P, 1)), jnp.zeros((N, P, A), bool))
        _, (td_target, td_weight) = jax.jit(lambda xs: jax.lax.scan(td_body, plain, xs))((steps, mask[1:], value[1:]))
        np.testing.assert_array_equal(weight, td_weight)
        np.testing.assert_allclose(target, td_target, rtol=1e-6, atol=1e-6)


def test_an_n_step_update_is_the_batch_loss_of_its_completed_decisions_and_chunks_equal_the_whole_run():
    """CartPole, ``n_step`` = 3, 6 steps per update: the streamed update's gradient equals one ``a2c_loss`` over
    the decisions completed within it (taken at steps 0..3, each bootstrapped from V three steps later under the
    update's parameters), computed by hand from the steps' transitions; the decisions of steps 4 and 5 stay in the
    queue for the next update; two chunked updates equal the whole run."""
    n, steps = 3, 6
    tr = _trainer(num_envs=8, update_every=steps, hidden=(16,), total_steps=8 * steps * 2, n_step=n)
    runner = jax.jit(tr.init)(jax.random.key(5))
    assert isinstance(runner.pending, PendingDecisions) and runner.pending.active.shape == (8, n, 1)
    hp = runner.hparams.replace(gamma=jnp.float32(0.9), max_grad_norm=jnp.float32(1e6))
    runner = runner.replace(hparams=hp)
    step_one = jax.jit(lambda r: tr.run(r, 1))
    new_runner, metrics = step_one(runner)

    net, params = tr.network, runner.params
    act_key, _ = jax.random.split(jax.random.fold_in(runner.key, runner.update))

    def step(carry, step_key):
        state, obs, mask = carry
        state, ts, t = act_and_step(net, params, tr.env, step_key, state, obs, mask, learner_seats(tr.env))
        return (state, ts.observation, ts.action_mask), (t, ts.observation)

    _, (t, next_obs) = jax.lax.scan(step, (runner.env_state, runner.obs, runner.mask), jax.random.split(act_key, steps))
    next_value = net.apply(params, next_obs)[1]  # V(s_1 .. s_steps)
    reward, terminal = np.asarray(t.reward), np.asarray(t.terminal)
    assert not terminal.any()  # no CartPole episode ends in its first 6 steps: one decision per env trained a step
    targets, weights = np.zeros((steps, 8, 1), np.float32), np.zeros((steps, 8, 1), np.float32)
    for t0 in range(steps):
        for e in range(8):
            ret, disc = 0.0, 1.0
            for i in range(t0, min(t0 + n, steps)):
                ret += disc * float(reward[i, e, 0])
                disc *= 0.9 * (1.0 - float(terminal[i, e, 0]))
                if disc == 0.0 or i == t0 + n - 1:
                    targets[t0, e, 0] = ret + disc * float(next_value[i, e, 0])
                    weights[t0, e, 0] = 1.0
                    break
    assert weights[: steps - n + 1].all() and weights.sum() < steps * 8  # some stay open
    flat = jax.tree_util.tree_map(lambda x: x.reshape(-1, *x.shape[3:]), (t.obs, t.mask, t.action))

    def loss(p):
        logits, v = net.apply(p, flat[0])
        return losses.a2c_loss(
            logits,
            v,
            flat[1],
            flat[2],
            targets.reshape(-1) - v,
            targets.reshape(-1),
            weights.reshape(-1),
            hp.vf_coef,
            hp.ent_coef,
            normalize_advantages=True,
        )[0]

    grads = jax.grad(loss)(params)
    chex.assert_trees_all_close(
        new_runner.opt_state[1].mu, jax.tree_util.tree_map(lambda g: 0.1 * g, grads), rtol=1e-4, atol=1e-8
    )
    open_now = int(np.asarray(new_runner.pending.active).sum())
    assert open_now == steps * 8 - int(weights.sum())

    whole_runner, whole = jax.jit(tr)(jax.random.key(5))
    chunked = jax.jit(tr.init)(jax.random.key(5))
    chunked, first = step_one(chunked)
    chunked, second = step_one(chunked)
    chex.assert_trees_all_close(whole_runner.params, chunked.params, rtol=1e-5, atol=1e-6)
    for k in whole:  # the policy loss of normalised advantages is a sum near 0: float32 order shows at 1e-6
        np.testing.assert_allclose(whole[k], np.concatenate([first[k], second[k]]), rtol=1e-5, atol=1e-5, err_msg=k)
    with pytest.raises(ValueError, match=r"TrainConfig\.a2c\.n_step"):
        TrainConfig.from_fields(algo="a2c", n_step=0)


# ---- one update by hand; whole run vs chunks; determinism; key types (one small trainer, shared compiles) ----
@pytest.fixture(scope="module")
def small():
    """CartPole, 8 envs, 3 steps per update, 2 updates; ``run`` is compiled for 1 update only."""
    tr = _trainer(num_envs=8, update_every=3, hidden=(16,), total_steps=8 * 3 * 2)
    return tr, jax.jit(tr.init)


def _manual_update(tr, runner):
    """The first update of ``runner`` computed from the building blocks: plain TD(0) targets on every step,
    then ONE ``a2c_loss`` over all the update's samples as a batch (advantages normalised over the whole
    update when the config says so), optax clip + Adam."""
    hp, net, env, params = runner.hparams, tr.network, tr.env, runner.params
    act_key, _ = jax.random.split(jax.random.fold_in(runner.key, runner.update))

    def step(carry, step_key):
        state, obs, mask = carry
        state, ts, t = act_and_step(net, params, env, step_key, state, obs, mask, learner_seats(env))
        _, next_value = net.apply(params, ts.observation)
        target = t.reward + hp.gamma * (1.0 - t.terminal.astype(jnp.float32)) * next_value
        return (state, ts.observation, ts.action_mask), (t, target)

    carry = (runner.env_state, runner.obs, runner.mask)
    (_, obs, _), (t, targets) = jax.lax.scan(step, carry, jax.random.split(act_key, tr.config.a2c.update_every))
    flat = jax.tree_util.tree_map(lambda x: x.reshape(-1, *x.shape[3:]), (t.obs, t.mask, t.action, t.weight, targets))
    b_obs, b_mask, b_action, b_weight, b_target = flat

    def loss(p):
        logits, v = net.apply(p, b_obs)
        return losses.a2c_loss(
            logits,
            v,
            b_mask,
            b_action,
            b_target - v,
            b_target,
            b_weight,
            hp.vf_coef,
            hp.ent_coef,
            normalize_advantages=tr.config.loss.normalize_advantages,
        )

    (_, batch_metrics), grads = jax.value_and_grad(loss, has_aux=True)(params)
    opt = optax.chain(optax.clip_by_global_norm(hp.max_grad_norm), optax.adam(hp.lr, eps=1e-5))
    updates, _ = opt.update(grads, opt.init(params), params)
    values = net.apply(params, t.obs)[1]
    return optax.apply_updates(params, updates), grads, obs, targets, values, t.weight, batch_metrics


@pytest.mark.parametrize("normalize", [True, False], ids=["normalized", "raw"])
def test_one_update_equals_manual_td0_gradient_and_adam(small, normalize):
    """The streamed update (gradients summed step by step, advantages normalised at the end from their
    moments) equals one batch loss over the update's samples."""
    tr, init = small
    if not normalize:
        tr = _trainer(num_envs=8, update_every=3, hidden=(16,), total_steps=8 * 3 * 2, normalize_advantages=False)
        init = jax.jit(tr.init)
    runner = init(jax.random.key(3))
    f32 = jnp.float32
    hp = runner.hparams.replace(
        lr=f32(0.05), gamma=f32(0.9), vf_coef=f32(0.7), ent_coef=f32(0.03), max_grad_norm=f32(0.5)
    )
    runner = runner.replace(hparams=hp)  # traced hyperparameters: no recompilation
    new_runner, metrics = tr.run(runner, 1)
    expected, grads, obs, targets, values, weights, batch_metrics = jax.jit(_manual_update, static_argnums=0)(
        tr, runner
    )

    assert np.all(np.asarray(weights) == 1.0)  # every CartPole step is a decision
    # the streamed gradient equals the batch loss's (Adam's first moment after one step is (1 - b1 = 0.1) x the
    # clipped gradient), to float32 rounding
    clipped, _ = optax.clip_by_global_norm(hp.max_grad_norm).update(grads, optax.EmptyState())
    chex.assert_trees_all_close(
        new_runner.opt_state[1].mu, jax.tree_util.tree_map(lambda g: 0.1 * g, clipped), rtol=1e-5, atol=1e-9
    )
    # and the parameters took Adam's first step on that streamed gradient g = mu / 0.1 (with bias correction
    # lr * g / (|g| + eps)), to float32 rounding
    streamed = jax.tree_util.tree_map(lambda m: m / 0.1, new_runner.opt_state[1].mu)
    adam = optax.adam(hp.lr, eps=1e-5)
    step, _ = adam.update(streamed, adam.init(streamed))
    chex.assert_trees_all_close(
        new_runner.params, optax.apply_updates(runner.params, step), rtol=1e-5, atol=1e-6 * float(hp.lr)
    )
    # so they equal the batch loss's whole update up to what the gradients' difference becomes through Adam: a
    # difference dg moves the step by up to lr * dg * eps / (|g| + eps)^2, large where |g| is near eps = 1e-5
    # (float32 summation order differs by compiler and CPU kind)
    for ours, batch, g, c in zip(
        *(jax.tree_util.tree_leaves(t) for t in (new_runner.params, expected, streamed, clipped))
    ):
        g, c = np.asarray(g, np.float64), np.asarray(c, np.float64)
        propagated = float(hp.lr) * np.abs(g - c) * 1e-5 / (np.minimum(np.abs(g), np.abs(c)) + 1e-5) ** 2
        np.testing.assert_array_less(
            np.abs(np.asarray(ours) - np.asarray(batch)),
            propagated + 1e-6 * float(hp.lr) + 1e-5 * np.abs(np.asarray(batch)),
        )
    moved = max(
        float(jnp.abs(a - b).max())
        for a, b in zip(jax.tree_util.tree_leaves(new_runner.params), jax.tree_util.tree_leaves(runner.params))
    )
    assert moved > 1e-3
    np.testing.assert_allclose(metrics["loss/value"][0], np.mean(0.5 * (values - targets) ** 2), rtol=1e-5)
    for ours, batch in (("policy", "policy_loss"), ("value", "value_loss"), ("entropy", "entropy")):
        np.testing.assert_allclose(metrics[f"loss/{ours}"][0], batch_metrics[batch], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(metrics["loss/grad_norm"][0], optax.tree.norm(grads), rtol=1e-5)
    np.testing.assert_allclose(metrics["loss/advantage_std"][0], np.std(np.asarray(targets - values)), rtol=1e-4)
    ev = losses.explained_variance(values.ravel(), targets.ravel(), weights.ravel())
    np.testing.assert_allclose(metrics["loss/explained_variance"][0], ev, rtol=1e-4, atol=1e-5)
    assert float(metrics["train/decisions"][0]) == 8 * 3 and float(metrics["train/lr"][0]) == pytest.approx(0.05)
    chex.assert_trees_all_close(new_runner.obs, obs, rtol=1e-5, atol=1e-6)
    assert int(new_runner.update) == 1 and not bool(new_runner.pending.active.any())


def test_whole_run_equals_chunks_deterministic_and_key_types(small):
    tr, init = small
    assert isinstance(tr, StreamingA2C) and tr.config.num_updates == 2
    whole_runner, whole = jax.jit(tr)(jax.random.key(7))
    again_runner, _ = jax.jit(tr)(jax.random.key(7))
    chex.assert_trees_all_equal(whole_runner.params, again_runner.params)

    runs = {}
    for kind, key in (("typed", jax.random.key(7)), ("legacy", jax.random.PRNGKey(7))):
        runner = init(key)
        runner, first = tr.run(runner, 1)
        runner, second = tr.run(runner, 1)
        runs[kind] = (runner, jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a, b]), first, second))
    chex.assert_trees_all_equal(runs["typed"][0].params, runs["legacy"][0].params)
    chex.assert_trees_all_equal(runs["typed"][1], runs["legacy"][1])

    runner, chunked = runs["typed"]
    assert isinstance(runner, Runner) and int(runner.update) == 2
    assert runner.pending.active.shape == runner.mask.shape[:-1]
    assert (
        set(whole)
        == set(chunked)
        == {
            "loss/policy",
            "loss/value",
            "loss/entropy",
            "loss/grad_norm",
            "loss/explained_variance",
            "loss/advantage_std",
            "train/lr",
            "train/decisions",
            *(f"sums/{k}" for k in EPISODE_SUMS),
            health.FINITE,
        }
    )
    assert (whole[health.FINITE] == 1.0).all()
    for k in whole:
        assert whole[k].shape == (2,)
        np.testing.assert_allclose(whole[k], chunked[k], rtol=1e-5, atol=1e-6, err_msg=k)
    chex.assert_trees_all_close(whole_runner.params, runner.params, rtol=1e-5, atol=1e-6)
    summary = trainers.summarize(whole)
    assert summary["train/decisions"] == 8 * 3 * 2
    assert all(np.isfinite(summary[k]) for k in summary if k.startswith("loss/"))


def test_a_slow_target_critic_follows_the_parameters_by_polyak_averaging(small):
    """``a2c.target_tau < 1``: the runner carries target parameters, equal to the initial ones at first (so the
    first update is the plain one's, number for number) and moved ``tau`` of the way to the learned parameters
    after each update; the TD targets of later updates bootstrap from them (they differ from the plain run's).
    ``target_tau = 1`` keeps the plain runner."""
    tr, init = small
    slow = _trainer(num_envs=8, update_every=3, hidden=(16,), total_steps=8 * 3 * 3, target_tau=0.25)
    plain_runner = init(jax.random.key(3))
    runner = jax.jit(slow.init)(jax.random.key(3))
    assert isinstance(runner, TargetCriticRunner) and not isinstance(plain_runner, TargetCriticRunner)
    chex.assert_trees_all_equal(runner.target_params, runner.params)
    plain_step, slow_step = jax.jit(lambda r: tr.run(r, 1)), jax.jit(lambda r: slow.run(r, 1))

    def polyak(target, params):
        return jax.tree_util.tree_map(lambda t, p: t + 0.25 * (p - t), target, params)

    expected = runner.params
    plain_runner, plain_first = plain_step(plain_runner)
    runner, first = slow_step(runner)
    for k in first:  # the target is the initial parameters: the plain update's numbers
        np.testing.assert_array_equal(first[k], plain_first[k], err_msg=k)
    chex.assert_trees_all_equal(runner.params, plain_runner.params)
    expected = polyak(expected, runner.params)
    chex.assert_trees_all_close(runner.target_params, expected, rtol=1e-6, atol=1e-7)
    plain_runner, plain_second = plain_step(plain_runner)
    runner, second = slow_step(runner)
    chex.assert_trees_all_close(runner.target_params, polyak(expected, runner.params), rtol=1e-6, atol=1e-7)
    # the same parameters and samples, bootstrapped from the slow target: other value targets and losses
    assert not np.allclose(plain_second["loss/value"], second["loss/value"])
    with pytest.raises(ValueError, match=r"TrainConfig\.a2c\.target_tau must be above 0"):
        TrainConfig.from_fields(algo="a2c", target_tau=0.0)


def test_rejects_wrong_algo_and_num_envs():
    _gymnax()
    config = TrainConfig.from_fields(algo="a2c", env=CARTPOLE, num_envs=8, update_every=3, hidden=(16,), total_steps=96)
    with pytest.raises(ValueError, match="algo"):
        StreamingA2C(
            TrainConfig.from_fields(env=CARTPOLE, num_envs=8, hidden=(16,), num_steps=4, total_steps=96),
            make_env(config),
        )
    with pytest.raises(ValueError, match="num_envs"):
        StreamingA2C(config, make_env(config, num_envs=4))


# ---- memory: nothing of shape [update_every, num_envs, ...] ----
def _avals(jaxpr):
    """Every variable's abstract value in a (closed) jaxpr, sub-jaxprs (scan, cond, pjit, ...) included."""
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    for var in (*jaxpr.invars, *jaxpr.constvars):
        yield var.aval
    for eqn in jaxpr.eqns:
        for var in eqn.outvars:
            yield var.aval
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                if hasattr(sub, "eqns") or hasattr(getattr(sub, "jaxpr", None), "eqns"):
                    yield from _avals(sub)


def _time_by_env_shapes(fn, runner, steps, num_envs):
    shapes = {tuple(getattr(a, "shape", ())) for a in _avals(jax.make_jaxpr(fn)(runner))}
    return sorted(s for s in shapes if any(s[i : i + 2] == (steps, num_envs) for i in range(len(s))))


def test_memory_is_independent_of_update_every():
    num_envs = 24
    small, large = (
        _trainer(num_envs=num_envs, update_every=2),
        _trainer(num_envs=num_envs, update_every=7, total_steps=24 * 7),
    )
    shapes = [
        jax.tree_util.tree_map(lambda x: (x.shape, x.dtype), jax.eval_shape(t.init, jax.random.key(0)))
        for t in (small, large)
    ]
    assert shapes[0] == shapes[1]
    runner = jax.eval_shape(large.init, jax.random.key(0))
    assert _time_by_env_shapes(large.update, runner, 7, num_envs) == []
    # the check has teeth: PPO's rollout of 7 steps stores [7, 24, ...] arrays
    _gymnax()
    ppo_config = TrainConfig.from_fields(env=CARTPOLE, num_envs=num_envs, num_steps=7, hidden=(16,), total_steps=24 * 7)
    ppo = PPO(ppo_config, make_env(ppo_config))
    assert (7, num_envs, 1) in _time_by_env_shapes(ppo.update, jax.eval_shape(ppo.init, jax.random.key(0)), 7, num_envs)


# ---- learning ----
def test_learns_cartpole():
    """Streaming A2C (advantages normalised per update, the default) learns CartPole: from about a random
    policy's return (~22) in the first fifth of 1M steps to >= 150 in some later fifth.

    Compiled as users compile (``tests.xla_flags.compile_as_users_do``). It is not asserted that it stays there: a
    500-step truncation ends an episode like a termination (as in
    PureJaxRL), and its TD error of about -V(s) can collapse the policy after it learned (docs/log-2026-11.md,
    "Streaming A2C" has the last fifths of seeds 0-3)."""
    tr = _trainer(
        num_envs=64,
        update_every=4,
        hidden=(64, 64),
        lr=1e-3,
        gamma=0.99,
        ent_coef=0.01,
        max_grad_norm=0.5,
        total_steps=1_000_000,
    )
    assert tr.config.loss.normalize_advantages
    key = jax.random.key(0)
    _, metrics = compile_as_users_do(jax.jit(tr), key)(key)  # run-bound: -O0 would run it 5x slower
    metrics = jax.device_get(metrics)
    fifth = tr.config.num_updates // 5
    returns = [
        trainers.summarize({k: v[i * fifth : (i + 1) * fifth] for k, v in metrics.items()})["train/episode_return"]
        for i in range(5)
    ]
    assert returns[0] < 60, returns
    assert max(returns[1:]) > 150, returns


# ---- the game ----
#: 2 games of 3 rounds of 2 steps, 8 updates of 2 env steps (one round each): games end within the run
GAME = dict(
    algo="a2c",
    num_envs=2,
    update_every=2,
    total_steps=2 * 2 * 8,
    hidden=(16,),
    max_rounds=3,
    steps_per_round=2,
    max_combat_ticks=30,
)


@pytest.fixture(scope="module")
def game_run():
    """(trainer, initial parameters, runner, metrics) of the whole GAME run from key 1, as ONE compiled
    program (the initial parameters come out of the same program: no second compile of the game's reset)."""
    config = TrainConfig.from_fields(**GAME)
    tr = trainers.make_train(config, make_env(config))

    @jax.jit
    def run(key):
        return tr.init(key).params, tr(key)

    initial, (runner, metrics) = run(jax.random.key(1))
    return tr, initial, runner, jax.device_get(metrics)


@pytest.mark.xdist_group("a2c_game")  # one worker compiles game_run
def test_game_updates_train_the_completed_decisions(game_run):
    """A2C on the game, not gymnax: finite metrics; decisions taken every update; the decisions completed
    (taken minus those still pending at the end: the runner starts with none, and a seat holds at most
    one) were trained on: every update with one (``loss/entropy`` > 0, a mean over them) took exactly one
    Adam step and the parameters moved; the finished self-play games placed their 8 seats 1..8 (mean 4.5)."""
    tr, initial, runner, metrics = game_run
    assert isinstance(tr, StreamingA2C) and int(runner.update) == tr.config.num_updates == 8
    for k, v in metrics.items():
        assert v.shape == (8,) and np.isfinite(v).all(), k
    assert (metrics[health.FINITE] == 1.0).all()
    decisions = metrics["train/decisions"]
    assert (decisions > 0).all() and (decisions <= 2 * 2 * 8).all()  # at most 2 envs x 2 steps x 8 seats
    pending = int(np.asarray(runner.pending.active).sum())
    assert pending <= 2 * 8
    completed = decisions.sum() - pending
    assert completed > 0
    trained = metrics["loss/entropy"] > 0
    assert trained.any()
    np.testing.assert_array_equal(metrics["loss/value"] > 0, trained)
    np.testing.assert_array_equal(metrics["loss/grad_norm"] > 0, trained)
    adam_steps = int(optax.tree_utils.tree_get(runner.opt_state, "count"))
    assert adam_steps == int(trained.sum())  # Adam stepped on the trained updates only
    moved = [
        float(np.abs(np.asarray(a) - np.asarray(b)).max())
        for a, b in zip(jax.tree_util.tree_leaves(initial), jax.tree_util.tree_leaves(runner.params), strict=True)
    ]
    assert max(moved) > 1e-4, moved
    episodes = metrics["sums/episodes"].sum()
    assert episodes > 0  # whole games ended: terminal decisions were completed without a bootstrap
    assert metrics["sums/placement_count"].sum() == 8 * episodes
    assert metrics["sums/placement_sum"].sum() == 4.5 * 8 * episodes  # 1 + ... + 8 per finished game


@pytest.mark.xdist_group("a2c_game")
@pytest.mark.slow(reason="~1 min, 2 CPUs")
def test_game_chunked_equals_whole(game_run):
    tr, _, whole_runner, whole = game_run
    runner = jax.jit(tr.init)(jax.random.key(1))
    chunks = []
    for _ in range(2):
        runner, m = tr.run(runner, 4)
        chunks.append(m)
    for k in whole:
        np.testing.assert_allclose(whole[k], np.concatenate([c[k] for c in chunks]), rtol=1e-5, atol=1e-6, err_msg=k)
        assert np.isfinite(whole[k]).all(), k
    chex.assert_trees_all_close(whole_runner.params, runner.params, rtol=1e-5, atol=1e-6)
    assert float(whole["sums/episodes"].sum()) > 0 and float(whole["train/decisions"].sum()) > 0
