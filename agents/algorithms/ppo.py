"""PPO for batched multi-seat envs, rollout and update fused in ``lax.scan`` (PureJaxRL style).

    trainer = make_train(config, env)         # agents.algorithms.registry; env: agents.envs.api.BatchedEnv
    runner, metrics = jax.jit(trainer)(key)   # the whole run as ONE compiled call
    # or in chunks, with host work in between:
    runner = trainer.init(key)
    run = jax.jit(trainer.run, static_argnums=1)   # the caller jits the chunk
    runner, metrics = run(runner, 10)           # 10 updates; metrics: dict of float32[10]

One update: a rollout of ``num_steps`` steps of all ``num_envs`` envs x P
seats (every seat acts with the same parameters; bot seats are replaced by
the env), semi-MDP GAE over each learner seat's decisions (``targets_with_pending``), then
``update_epochs`` epochs of ``num_minibatches`` shuffled minibatches of the
flattened [T x N x P] samples with the clipped surrogate, value loss and
entropy bonus; non-decision samples have weight 0. Adam (eps 1e-5) after a
global grad-norm clip; the learning rate may anneal linearly to 0.

Rollout edges: a seat whose state after the rollout is not a decision of its
own (its turn ended, it waits for the fight) has no value there to bootstrap
from, so its last decision stays open (``Runner.pending``, with the rewards
collected since) and is trained in the update whose rollout shows its next
decision or its episode's end: it goes back on row 0 of that rollout (a
non-decision step of the seat by construction), collects the rewards before
the seat decides again (that round's fight, a knock-out's placement) and
bootstraps from that decision's value. Every reward lands in exactly one
target. Its log-probability and value are those of the parameters that took
it, one update older (the clipped ratio bounds the step, as for any sample).
On an env where every sample is a decision with every action legal
(``Trainer.dense``: it declares ``all_actions_legal``, e.g. gymnax's) nothing is
ever left open: the update takes the textbook GAE, unmasked log-probabilities
and plain means, the same numbers with fewer operations.

A recurrent policy (``network="gru"``) changes five steps, all in ``self.sequences``
(``agents.algorithms.sequences``): the rollout steps its carry per env and seat and resets it where a seat's
episode ends, the update keeps the carry the rollout started from, and its minibatches are whole (env, seat)
sequences over which the network is re-run from that carry; an open decision carried to the next rollout keeps
the carry it was taken with. A feed-forward policy's program is the one it always was.

Hyperparameters in ``agents.config.HPARAM_FIELDS`` are traced: ``trainer(key,
hparams)`` and ``trainer.init(key, hparams)`` take an ``HParams`` pytree
(default: the config's values), so sweeps can vmap over them.

Random streams from the master key: ``fold_in(key, 0)`` initialises the
parameters, ``fold_in(key, 1)`` resets the envs, ``fold_in(key, 2)`` is the
training stream; update ``u`` uses ``fold_in(train, u)`` split into its action
sampling key and its minibatch shuffling key.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from agents.algorithms.base import Runner, Trainer, apply_gradients
from agents.algorithms.sequences import sequences_for
from agents.config import HParams
from agents.core import losses
from agents.core.gae import gae, semi_mdp_gae
from agents.core.rollout import EPISODE_SUMS, Batch, Pending, Transition, act_and_step, select_seats, track_episodes
from agents.utils import distributed


def targets_with_pending(traj: Transition, pending: Pending, end_value, end_decision, gamma, lam):
    """GAE targets of a rollout whose open decisions carry over (``agents.core.gae.semi_mdp_gae``).

    ``pending``'s active seats (open decisions of the previous rollout) go back on row 0, a non-decision
    step of theirs by construction (the state they ended on was not a decision); that row's reward and
    discount follow on theirs. ``end_value`` float32[N, P] and ``end_decision`` bool[N, P] are the value
    and decision flag of the state after the rollout.

    Returns (traj, advantages, targets, pending): ``traj.weight`` is 1 on the decisions trained now (taken
    in this rollout or carried in, their next decision seen or their episode over); ``pending`` holds the
    decisions left open, with their rewards and discount so far."""
    gamma = jnp.asarray(gamma, jnp.float32)
    discount = gamma * (1.0 - traj.terminal.astype(jnp.float32))
    carried = pending.active
    first = jax.tree_util.tree_map(lambda x: x[0], traj)
    first = first.replace(
        obs=select_seats(carried, pending.obs, first.obs),
        mask=select_seats(carried, pending.mask, first.mask),
        action=jnp.where(carried, pending.action, first.action),
        log_prob=jnp.where(carried, pending.log_prob, first.log_prob),
        value=jnp.where(carried, pending.value, first.value),
        reward=jnp.where(carried, pending.ret + pending.discount * first.reward, first.reward),
    )
    traj = jax.tree_util.tree_map(lambda row, x: x.at[0].set(row), first, traj)
    discount = discount.at[0].set(jnp.where(carried, pending.discount * discount[0], discount[0]))
    decision = (traj.weight > 0).at[0].set(carried | (traj.weight[0] > 0))
    result = semi_mdp_gae(traj.reward, traj.value, discount, decision, end_value, end_decision, lam)

    is_open = result.open  # at most one per seat: its last decision
    row = jnp.argmax(is_open, axis=0)  # [N, P]

    def at_row(x):
        index = row.reshape((1,) + row.shape + (1,) * (x.ndim - 1 - row.ndim))
        return jnp.take_along_axis(x, index, axis=0)[0]

    pending = Pending(
        obs=jax.tree_util.tree_map(at_row, traj.obs),
        mask=at_row(traj.mask),
        action=at_row(traj.action),
        log_prob=at_row(traj.log_prob),
        value=at_row(traj.value),
        ret=at_row(result.open_return),
        discount=at_row(result.open_discount),
        active=is_open.any(axis=0),
    )
    traj = traj.replace(weight=result.trained.astype(jnp.float32))
    return traj, result.advantages, result.targets, pending


#: What each minibatch step reports after its loss's own metrics: the gradient norm and the learning rate
STEP_METRICS = ("grad_norm", "lr")


class PPOLoss:
    """PPO's minibatch loss: ``losses.ppo_loss`` (clipped surrogate, clipped value loss, entropy bonus) of the
    network's outputs. ``names``: the metrics it reports, in order; ``log`` turns their means over an update's
    minibatches into the logged ``loss/...`` scalars."""

    names = ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_frac")

    def __init__(self, clip_value: bool = True, normalize_advantages: bool = True):
        self.clip_value = clip_value
        self.normalize_advantages = normalize_advantages

    def __call__(self, logits, value, batch: Batch, hp: HParams, update):
        """``(loss float32[], metrics)`` of one minibatch: ``logits`` float32[B, A], ``value`` float32[B] of the
        network on ``batch`` (leaves [B, ...]; its ``extra`` unused here)."""
        traj = batch.traj
        return losses.ppo_loss(
            logits,
            value,
            traj.mask,
            traj.action,
            traj.log_prob,
            traj.value,
            batch.advantages,
            batch.targets,
            traj.weight,
            hp.clip_eps,
            hp.vf_coef,
            hp.ent_coef,
            clip_value=self.clip_value,
            normalize_advantages=self.normalize_advantages,
        )

    def log(self, mean: dict, traj: Transition, targets) -> dict:
        """An update's logged losses from the means of its minibatch metrics (``names`` + ``STEP_METRICS``)."""
        return {
            "loss/policy": mean["policy_loss"],
            "loss/value": mean["value_loss"],
            "loss/entropy": mean["entropy"],
            "loss/approx_kl": mean["approx_kl"],
            "loss/clip_frac": mean["clip_frac"],
            "loss/grad_norm": mean["grad_norm"],
            "loss/explained_variance": losses.explained_variance(traj.value, targets, traj.weight),
            "train/lr": mean["lr"],
        }


class OwnPlay:
    """How PPO makes its samples: the learner's seats play the policy's own samples (no frozen policies, nothing
    added to the batch). ``agents.algorithms.bc.TeacherPlay`` and ``agents.algorithms.distill.FrozenPolicies``
    are the other ways."""

    #: the frozen policies (``agents.config.REFERENCE_ROLES``) it reads: none
    roles: tuple[str, ...] = ()

    def network(self, network):
        """The network the learner trains, built from the config's (unchanged here)."""
        return network

    def act(self, network, env, dense, params, key, env_state, obs, mask, learner, others):
        """One rollout step (``agents.core.rollout.act_and_step``) with the learner's policy."""
        return act_and_step(network, params, env, key, env_state, obs, mask, learner, others, dense)

    def after_rollout(self, traj: Transition, key, update) -> Transition:
        """The rollout's transitions before GAE (``key``: the rollout's key; ``update``: int32[] updates done)."""
        return traj

    def extras(self, traj: Transition, update, inputs) -> tuple:
        """``(traj, extra)``: per-sample extras computed once an update for the loss (None here)."""
        return traj, None

    def use_references(self, references: dict) -> None:
        if references:
            raise ValueError(f"this trainer reads no frozen policies, got {sorted(references)}")

    def inputs(self) -> tuple:
        """The jitted chunk's arguments after the runner: none."""
        return ()

    def identity(self) -> dict:
        """JSON-able names of what ``inputs`` read, saved in every checkpoint: none."""
        return {}


class PPO(Trainer):
    """PPO's machinery (see the module docstring): a rollout of the learner's play, semi-MDP GAE, epochs of
    shuffled minibatches. What is learned is composed: ``loss`` (default ``PPOLoss``: the clipped surrogate;
    ``agents.algorithms.bc.BCLoss``: behaviour cloning; ``agents.algorithms.distill.KLTerms`` adds KL terms to
    frozen policies) and ``samples`` (default ``OwnPlay``: how the rollout acts and what the batch carries)."""

    algos = ("ppo", "bc", "a2c")
    trains_recurrent = True

    def __init__(self, config, env, loss=None, samples=None, gae_lambda: float | None = None):
        if config.run.algo not in self.algos:
            raise ValueError(f"PPO's machinery trains algo in {self.algos}, got config.run.algo={config.run.algo!r}")
        self.algo = config.run.algo
        super().__init__(config, env)
        self.loss = loss or PPOLoss(config.ppo.clip_value, config.loss.normalize_advantages)
        self.samples = samples or OwnPlay()
        #: the GAE lambda of the targets: fixed (``agents.algorithms.a2c_windows``' TD(0): 0), or None for the
        #: traced ``hparams.gae_lambda``
        self.gae_lambda = gae_lambda
        #: what the policy's memory changes (``agents.algorithms.sequences``): shuffled samples, or whole sequences
        self.sequences = sequences_for(self.network)
        if self.algo == "a2c" and (not self.sequences.recurrent or loss is None):
            raise ValueError(
                "PPO's machinery trains algo='a2c' only as a recurrent policy's windows with an A2C loss "
                "(agents.algorithms.a2c_windows.windowed_a2c); a feed-forward policy's A2C is the streaming one "
                "(agents.algorithms.a2c.StreamingA2C, make_train picks it)"
            )
        if self.sequences.recurrent:
            self._check_recurrent(config)
        self.network = self.samples.network(self.network)
        #: what each minibatch step reports: the loss's metrics, then the gradient norm and the learning rate
        self.minibatch_metrics = tuple(self.loss.names) + STEP_METRICS
        if config.ppo.shuffle == "local" and self.mesh is not None:
            devices = self.mesh.devices.size
            share = config.ppo_batch // devices  # the envs are split evenly (make_mesh checks it)
            if share % config.ppo.num_minibatches:
                raise ValueError(
                    f"TrainConfig.num_minibatches must divide each device's share of the rollout batch with "
                    f"shuffle='local' (num_envs / {devices} devices x num_steps x learner seats = {share}), "
                    f"got {config.ppo.num_minibatches}"
                )

    def _check_recurrent(self, config) -> None:
        """A recurrent network trains on its own play with PPO's loss for now, its minibatches whole sequences."""
        if type(self.samples) is not OwnPlay or getattr(self.loss, "held_out", None) is not None:
            raise ValueError(
                f"TrainConfig.net.network={config.net.network!r} (a recurrent network) trains on its own play with "
                "PPO's or A2C's loss for now: no behaviour cloning, teacher or anchor"
            )
        sequences = config.run.num_envs * int(self.learner.sum())
        if sequences % config.ppo.num_minibatches:
            raise ValueError(
                f"TrainConfig.ppo.num_minibatches must divide the (env, seat) sequences of a recurrent network's "
                f"update, num_envs x learner seats = {sequences}, got {config.ppo.num_minibatches}"
            )

    # ---- what the samples declare ----
    @property
    def roles(self) -> tuple[str, ...]:
        return self.samples.roles

    def use_references(self, references: dict) -> None:
        """Give the trainer its frozen policies (``agents.policies.frozen.load_references``)."""
        self.samples.use_references(references)

    def chunk_inputs(self) -> tuple:
        return self.samples.inputs()

    def input_identity(self) -> dict:
        return self.samples.identity()

    # ---- one update ----
    def rollout(self, runner: Runner, key, *inputs):
        """``num_steps`` env steps -> (runner, transitions [T, N, P], episode sums [T]).

        ``self.players`` (``agents.league.pool``) says who plays which seat: without a league the learner plays its
        fixed seats; in a league the learner's seats change from game to game, the pool seats act with the
        snapshot their env's game drew when it started (one per game), and the games that end are credited to
        that snapshot in the pool's statistics."""
        config, players = self.config, self.players
        rollout_key = key
        key, context = players.start(runner.league, key, *inputs)

        def step(carry, step_key):
            (env_state, obs, mask, tracker, memory), stats = self._constrain_envs(carry[0]), carry[1]
            step_key, learner, others = players.seats(context, env_state, obs, mask, step_key)
            env_state, ts, transition, memory = self.sequences.act(
                self._samples_act, self.network, runner.params, memory, step_key, env_state, obs, mask, learner, others
            )
            tracker, sums = track_episodes(tracker, ts, learner)
            stats = players.record(context, stats, ts)
            carry = (self._constrain_envs((env_state, ts.observation, ts.action_mask, tracker, memory)), stats)
            return carry, (self._constrain_envs(transition), sums)

        memory = getattr(runner, "memory", None)  # a recurrent policy's (RecurrentRunner), else None
        carry = ((runner.env_state, runner.obs, runner.mask, runner.tracker, memory), players.stats(runner.league))
        keys = jax.random.split(key, config.ppo.num_steps)
        ((env_state, obs, mask, tracker, memory), stats), (traj, sums) = jax.lax.scan(step, carry, keys)
        after = dict(
            env_state=env_state, obs=obs, mask=mask, tracker=tracker, league=players.finish(runner.league, stats)
        )
        runner = runner.replace(**after, **({} if memory is None else {"memory": memory}))
        return runner, self.samples.after_rollout(traj, rollout_key, runner.update), sums

    def _samples_act(self, network, params, key, env_state, obs, mask, learner, others):
        """One rollout step of ``self.samples`` (``OwnPlay.act``) on this trainer's env."""
        return self.samples.act(network, self.env, self.dense, params, key, env_state, obs, mask, learner, others)

    def training_batch(self, traj: Transition, advantages, targets, update, inputs) -> Batch:
        """The update's samples, leaves [T, N, P, ...], as a ``Batch``; its ``extra`` is what the samples add once
        per sample for the loss (``OwnPlay``: None; ``agents.algorithms.distill``: the frozen policies' logits).
        ``update``: the updates done (int32[]); ``inputs``: ``chunk_inputs()``."""
        traj, extra = self.samples.extras(traj, update, inputs)
        return Batch(traj, advantages, targets, extra)

    def minibatch_loss(self, network, params, batch: Batch, hp: HParams, update):
        """``(loss, metrics)`` of one minibatch (leaves [B, ...]; a recurrent policy's [T, B, ...] sequences): the
        network's outputs (``self.sequences.outputs``), then ``self.loss``."""
        logits, value, batch = self.sequences.outputs(network, params, batch)
        return self.loss(logits, value, batch.replace(traj=self._dense_view(batch.traj)), hp, update)

    def _dense_view(self, traj: Transition) -> Transition:
        """``traj`` with ``mask`` and ``weight`` None when they are all ones (``Trainer.dense``)."""
        return traj.replace(mask=None, weight=None) if self.dense else traj

    def update(self, runner: Runner, *inputs):
        hp = runner.hparams
        update_key = jax.random.fold_in(runner.key, runner.update)
        act_key, shuffle_key = jax.random.split(update_key)
        runner, traj, batch, sums, decisions = self.collect(runner, act_key, *inputs)
        held_out = self.held_out_metrics(runner.params, traj)  # before the update trains on these samples
        params, opt_state, mb_metrics = self.optimize(
            runner.params, runner.opt_state, batch, shuffle_key, hp, runner.update
        )
        mean = {k: v.mean() for k, v in mb_metrics.items()}
        metrics = {
            **self.loss.log(mean, self._dense_view(traj), batch.targets),
            **held_out,
            "train/decisions": decisions,
            **{f"sums/{k}": sums[k].sum() for k in EPISODE_SUMS},
        }
        done = runner.update + 1
        pool, league_metrics = self.players.after_update(runner.league, params, done)
        runner = runner.replace(params=params, opt_state=opt_state, update=done, league=pool)
        return runner, {**metrics, **league_metrics}

    def collect(self, runner: Runner, act_key, *inputs):
        """One update's samples: the rollout (``act_key``: its key) and the GAE targets.

        Returns ``(runner, traj, batch, sums, decisions)``: ``runner`` after the rollout with the decisions left
        open in ``pending``; ``traj`` the rollout's transitions [T, N, P] after GAE (weight 1 on the decisions
        trained now, the carried-in ones on row 0); ``batch`` the ``Batch`` the epochs train on (``training_batch``,
        with a recurrent policy's ``SequenceStart`` in ``memory``); ``sums`` the episode sums [T] per name;
        ``decisions`` float32[] the learner decisions taken in this rollout (trained now or, if left open, later)."""
        hp = runner.hparams
        lam = hp.gae_lambda if self.gae_lambda is None else jnp.asarray(self.gae_lambda, jnp.float32)
        pending = runner.pending
        memory = getattr(runner, "memory", None)  # the recurrent policy's memory before the rollout, else None
        runner, traj, sums = self.rollout(runner, act_key, *inputs)
        end_value = self.sequences.end_value(self.network, runner.params, runner)
        start = self.sequences.start(memory, traj, None if self.dense else pending.active)
        decisions = traj.weight.sum()  # taken in this rollout (trained now or, if left open, in a later update)
        if self.dense:  # every state is a decision: nothing is ever left open, the textbook GAE
            advantages, targets = gae(
                traj.reward, traj.value, traj.terminal, jnp.ones_like(traj.terminal), end_value, hp.gamma, lam
            )
        else:
            traj, advantages, targets, pending = targets_with_pending(
                traj, pending, end_value, runner.mask.sum(-1) > 1, hp.gamma, lam
            )
        batch = self.training_batch(traj, advantages, targets, runner.update, inputs).replace(memory=start)
        return runner.replace(pending=pending), traj, batch, sums, decisions

    def held_out_metrics(self, params, traj: Transition) -> dict:
        """The loss's metrics on samples no update has trained on: ``self.loss.held_out`` (a loss without it: {}),
        summed over the learner samples of ``traj`` (leaves [T, N, P, ...], the update's samples after GAE: the
        decisions it trains on carry weight 1) under ``params``, the parameters before the update. One forward
        pass per rollout step (``lax.map`` over T, so memory is one step's). Returns ``{name: float32[]}``, each
        the weighted mean ``sum(value * weight) / max(sum(weight), 1)``."""
        held_out = getattr(self.loss, "held_out", None)
        if held_out is None:
            return {}

        def step(t: Transition):
            logits, _ = self.network.apply(params, t.obs)
            return held_out(logits, self._dense_view(t))  # {name: (sum of value x weight, sum of weight)}

        sums = jax.lax.map(step, self.learner_samples(traj))
        return {name: total.sum() / jnp.maximum(weight.sum(), 1.0) for name, (total, weight) in sums.items()}

    def optimize(self, params, opt_state, batch, shuffle_key, hp: HParams, update):
        """``update_epochs`` epochs of minibatch steps over ``batch`` (``training_batch``'s ``Batch``), leaves
        [T, N, P, ...]. Returns (params, opt_state, the means of ``minibatch_metrics``
        over the minibatches).

        Shared parameters train on the T x N samples of each seat the learner plays (``learner_samples``: with
        bot opponents, the bots' seats, whose samples carry weight 0, are left out, so an update costs what the
        learner's own samples cost); independent learners (``config.net.independent``): seat p's parameters and
        optimizer state train on seat p's T x N samples only, vmapped over seats.

        ``config.ppo.shuffle == "local"`` on several devices: ``shard_map`` over the data axis, each device runs the
        epochs on its own envs' samples ([T, N / D, P, ...]: nothing of the rollout is gathered) with its own
        permutation (the shuffle key folded with its device index), and the gradients and metrics of every
        minibatch are averaged over the devices (``jax.lax.pmean``) before the (replicated) optimizer step."""
        batch = self.learner_samples(batch)
        if self.config.ppo.shuffle == "global" or self.mesh is None:
            return self._optimize(params, opt_state, batch, shuffle_key, hp, update, None)
        sharded, replicated = P(None, distributed.DATA_AXIS), P()
        local = jax.shard_map(
            functools.partial(self._optimize, axis_name=distributed.DATA_AXIS),
            mesh=self.mesh,
            in_specs=(replicated, replicated, sharded, replicated, replicated, replicated),
            out_specs=(replicated, replicated, replicated),
            check_vma=False,  # the gradients are averaged by hand (pmean); the outputs are equal on every device
        )
        return local(params, opt_state, batch, shuffle_key, hp, update)

    def _optimize(self, params, opt_state, batch, shuffle_key, hp: HParams, update, axis_name):
        if axis_name is not None:
            shuffle_key = jax.random.fold_in(shuffle_key, jax.lax.axis_index(axis_name))
        if not self.config.net.independent:
            flat = self.sequences.flatten(batch)
            return self._epochs(self.network, params, opt_state, flat, shuffle_key, hp, update, axis_name)
        per_seat = jax.tree_util.tree_map(
            lambda x: jnp.moveaxis(x, 2, 0).reshape((x.shape[2], -1) + x.shape[3:]), batch
        )
        keys = jax.random.split(shuffle_key, per_seat.advantages.shape[0])
        return jax.vmap(lambda p, o, b, k: self._epochs(self.network.base, p, o, b, k, hp, update, axis_name))(
            params, opt_state, per_seat, keys
        )

    def learner_samples(self, batch):
        """``batch`` (leaves [T, N, P, ...]) on the seats whose samples are training data: the learner's fixed
        seats (``self.learner``, static) when some seats are bots', else all P (self-play; a league's env marks
        every seat a learner seat, since its roles change from game to game)."""
        seats = np.flatnonzero(self.learner)
        if seats.size == self.learner.size:
            return batch
        return jax.tree_util.tree_map(lambda x: x[:, :, seats], batch)

    def _epochs(self, network, params, opt_state, flat, shuffle_key, hp: HParams, update, axis_name=None):
        config = self.config

        def minibatch_step(carry, mb):
            params, opt_state = carry
            (_, metrics), grads = jax.value_and_grad(
                lambda p: self.minibatch_loss(network, p, mb, hp, update), has_aux=True
            )(params)
            if axis_name is not None:  # shuffle="local": every device's minibatch counts the same
                grads, metrics = jax.lax.pmean((grads, metrics), axis_name)
            params, opt_state, grad_norm, lr = apply_gradients(config, hp, params, opt_state, grads, update)
            metrics = {**metrics, "grad_norm": grad_norm, "lr": lr}
            return (params, opt_state), jnp.stack([metrics[k] for k in self.minibatch_metrics])  # one output

        def epoch(carry, key):
            shuffled = self.sequences.minibatches(key, flat, config.ppo.num_minibatches)
            if axis_name is None:  # global shuffle: each device computes a share of every minibatch
                shuffled = distributed.constrain_axis(shuffled, self.mesh, 1)
            return jax.lax.scan(minibatch_step, carry, shuffled)

        epoch_keys = jax.random.split(shuffle_key, config.ppo.update_epochs)
        (params, opt_state), stacked = jax.lax.scan(epoch, (params, opt_state), epoch_keys)  # [E, M, K]
        means = stacked.mean(axis=(0, 1))
        return params, opt_state, {k: means[i] for i, k in enumerate(self.minibatch_metrics)}


__all__ = ["PPO", "STEP_METRICS", "OwnPlay", "PPOLoss", "targets_with_pending"]
