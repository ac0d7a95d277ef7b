"""Recurrent policies (``network="gru"``: ``agents.core.recurrent``, ``agents.algorithms.sequences``): the GRU's carry
through time and its resets, PPO's rollout and its re-run over whole sequences, learning a task only memory solves,
checkpoints through the run library, and the config's refusals."""

from __future__ import annotations

import dataclasses
import importlib.util
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

import agents
from agents.algorithms.a2c import StreamingA2C
from agents.algorithms.a2c_windows import A2CLoss
from agents.algorithms.base import RecurrentRunner, Runner
from agents.algorithms.ppo import PPO
from agents.algorithms.sequences import IndependentSamples, RecurrentSequences
from agents.config import TrainConfig
from agents.core import distributions
from agents.core.recurrent import RecurrentActorCritic, is_recurrent
from agents.envs.api import check_env
from agents.policies.export import export_policy
from agents.policies.load import PolicyError
from agents.policies.onnx_export import export_onnx
from agents.storage.checkpoints import CheckpointStore
from jaxgame.env import TimeStep

needs_gymnax = pytest.mark.skipif(importlib.util.find_spec("gymnax") is None, reason="pip install -e '.[gymnax]'")

# ---------------------------------------------------------------- a task only memory solves


@struct.dataclass
class RecallState:
    step: jax.Array  # int32[N]: the episode's step
    bit: jax.Array  # int32[N, P]: each seat's bit, shown at step 0
    guess: jax.Array  # int32[N, P]: the action each seat sent at the query step
    key: jax.Array


class RecallBit:
    """N envs of P seats (``agents.envs.api.BatchedEnv``): step 0 shows each seat its own random bit, steps 1 ..
    ``delay`` - 1 show nothing, step ``delay`` asks for the bit (the one decision: two legal actions; every other step
    has one), and the answer earns +1 if it repeats the bit, else -1. Seats 0 .. P - 2 are paid one step later, when
    the episode ends (so a decision can be left open at a rollout's edge); the last seat is paid at once and is out
    of the episode from then on (``seat_done`` True until the episode's end, as an eliminated seat of the game's).
    Observation float32[3]: (the bit as -1/+1 at step 0 else 0, step 0?, the query step?). A feed-forward policy sees
    the same observation at the query whatever the bit: its expected return is 0. Env n starts at step n mod the
    episode's length, so the envs' episodes end at different steps."""

    num_players = 2
    num_actions = 2
    obs_shape = (3,)

    def __init__(self, num_envs: int, delay: int = 3):
        self.num_envs = num_envs
        self.delay = delay
        self.length = delay + 2  # steps of an episode
        self.learner_seats = np.ones(self.num_players, bool)

    def __repr__(self):
        return f"RecallBit(num_envs={self.num_envs}, delay={self.delay})"

    def _bits(self, key):
        return jax.random.bernoulli(key, 0.5, (self.num_envs, self.num_players)).astype(jnp.int32)

    def _timestep(self, state, reward, done, seat_done):
        shape = (self.num_envs, self.num_players)
        show = jnp.broadcast_to((state.step == 0)[:, None], shape)
        query = jnp.broadcast_to((state.step == self.delay)[:, None], shape)
        obs = jnp.stack([jnp.where(show, 2.0 * state.bit - 1.0, 0.0), show, query], -1).astype(jnp.float32)
        mask = jnp.stack([jnp.ones(shape, bool), query], -1)
        return TimeStep(observation=obs, action_mask=mask, reward=reward, done=done, info={"seat_done": seat_done})

    def reset(self, key):
        key, bit_key = jax.random.split(key)
        zeros = jnp.zeros((self.num_envs, self.num_players), jnp.int32)
        first = jnp.arange(self.num_envs, dtype=jnp.int32) % self.length  # env n starts at step n: out of step
        state = RecallState(first, self._bits(bit_key), zeros, key)
        no = jnp.zeros(self.num_envs, bool)
        return state, self._timestep(state, jnp.zeros(zeros.shape, jnp.float32), no, zeros.astype(bool))

    def step(self, state, actions):
        key, bit_key = jax.random.split(state.key)
        asked = (state.step == self.delay)[:, None]
        guess = jnp.where(asked, actions, state.guess)
        done = state.step == self.length - 1
        last = jnp.arange(self.num_players) == self.num_players - 1
        paid = jnp.where(last, asked, done[:, None])
        reward = jnp.where(paid, jnp.where(guess == state.bit, 1.0, -1.0), 0.0).astype(jnp.float32)
        seat_done = done[:, None] | (last & (state.step >= self.delay)[:, None])
        following = RecallState(
            jnp.where(done, 0, state.step + 1), jnp.where(done[:, None], self._bits(bit_key), state.bit), guess, key
        )
        return following, self._timestep(following, reward, done, seat_done)


def _config(network: str, num_envs: int = 8, **fields) -> TrainConfig:
    """A tiny PPO config for ``RecallBit``: 8 steps a rollout (episodes of 5 cross its edges)."""
    fields = {
        "num_envs": num_envs,
        "num_steps": 8,
        "num_minibatches": 4,
        "update_epochs": 2,
        "hidden": (32,),
        "network": network,
        "eval_every": 0,
        "total_steps": num_envs * 8 * 100,
        "lr": 3e-3,
        "ent_coef": 0.003,
        "gamma": 0.99,
        **fields,
    }
    return TrainConfig.from_fields(**fields)


def test_the_recall_env_keeps_the_batched_env_contract():
    check_env(RecallBit(num_envs=3))


# ---------------------------------------------------------------- the network


def _random_inputs(key, steps=7, batch=(3, 2), size=3):
    obs_key, reset_key = jax.random.split(key)
    obs = jax.random.normal(obs_key, (steps, *batch, size))
    reset = jax.random.bernoulli(reset_key, 0.3, (steps, *batch))
    return obs, reset


def test_the_network_scanned_over_a_sequence_equals_stepping_it_one_step_at_a_time():
    network = RecurrentActorCritic(num_actions=4, hidden=(16, 8))
    obs, reset = _random_inputs(jax.random.key(0))
    params = network.init(jax.random.key(1), obs[0])
    start = jax.random.normal(jax.random.key(2), (3, 2, 8))  # any carry, not only the initial one
    carry, logits, value = jax.jit(network.apply_sequence)(params, start, obs, reset)
    assert logits.shape == (7, 3, 2, 4) and value.shape == (7, 3, 2) and carry.shape == (3, 2, 8)
    assert logits.dtype == value.dtype == carry.dtype == jnp.float32

    step = jax.jit(network.apply)
    stepped, looped = start, []
    for t in range(obs.shape[0]):
        stepped, step_logits, step_value = step(params, stepped, obs[t], reset[t])
        looped.append((step_logits, step_value))
    np.testing.assert_allclose(np.stack([x for x, _ in looped]), logits, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.stack([v for _, v in looped]), value, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(stepped, carry, rtol=1e-5, atol=1e-6)


def test_a_reset_step_is_a_fresh_networks_step_and_only_that_seat_forgets():
    network = RecurrentActorCritic(num_actions=4, hidden=(16,))
    obs, _ = _random_inputs(jax.random.key(3), steps=1)
    params = network.init(jax.random.key(4), obs[0])
    remembered = jax.random.normal(jax.random.key(5), (3, 2, 16))
    reset = jnp.array([[True, False], [False, False], [True, True]])
    carry, logits, value = network.apply(params, remembered, obs[0], reset)
    fresh_carry, fresh_logits, fresh_value = network.apply(
        params, network.initial_carry((3, 2)), obs[0], jnp.zeros((3, 2), bool)
    )
    kept_carry, kept_logits, _ = network.apply(params, remembered, obs[0], jnp.zeros((3, 2), bool))
    r = np.asarray(reset)
    np.testing.assert_array_equal(np.asarray(logits)[r], np.asarray(fresh_logits)[r])
    np.testing.assert_array_equal(np.asarray(value)[r], np.asarray(fresh_value)[r])
    np.testing.assert_array_equal(np.asarray(carry)[r], np.asarray(fresh_carry)[r])
    np.testing.assert_array_equal(np.asarray(logits)[~r], np.asarray(kept_logits)[~r])
    assert not np.allclose(np.asarray(kept_logits)[r], np.asarray(fresh_logits)[r])  # the carry mattered there


def test_the_output_at_the_query_depends_on_the_bit_shown_before_through_the_carry_and_its_gradient():
    """What memory is: at the query step the observation is the same whatever the bit, so only the carry can tell
    the two apart; and the gradient of the query's outputs reaches the observation of step 0 through time."""
    env = RecallBit(num_envs=1, delay=4)
    network = RecurrentActorCritic(num_actions=2, hidden=(16,))
    params = network.init(jax.random.key(0), jnp.zeros((1, 3)))

    def episode_obs(bit):
        shown = jnp.zeros((env.delay + 1, 1, 3)).at[0, 0].set(jnp.array([2.0 * bit - 1.0, 1.0, 0.0]))
        return shown.at[env.delay, 0, 2].set(1.0)

    no_reset = jnp.zeros((env.delay + 1, 1), bool)

    def query_outputs(obs):
        _, logits, value = network.apply_sequence(params, network.initial_carry((1,)), obs, no_reset)
        return logits[-1, 0], value[-1, 0]

    (logits0, value0), (logits1, value1) = query_outputs(episode_obs(0)), query_outputs(episode_obs(1))
    np.testing.assert_array_equal(episode_obs(0)[1:], episode_obs(1)[1:])  # the same observations after step 0
    assert np.abs(np.asarray(logits1 - logits0)).max() > 1e-4 and abs(float(value1 - value0)) > 1e-4

    grads = jax.grad(lambda o: query_outputs(o)[0][1] - query_outputs(o)[0][0] + query_outputs(o)[1])(episode_obs(1))
    assert np.abs(np.asarray(grads[0])).max() > 1e-4  # step 0's observation reaches the query's outputs

    _, reset_logits, _ = network.apply_sequence(
        params, network.initial_carry((1,)), episode_obs(1), no_reset.at[env.delay].set(True)
    )
    fresh = network.apply(params, network.initial_carry((1,)), episode_obs(1)[-1], jnp.zeros(1, bool))[1]
    np.testing.assert_allclose(reset_logits[-1], fresh, rtol=1e-6, atol=1e-7)  # a reset forgets the bit


# ---------------------------------------------------------------- PPO's rollout and update


def test_the_rollout_resets_each_seats_carry_after_its_episode_ended():
    """Pinned at episode edges: the step after a seat's episode ended (a game's end, or the last seat's early
    "elimination") gives what a fresh network gives on the same observation; the other steps do not."""
    trainer = PPO(_config("gru"), RecallBit(num_envs=8))
    runner = trainer.init(jax.random.key(0))
    runner, _ = jax.jit(trainer.run, static_argnums=1)(runner, 2)  # trained parameters, a mid-episode carry
    start = runner.memory
    _, traj, _ = jax.jit(trainer.rollout)(runner, jax.random.key(1))
    reset = np.concatenate([np.asarray(start.reset)[None], np.asarray(traj.terminal)[:-1]])
    assert reset.any() and (~reset).any() and (reset[:, :, 0] != reset[:, :, 1]).any()  # seats reset apart

    network = trainer.network
    fresh = jax.vmap(lambda o: network.apply(runner.params, network.initial_carry((8, 2)), o, jnp.zeros((8, 2), bool)))
    _, _, fresh_value = fresh(traj.obs)
    np.testing.assert_allclose(np.asarray(traj.value)[reset], np.asarray(fresh_value)[reset], rtol=1e-6, atol=1e-6)
    assert np.abs(np.asarray(traj.value)[~reset] - np.asarray(fresh_value)[~reset]).max() > 1e-3


def _minibatch_outputs(trainer, runner, key, params, forget: bool = False) -> dict:
    """The first epoch's minibatches of one update from ``runner``, before any gradient step, re-run with ``params``
    (``forget``: from the initial carry instead of the one the rollout started from). Per sample of every minibatch
    (float32[M x T x B]): the re-run's ``log_prob`` and ``value``, the rollout's ``stored_log_prob`` and
    ``stored_value``, ``trained`` (a decision the update trains) and ``carried`` (row 0's decision carried in from
    the previous rollout, taken by the parameters before)."""
    runner, _, batch, _, _ = trainer.collect(runner, key)
    if forget:
        batch = batch.replace(memory=batch.memory.replace(carry=jnp.zeros_like(batch.memory.carry)))
    sequences = trainer.sequences
    flat = sequences.flatten(trainer.learner_samples(batch))
    minibatches = sequences.minibatches(jax.random.key(9), flat, trainer.config.ppo.num_minibatches)
    out = []
    for m in range(trainer.config.ppo.num_minibatches):
        minibatch = jax.tree_util.tree_map(lambda x, m=m: x[m], minibatches)
        logits, value, samples = sequences.outputs(trainer.network, params, minibatch)
        traj = samples.traj
        carried = jnp.zeros(minibatch.traj.weight.shape, bool).at[0].set(minibatch.memory.carried[0]).reshape(-1)
        out.append(
            {
                "log_prob": distributions.log_prob(logits, traj.mask, traj.action),
                "stored_log_prob": traj.log_prob,
                "value": value,
                "stored_value": traj.value,
                "trained": traj.weight > 0,
                "carried": carried,
            }
        )
    return {name: jnp.concatenate([o[name] for o in out]) for name in out[0]}


def test_the_updates_re_run_over_whole_sequences_reproduces_the_rollout_so_the_first_ratio_is_one():
    """Before any gradient step, the update's re-run of the network over each minibatch's whole sequences from the
    stored start carry gives the rollout's log-probabilities and values: the first ratio is 1. A decision carried in
    from the previous rollout (row 0) was taken by the parameters one update older, with the carry it had then:
    with those parameters the re-run gives its stored numbers too."""
    trainer = PPO(_config("gru"), RecallBit(num_envs=8))
    assert isinstance(trainer.sequences, RecurrentSequences)
    run = jax.jit(trainer.run, static_argnums=1)
    before, _ = run(trainer.init(jax.random.key(0)), 2)
    runner, _ = run(before, 1)
    assert bool(runner.pending.active.any())  # decisions carried in, with the carries they were taken with
    assert bool((np.abs(np.asarray(runner.memory.carry)) > 1e-3).any())  # the rollout starts mid-episode

    outputs = jax.jit(_minibatch_outputs, static_argnums=(0, 4))
    now = {k: np.asarray(v) for k, v in outputs(trainer, runner, jax.random.key(1), runner.params).items()}
    new = now["trained"] & ~now["carried"]
    assert new.sum() > 10 and now["carried"].any() and (now["trained"] & now["carried"]).any()
    np.testing.assert_allclose(np.exp(now["log_prob"] - now["stored_log_prob"])[new], 1.0, atol=1e-5)
    np.testing.assert_allclose(now["value"][new], now["stored_value"][new], rtol=1e-5, atol=1e-5)

    old = {k: np.asarray(v) for k, v in outputs(trainer, runner, jax.random.key(1), before.params).items()}
    carried = old["trained"] & old["carried"]
    np.testing.assert_allclose(np.exp(old["log_prob"] - old["stored_log_prob"])[carried], 1.0, atol=1e-5)
    np.testing.assert_allclose(old["value"][carried], old["stored_value"][carried], rtol=1e-5, atol=1e-5)

    # the stored start carry is what makes it so: re-run from the initial carry, the values differ
    forgetful = outputs(trainer, runner, jax.random.key(1), runner.params, True)
    assert np.abs(np.asarray(forgetful["value"]) - now["stored_value"])[new].max() > 1e-3


def _train(network: str, updates: int, seed: int = 0) -> np.ndarray:
    """Mean episode return per update of ``updates`` PPO updates on ``RecallBit`` with the bit asked 5 steps after it
    was shown (episodes of 7 steps, rollouts of 8: the show and the query often fall in two rollouts)."""
    trainer = PPO(_config(network, num_envs=16, num_minibatches=8), RecallBit(num_envs=16, delay=5))
    runner = trainer.init(jax.random.key(seed))
    _, metrics = jax.jit(trainer.run, static_argnums=1)(runner, updates)
    return np.asarray(metrics["sums/return_sum"]) / np.maximum(np.asarray(metrics["sums/episodes"]), 1)


def test_a_gru_learns_to_repeat_the_bit_it_saw_steps_before():
    returns = _train("gru", 150)
    assert returns[:3].mean() < 0.3  # it starts near chance (0) ...
    assert returns[-30:].mean() > 0.95  # ... and ends repeating the bit


def test_a_feed_forward_policy_cannot_beat_chance_on_the_same_task():
    returns = _train("mlp", 150)
    assert abs(returns[-75:].mean()) < 0.1


def _train_a2c(network: str, updates: int, seed: int = 0) -> tuple[object, np.ndarray]:
    """``(trainer, mean episode return per update)`` of ``updates`` A2C updates of 16 envs x 8 steps on the same task:
    a GRU's windows of 8 steps (``agents.algorithms.a2c_windows``), a feed-forward policy's streaming A2C."""
    config = _config(network, num_envs=16, algo="a2c", update_every=8, num_minibatches=1)
    trainer = agents.make_train(config, RecallBit(num_envs=16, delay=5))
    runner = trainer.init(jax.random.key(seed))
    _, metrics = jax.jit(trainer.run, static_argnums=1)(runner, updates)
    return trainer, np.asarray(metrics["sums/return_sum"]) / np.maximum(np.asarray(metrics["sums/episodes"]), 1)


def test_a2c_over_a_gru_s_windows_learns_the_task_the_streaming_a2c_cannot():
    """A2C with a recurrent network re-runs the GRU over windows of ``update_every`` steps from the carry each began
    with (truncated back-propagation through time): it learns to repeat the bit; the streaming A2C of a feed-forward
    policy, which keeps no steps, stays at chance."""
    trainer, returns = _train_a2c("gru", 150)
    assert type(trainer) is PPO and isinstance(trainer.loss, A2CLoss) and trainer.gae_lambda == 0.0
    assert (trainer.config.ppo.num_steps, trainer.config.ppo.update_epochs, trainer.config.ppo.num_minibatches) == (
        8,
        1,
        1,
    )
    assert returns[:3].mean() < 0.3 and returns[-30:].mean() > 0.95
    streaming, chance = _train_a2c("mlp", 150)
    assert type(streaming) is StreamingA2C and abs(chance[-75:].mean()) < 0.1


class _EveryStepDecides(RecallBit):
    """``RecallBit`` with both actions legal at every step: every step is a decision of every seat, so a decision's
    next decision is the next step and the TD(0) target bootstraps from its value."""

    def _timestep(self, state, reward, done, seat_done):
        ts = super()._timestep(state, reward, done, seat_done)
        return ts.replace(action_mask=jnp.ones_like(ts.action_mask))


def test_a2c_over_windows_takes_td0_targets_whatever_the_runs_gae_lambda():
    """The windowed A2C's targets are the streaming A2C's TD(0): a decision's reward plus gamma x the value of the
    seat's next decision (none after its episode's end), checked against that sum in numpy; the run's ``gae_lambda``
    (0.95 here, PPO's) changes nothing, and the advantages are the targets less the values the window was played
    with."""
    config = _config("gru", num_envs=4, algo="a2c", update_every=8, num_minibatches=1, gae_lambda=0.95)
    trainer = agents.make_train(config, _EveryStepDecides(num_envs=4))
    runner = trainer.init(jax.random.key(3))
    _, traj, batch, _, _ = trainer.collect(runner, jax.random.key(4))
    reward, value, terminal = (np.asarray(x) for x in (traj.reward, traj.value, traj.terminal))
    bootstrap = np.where(terminal[:-1], 0.0, 0.99 * value[1:])
    expected = reward[:-1] + bootstrap
    trained = np.asarray(traj.weight)[:-1] > 0
    assert trained.all() and np.abs(bootstrap).max() > 1e-3  # every step decides; the values are not all 0
    np.testing.assert_allclose(np.asarray(batch.targets)[:-1], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(batch.advantages), np.asarray(batch.targets) - value, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- the run library


def _records(run_dir) -> list:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()[1:]
    timing = ("wall_s", "sps", "perf/sps", "perf/seat_sps")
    return [{k: v for k, v in json.loads(line).items() if k not in timing} for line in lines]


def _check_resume_equals_an_uninterrupted_run(config, tmp_path):
    """A recurrent run stopped after its first chunk and resumed equals the uninterrupted run: its records and its
    final checkpoint's memory (the carry saved with the runner) bitwise."""
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    agents.train(config, whole)
    agents.train(config.with_overrides({"stop_at_update": config.run.updates_per_chunk}), parts)
    first = _records(parts)
    agents.train(config, parts, resume=True)
    assert _records(parts) == _records(whole) and len(first) == 1

    with CheckpointStore(whole / "checkpoints", keep=1) as a, CheckpointStore(parts / "checkpoints", keep=1) as b:
        (step_a, memory_a, _), (step_b, memory_b, _) = a.restore_subtree("memory"), b.restore_subtree("memory")
    assert step_a == step_b == config.num_updates
    assert set(memory_a) == {"carry", "reset", "decision_carry", "decision_reset"}
    for name in memory_a:
        np.testing.assert_array_equal(memory_a[name], memory_b[name])
    assert np.abs(np.asarray(memory_a["carry"])).max() > 0  # a carry, not the initial zeros
    policy = agents.load_policy(whole, game_only=False)
    assert is_recurrent(policy.network)


@needs_gymnax
def test_a_recurrent_run_saves_its_carry_resumes_and_starts_another_through_the_run_library(tmp_path):
    config = TrainConfig.from_fields(
        env="gymnax:CartPole-v1",
        network="gru",
        hidden=(16,),
        num_envs=4,
        num_steps=16,
        num_minibatches=2,
        update_epochs=1,
        total_steps=4 * 16 * 4,
        updates_per_chunk=2,
    )
    _check_resume_equals_an_uninterrupted_run(config, tmp_path)

    # a recurrent policy starts another run (init_from): its parameters, a fresh memory
    from agents.run.train_program import TrainProgram

    started = TrainProgram(config.with_overrides({"init_from": f"{tmp_path / 'whole'}:4", "seed": 3})).init()
    saved = agents.load_policy(tmp_path / "whole", 4, game_only=False).params
    jax.tree_util.tree_map(np.testing.assert_array_equal, started.params, saved)
    assert int(started.update) == 0 and not np.asarray(started.memory.carry).any()


def test_a_recurrent_run_on_the_game_saves_its_carry_resumes_plays_at_the_tables_and_exports_with_its_carry(tmp_path):
    """The game at tiny sizes (about 40 s on 2 CPU cores, mostly the compiles): resume equals the uninterrupted run;
    the saved policy is evaluated at the tables (they keep its carry: tests/test_recurrent_tables.py); its
    jax.export steps its memory as the network does (``_check_the_export_steps_the_memory``) and plays at the
    tables as the run's policy, game for game; ONNX refuses it in one line."""
    config = TrainConfig.from_fields(
        network="gru",
        hidden=(16,),
        num_envs=2,
        num_steps=8,
        num_minibatches=2,
        update_epochs=1,
        eval_every=0,
        total_steps=2 * 8 * 4,
        updates_per_chunk=2,
        max_rounds=3,
        steps_per_round=2,
        max_combat_ticks=50,
    )
    _check_resume_equals_an_uninterrupted_run(config, tmp_path)
    result = agents.evaluate(str(tmp_path / "whole"), vs=["random"], games=1)
    assert result["update"] == 4 and 1 <= result["vs_random"]["mean_placement"] <= 8
    policy = agents.load_policy(tmp_path / "whole")
    spec = export_policy(policy, tmp_path / "exported", platforms=("cpu",))
    assert spec["recurrent"] == {"carry_size": 16} and spec["format_version"] == 2
    _check_the_export_steps_the_memory(policy, tmp_path / "exported")
    by_export = agents.evaluate(str(tmp_path / "exported"), vs=["random"], games=1)
    assert by_export["vs_random"] == result["vs_random"] and by_export["update"] is None
    with pytest.raises(PolicyError, match=r"is a recurrent policy \(network='gru'\): ONNX exports hold feed-forward"):
        export_onnx(policy, tmp_path / "onnx")
    assert not (tmp_path / "onnx").exists()


def _check_the_export_steps_the_memory(policy, directory):
    """``ExportedPolicy.act`` with its carry, step after step with a reset in between, gives the network's carry,
    logits and value and the greedy legal action; sampling returns a legal action and the carry; a missing or
    misshapen carry or reset is one ExportedPolicyError."""
    from agents.policies.exported_loader import ExportedPolicy, ExportedPolicyError

    exported = ExportedPolicy(directory)
    rng = np.random.default_rng(0)
    steps, batch = 4, 3
    obs = rng.random((steps, batch, *exported.obs_shape), dtype=np.float32)
    mask = rng.random((steps, batch, 258)) < 0.3
    mask[..., 0] = True
    resets = np.zeros((steps, batch), bool)
    resets[2, 1] = True  # seat 1's game ended before step 2: its memory restarts there
    carry, want_carry = exported.initial_carry(batch), policy.network.initial_carry((batch,))
    for t in range(steps):
        action, logits, value, carry = exported.act(obs[t], mask[t], carry=np.asarray(carry), reset=resets[t])
        want_carry, want_logits, want_value = policy.network.apply(policy.params, want_carry, obs[t], resets[t])
        for got, want in ((carry, want_carry), (logits, want_logits), (value, want_value)):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(np.asarray(action), np.asarray(distributions.greedy(want_logits, mask[t])))
    assert np.abs(np.asarray(carry)).max() > 0
    action, _, _, carry = exported.act(obs[0], mask[0], key=7, carry=exported.initial_carry(batch))
    assert mask[0][np.arange(batch), np.asarray(action)].all() and np.asarray(carry).shape == (batch, 16)
    for kwargs, message in [
        ({}, r"is recurrent: give its carry float32\[3, 16\]"),
        ({"carry": np.zeros((3, 8), np.float32)}, r"carry must be float32\[3, 16\], got float32\[3, 8\]"),
        ({"carry": exported.initial_carry(3), "reset": np.zeros(3, int)}, r"reset must be bool\[3\], got int"),
    ]:
        with pytest.raises(ExportedPolicyError, match=message):
            exported.act(obs[0], mask[0], **kwargs)


def test_a_feed_forward_runner_keeps_the_layout_earlier_checkpoints_were_saved_with():
    """Orbax restores a checkpoint only into the tree it was saved as: a feed-forward run's runner is still a plain
    ``Runner`` with its fields (a recurrent run's is the subclass with ``memory``), and its PPO shuffles samples."""
    fields = [f.name for f in dataclasses.fields(Runner)]
    assert fields == [
        "params", "opt_state", "env_state", "obs", "mask", "tracker", "key", "update", "hparams", "league", "pending"
    ]  # fmt: skip
    feed_forward = PPO(_config("mlp"), RecallBit(num_envs=8))
    assert type(jax.eval_shape(feed_forward.init, jax.random.key(0))) is Runner
    assert isinstance(feed_forward.sequences, IndependentSamples)
    recurrent = jax.eval_shape(PPO(_config("gru"), RecallBit(num_envs=8)).init, jax.random.key(0))
    assert type(recurrent) is RecurrentRunner and recurrent.memory.carry.shape == (8, 2, 32)


# ---------------------------------------------------------------- what is refused


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"obs": "oracle"}, r"TrainConfig\.net\.network='gru' \(a recurrent network\) reads the whole vector"),
        ({"view": "frame"}, r"needs obs='vector' and view='all', got obs='vector', view='frame'"),
        ({"obs": "pixels"}, r"TrainConfig\.net\.network must be 'cnn' or 'tiles' or 'tile_ids' for obs='pixels'"),
        ({"algo": "bc"}, r"TrainConfig\.run\.algo must be 'ppo' or 'a2c' with TrainConfig\.net\.network='gru'"),
        ({"algo": "a2c", "n_step": 2}, r"TrainConfig\.a2c\.n_step must be 1 and a2c\.target_tau 1 with .*n_step=2"),
        ({"algo": "a2c", "target_tau": 0.5}, r"TrainConfig\.a2c\.n_step must be 1 .*target_tau=0\.5"),
        ({"independent": True}, r"TrainConfig\.net\.independent is not supported with TrainConfig\.net\.network="),
        ({"league_size": 2}, r"TrainConfig\.league\.league_size is not supported with"),
        ({"anchor": "baseline:ppo_small-v1"}, r"TrainConfig\.distill\.anchor is not supported with"),
        ({"teacher": "baseline:ppo_small-v1"}, r"TrainConfig\.distill\.teacher is not supported with"),
        ({"num_devices": 2}, r"TrainConfig\.run\.num_devices must be 0 or 1 and ppo\.shuffle 'global'"),
        ({"shuffle": "local"}, r"got num_devices=0, shuffle='local'"),
        (
            {"num_minibatches": 32},  # divides the 2 x 16 x 8 samples, not the 2 x 8 sequences
            r"TrainConfig\.ppo\.num_minibatches must divide the \(env, seat\) sequences of a recurrent network's "
            r"update \(its minibatches are whole sequences\), num_envs x learner seats = 16, got 32",
        ),
    ],
)
def test_the_config_refuses_what_a_recurrent_network_cannot_do_yet(fields, message):
    base = {"network": "gru", "num_envs": 2, "num_steps": 16, "num_minibatches": 2, "eval_every": 0}
    with pytest.raises(ValueError, match=message):
        TrainConfig.from_fields(**{**base, **fields})


def test_the_config_accepts_a_recurrent_network_where_it_trains():
    game = TrainConfig.from_fields(network="gru", num_envs=2, num_minibatches=16, eval_every=0)
    assert game.ppo_sequences == 16
    bots = TrainConfig.from_fields(network="gru", num_envs=4, num_minibatches=4, eval_every=0, opponents="greedy")
    assert bots.ppo_sequences == 4  # only the learner's seat
    gymnax = TrainConfig.from_fields(network="gru", env="gymnax:CartPole-v1", num_envs=4, num_minibatches=4)
    assert gymnax.log.eval_every == 1
    evaluated = TrainConfig.from_fields(network="gru", num_envs=2, num_minibatches=16, eval_every=1)
    assert evaluated.log.eval_every == 1  # the tables carry its hidden state (tests/test_recurrent_tables.py)
    a2c = TrainConfig.from_fields(network="gru", algo="a2c", num_envs=3, update_every=4, num_minibatches=5)
    assert a2c.a2c_windows and a2c.steps_per_update == 12  # PPO's minibatches are not its: one a window
    assert agents.algorithms.registry.trainer_kind(a2c) == "a2c_windows"
    assert not TrainConfig.from_fields(algo="a2c").a2c_windows


def test_the_trainer_checks_the_sequences_of_its_env_and_what_it_is_composed_with():
    config = _config("gru", num_envs=3, num_minibatches=4)  # 3 x 8 game seats divide by 4; 3 x 2 here do not
    with pytest.raises(ValueError, match=r"num_envs x learner seats = 6, got 4"):
        PPO(config, RecallBit(num_envs=3))
    with pytest.raises(ValueError, match=r"trains algo='a2c' only as a recurrent policy's windows with an A2C loss"):
        PPO(_config("gru", algo="a2c"), RecallBit(num_envs=8))  # PPO's loss on an A2C config
    with pytest.raises(ValueError, match=r"a feed-forward policy's A2C is the streaming one"):
        PPO(_config("mlp", algo="a2c"), RecallBit(num_envs=8), loss=A2CLoss())
    with pytest.raises(ValueError, match=r"trains on its own play with PPO's or A2C's loss for now"):
        from agents.algorithms.bc import TeacherPlay

        PPO(_config("gru"), RecallBit(num_envs=8), samples=TeacherPlay("greedy", 1.0))
