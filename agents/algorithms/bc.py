"""Behaviour cloning: the trainer on games generated inside the compiled program (``algo="bc"``), and the pieces
for recorded samples (the split by game, the optimizer, the compiled training chunk, validation, early stopping).

``behaviour_cloning`` (``TrainConfig(algo="bc")``, preset ``bc_small``) is PPO's rollout and minibatch machinery
composed with ``TeacherPlay`` (the teacher bot ``config.bc.bc_teacher`` acting in the learner's ("self") seats) and
``BCLoss``: each update plays ``num_steps``
steps of ``num_envs`` games (no disk), then ``update_epochs`` epochs of minibatches of the learner seats' decisions
with ``losses.bc_loss``: the teacher's action's cross-entropy over the legal actions, and the value's error to the
semi-MDP GAE targets of the teacher's play (``gamma``, ``gae_lambda``; with ``gae_lambda=1`` the discounted outcome,
bootstrapped only at rollout edges). Every game is new, so the policy before an update has never trained on that
update's samples: ``val/accuracy`` (the policy's most likely legal action is the teacher's) and ``val/cross_entropy``
are measured on them then (``BCLoss.held_out``), the held-out numbers. ``loss/accuracy`` and ``loss/cross_entropy``
are the minibatches' during the update, averaged over its ``update_epochs`` epochs, so from the second epoch on
on samples already trained on: training numbers. The policy's own forward pass still runs at every step (its
value is the GAE's baseline). With ``bc_teacher_prob < 1`` a learner seat sends the policy's own sample instead of
the teacher's action on that share of its steps, still labelled with the teacher's action (DAgger-style: the teacher
labels the states the policy's own mistakes lead to). Checkpoints, resume, logs and evaluations are the run
library's, as for PPO.

From a dataset on disk (``TrainConfig(algo="bc", bc_dataset=DIR)``, ``--preset=bc_data``): ``DatasetCloning``
trains on the samples a recording wrote (``agents.pipeline.recording``, ``python -m experiments.record``). The run
library
drives it as any run (chunks, logs, checkpoints, resume, evaluations, ``load_policy``):

* **Samples.** The recorded seats' decisions (``decision``: more than one legal action; the other steps teach
  nothing) with the recorded ``action`` as the label and ``outcome`` (the undiscounted return-to-go) as the value's
  target. ``split_by_game`` holds out ``bc_val_fraction`` of the games, drawn with the run's seed: the steps of a
  game are strongly correlated, so a split by step would measure memory, not generalisation. The recording's
  observation kind, shapes, action count and rules must be the run's (``agents.storage.recorded_samples.check``: a
  one-line error names what differs); the dataset's shards are verified (sha256) when read.
* **Updates.** One update is one optimizer step on ``bc_batch_size`` samples drawn uniformly with replacement from
  the training games (``clone_chunk``), with the trainer's optimizer and schedule (``agents.algorithms.base``:
  Adam after a global-norm clip, ``warmup_updates``, ``lr_schedule``, decoupled ``weight_decay``).
* **Validation and early stopping.** Every chunk ends with ``validate`` over every held-out sample inside the
  compiled chunk (``val/cross_entropy``, ``val/accuracy``, ``val/value_loss``, logged with the chunk); the runner
  keeps the lowest validation cross-entropy and the validations since it, so a resumed run stops where the
  uninterrupted one would. With ``bc_patience`` the run ends after that many validations without improvement;
  ``best_by="validation"`` keeps the checkpoint with the lowest validation cross-entropy as the best.
* **Resume.** A checkpoint records the dataset's digest (its shards' sha256s); resuming on a changed dataset is an
  error.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from agents.algorithms import base as trainer_base
from agents.algorithms.base import INIT_STREAM, TRAIN_STREAM, check_trainer_env, make_network
from agents.algorithms.ppo import PPO, OwnPlay
from agents.config import HParams, TrainConfig
from agents.core import distributions, losses
from agents.utils import health
from jaxgame import all_bots
from jaxgame.actions import KIND_NAMES, action_kind
from jaxgame.validation import as_key


def split_by_game(game: np.ndarray, val_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train, validation) sample indices, int64[...] each, ascending. ``game``: int[N], each sample's game;
    ``val_fraction`` in [0, 1): the share of the games (rounded, at least one when > 0) whose samples are held out,
    drawn with ``seed``. ``ValueError`` when no game would be left to train on."""
    game = np.asarray(game)
    if game.ndim != 1 or not np.issubdtype(game.dtype, np.integer):
        raise ValueError(f"game must be a 1-d int array, got {game.dtype} {game.shape}")
    if not 0.0 <= val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
    games = np.unique(game)
    held = 0 if val_fraction == 0 else max(1, int(round(val_fraction * games.size)))
    if held >= games.size:
        raise ValueError(
            f"val_fraction={val_fraction} of {games.size} game(s) leaves none to train on; record more "
            "games or hold out fewer"
        )
    val_games = np.random.default_rng(seed).choice(games, held, replace=False)
    val = np.isin(game, val_games)
    return np.flatnonzero(~val), np.flatnonzero(val)


#: samples per batch of ``validate`` (a bound on its memory, not a hyperparameter: the result is a mean over all)
VALIDATION_BATCH = 1024
#: what ``validate`` reports, logged as ``val/<name>``
VALIDATION_METRICS = ("cross_entropy", "accuracy", "value_loss")
#: ``validate``'s per-kind numbers (``jaxgame.actions.KIND_NAMES``), logged as ``val/<name>``: the accuracy on the
#: held-out decisions whose label is an action of that kind (NaN where there is none) and that kind's share of them
KIND_METRICS = tuple(f"accuracy_{k}" for k in KIND_NAMES) + tuple(f"share_{k}" for k in KIND_NAMES)


def device_samples(samples: dict, index=None) -> dict:
    """The fields a BC step reads, from a recording's samples (``agents.pipeline.recording.FIELDS``), rows ``index``
    (default
    all): ``obs`` as stored, ``mask`` bool[n, A], ``action`` int32[n], ``outcome`` float32[n] and ``weight``
    float32[n] (1 on decisions: a step with one legal action teaches nothing)."""
    index = slice(None) if index is None else index
    return {
        "obs": jnp.asarray(samples["obs"][index]),
        "mask": jnp.asarray(samples["mask"][index]),
        "action": jnp.asarray(samples["action"][index], jnp.int32),
        "outcome": jnp.asarray(samples["outcome"][index], jnp.float32),
        "weight": jnp.asarray(samples["decision"][index], jnp.float32),
    }


def _loss(network, params, batch, vf_coef):
    logits, value = network.apply(params, batch["obs"])
    return losses.bc_loss(logits, value, batch["mask"], batch["action"], batch["outcome"], batch["weight"], vf_coef)


def validate(network, params, data: dict, batch_size: int = VALIDATION_BATCH) -> dict:
    """``{"cross_entropy", "accuracy", "value_loss"}`` and ``KIND_METRICS``, float32[] each: weighted means
    (``data["weight"]``) over every sample of ``data`` (``device_samples``), computed in batches of ``batch_size``
    (the last one padded with weight 0), equal to one batch of all of them. ``accuracy_<kind>``: the accuracy over
    the samples whose label (``data["action"]``) is of that kind (``jaxgame.actions.action_kind``), NaN where none
    is; ``share_<kind>``: their share of the weight. Traceable."""
    size = data["action"].shape[0]
    batch_size = min(batch_size, size)
    batches = -(-size // batch_size)
    pad = batches * batch_size - size

    def padded(x):
        x = jnp.concatenate([x, jnp.zeros((pad,) + x.shape[1:], x.dtype)])
        return x.reshape((batches, batch_size) + x.shape[1:])

    kinds = len(KIND_NAMES)

    def sums(batch):
        logits, value = network.apply(params, batch["obs"])
        _, metrics = losses.bc_loss(
            logits, value, batch["mask"], batch["action"], batch["outcome"], batch["weight"], 0.0
        )
        n = batch["weight"].sum()
        hit = (distributions.greedy(logits, batch["mask"]) == batch["action"]).astype(jnp.float32)
        of_kind = jax.nn.one_hot(action_kind(batch["action"]), kinds) * batch["weight"][:, None]  # [B, kinds]
        by_kind = jnp.concatenate([hit @ of_kind, of_kind.sum(0)])  # hits, then weights, per kind
        return jnp.concatenate(
            [jnp.stack([metrics[k] * jnp.maximum(n, 1.0) for k in VALIDATION_METRICS]), by_kind, n[None]]
        )

    total = jax.lax.map(sums, jax.tree_util.tree_map(padded, data)).sum(0)
    count = jnp.maximum(total[-1], 1.0)
    scores = {k: total[i] / count for i, k in enumerate(VALIDATION_METRICS)}
    hits, weights = total[len(VALIDATION_METRICS) :][:kinds], total[len(VALIDATION_METRICS) :][kinds : 2 * kinds]
    for i, kind in enumerate(KIND_NAMES):
        scores[f"accuracy_{kind}"] = jnp.where(weights[i] > 0, hits[i] / jnp.maximum(weights[i], 1e-30), jnp.nan)
        scores[f"share_{kind}"] = weights[i] / count
    return scores


@struct.dataclass
class DatasetRunner:
    """A dataset run's whole state (its checkpoint)."""

    params: dict
    opt_state: object
    key: jax.Array  # typed key: the minibatch stream
    update: jax.Array  # int32[]: optimizer steps done
    hparams: HParams
    best: jax.Array  # float32[]: the lowest validation cross-entropy so far (inf before the first validation)
    since_best: jax.Array  # int32[]: validations since the best one


def init_dataset_runner(config: TrainConfig, network, sample_obs, key, hparams: HParams | None = None):
    """Parameters from ``fold_in(key, INIT_STREAM)`` (``sample_obs``: one observation's shape and dtype, with a
    leading batch axis), a fresh optimizer, the minibatch stream ``fold_in(key, TRAIN_STREAM)``."""
    key = as_key(key, "train key")
    hp = config.hparams.traced() if hparams is None else hparams
    params = network.init(jax.random.fold_in(key, INIT_STREAM), sample_obs)
    return DatasetRunner(
        params,
        trainer_base.make_optimizer(hp).init(params),
        jax.random.fold_in(key, TRAIN_STREAM),
        jnp.int32(0),
        hp,
        jnp.float32(jnp.inf),
        jnp.int32(0),
    )


def clone_chunk(config: TrainConfig, network, runner: DatasetRunner, num_updates: int, train: dict, val: dict | None):
    """``num_updates`` optimizer steps in one ``lax.scan``, each on ``config.bc.bc_batch_size`` samples of ``train``
    (``device_samples``) drawn uniformly with replacement from the runner's key, then (``val`` not None) one
    validation, which updates the runner's best and its count since. Returns ``(runner, metrics)``: float32
    [num_updates] each, the validation's ``val/...`` repeated over the chunk's updates. Traceable."""
    size = train["action"].shape[0]

    def one_update(runner: DatasetRunner, _):
        key, draw = jax.random.split(runner.key)
        batch = jax.tree_util.tree_map(
            lambda x: x[jax.random.randint(draw, (config.bc.bc_batch_size,), 0, size)], train
        )
        hp = runner.hparams
        (_, m), grads = jax.value_and_grad(lambda p: _loss(network, p, batch, hp.vf_coef), has_aux=True)(runner.params)
        params, opt_state, grad_norm, lr = trainer_base.apply_gradients(
            config, hp, runner.params, runner.opt_state, grads, runner.update
        )
        runner = runner.replace(params=params, opt_state=opt_state, key=key, update=runner.update + 1)
        metrics = {
            "loss/cross_entropy": m["cross_entropy"],
            "loss/accuracy": m["accuracy"],
            "loss/value": m["value_loss"],
            "loss/entropy": m["entropy"],
            "loss/grad_norm": grad_norm,
            "train/lr": lr,
            "train/decisions": batch["weight"].sum(),
        }
        return runner, {**metrics, health.FINITE: health.finite_flag(params, metrics)}

    runner, metrics = jax.lax.scan(one_update, runner, None, length=num_updates)
    if val is not None:
        scores = validate(network, runner.params, val)
        loss = scores["cross_entropy"]
        improved = jnp.isfinite(loss) & (loss < runner.best)
        runner = runner.replace(
            best=jnp.where(improved, loss, runner.best), since_best=jnp.where(improved, 0, runner.since_best + 1)
        )
        metrics.update({f"val/{k}": jnp.full(num_updates, v) for k, v in scores.items()})
        metrics["val/best_cross_entropy"] = jnp.full(num_updates, runner.best)
    return runner, metrics


def split_samples(config: TrainConfig, samples: dict) -> tuple[dict, dict | None]:
    """``(train, val)``: ``device_samples`` of the training and held-out games of a recording's ``samples``
    (``agents.storage.recorded_samples.read``: numpy arrays of its ``FIELDS``), split by ``split_by_game`` with
    ``config.bc.bc_val_fraction`` and ``config.run.seed`` (``val`` None when nothing is held out). A ``ValueError``
    with a one-line message when the split fails or the training games hold no decision."""
    try:
        train, val = split_by_game(samples["game"], config.bc.bc_val_fraction, config.run.seed)
    except ValueError as err:
        raise ValueError(f"{config.bc.bc_dataset}: {err}") from None
    if not samples["decision"][train].any():
        raise ValueError(
            f"{config.bc.bc_dataset}: no decision (a step with two or more legal actions) to learn from "
            "in its training games"
        )
    return device_samples(samples, train), (device_samples(samples, val) if val.size else None)


class DatasetCloning:
    """``algo="bc"`` with ``bc_dataset``: cloning a recording (see the module docstring), a small trainer of its own
    (not PPO's machinery: no env is stepped). ``run(runner, num_updates, train, val)`` is the chunk (``clone_chunk``;
    the caller jits it); the run library reads the recording (``agents.policies.frozen.trainer_inputs``) and gives
    its samples to ``use_recording``; ``chunk_inputs()`` is their split. It answers what the run library asks of
    every trainer (``agents.algorithms.base.Trainer``'s attributes of the same names)."""

    algo = "bc"
    env_fields = ()
    #: a sample is one seat's step; its chunk is clone_chunk (a shorter last chunk compiles a program of its own)
    facts = trainer_base.TrainerFacts(players_per_step=1, sample_unit="samples", runs_upto=False, reads_recording=True)
    mesh = None  # one device (TrainConfig refuses num_devices > 1)

    def __init__(self, config: TrainConfig, env):
        check_trainer_env(type(self).__name__, self.algo, config, env)
        self.config, self.env = config, env
        self.network = make_network(config, env.num_actions)
        self.learner = np.asarray(env.learner_seats, bool)
        _, ts = jax.eval_shape(env.reset, jax.random.key(0))
        obs = ts.observation  # [N, P, *shape]
        self.observation = jax.ShapeDtypeStruct(obs.shape[2:], obs.dtype)
        self.digest = None  # the recording's (``use_recording``)
        self._split = None

    def init(self, key, hparams: HParams | None = None) -> DatasetRunner:
        sample = jnp.zeros((1,) + self.observation.shape, self.observation.dtype)
        return init_dataset_runner(self.config, self.network, sample, key, hparams)

    def use_recording(self, samples: dict, digest: str) -> None:
        """Clone ``samples`` (numpy arrays of the recording's fields) whose digest is ``digest``: split by game
        (``split_samples``; its ``ValueError`` when that fails) and placed on the device."""
        self._split, self.digest = split_samples(self.config, samples), digest

    def forget_recording(self) -> None:
        """Drop the device samples ``use_recording`` placed (their digest stays): whoever took ``chunk_inputs``
        holds them for its run, and a trainer cached for later runs of its config does not keep them alive."""
        self._split = None

    def chunk_inputs(self) -> tuple:
        """``(train, val)``: the recording's samples on the device (``use_recording`` first)."""
        if self._split is None:
            raise RuntimeError(
                "no recording given: the run library calls use_recording first (agents.policies.frozen.trainer_inputs)"
            )
        return self._split

    def input_identity(self) -> dict:
        return {"bc_dataset_digest": self.digest}

    def finished_early(self, runner: DatasetRunner) -> bool:
        return bool(self.config.bc.bc_patience) and int(runner.since_best) >= self.config.bc.bc_patience

    def run(self, runner: DatasetRunner, num_updates: int, train: dict, val: dict | None):
        return clone_chunk(self.config, self.network, runner, num_updates, train, val)

    def run_upto(self, runner: DatasetRunner, max_updates: int, num_updates, *inputs):
        raise NotImplementedError("a dataset run's chunk is clone_chunk's scan (runs_upto is False)")

    def __call__(self, key, hparams: HParams | None = None):
        """The whole run: ``(runner, metrics)`` with metrics float32[num_updates] each."""
        return self.run(self.init(key, hparams), self.config.num_updates, *self.chunk_inputs())

    # one device: nothing to place
    def shardings(self, runner):
        return None

    def constrain(self, runner):
        return runner

    def place(self, runner):
        return runner


class BCLoss:
    """Behaviour cloning's minibatch loss (``losses.bc_loss``): the label's cross-entropy over the legal actions
    and the value's squared error to the GAE targets (weighted by ``vf_coef``). ``held_out``: what PPO's update
    measures on its samples before it trains on them (``PPO.held_out_metrics``), logged as ``val/...``."""

    names = ("cross_entropy", "value_loss", "accuracy", "entropy")

    def __call__(self, logits, value, batch, hp: HParams, update):
        traj = batch.traj
        return losses.bc_loss(logits, value, traj.mask, traj.action, batch.targets, traj.weight, hp.vf_coef)

    @staticmethod
    def held_out(logits, traj) -> dict:
        """``{"val/accuracy", "val/cross_entropy"}``: (weighted sum, sum of weights), float32[] each, of samples
        ``traj`` (leaves [..., ...]: ``action`` the teacher's label, ``mask`` the legal actions, ``weight`` 1 on
        the decisions; None: all) under the policy's ``logits`` float32[..., A]: its most likely legal action is
        the label (``losses.bc_loss``'s accuracy, ties: the first), the label's cross-entropy over the legal
        actions."""
        hit = (distributions.greedy(logits, traj.mask) == traj.action).astype(jnp.float32)
        nll = -distributions.log_prob(logits, traj.mask, traj.action)
        weight = jnp.ones_like(hit) if traj.weight is None else jnp.asarray(traj.weight, jnp.float32)

        def total(x):  # where() keeps a weight-0 sample's value (any, even inf) out of the sum
            return jnp.sum(jnp.where(weight > 0, weight * x, 0.0))

        return {"val/accuracy": (total(hit), weight.sum()), "val/cross_entropy": (total(nll), weight.sum())}

    def log(self, mean: dict, traj, targets) -> dict:
        return {
            "loss/cross_entropy": mean["cross_entropy"],
            "loss/accuracy": mean["accuracy"],
            "loss/value": mean["value_loss"],
            "loss/entropy": mean["entropy"],
            "loss/grad_norm": mean["grad_norm"],
            "loss/explained_variance": losses.explained_variance(traj.value, targets, traj.weight),
            "train/lr": mean["lr"],
        }


class TeacherPlay(OwnPlay):
    """Samples of the teacher bot ``bc_teacher`` playing the learner's seats: its action is each sample's label
    and the action sent (with ``bc_teacher_prob`` per seat and step; else the policy's own sample is sent). The
    policy's value is the GAE's baseline (its log-probability is not used)."""

    def __init__(self, teacher: str, teacher_prob: float):
        self.teacher = all_bots.BOTS[teacher]
        self.teacher_prob = teacher_prob

    def act(self, network, env, dense, params, key, env_state, obs, mask, learner, others):
        policy_key, teacher_key = jax.random.split(key)
        teacher = jax.vmap(self.teacher)(jax.random.split(teacher_key, env.num_envs), env_state.games, mask).astype(
            jnp.int32
        )
        seats = jnp.broadcast_to(jnp.asarray(learner), teacher.shape)
        if self.teacher_prob < 1.0:
            seats = seats & jax.random.bernoulli(jax.random.fold_in(key, 2), self.teacher_prob, seats.shape)
        env_state, ts, transition = super().act(
            network, env, dense, params, policy_key, env_state, obs, mask, learner, (seats, teacher)
        )
        return env_state, ts, transition.replace(action=teacher)


def behaviour_cloning(config: TrainConfig, env) -> PPO:
    """``algo="bc"`` on generated games: PPO's rollouts with ``TeacherPlay`` and ``BCLoss`` (module docstring)."""
    return PPO(config, env, loss=BCLoss(), samples=TeacherPlay(config.bc.bc_teacher, config.bc.bc_teacher_prob))


__all__ = [
    "BCLoss",
    "DatasetCloning",
    "DatasetRunner",
    "TeacherPlay",
    "KIND_METRICS",
    "VALIDATION_METRICS",
    "behaviour_cloning",
    "clone_chunk",
    "device_samples",
    "init_dataset_runner",
    "split_by_game",
    "split_samples",
    "validate",
]
