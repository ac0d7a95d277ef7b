# Copyright Chris Lu and the PureJaxRL contributors (https://github.com/luchris429/purejaxrl).
# Modifications for jaxgame's benchmark: see the docstring below.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file except in compliance
# with the License. You may obtain a copy of the License at http://www.apache.org/licenses/LICENSE-2.0 (and in
# benchmarks/harness/PUREJAXRL_LICENSE). Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND,
# either express or implied. See the License for the specific language governing permissions and limitations under
# the License.
"""A plain PureJaxRL-style PPO for gymnax envs (CartPole-v1 by default), kept only as a timing reference.

This file exists so that ``python -m benchmarks.harness --what train`` can
time our trainer (``agents.algorithms.registry.make_train`` with the ``ppo_gymnax``
preset) next to the single-file PPO it is modelled on. It is a self-contained
transcription of ``purejaxrl/ppo.py`` from PureJaxRL by Chris Lu et al.
(https://github.com/luchris429/purejaxrl, Apache License 2.0): the same
``ActorCritic`` (separate actor and critic tanh 64x64 MLPs, orthogonal
init), the same ``make_train(config) -> train(rng)`` with ``_update_step`` /
``_env_step`` / ``_calculate_gae`` / ``_update_epoch`` / ``_update_minbatch``,
the same optimiser (global-norm clip, then Adam with eps 1e-5 and a linearly
annealed learning rate) and the same config as our ``ppo_gymnax`` preset.

Differences from the original, none of which changes the computation:

- PureJaxRL's ``wrappers.py`` (``FlattenObservationWrapper``, ``LogWrapper``)
  is written inline below; purejaxrl is not a dependency of this project;
- ``distrax.Categorical`` is replaced by the few lines of it that ``ppo.py``
  uses (``sample``, ``log_prob``, ``entropy``); distrax is not a dependency;
- gymnax >= 0.0.9 returns ``(obs, state, reward, terminated, truncated, info)``
  from ``step``; the inline ``LogWrapper`` folds that back into the
  ``(obs, state, reward, done, info)`` that ``ppo.py`` expects
  (``done = terminated | truncated``) and keeps only the ``discount`` entry
  of gymnax's ``info``, as older gymnax versions returned;
- ``NUM_UPDATES`` is an int (``lax.scan`` needs one) and the ``DEBUG``
  callback is left out.

Do not use it for anything but the benchmark; the project's trainers live in
``agents``.

    >>> out = run(seed=0, total_timesteps=4096)
    >>> sorted(out)  # metrics: per-step LogWrapper info, numpy arrays [NUM_UPDATES, NUM_STEPS, NUM_ENVS]
    ['compile_s', 'final_return', 'metrics', 'num_updates', 'run_s', 'sps', 'steps']
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from functools import partial
from typing import NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct
from flax.linen.initializers import constant, orthogonal
from flax.training.train_state import TrainState


def _gymnax():
    """The gymnax module, imported on first use: importing gymnax runs JAX computations (it starts JAX's
    backend), and gymnax is an optional dependency; importing this module does neither."""
    import gymnax

    return gymnax


#: PureJaxRL's CartPole config (``ppo.py``'s ``__main__``), the same as our ``ppo_gymnax`` preset.
CONFIG = {
    "LR": 2.5e-4,
    "NUM_ENVS": 4,
    "NUM_STEPS": 128,
    "TOTAL_TIMESTEPS": 5e5,
    "UPDATE_EPOCHS": 4,
    "NUM_MINIBATCHES": 4,
    "GAMMA": 0.99,
    "GAE_LAMBDA": 0.95,
    "CLIP_EPS": 0.2,
    "ENT_COEF": 0.01,
    "VF_COEF": 0.5,
    "MAX_GRAD_NORM": 0.5,
    "ACTIVATION": "tanh",
    "ENV_NAME": "CartPole-v1",
    "ANNEAL_LR": True,
}


# ---- purejaxrl/wrappers.py, inline ----
class GymnaxWrapper:
    """Base class for Gymnax wrappers."""

    def __init__(self, env):
        self._env = env

    # provide proxy access to regular attributes of wrapped object
    def __getattr__(self, name):
        return getattr(self._env, name)


class FlattenObservationWrapper(GymnaxWrapper):
    """Flatten the observations of the environment."""

    def __init__(self, env):
        super().__init__(env)

    def observation_space(self, params):
        space = self._env.observation_space(params)
        return _gymnax().environments.spaces.Box(
            low=space.low,
            high=space.high,
            shape=(int(np.prod(space.shape)),),
            dtype=space.dtype,
        )

    @partial(jax.jit, static_argnums=(0,))
    def reset(self, key, params=None):
        obs, state = self._env.reset(key, params)
        obs = jnp.reshape(obs, (-1,))
        return obs, state

    @partial(jax.jit, static_argnums=(0,))
    def step(self, key, state, action, params=None):
        out = self._env.step(key, state, action, params)
        obs = jnp.reshape(out[0], (-1,))
        return (obs,) + tuple(out[1:])


@struct.dataclass
class LogEnvState:
    env_state: object
    episode_returns: float
    episode_lengths: int
    returned_episode_returns: float
    returned_episode_lengths: int
    timestep: int


class LogWrapper(GymnaxWrapper):
    """Log the episode returns and lengths."""

    def __init__(self, env):
        super().__init__(env)

    @partial(jax.jit, static_argnums=(0,))
    def reset(self, key, params=None):
        obs, env_state = self._env.reset(key, params)
        state = LogEnvState(env_state, 0, 0, 0, 0, 0)
        return obs, state

    @partial(jax.jit, static_argnums=(0,))
    def step(self, key, state, action, params=None):
        out = self._env.step(key, state.env_state, action, params)
        if len(out) == 6:  # gymnax >= 0.0.9: (obs, state, reward, terminated, truncated, info)
            obs, env_state, reward, terminated, truncated, info = out
            done = jnp.logical_or(terminated, truncated)
        else:
            obs, env_state, reward, done, info = out
        info = {k: v for k, v in info.items() if k == "discount"}  # what older gymnax returned
        new_episode_return = state.episode_returns + reward
        new_episode_length = state.episode_lengths + 1
        state = LogEnvState(
            env_state=env_state,
            episode_returns=new_episode_return * (1 - done),
            episode_lengths=new_episode_length * (1 - done),
            returned_episode_returns=state.returned_episode_returns * (1 - done) + new_episode_return * done,
            returned_episode_lengths=state.returned_episode_lengths * (1 - done) + new_episode_length * done,
            timestep=state.timestep + 1,
        )
        info["returned_episode_returns"] = state.returned_episode_returns
        info["returned_episode_lengths"] = state.returned_episode_lengths
        info["timestep"] = state.timestep
        info["returned_episode"] = done
        return obs, state, reward, done, info


# ---- the part of distrax.Categorical that ppo.py uses ----
class Categorical:
    def __init__(self, logits):
        self.logits = logits
        self.log_probs = jax.nn.log_softmax(logits, axis=-1)

    def sample(self, seed):
        return jax.random.categorical(seed, self.logits, axis=-1)

    def log_prob(self, value):
        return jnp.take_along_axis(self.log_probs, value[..., None].astype(jnp.int32), axis=-1)[..., 0]

    def entropy(self):
        return -jnp.sum(jnp.exp(self.log_probs) * self.log_probs, axis=-1)


# ---- purejaxrl/ppo.py ----
class ActorCritic(nn.Module):
    action_dim: Sequence[int]
    activation: str = "tanh"

    @nn.compact
    def __call__(self, x):
        if self.activation == "relu":
            activation = nn.relu
        else:
            activation = nn.tanh
        actor_mean = nn.Dense(64, kernel_init=orthogonal(np.sqrt(2)), bias_init=constant(0.0))(x)
        actor_mean = activation(actor_mean)
        actor_mean = nn.Dense(64, kernel_init=orthogonal(np.sqrt(2)), bias_init=constant(0.0))(actor_mean)
        actor_mean = activation(actor_mean)
        actor_mean = nn.Dense(self.action_dim, kernel_init=orthogonal(0.01), bias_init=constant(0.0))(actor_mean)
        pi = Categorical(logits=actor_mean)

        critic = nn.Dense(64, kernel_init=orthogonal(np.sqrt(2)), bias_init=constant(0.0))(x)
        critic = activation(critic)
        critic = nn.Dense(64, kernel_init=orthogonal(np.sqrt(2)), bias_init=constant(0.0))(critic)
        critic = activation(critic)
        critic = nn.Dense(1, kernel_init=orthogonal(1.0), bias_init=constant(0.0))(critic)

        return pi, jnp.squeeze(critic, axis=-1)


class Transition(NamedTuple):
    done: jnp.ndarray
    action: jnp.ndarray
    value: jnp.ndarray
    reward: jnp.ndarray
    log_prob: jnp.ndarray
    obs: jnp.ndarray
    info: jnp.ndarray


def make_train(config):
    config = dict(config)
    config["NUM_UPDATES"] = int(config["TOTAL_TIMESTEPS"] // config["NUM_STEPS"] // config["NUM_ENVS"])
    config["MINIBATCH_SIZE"] = config["NUM_ENVS"] * config["NUM_STEPS"] // config["NUM_MINIBATCHES"]
    env, env_params = _gymnax().make(config["ENV_NAME"])
    env = FlattenObservationWrapper(env)
    env = LogWrapper(env)

    def linear_schedule(count):
        frac = 1.0 - (count // (config["NUM_MINIBATCHES"] * config["UPDATE_EPOCHS"])) / config["NUM_UPDATES"]
        return config["LR"] * frac

    def train(rng):
        # INIT NETWORK
        network = ActorCritic(env.action_space(env_params).n, activation=config["ACTIVATION"])
        rng, _rng = jax.random.split(rng)
        init_x = jnp.zeros(env.observation_space(env_params).shape)
        network_params = network.init(_rng, init_x)
        if config["ANNEAL_LR"]:
            tx = optax.chain(
                optax.clip_by_global_norm(config["MAX_GRAD_NORM"]),
                optax.adam(learning_rate=linear_schedule, eps=1e-5),
            )
        else:
            tx = optax.chain(
                optax.clip_by_global_norm(config["MAX_GRAD_NORM"]),
                optax.adam(config["LR"], eps=1e-5),
            )
        train_state = TrainState.create(
            apply_fn=network.apply,
            params=network_params,
            tx=tx,
        )

        # INIT ENV
        rng, _rng = jax.random.split(rng)
        reset_rng = jax.random.split(_rng, config["NUM_ENVS"])
        obsv, env_state = jax.vmap(env.reset, in_axes=(0, None))(reset_rng, env_params)

        # TRAIN LOOP
        def _update_step(runner_state, unused):
            # COLLECT TRAJECTORIES
            def _env_step(runner_state, unused):
                train_state, env_state, last_obs, rng = runner_state

                # SELECT ACTION
                rng, _rng = jax.random.split(rng)
                pi, value = network.apply(train_state.params, last_obs)
                action = pi.sample(seed=_rng)
                log_prob = pi.log_prob(action)

                # STEP ENV
                rng, _rng = jax.random.split(rng)
                rng_step = jax.random.split(_rng, config["NUM_ENVS"])
                obsv, env_state, reward, done, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                    rng_step, env_state, action, env_params
                )
                transition = Transition(done, action, value, reward, log_prob, last_obs, info)
                runner_state = (train_state, env_state, obsv, rng)
                return runner_state, transition

            runner_state, traj_batch = jax.lax.scan(_env_step, runner_state, None, config["NUM_STEPS"])

            # CALCULATE ADVANTAGE
            train_state, env_state, last_obs, rng = runner_state
            _, last_val = network.apply(train_state.params, last_obs)

            def _calculate_gae(traj_batch, last_val):
                def _get_advantages(gae_and_next_value, transition):
                    gae, next_value = gae_and_next_value
                    done, value, reward = (
                        transition.done,
                        transition.value,
                        transition.reward,
                    )
                    delta = reward + config["GAMMA"] * next_value * (1 - done) - value
                    gae = delta + config["GAMMA"] * config["GAE_LAMBDA"] * (1 - done) * gae
                    return (gae, value), gae

                _, advantages = jax.lax.scan(
                    _get_advantages,
                    (jnp.zeros_like(last_val), last_val),
                    traj_batch,
                    reverse=True,
                    unroll=16,
                )
                return advantages, advantages + traj_batch.value

            advantages, targets = _calculate_gae(traj_batch, last_val)

            # UPDATE NETWORK
            def _update_epoch(update_state, unused):
                def _update_minbatch(train_state, batch_info):
                    traj_batch, advantages, targets = batch_info

                    def _loss_fn(params, traj_batch, gae, targets):
                        # RERUN NETWORK
                        pi, value = network.apply(params, traj_batch.obs)
                        log_prob = pi.log_prob(traj_batch.action)

                        # CALCULATE VALUE LOSS
                        value_pred_clipped = traj_batch.value + (value - traj_batch.value).clip(
                            -config["CLIP_EPS"], config["CLIP_EPS"]
                        )
                        value_losses = jnp.square(value - targets)
                        value_losses_clipped = jnp.square(value_pred_clipped - targets)
                        value_loss = 0.5 * jnp.maximum(value_losses, value_losses_clipped).mean()

                        # CALCULATE ACTOR LOSS
                        ratio = jnp.exp(log_prob - traj_batch.log_prob)
                        gae = (gae - gae.mean()) / (gae.std() + 1e-8)
                        loss_actor1 = ratio * gae
                        loss_actor2 = (
                            jnp.clip(
                                ratio,
                                1.0 - config["CLIP_EPS"],
                                1.0 + config["CLIP_EPS"],
                            )
                            * gae
                        )
                        loss_actor = -jnp.minimum(loss_actor1, loss_actor2)
                        loss_actor = loss_actor.mean()
                        entropy = pi.entropy().mean()

                        total_loss = loss_actor + config["VF_COEF"] * value_loss - config["ENT_COEF"] * entropy
                        return total_loss, (value_loss, loss_actor, entropy)

                    grad_fn = jax.value_and_grad(_loss_fn, has_aux=True)
                    total_loss, grads = grad_fn(train_state.params, traj_batch, advantages, targets)
                    train_state = train_state.apply_gradients(grads=grads)
                    return train_state, total_loss

                train_state, traj_batch, advantages, targets, rng = update_state
                rng, _rng = jax.random.split(rng)
                batch_size = config["MINIBATCH_SIZE"] * config["NUM_MINIBATCHES"]
                assert batch_size == config["NUM_STEPS"] * config["NUM_ENVS"], (
                    "batch size must be equal to number of steps * number of envs"
                )
                permutation = jax.random.permutation(_rng, batch_size)
                batch = (traj_batch, advantages, targets)
                batch = jax.tree_util.tree_map(lambda x: x.reshape((batch_size,) + x.shape[2:]), batch)
                shuffled_batch = jax.tree_util.tree_map(lambda x: jnp.take(x, permutation, axis=0), batch)
                minibatches = jax.tree_util.tree_map(
                    lambda x: jnp.reshape(x, [config["NUM_MINIBATCHES"], -1] + list(x.shape[1:])),
                    shuffled_batch,
                )
                train_state, total_loss = jax.lax.scan(_update_minbatch, train_state, minibatches)
                update_state = (train_state, traj_batch, advantages, targets, rng)
                return update_state, total_loss

            update_state = (train_state, traj_batch, advantages, targets, rng)
            update_state, _loss_info = jax.lax.scan(_update_epoch, update_state, None, config["UPDATE_EPOCHS"])
            train_state = update_state[0]
            metric = traj_batch.info
            rng = update_state[-1]
            runner_state = (train_state, env_state, last_obs, rng)
            return runner_state, metric

        rng, _rng = jax.random.split(rng)
        runner_state = (train_state, env_state, obsv, _rng)
        runner_state, metric = jax.lax.scan(_update_step, runner_state, None, config["NUM_UPDATES"])
        return {"runner_state": runner_state, "metrics": metric}

    return train


# ---- timing harness (not part of ppo.py) ----
def final_return(metrics, fraction: float = 0.05) -> float:
    """Mean return of the episodes that finished in the last ``fraction`` of the updates (at least one
    update); NaN if none did. ``metrics``: the LogWrapper info, arrays [NUM_UPDATES, NUM_STEPS, NUM_ENVS]."""
    done = np.asarray(metrics["returned_episode"], bool)
    last = max(1, round(done.shape[0] * fraction))
    done = done[-last:]
    returns = np.asarray(metrics["returned_episode_returns"], np.float64)[-last:]
    return float(returns[done].mean()) if done.any() else float("nan")


def _config(total_timesteps, env_name):
    config = dict(CONFIG, ENV_NAME=env_name)
    if total_timesteps is not None:
        config["TOTAL_TIMESTEPS"] = total_timesteps
    num_updates = int(config["TOTAL_TIMESTEPS"] // config["NUM_STEPS"] // config["NUM_ENVS"])
    if num_updates < 1:
        raise ValueError(
            f"total_timesteps must be >= NUM_STEPS x NUM_ENVS = {config['NUM_STEPS'] * config['NUM_ENVS']}, "
            f"got {config['TOTAL_TIMESTEPS']}"
        )
    return config, num_updates


def compiled(seed: int = 0, total_timesteps: int | None = None, env_name: str = "CartPole-v1"):
    """``(train, compile_s)``: the whole training compiled (``jax.jit(make_train(config)).lower(rng).compile()``),
    called as ``train(jax.random.PRNGKey(seed))``, and the seconds that took."""
    config, _ = _config(total_timesteps, env_name)
    start = time.perf_counter()
    train = jax.jit(make_train(config)).lower(jax.random.PRNGKey(seed)).compile()
    return train, time.perf_counter() - start


def run(seed: int = 0, total_timesteps: int | None = None, env_name: str = "CartPole-v1") -> dict:
    """Compile and run the whole training once, timing both, on the gymnax env ``env_name`` (PureJaxRL's
    CartPole config, as ``ppo.py`` runs any gymnax env by its ``ENV_NAME``).

    Returns ``metrics`` (the LogWrapper info as numpy arrays [NUM_UPDATES, NUM_STEPS, NUM_ENVS]:
    ``returned_episode_returns``, ``returned_episode_lengths``, ``returned_episode``, ``timestep``,
    ``discount``), ``compile_s`` (``jax.jit(train).lower(rng).compile()``), ``run_s`` (the compiled
    call until ready), ``num_updates``, ``steps`` (env steps run: NUM_UPDATES x NUM_STEPS x NUM_ENVS),
    ``sps`` (steps / run_s) and ``final_return`` (see ``final_return``).
    """
    config, num_updates = _config(total_timesteps, env_name)
    rng = jax.random.PRNGKey(seed)
    train, compile_s = compiled(seed, total_timesteps, env_name)
    start = time.perf_counter()
    out = jax.block_until_ready(train(rng))
    run_s = time.perf_counter() - start
    metrics = {k: np.asarray(v) for k, v in out["metrics"].items()}
    steps = num_updates * config["NUM_STEPS"] * config["NUM_ENVS"]
    return {
        "metrics": metrics,
        "compile_s": compile_s,
        "run_s": run_s,
        "num_updates": num_updates,
        "steps": steps,
        "sps": steps / run_s,
        "final_return": final_return(metrics),
    }


if __name__ == "__main__":
    result = run()
    print({k: v for k, v in result.items() if k != "metrics"})
