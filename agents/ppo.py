"""PPO for batched multi-seat envs, rollout and update fused in ``lax.scan`` (PureJaxRL style).

    trainer = make_train(config, env)         # env: batched protocol (agents.envs)
    runner, metrics = jax.jit(trainer)(key)   # the whole run as ONE compiled call
    # or in chunks, with host work in between:
    runner = trainer.init(key)
    runner, metrics = trainer.run(runner, 10)  # jitted, 10 updates; metrics: dict of float32[10]

One update: a rollout of ``num_steps`` steps of all ``num_envs`` envs x P
seats (every seat acts with the same parameters; bot seats are replaced by
the env), semi-MDP GAE over each learner seat's decisions, then
``update_epochs`` epochs of ``num_minibatches`` shuffled minibatches of the
flattened [T x N x P] samples with the clipped surrogate, value loss and
entropy bonus; non-decision samples have weight 0. Adam (eps 1e-5) after a
global grad-norm clip; the learning rate may anneal linearly to 0.

Hyperparameters in ``agents.config.HPARAM_FIELDS`` are traced: ``trainer(key,
hparams)`` and ``trainer.init(key, hparams)`` take an ``HParams`` pytree
(default: the config's values), so sweeps can vmap over them.

Random streams from the master key: ``fold_in(key, 0)`` initialises the
parameters, ``fold_in(key, 1)`` resets the envs, ``fold_in(key, 2)`` is the
training stream; update ``u`` uses ``fold_in(train, u)`` split into its action
sampling key and its minibatch shuffling key.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import optax
from flax import struct
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from agents import distributed, distributions, league, losses, networks
from agents.config import NUM_SEATS, HParams, TrainConfig
from agents.envs import learner_seats
from agents.gae import gae
from agents.rollout import EPISODE_SUMS, EpisodeTracker, act_and_step, track_episodes
from jaxgame.validation import as_key

INIT_STREAM, ENV_STREAM, TRAIN_STREAM = 0, 1, 2


@struct.dataclass
class Runner:
    """Everything a run needs to continue exactly (the checkpoint)."""

    params: dict
    opt_state: object
    env_state: object
    obs: object  # [N, P, *obs_shape], the observation to act on next
    mask: jax.Array  # bool[N, P, A]
    tracker: EpisodeTracker
    key: jax.Array  # typed key: the training stream
    update: jax.Array  # int32[]: updates done
    hparams: HParams
    league: object  # agents.league.Pool of a league run (config.league_size > 0), else None


def make_network(config: TrainConfig, num_actions: int):
    """The actor-critic of a config; ``networks.PerSeat`` around it for independent learners."""
    network = networks.make_network(config.network, num_actions, config.hidden, config.activation, config.shared_torso)
    return networks.PerSeat(network, NUM_SEATS) if config.independent else network


def make_optimizer(hp: HParams):
    """Global-norm clip then Adam's scaling; the learning rate is applied by the trainer."""
    return optax.chain(optax.clip_by_global_norm(hp.max_grad_norm), optax.scale_by_adam(eps=1e-5))


def learning_rate(config: TrainConfig, hp: HParams, update) -> jax.Array:
    """float32[]: the learning rate of update number ``update`` (0-based)."""
    if not config.anneal_lr:
        return hp.lr
    return hp.lr * (1.0 - update.astype(jnp.float32) / config.num_updates)


def apply_gradients(config, hp, params, opt_state, grads, update):
    """One optimizer step; returns (params, opt_state, grad_norm, lr)."""
    updates, opt_state = make_optimizer(hp).update(grads, opt_state, params)
    lr = learning_rate(config, hp, update)
    params = jax.tree_util.tree_map(lambda p, u: p - lr * u, params, updates)
    return params, opt_state, optax.tree.norm(grads), lr


def init_runner(config: TrainConfig, env, network, key, hparams: HParams | None = None) -> Runner:
    """Parameters, optimizer state and the first env states from the master key."""
    key = as_key(key, "train key")
    hp = config.hparams() if hparams is None else hparams
    env_state, ts = env.reset(jax.random.fold_in(key, ENV_STREAM))
    sample_obs = jax.tree_util.tree_map(lambda x: x[:1, :1], ts.observation)
    params = network.init(jax.random.fold_in(key, INIT_STREAM), sample_obs)
    return Runner(
        params=params,
        opt_state=(jax.vmap(make_optimizer(hp).init) if config.independent else make_optimizer(hp).init)(params),
        env_state=env_state,
        obs=ts.observation,
        mask=ts.action_mask,
        tracker=EpisodeTracker.zeros(*ts.reward.shape),
        key=jax.random.fold_in(key, TRAIN_STREAM),
        update=jnp.int32(0),
        hparams=hp,
        league=league.pool_init(params, config.league_size) if config.league_size else None,
    )


class Trainer:
    """Shared shell of the trainers: ``make_train``'s result, callable ``(key, hparams=None) ->
    (runner, metrics)``, plus ``init`` and ``run`` (a jitted chunk of updates) for the chunked loop.
    Subclasses set ``algo`` and implement ``update(runner) -> (runner, metrics)``.

    Devices (``agents.distributed``): ``self.mesh`` is the data-parallel mesh of ``config.num_devices``,
    or None when that is one device (then nothing below constrains anything: the one-device program).
    With a mesh, the runner's ``env_fields`` are sharded on their leading env axis and the rest is
    replicated (``shardings``); ``init`` and ``run`` return runners placed so, and the metrics replicated.
    """

    algo = ""
    #: Runner fields whose leaves have a leading env axis (sharded over the devices).
    env_fields = ("env_state", "obs", "mask", "tracker")

    def __init__(self, config: TrainConfig, env):
        if config.algo != self.algo:
            raise ValueError(f"{type(self).__name__} needs config.algo == {self.algo!r}, got {config.algo!r}")
        if getattr(env, "num_envs", config.num_envs) != config.num_envs:
            raise ValueError(f"env has num_envs={env.num_envs} but config.num_envs={config.num_envs}")
        self.config = config
        self.env = env
        self.network = make_network(config, env.num_actions)
        self.learner = learner_seats(env)
        self.mesh = distributed.make_mesh(config.num_devices, config.num_envs)
        self.run = jax.jit(self._run, static_argnums=1)

    # ---- placement over the devices (identity without a mesh) ----
    def shardings(self, runner):
        """A pytree like ``runner`` (arrays or ``ShapeDtypeStruct``s) of ``NamedSharding``s; None without a mesh."""
        if self.mesh is None:
            return None
        num_envs = self.config.num_envs

        def field(name, value):
            batched = name in self.env_fields
            return jax.tree_util.tree_map(
                lambda x: NamedSharding(self.mesh, distributed.batch_spec(x.shape, num_envs) if batched else P()),
                value,
            )

        return runner.replace(**{f.name: field(f.name, getattr(runner, f.name)) for f in dataclasses.fields(runner)})

    def constrain(self, runner):
        """The runner placed by ``shardings``: a constraint under jit, a transfer outside."""
        if self.mesh is None:
            return runner
        return jax.lax.with_sharding_constraint(runner, self.shardings(runner))

    def place(self, runner):
        """Host side: move a runner (e.g. restored from a checkpoint) onto the devices as ``shardings`` says."""
        if self.mesh is None:
            return runner
        return jax.device_put(runner, self.shardings(runner))

    def _constrain_envs(self, tree):
        """Inside the scans: keep the leaves with a leading env axis sharded on it."""
        return distributed.constrain_batch(tree, self.mesh, self.config.num_envs)

    def init(self, key, hparams: HParams | None = None) -> Runner:
        return self.constrain(init_runner(self.config, self.env, self.network, key, hparams))

    def __call__(self, key, hparams: HParams | None = None):
        """The whole run: ``(runner, metrics)`` with metrics float32[num_updates] each."""
        return self._run(self.init(key, hparams), self.config.num_updates)

    def _run(self, runner: Runner, num_updates: int):
        def one_update(runner, _):
            runner, metrics = self.update(self.constrain(runner))
            return self.constrain(runner), metrics

        runner, metrics = jax.lax.scan(one_update, self.constrain(runner), None, length=num_updates)
        if self.mesh is not None:
            metrics = jax.lax.with_sharding_constraint(metrics, distributed.replicated(self.mesh))
        return runner, metrics

    def update(self, runner: Runner):
        raise NotImplementedError


class PPO(Trainer):
    """Clipped-surrogate PPO (see the module docstring)."""

    algo = "ppo"

    # ---- one update ----
    def rollout(self, runner: Runner, key):
        """``num_steps`` env steps -> (runner, transitions [T, N, P], episode sums [T]).

        In a league (``agents.league``) the learner's seats change from game to game (``env_state.roles``),
        the pool seats act with the snapshots drawn for the envs' groups at the start of the rollout, and
        the games that end update the pool's statistics."""
        config = self.config
        if config.league_size:
            key, draw_key = jax.random.split(key)
            slots = league.sample_snapshots(runner.league, draw_key, config.league_groups,
                                            prioritized=config.league_sampling == "pfsp")
            group_params = league.snapshot_params(runner.league, slots)

        def step(carry, step_key):
            (env_state, obs, mask, tracker), stats = self._constrain_envs(carry[0]), carry[1]
            learner, others = self.learner, None
            if config.league_size:
                step_key, pool_key = jax.random.split(step_key)
                learner = env_state.roles == league.ROLE_LEARNER
                pool_action = distributions.sample(pool_key, league.pool_logits(self.network, group_params, obs), mask)
                others = (env_state.roles == league.ROLE_POOL, pool_action)
            env_state, ts, transition = act_and_step(
                self.network, runner.params, self.env, step_key, env_state, obs, mask, learner, others
            )
            tracker, sums = track_episodes(tracker, ts, learner)
            if config.league_size:
                stats = league.record_results(stats, slots, ts.info["roles"], ts.done, ts.info["rank"],
                                              config.league_groups)
            carry = (self._constrain_envs((env_state, ts.observation, ts.action_mask, tracker)), stats)
            return carry, (self._constrain_envs(transition), sums)

        # the pool's statistics ride along; its parameters stay out of the loop's carry
        stats = runner.league.replace(params=None) if config.league_size else None
        carry = ((runner.env_state, runner.obs, runner.mask, runner.tracker), stats)
        keys = jax.random.split(key, config.num_steps)
        ((env_state, obs, mask, tracker), stats), (traj, sums) = jax.lax.scan(step, carry, keys)
        runner = runner.replace(env_state=env_state, obs=obs, mask=mask, tracker=tracker)
        if config.league_size:
            runner = runner.replace(league=stats.replace(params=runner.league.params))
        return runner, traj, sums

    def update(self, runner: Runner):
        config, hp = self.config, runner.hparams
        update_key = jax.random.fold_in(runner.key, runner.update)
        act_key, shuffle_key = jax.random.split(update_key)
        runner, traj, sums = self.rollout(runner, act_key)
        _, last_value = self.network.apply(runner.params, runner.obs)
        decision = traj.weight > 0
        advantages, targets = gae(
            traj.reward, traj.value, traj.terminal, decision, last_value, hp.gamma, hp.gae_lambda
        )
        batch = (traj, advantages, targets)
        params, opt_state, mb_metrics = self.optimize(runner.params, runner.opt_state, batch, shuffle_key, hp,
                                                      runner.update)
        mean = {k: v.mean() for k, v in mb_metrics.items()}
        metrics = {
            "loss/policy": mean["policy_loss"],
            "loss/value": mean["value_loss"],
            "loss/entropy": mean["entropy"],
            "loss/approx_kl": mean["approx_kl"],
            "loss/clip_frac": mean["clip_frac"],
            "loss/grad_norm": mean["grad_norm"],
            "loss/explained_variance": losses.explained_variance(traj.value, targets, traj.weight),
            "train/lr": mean["lr"],
            "train/decisions": traj.weight.sum(),
            **{f"sums/{k}": sums[k].sum() for k in EPISODE_SUMS},
        }
        done = runner.update + 1
        if config.league_size:
            pool = league.pool_insert(runner.league, params, done, done % config.snapshot_every == 0)
            runner = runner.replace(league=pool)
            metrics["league/snapshots"] = (pool.update >= 0).sum().astype(jnp.float32)
            metrics["league/loss_rate"] = pool.losses.sum() / jnp.maximum(pool.games.sum(), 1.0)
        runner = runner.replace(params=params, opt_state=opt_state, update=done)
        return runner, metrics

    def optimize(self, params, opt_state, batch, shuffle_key, hp: HParams, update):
        """``update_epochs`` epochs of minibatch steps over ``batch`` = (transitions, advantages, targets), leaves
        [T, N, P, ...]. Returns (params, opt_state, per-minibatch metrics).

        Shared parameters train on all T x N x P samples; independent learners (``config.independent``):
        seat p's parameters and optimizer state train on seat p's T x N samples only, vmapped over seats."""
        if not self.config.independent:
            flat = jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[3:]), batch)
            return self._epochs(self.network, params, opt_state, flat, shuffle_key, hp, update)
        per_seat = jax.tree_util.tree_map(lambda x: jnp.moveaxis(x, 2, 0).reshape((x.shape[2], -1) + x.shape[3:]), batch)
        keys = jax.random.split(shuffle_key, per_seat[1].shape[0])
        return jax.vmap(lambda p, o, b, k: self._epochs(self.network.base, p, o, b, k, hp, update))(
            params, opt_state, per_seat, keys
        )

    def _epochs(self, network, params, opt_state, flat, shuffle_key, hp: HParams, update):
        config = self.config
        num_samples = flat[1].shape[0]

        def minibatch_step(carry, mb):
            params, opt_state = carry
            mb_traj, mb_adv, mb_targets = mb

            def loss_fn(p):
                logits, value = network.apply(p, mb_traj.obs)
                return losses.ppo_loss(
                    logits, value, mb_traj.mask, mb_traj.action, mb_traj.log_prob, mb_traj.value,
                    mb_adv, mb_targets, mb_traj.weight, hp.clip_eps, hp.vf_coef, hp.ent_coef,
                    clip_value=config.clip_value, normalize_advantages=config.normalize_advantages,
                )

            (_, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
            params, opt_state, grad_norm, lr = apply_gradients(config, hp, params, opt_state, grads, update)
            return (params, opt_state), {**metrics, "grad_norm": grad_norm, "lr": lr}

        def epoch(carry, key):
            order = jax.random.permutation(key, num_samples)
            shuffled = jax.tree_util.tree_map(
                lambda x: x[order].reshape((config.num_minibatches, -1) + x.shape[1:]), flat
            )
            shuffled = distributed.constrain_axis(shuffled, self.mesh, 1)  # each device: a share of every minibatch
            return jax.lax.scan(minibatch_step, carry, shuffled)

        epoch_keys = jax.random.split(shuffle_key, config.update_epochs)
        (params, opt_state), mb_metrics = jax.lax.scan(epoch, (params, opt_state), epoch_keys)
        return params, opt_state, mb_metrics


def make_train(config: TrainConfig, env) -> PPO:
    """``make_train(config, env) -> train``; ``train(key) -> (runner, metrics)`` (see the module docstring)."""
    return PPO(config, env)


__all__ = ["PPO", "Runner", "init_runner", "make_train"]
