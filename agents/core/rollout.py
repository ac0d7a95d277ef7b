"""Acting in a batched env and bookkeeping of finished episodes, shared by the trainers.

Shapes: N envs, P seats, A actions. ``learner`` marks the seats whose steps
are training data: a bool[P] constant, or bool[N, P] when it changes from
game to game (a league's roles). A recurrent policy (``agents.core.recurrent``)
also holds a ``Memory`` per env and seat (H: its carry's width); an update
re-runs it over whole sequences from a ``SequenceStart``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from agents.core import distributions


@struct.dataclass
class Transition:
    """One env step of every seat; arrays [N, P] (a leading [T] in a rollout)."""

    obs: object  # [N, P, *obs_shape]
    mask: jax.Array  # bool[N, P, A]
    action: jax.Array  # int32
    log_prob: jax.Array  # float32
    value: jax.Array  # float32
    reward: jax.Array  # float32
    terminal: jax.Array  # bool: the seat's episode ended on this step
    weight: jax.Array  # float32: 1 for a learner seat's decision (more than one legal action), else 0


@struct.dataclass
class Batch:
    """What a loss trains on: samples with their targets. Leaves [T, N, P, ...] for an update, [B, ...] for a
    minibatch (``B`` samples); a loss is ``loss(logits, value, batch, hp, update) -> (loss float32[], metrics)``."""

    traj: Transition  # the samples (``mask``/``weight`` None when every action is legal and every sample a decision)
    advantages: jax.Array  # float32
    targets: jax.Array  # float32: the value's targets
    extra: object = None  # what the samples add for the loss: None, or e.g. frozen policies' logits by role
    memory: object = None  # a recurrent policy's ``SequenceStart`` (None for a feed-forward one)


@struct.dataclass
class EpisodeTracker:
    """Running totals of the unfinished episodes: return float32[N, P], length int32[N]."""

    ret: jax.Array
    length: jax.Array

    @classmethod
    def zeros(cls, num_envs: int, num_players: int) -> EpisodeTracker:
        return cls(jnp.zeros((num_envs, num_players), jnp.float32), jnp.zeros(num_envs, jnp.int32))


@struct.dataclass
class Pending:
    """Each seat's open decision: taken, its next decision not seen yet; arrays [N, P] (``obs`` [N, P,
    *obs_shape], ``mask`` bool[N, P, A]). The streaming A2C (``agents.algorithms.a2c``) completes it step by step; PPO
    (``agents.algorithms.ppo``) carries a rollout's open decisions to the next one
    (``agents.core.gae.semi_mdp_gae``)."""

    obs: object
    mask: jax.Array
    action: jax.Array  # int32
    log_prob: jax.Array  # float32: of the action, under the parameters that took it
    value: jax.Array  # float32: V(obs) under those parameters
    ret: jax.Array  # float32: discounted reward since the decision
    discount: jax.Array  # float32: product of the discounts since the decision; 0 once the seat's episode ended
    active: jax.Array  # bool: a decision is open

    @classmethod
    def empty(cls, obs, mask) -> Pending:
        batch = mask.shape[:-1]
        zeros = jnp.zeros(batch, jnp.float32)
        return cls(
            obs=jax.tree_util.tree_map(jnp.zeros_like, obs),
            mask=jnp.zeros_like(mask),
            action=jnp.zeros(batch, jnp.int32),
            log_prob=zeros,
            value=zeros,
            ret=zeros,
            discount=zeros,
            active=jnp.zeros(batch, bool),
        )


@struct.dataclass
class Memory:
    """A recurrent policy's memory of every env and seat (``agents.algorithms.base.RecurrentRunner.memory``), as of
    the next step to act on. ``carry`` float32[N, P, H]: the hidden state after the last step; ``reset`` bool[N,
    P]: that step ended the seat's episode (``info["seat_done"]``: a game's end, a seat's elimination), so the next
    step starts from the initial carry (the network resets it). ``decision_carry`` float32[N, P, H] and
    ``decision_reset`` bool[N, P]: the carry and reset flag each seat's last decision was taken with; after a
    rollout, those of its open decision (``Runner.pending``), which the next update trains."""

    carry: jax.Array
    reset: jax.Array
    decision_carry: jax.Array
    decision_reset: jax.Array

    @classmethod
    def initial(cls, network, batch_shape) -> Memory:
        """Every seat at the start of an episode: ``network.initial_carry(batch_shape)``, no reset pending."""
        carry = network.initial_carry(batch_shape)
        no_reset = jnp.zeros(batch_shape, bool)
        return cls(carry=carry, reset=no_reset, decision_carry=carry, decision_reset=no_reset)

    def stepped(self, carry: jax.Array, decided: jax.Array, seat_done: jax.Array) -> Memory:
        """The memory after one step that started from this one: the network's new ``carry`` float32[N, P, H];
        ``decided`` bool[N, P]: the step was a learner's decision (its carry and reset become ``decision_*``);
        ``seat_done`` bool[N, P]: the step ended the seat's episode."""
        return Memory(
            carry=carry,
            reset=seat_done,
            decision_carry=select_seats(decided, self.carry, self.decision_carry),
            decision_reset=jnp.where(decided, self.reset, self.decision_reset),
        )


class StepOutputs:
    """A recurrent network's outputs of one step, computed already, in a feed-forward network's clothes:
    ``apply(params, obs)`` returns ``(logits float32[N, P, A], value float32[N, P])`` whatever it is given, so the
    samples' ``act`` (``act_and_step`` and what wraps it) samples and steps as for a feed-forward policy."""

    def __init__(self, logits: jax.Array, value: jax.Array):
        self.logits = logits
        self.value = value

    def apply(self, params, obs):
        return self.logits, self.value


@struct.dataclass
class SequenceStart:
    """What re-runs a recurrent policy over an update's samples (``Batch.memory``). Every leaf has the samples'
    leading [T, N, P] or [1, N, P] axes, so it is selected, flattened and minibatched along with them.

    carry: float32[1, N, P, H], the carry before the rollout's first step;
    reset: bool[T, N, P], reset the carry before step t (the seat's episode ended on step t - 1; row 0: on the
      step before the rollout);
    first_obs: [1, N, P, *obs_shape], row 0's observation as stepped (the batch's row 0 holds a carried-in
      decision's instead, ``agents.algorithms.ppo.targets_with_pending``);
    carried: bool[1, N, P], row 0 holds a decision carried in from the previous rollout, taken from
      ``carried_carry`` float32[1, N, P, H] with ``carried_reset`` bool[1, N, P]; all three None where no decision
      is ever carried (an env whose every sample is a decision, ``Trainer.dense``)."""

    carry: jax.Array
    reset: jax.Array
    first_obs: object
    carried: jax.Array | None = None
    carried_carry: jax.Array | None = None
    carried_reset: jax.Array | None = None


def sequence_start(start: Memory, stepped: Transition, carried: jax.Array | None) -> SequenceStart:
    """The ``SequenceStart`` of a rollout: ``start`` the memory before it, ``stepped`` its transitions [T, N, P] as
    stepped (before open decisions are carried in), ``carried`` bool[N, P] the seats whose open decision of the
    previous rollout goes back on row 0 (``Runner.pending.active`` before the rollout; None: never any)."""
    reset = jnp.concatenate([start.reset[None], stepped.terminal[:-1]])
    first_obs = jax.tree_util.tree_map(lambda x: x[:1], stepped.obs)
    if carried is None:
        return SequenceStart(carry=start.carry[None], reset=reset, first_obs=first_obs)
    return SequenceStart(
        carry=start.carry[None],
        reset=reset,
        first_obs=first_obs,
        carried=carried[None],
        carried_carry=start.decision_carry[None],
        carried_reset=start.decision_reset[None],
    )


def sequence_outputs(network, params, obs, start: SequenceStart) -> tuple[jax.Array, jax.Array]:
    """A recurrent ``network`` re-run over sequences of samples as the rollout stepped them: ``obs`` [T, B, *obs_shape]
    (B sequences, e.g. a minibatch's (env, seat) pairs; row 0 may hold carried-in decisions' observations), ``start``
    with leaves [1 or T, B, ...]. Returns ``(logits float32[T, B, A], value float32[T, B])``: row t from the carry
    the rollout had at step t (the same resets), row 0 of a carried-in decision from the carry it was taken with."""
    stepped = jax.tree_util.tree_map(lambda x, first: x.at[0].set(first[0]), obs, start.first_obs)
    _, logits, value = network.apply_sequence(params, start.carry[0], stepped, start.reset)
    if start.carried is None or start.carried_carry is None or start.carried_reset is None:
        return logits, value
    first_obs = jax.tree_util.tree_map(lambda x: x[0], obs)
    _, first_logits, first_value = network.apply(params, start.carried_carry[0], first_obs, start.carried_reset[0])
    carried = start.carried[0]
    logits = logits.at[0].set(jnp.where(carried[..., None], first_logits, logits[0]))
    value = value.at[0].set(jnp.where(carried, first_value, value[0]))
    return logits, value


def select_seats(cond, new, old):
    """Per-seat ``where`` over pytrees: ``cond`` bool[N, P] (or any leading axes); leaves [N, P, ...] (any trailing
    dims; ``new``'s may broadcast against ``old``'s)."""

    def pick(a, b):
        c = cond.reshape(cond.shape + (1,) * (a.ndim - cond.ndim))
        return jnp.where(c, a, b)

    return jax.tree_util.tree_map(pick, new, old)


#: Sums over the episodes that finished, per update; ``episode_metrics`` turns them into means.
EPISODE_SUMS = ("episodes", "return_sum", "length_sum", "placement_sum", "placement_count")


def track_episodes(tracker: EpisodeTracker, ts, learner) -> tuple[EpisodeTracker, dict]:
    """Add this step's reward; close the envs where ``ts.done``.

    Returns (tracker, sums) with float32[] sums over the finished episodes:
    ``episodes`` (envs whose game/episode ended), ``return_sum`` (their
    learner seats' mean return, summed over envs), ``length_sum`` (steps),
    ``placement_sum`` / ``placement_count`` (learner seats' final ranks, when
    the env reports ``info["rank"]``).
    """
    ret = tracker.ret + ts.reward
    learner = jnp.broadcast_to(jnp.asarray(learner, jnp.float32), ret.shape)
    length = tracker.length + 1
    done = ts.done.astype(jnp.float32)
    per_env_return = (ret * learner).sum(-1) / jnp.maximum(learner.sum(-1), 1.0)
    sums = {"episodes": done.sum(), "return_sum": (done * per_env_return).sum(), "length_sum": (done * length).sum()}
    if "rank" in ts.info:
        ranked = done[:, None] * learner
        sums["placement_sum"] = (ranked * ts.info["rank"]).sum()
        sums["placement_count"] = ranked.sum()
    else:
        sums["placement_sum"] = sums["placement_count"] = jnp.float32(0.0)
    tracker = EpisodeTracker(jnp.where(ts.done[:, None], 0.0, ret), jnp.where(ts.done, 0, length))
    return tracker, sums


def episode_metrics(sums: dict) -> dict:
    """Means from summed episode bookkeeping (host-side numpy; any leading axes are summed);
    NaN where nothing finished."""
    total = {k: float(np.sum(v)) for k, v in sums.items()}

    def mean(x, n):
        return x / n if n > 0 else float("nan")

    return {
        "train/episodes": total["episodes"],
        "train/episode_return": mean(total["return_sum"], total["episodes"]),
        "train/episode_length": mean(total["length_sum"], total["episodes"]),
        "train/placement": mean(total["placement_sum"], total["placement_count"]),
    }


def act_and_step(network, params, env, key, env_state, obs, mask, learner, others=None, dense=False):
    """Sample every seat's action from the policy and step the env.

    ``others``: optional (seats bool[N, P], actions int32[N, P]): those seats send those actions instead
    (a league's pool seats). ``dense`` (static): every action is legal on every step (the env's
    ``all_actions_legal``), so the policy is sampled unmasked. Returns (env_state, ts, transition) where
    ``transition`` holds the acting step's obs/mask/action/log_prob/value and the env's reward and per-seat
    terminal.
    """
    logits, value = network.apply(params, obs)
    policy_mask = None if dense else mask
    action = distributions.sample(key, logits, policy_mask)
    log_prob = distributions.log_prob(logits, policy_mask, action)
    sent = action if others is None else jnp.where(others[0], others[1], action)
    env_state, ts = env.step(env_state, sent)
    decision = mask.sum(-1) > 1
    weight = (decision & jnp.broadcast_to(jnp.asarray(learner), decision.shape)).astype(jnp.float32)
    transition = Transition(
        obs=obs,
        mask=mask,
        action=action,
        log_prob=log_prob,
        value=value,
        reward=ts.reward,
        terminal=ts.info["seat_done"],
        weight=weight,
    )
    return env_state, ts, transition


def summarize(metrics: dict) -> dict:
    """Host-side summary of stacked per-update metrics (e.g. one chunk): floats.

    Losses are averaged over updates; episode statistics are pooled over all
    episodes that finished (NaN when none did). ``health/...`` flags are not
    summarised (``agents.utils.health.check_chunk`` reads them).
    """
    sums = {k[len("sums/") :]: v for k, v in metrics.items() if k.startswith("sums/")}
    out = {k: float(np.mean(v)) for k, v in metrics.items() if not k.startswith(("sums/", "health/"))}
    if sums:  # a run of games (a dataset run has none)
        out.update(episode_metrics(sums))
    out["train/decisions"] = float(np.sum(metrics["train/decisions"]))
    return out
