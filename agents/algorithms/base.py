"""What every trainer shares: the runner (a run's whole state), its initialisation from the master key, the
optimizer step, and the ``Trainer`` shell (``init``, the chunk ``run``, device placement; callers jit).

``agents.algorithms.ppo.PPO`` (PPO's machinery, composed with a loss and a way to make samples),
``agents.algorithms.a2c.StreamingA2C`` and ``agents.algorithms.bc.DatasetCloning`` implement the ``Trainer``
shell's ``update(runner) -> (runner, metrics)``; ``agents.algorithms.registry.make_train(config, env)`` builds
one from ``config``.

Random streams from the master key: ``fold_in(key, 0)`` initialises the parameters, ``fold_in(key, 1)``
resets the envs, ``fold_in(key, 2)`` is the training stream (docs/training.md, "Random streams").
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct

from agents.config import NUM_SEATS, HParams, TrainConfig
from agents.core import networks
from agents.core.recurrent import is_recurrent
from agents.core.rollout import EpisodeTracker, Memory, Pending
from agents.envs.api import BatchedEnv
from agents.league import pool as league
from agents.utils import distributed, health
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
    league: object  # agents.league.pool.Pool of a league run (config.league.league_size > 0), else None
    pending: Pending  # [N, P]: each seat's decision whose next decision has not been seen yet (agents.core.gae)


@struct.dataclass
class RecurrentRunner(Runner):
    """The runner of a recurrent policy (``network="gru"``): a ``Runner`` and the policy's memory of every env and
    seat, saved and resumed with it. A subclass, so a feed-forward run's checkpoint keeps its layout."""

    memory: Memory  # [N, P]: the carry to act on next, its reset flag, each seat's last decision's carry


def make_network(config: TrainConfig, num_actions: int):
    """The actor-critic of a config; ``networks.FrameView`` around it when it reads only what the frame shows,
    ``networks.PerSeat`` around that for independent learners."""
    network = networks.actor_critic(
        config.net.network, num_actions, config.net.hidden, config.net.activation, config.net.shared_torso
    )
    if config.net.view == "frame":
        network = networks.FrameView(network)
    return networks.PerSeat(network, NUM_SEATS) if config.net.independent else network


def make_optimizer(hp: HParams):
    """The optimizer's stateful part: global-norm clip then Adam's scaling (``apply_gradients`` adds the stateless
    weight decay and learning rate)."""
    return optax.chain(optax.clip_by_global_norm(hp.max_grad_norm), optax.scale_by_adam(eps=1e-5))


def lr_schedule(config: TrainConfig, hp: HParams) -> optax.Schedule:
    """The optax schedule of ``config.optim.lr_schedule`` from ``hp.lr``: update number (int32[], from 0) ->
    float32[] learning rate, constant, or decaying linearly or along a cosine to 0 at the run's last update, times
    the warmup's ``min((update + 1) / warmup_updates, 1)``."""
    kind, updates = config.optim.lr_schedule, config.num_updates
    if kind == "linear":
        decayed = optax.schedules.linear_schedule(hp.lr, 0.0, updates)
    elif kind == "cosine":
        decayed = optax.schedules.cosine_decay_schedule(hp.lr, updates)
    else:
        decayed = optax.schedules.constant_schedule(hp.lr)
    warmup = config.optim.warmup_updates
    if not warmup:
        return decayed
    return lambda update: decayed(update) * jnp.minimum((jnp.asarray(update, jnp.float32) + 1.0) / warmup, 1.0)


def apply_gradients(config, hp, params, opt_state, grads, update):
    """One optimizer step of update number ``update``: the clipped Adam's step (``opt_state`` carries its moments),
    then ``config.optim.weight_decay``'s decoupled decay (AdamW's) and the scheduled learning rate, both stateless
    optax transforms; returns (params, opt_state, grad_norm, lr)."""
    updates, opt_state = make_optimizer(hp).update(grads, opt_state, params)
    lr = lr_schedule(config, hp)(update)
    step = [optax.add_decayed_weights(config.optim.weight_decay)] if config.optim.weight_decay else []
    step = optax.chain(*step, optax.scale_by_learning_rate(lr))  # static: plain Adam's program has no decay term
    updates, _ = step.update(updates, step.init(params), params)
    return optax.apply_updates(params, updates), opt_state, optax.tree.norm(grads), lr


def init_runner(config: TrainConfig, env, network, key, hparams: HParams | None = None) -> Runner:
    """Parameters, optimizer state and the first env states from the master key."""
    key = as_key(key, "train key")
    hp = config.hparams.traced() if hparams is None else hparams
    env_state, ts = env.reset(jax.random.fold_in(key, ENV_STREAM))
    sample_obs = jax.tree_util.tree_map(lambda x: x[:1, :1], ts.observation)
    params = network.init(jax.random.fold_in(key, INIT_STREAM), sample_obs)
    fields = dict(
        params=params,
        opt_state=(jax.vmap(make_optimizer(hp).init) if config.net.independent else make_optimizer(hp).init)(params),
        env_state=env_state,
        obs=ts.observation,
        mask=ts.action_mask,
        tracker=EpisodeTracker.zeros(*ts.reward.shape),
        key=jax.random.fold_in(key, TRAIN_STREAM),
        update=jnp.int32(0),
        hparams=hp,
        league=league.pool_init(params, config.league.league_size, config.run.num_envs)
        if config.league.league_size
        else None,
        pending=Pending.empty(ts.observation, ts.action_mask),
    )
    if is_recurrent(network):
        return RecurrentRunner(**fields, memory=Memory.initial(network, ts.action_mask.shape[:-1]))
    return Runner(**fields)


def check_trainer_env(name: str, algo: str, config: TrainConfig, env) -> None:
    """What every trainer checks first: ``config``'s algorithm is ``algo`` (the trainer ``name``'s), ``env`` keeps
    the batched-env contract (``agents.envs.api.BatchedEnv``) with ``config``'s number of envs."""
    if config.run.algo != algo:
        raise ValueError(f"{name} needs config.run.algo == {algo!r}, got {config.run.algo!r}")
    if not isinstance(env, BatchedEnv):
        raise TypeError(
            f"{type(env).__name__} does not have the batched-env interface the trainers step "
            "(agents.envs.api.BatchedEnv; check an adapter with agents.envs.api.check_env)"
        )
    if env.num_envs != config.run.num_envs:
        raise ValueError(f"env has num_envs={env.num_envs} but config.run.num_envs={config.run.num_envs}")


@dataclasses.dataclass(frozen=True)
class TrainerFacts:
    """What the run library (the host) needs to know about a trainer, in one frozen record beside its compiled part
    (``trainer.facts``), so the host never branches on the algorithm."""

    players_per_step: int
    """samples one env step makes (its seats): the throughput's seat-steps are env steps x this"""
    sample_unit: str = "seat-steps"
    """what the progress line's throughput counts"""
    runs_upto: bool = True
    """``run_upto`` runs the trainer's shorter last chunk in the full chunk's program (else it compiles its own)"""
    roles: tuple[str, ...] = ()
    """the frozen policies (``agents.config.REFERENCE_ROLES``) it reads: the run library loads them
    (``agents.policies.frozen.load_references``) and hands them to ``use_references`` before the first chunk"""
    reads_recording: bool = False
    """it clones a recording: the run library reads ``config.bc.bc_dataset`` and hands it to ``use_recording``"""


class Trainer:
    """Shared shell of the trainers: ``make_train``'s result, callable ``(key, hparams=None) ->
    (runner, metrics)``, plus ``init`` and ``run`` (a chunk of updates; the caller jits it) for the chunked loop.
    An algorithm's trainer sets ``algo`` and implements ``update(runner) -> (runner, metrics)``: PPO's machinery
    (``agents.algorithms.ppo.PPO``, composed with a loss and a way to make its samples), the streaming A2C and the
    cloning of a recording. The run library asks the trainer what it needs (``facts``, ``chunk_inputs``,
    ``input_identity``) instead of branching on the algorithm; the console line is the run
    library's (``agents.run.progress_line``), from the metrics' names.

    Devices (``agents.utils.distributed``): ``self.mesh`` is the data-parallel mesh of ``config.run.num_devices``,
    or None when that is one device (then nothing below constrains anything: the one-device program).
    With a mesh, the runner's ``env_fields`` are sharded on their leading env axis and the rest is
    replicated (``shardings``); ``init`` and ``run`` return runners placed so, and the metrics replicated.
    """

    algo = ""
    #: the frozen policies (``agents.config.REFERENCE_ROLES``) the trainer reads (``TrainerFacts.roles``)
    roles: tuple[str, ...] = ()
    #: Runner fields whose leaves have a leading env axis (sharded over the devices); ``memory``: a
    #: ``RecurrentRunner``'s
    env_fields = ("env_state", "obs", "mask", "tracker", "pending", "memory")
    #: whether the trainer threads a recurrent policy's carry (``agents.core.recurrent``); the others refuse one
    trains_recurrent = False

    def __init__(self, config: TrainConfig, env):
        check_trainer_env(type(self).__name__, self.algo, config, env)
        self.config = config
        self.env = env
        self.network = make_network(config, env.num_actions)
        self.learner = np.asarray(env.learner_seats, bool)
        if is_recurrent(self.network) and not self.trains_recurrent:
            raise ValueError(
                f"{type(self).__name__} cannot train a recurrent network (TrainConfig.net.network="
                f"{config.net.network!r}): PPO (algo='ppo') trains it"
            )
        #: static: every sample is a learner seat's decision with every action legal (an env that declares
        #: ``all_actions_legal``, e.g. gymnax's, with every seat a learner's and A >= 2): the action masks
        #: and decision weights are all ones, so the trainers leave them out of the compiled program
        self.dense = (
            getattr(env, "all_actions_legal", False) is True
            and env.num_actions > 1
            and bool(self.learner.all())
            and not config.league.league_size
        )
        #: who plays the seats that are not the learner's fixed ones: ``agents.league.pool`` (a pool) or nobody
        self.players = league.make_players(config, self.learner, self.network)
        self.mesh = distributed.make_mesh(config.run.num_devices, config.run.num_envs)
        if is_recurrent(self.network) and self.mesh is not None:
            raise ValueError(
                f"TrainConfig.run.num_devices: a recurrent network (network={config.net.network!r}) trains on one "
                f"device for now; this run would use {self.mesh.devices.size} (set num_devices=1)"
            )

    # ---- placement over the devices (identity without a mesh; agents.utils.distributed's field helpers) ----
    def shardings(self, runner):
        """A pytree like ``runner`` (arrays or ``ShapeDtypeStruct``s) of ``NamedSharding``s: ``env_fields`` sharded
        on their env axis, the rest replicated; None without a mesh."""
        return distributed.field_shardings(runner, self.mesh, self.config.run.num_envs, self.env_fields)

    def constrain(self, runner):
        """Inside jit: the runner constrained to ``shardings``."""
        return distributed.constrain_fields(runner, self.mesh, self.config.run.num_envs, self.env_fields)

    def place(self, runner):
        """Host side: move a runner (e.g. restored from a checkpoint) onto the devices as ``shardings`` says."""
        return distributed.place_fields(runner, self.mesh, self.config.run.num_envs, self.env_fields)

    def _constrain_envs(self, tree):
        """Inside the scans: keep the leaves with a leading env axis sharded on it."""
        return distributed.constrain_batch(tree, self.mesh, self.config.run.num_envs)

    def chunk_inputs(self) -> tuple:
        """The arguments of ``run`` after ``(runner, num_updates)``: none here; a dataset run's samples
        (``agents.algorithms.bc.DatasetCloning``)."""
        return ()

    def input_identity(self) -> dict:
        """JSON-able entries naming the inputs ``chunk_inputs()`` read (call it first), saved in every checkpoint:
        a resume whose inputs differ is refused (``agents.run.train_program``). None here; a dataset's digest, the
        frozen policies a distillation reads."""
        return {}

    def finished_early(self, runner) -> bool:
        """Whether the run ends before its ``num_updates`` (a dataset run's early stopping); never here."""
        return False

    @property
    def facts(self) -> TrainerFacts:
        """What the run library needs to know about this trainer."""
        return TrainerFacts(players_per_step=self.env.num_players, roles=tuple(self.roles))

    def init(self, key, hparams: HParams | None = None) -> Runner:
        return self.constrain(init_runner(self.config, self.env, self.network, key, hparams))

    def __call__(self, key, hparams: HParams | None = None):
        """The whole run: ``(runner, metrics)`` with metrics float32[num_updates] each."""
        return self.run(self.init(key, hparams), self.config.num_updates, *self.chunk_inputs())

    def _one_update(self, runner: Runner, *inputs):
        runner, metrics = self.update(self.constrain(runner), *inputs)
        metrics = {**metrics, health.FINITE: health.finite_flag(runner.params, metrics)}
        return self.constrain(runner), metrics

    def run(self, runner: Runner, num_updates: int, *inputs):
        """``num_updates`` updates (static) from ``runner`` in one ``lax.scan``: ``(runner, metrics)``, metrics
        float32[num_updates] each. Not jitted here: the caller jits it (``jax.jit(trainer.run, static_argnums=1)``;
        the run library's is ``agents.run.build.Built.run``)."""
        runner, metrics = jax.lax.scan(
            lambda r, _: self._one_update(r, *inputs), self.constrain(runner), None, length=num_updates
        )
        if self.mesh is not None:
            metrics = jax.lax.with_sharding_constraint(metrics, distributed.replicated(self.mesh))
        return runner, metrics

    def run_upto(self, runner: Runner, max_updates: int, num_updates, *inputs):
        """``num_updates`` (int32, traced, in 0..``max_updates``) updates in one program for every count: a loop
        whose trip count is an argument. Metrics float32[max_updates] each, the first ``num_updates`` written (the
        rest 0). The run's last, shorter chunk then needs no program of its own (``agents.run.chunks``)."""
        shapes = jax.eval_shape(lambda r: self._one_update(r, *inputs)[1], runner)
        metrics = jax.tree_util.tree_map(lambda s: jnp.zeros((max_updates, *s.shape), s.dtype), shapes)

        def body(i, carry):
            runner, metrics = carry
            runner, new = self._one_update(runner, *inputs)
            return runner, jax.tree_util.tree_map(
                lambda m, x: jax.lax.dynamic_update_index_in_dim(m, x, i, 0), metrics, new
            )

        runner, metrics = jax.lax.fori_loop(
            0, jnp.minimum(num_updates, max_updates), body, (self.constrain(runner), metrics)
        )
        if self.mesh is not None:
            metrics = jax.lax.with_sharding_constraint(metrics, distributed.replicated(self.mesh))
        return runner, metrics

    def update(self, runner: Runner, *inputs):
        """One update; ``inputs``: ``chunk_inputs()``."""
        raise NotImplementedError


__all__ = [
    "ENV_STREAM",
    "INIT_STREAM",
    "TRAIN_STREAM",
    "RecurrentRunner",
    "Runner",
    "Trainer",
    "TrainerFacts",
    "apply_gradients",
    "check_trainer_env",
    "init_runner",
    "lr_schedule",
    "make_network",
    "make_optimizer",
]
