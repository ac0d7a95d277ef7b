"""Behaviour cloning: the trainer on games generated inside the compiled program (``algo="bc"``), and the pieces
for recorded samples (the split by game, the optimizer, the compiled training chunk, validation, early stopping).

``BehaviourCloning`` (``TrainConfig(algo="bc")``, ``--preset=bc_small``) is PPO's rollout and minibatch machinery
with the teacher bot ``config.bc_teacher`` acting in the learner's ("self") seats: each update plays ``num_steps``
steps of ``num_envs`` games (no disk), then ``update_epochs`` epochs of minibatches of the learner seats' decisions
with ``losses.bc_loss``: the teacher's action's cross-entropy over the legal actions, and the value's error to the
semi-MDP GAE targets of the teacher's play (``gamma``, ``gae_lambda``; with ``gae_lambda=1`` the discounted outcome,
bootstrapped only at rollout edges). Every game is new, so the training metrics are held-out ones (``loss/accuracy``:
the policy's most likely legal action is the teacher's). The policy's own forward pass still runs at every step (its
value is the GAE's baseline). With ``bc_teacher_prob < 1`` a learner seat sends the policy's own sample instead of
the teacher's action on that share of its steps, still labelled with the teacher's action (DAgger-style: the teacher
labels the states the policy's own mistakes lead to). Checkpoints, resume, logs and evaluations are the run
library's, as for PPO.

From a dataset on disk:

    data = device_samples(dataset.open_dataset(d).load(), train_index)   # obs, mask, action, outcome, weight
    train_chunk = make_train_chunk(network, optimizer, batch_size=256, vf_coef=0.5)
    state = init_state(network, optimizer, data["obs"][:1], jax.random.key(0))
    state, metrics = train_chunk(state, data, 100)                      # 100 minibatch steps in one lax.scan
    val = make_validation(network, batch_size=1024)(state.params, val_data)

The loss is ``agents.losses.bc_loss``; the samples come from ``agents.recording`` (``agents.dataset`` on disk).
These are not in the run library yet (training from a dataset directory through ``experiments.train``).

* ``split_by_game``: validation samples are whole games (every rotation, position and step of a game seed), never
  steps of a game that is also trained on: the steps of one game are strongly correlated, so a split by step would
  measure memory, not generalisation.
* ``make_optimizer``: AdamW (decoupled weight decay) after a global-norm clip, its learning rate warmed up linearly
  from 0 and decayed along a cosine to 0 (``learning_rate``): a fresh optimizer, as a phase starts.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct

from agents import losses
from agents.ppo import PPO
from jaxgame import bots


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
        raise ValueError(f"val_fraction={val_fraction} of {games.size} game(s) leaves none to train on; record more "
                         "games or hold out fewer")
    val_games = np.random.default_rng(seed).choice(games, held, replace=False)
    val = np.isin(game, val_games)
    return np.flatnonzero(~val), np.flatnonzero(val)


def learning_rate(peak: float, warmup_steps: int, total_steps: int):
    """``step -> lr``: linear from 0 to ``peak`` over ``warmup_steps`` optimizer steps, then a cosine to 0 at
    ``total_steps`` (which includes the warmup), 0 after."""
    if not 0 <= warmup_steps < total_steps:
        raise ValueError(f"warmup_steps must be in [0, total_steps={total_steps}), got {warmup_steps}")
    return optax.warmup_cosine_decay_schedule(0.0, peak, warmup_steps, total_steps, end_value=0.0)


def make_optimizer(peak_lr: float, warmup_steps: int, total_steps: int, weight_decay: float,
                   max_grad_norm: float) -> optax.GradientTransformation:
    """Global-norm clip, then AdamW with ``learning_rate``'s schedule and decoupled ``weight_decay``."""
    return optax.chain(
        optax.clip_by_global_norm(max_grad_norm),
        optax.adamw(learning_rate(peak_lr, warmup_steps, total_steps), weight_decay=weight_decay),
    )


@struct.dataclass
class BCState:
    """What behaviour cloning carries from step to step (a checkpoint's content)."""

    params: dict
    opt_state: object
    step: jax.Array  # int32[]: optimizer steps done
    key: jax.Array  # typed key: the minibatch stream


def init_state(network, optimizer, sample_obs, key) -> BCState:
    """Fresh parameters (``fold_in(key, 0)``) and optimizer state; the minibatch stream is ``fold_in(key, 1)``."""
    params = network.init(jax.random.fold_in(key, 0), sample_obs)
    return BCState(params, optimizer.init(params), jnp.int32(0), jax.random.fold_in(key, 1))


def device_samples(samples: dict, index=None) -> dict:
    """The fields a BC step reads, from a recording's samples (``agents.recording.FIELDS``), rows ``index`` (default
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


def make_train_chunk(network, optimizer, batch_size: int, vf_coef: float):
    """``train_chunk(state, data, num_steps) -> (state, metrics)``, jitted (``num_steps`` static): ``num_steps``
    optimizer steps in one ``lax.scan``, each on ``batch_size`` samples of ``data`` (``device_samples``) drawn
    uniformly with replacement from the state's key; metrics are ``bc_loss``'s plus "grad_norm", float32[num_steps]
    each."""

    def chunk(state: BCState, data: dict, num_steps: int):
        size = data["action"].shape[0]

        def step(state: BCState, _):
            key, draw = jax.random.split(state.key)
            batch = jax.tree_util.tree_map(lambda x: x[jax.random.randint(draw, (batch_size,), 0, size)], data)
            (_, metrics), grads = jax.value_and_grad(lambda p: _loss(network, p, batch, vf_coef), has_aux=True)(
                state.params)
            updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
            state = BCState(optax.apply_updates(state.params, updates), opt_state, state.step + 1, key)
            return state, {**metrics, "grad_norm": optax.tree.norm(grads)}

        return jax.lax.scan(step, state, None, length=num_steps)

    return jax.jit(chunk, static_argnums=2)


#: what ``make_validation`` reports
VALIDATION_METRICS = ("cross_entropy", "accuracy", "value_loss")


def make_validation(network, batch_size: int):
    """``validate(params, data) -> {"cross_entropy", "accuracy", "value_loss"}``, jitted: weighted means over every
    sample of ``data`` (``device_samples``), in batches of ``batch_size`` (the last one padded with weight 0)."""

    def validate(params, data):
        size = data["action"].shape[0]
        batches = -(-size // batch_size)
        pad = batches * batch_size - size

        def padded(x):
            x = jnp.concatenate([x, jnp.zeros((pad,) + x.shape[1:], x.dtype)])
            return x.reshape((batches, batch_size) + x.shape[1:])

        def sums(batch):
            _, metrics = _loss(network, params, batch, 0.0)
            n = batch["weight"].sum()
            return jnp.stack([metrics[k] * jnp.maximum(n, 1.0) for k in VALIDATION_METRICS] + [n])

        total = jax.lax.map(sums, jax.tree_util.tree_map(padded, data)).sum(0)
        count = jnp.maximum(total[-1], 1.0)
        return {k: total[i] / count for i, k in enumerate(VALIDATION_METRICS)}

    return jax.jit(validate)


def early_stopping(best: float, since_best: int, value: float, patience: int) -> tuple[float, int, bool]:
    """One validation's verdict: ``(best, evaluations since the best, stop)``. ``value`` (lower is better, e.g. the
    validation cross-entropy) becomes the best when it is below it; the run stops once ``patience`` evaluations in a
    row did not improve (``patience`` 0: never). A non-finite value never improves."""
    if np.isfinite(value) and value < best:
        return float(value), 0, False
    since_best += 1
    return best, since_best, bool(patience) and since_best >= patience


class BehaviourCloning(PPO):
    """``algo="bc"``: PPO's rollouts with the teacher acting in the learner's seats, ``losses.bc_loss`` (see the
    module docstring)."""

    algo = "bc"
    minibatch_metrics = ("cross_entropy", "value_loss", "accuracy", "entropy", "grad_norm", "lr")

    def act(self, params, key, env_state, obs, mask, learner, others):
        """The teacher's action in the learner's seats is the sample's label; it is also the action sent (with
        ``bc_teacher_prob``, per seat and step; else the policy's sample is sent). The policy's value is the
        GAE's baseline (its log-probability is not used)."""
        policy_key, teacher_key = jax.random.split(key)
        teacher = jax.vmap(bots.BOTS[self.config.bc_teacher])(
            jax.random.split(teacher_key, self.env.num_envs), env_state.games, mask).astype(jnp.int32)
        seats = jnp.broadcast_to(jnp.asarray(learner), teacher.shape)
        if self.config.bc_teacher_prob < 1.0:
            seats = seats & jax.random.bernoulli(jax.random.fold_in(key, 2), self.config.bc_teacher_prob, seats.shape)
        env_state, ts, transition = super().act(params, policy_key, env_state, obs, mask, learner, (seats, teacher))
        return env_state, ts, transition.replace(action=teacher)

    def minibatch_loss(self, network, params, traj, advantages, targets, hp):
        logits, value = network.apply(params, traj.obs)
        return losses.bc_loss(logits, value, traj.mask, traj.action, targets, traj.weight, hp.vf_coef)

    def update_metrics(self, mean, traj, targets):
        return {
            "loss/cross_entropy": mean["cross_entropy"],
            "loss/accuracy": mean["accuracy"],
            "loss/value": mean["value_loss"],
            "loss/entropy": mean["entropy"],
            "loss/grad_norm": mean["grad_norm"],
            "loss/explained_variance": losses.explained_variance(traj.value, targets, traj.weight),
            "train/lr": mean["lr"],
        }


__all__ = ["BCState", "BehaviourCloning", "VALIDATION_METRICS", "device_samples", "early_stopping", "init_state",
           "learning_rate",
           "make_optimizer", "make_train_chunk", "make_validation", "split_by_game"]
