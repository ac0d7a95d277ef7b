"""What a policy's memory changes in PPO's machinery (``agents.algorithms.ppo.PPO.sequences``), in one place.

A feed-forward policy (``IndependentSamples``) keeps nothing between steps: the rollout acts on each observation
alone and an update trains on shuffled samples, ``[T x N x P]`` flattened. A recurrent policy
(``RecurrentSequences``; ``network="gru"``, ``agents.core.recurrent``) carries a hidden state per env and seat
(``agents.core.rollout.Memory``, in ``agents.algorithms.base.RecurrentRunner.memory``): the rollout steps it and
resets it where a seat's episode ends, the update stores the carry the rollout started from
(``agents.core.rollout.SequenceStart``), draws its minibatches over whole (env, seat) sequences (``[T, S]`` with S
= N x the learner's seats, ``num_minibatches`` dividing S) and re-runs the network over each minibatch's sequences
from that carry with the same resets, as PureJaxRL's ``ppo_rnn.py`` does.

Both implement the same five steps, so ``PPO`` has no branch on the network's kind:

- ``act``: one rollout step with the samples' way of acting (``OwnPlay.act``...): ``(env_state, ts, transition,
  memory)``;
- ``end_value``: the value of the state after the rollout, float32[N, P];
- ``start``: what the update's ``Batch.memory`` holds (None, or the ``SequenceStart``);
- ``flatten`` / ``minibatches``: the learner's samples [T, N, P, ...] as the units a minibatch draws, then
  shuffled into ``num_minibatches`` stacked minibatches;
- ``outputs``: the network's ``(logits [B, A], value [B])`` on one minibatch and the minibatch as the loss reads
  it (leaves [B, ...]).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from agents.core.recurrent import is_recurrent
from agents.core.rollout import Batch, Memory, StepOutputs, Transition, sequence_outputs, sequence_start


class IndependentSamples:
    """A feed-forward policy: no memory; an update's minibatches are shuffled samples (``B`` of the T x N x P')."""

    recurrent = False

    def act(self, samples_act, network, params, memory, key, env_state, obs, mask, learner, others):
        """One rollout step: ``samples_act(network, params, key, env_state, obs, mask, learner, others) -> (env_state,
        ts, transition)`` (the samples' way of acting, ``OwnPlay.act``...); ``memory`` is None and stays None."""
        env_state, ts, transition = samples_act(network, params, key, env_state, obs, mask, learner, others)
        return env_state, ts, transition, memory

    def end_value(self, network, params, runner) -> jax.Array:
        """float32[N, P]: the value of ``runner.obs``."""
        _, value = network.apply(params, runner.obs)
        return value

    def start(self, memory, stepped: Transition, carried) -> None:
        """Nothing to re-run from."""
        return None

    def flatten(self, batch: Batch) -> Batch:
        """Leaves [T, N, P', ...] -> [T x N x P', ...]: each sample one unit."""
        return jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[3:]), batch)

    def minibatches(self, key, flat: Batch, num_minibatches: int) -> Batch:
        """The samples permuted and split: leaves [M, B, ...]."""
        order = jax.random.permutation(key, flat.advantages.shape[0])
        return jax.tree_util.tree_map(lambda x: x[order].reshape((num_minibatches, -1) + x.shape[1:]), flat)

    def outputs(self, network, params, minibatch: Batch):
        """``(logits float32[B, A], value float32[B], minibatch)`` of a minibatch with leaves [B, ...]."""
        logits, value = network.apply(params, minibatch.traj.obs)
        return logits, value, minibatch


class RecurrentSequences:
    """A recurrent policy: a ``Memory`` per env and seat; an update's minibatches are whole (env, seat) sequences
    (``B`` of the S = N x P' sequences, each of the rollout's T steps), the network re-run over them."""

    recurrent = True

    def act(self, samples_act, network, params, memory: Memory, key, env_state, obs, mask, learner, others):
        """One rollout step: the network steps ``memory`` (resetting the carry where the seat's last step ended its
        episode), ``samples_act`` samples from its outputs (``StepOutputs``) and steps the env; the new memory resets
        the seats the step ended (``info["seat_done"]``: a game's end, an eliminated seat) at their next step."""
        carry, logits, value = network.apply(params, memory.carry, obs, memory.reset)
        env_state, ts, transition = samples_act(
            StepOutputs(logits, value), params, key, env_state, obs, mask, learner, others
        )
        return env_state, ts, transition, memory.stepped(carry, transition.weight > 0, ts.info["seat_done"])

    def end_value(self, network, params, runner) -> jax.Array:
        """float32[N, P]: the value of ``runner.obs`` from the memory after the rollout."""
        memory = runner.memory
        _, _, value = network.apply(params, memory.carry, runner.obs, memory.reset)
        return value

    def start(self, memory: Memory, stepped: Transition, carried):
        """``agents.core.rollout.sequence_start``: the carry before the rollout, its resets, row 0 as stepped and
        the carried-in decisions' carries (``carried`` bool[N, P], None where none can be)."""
        return sequence_start(memory, stepped, carried)

    def flatten(self, batch: Batch) -> Batch:
        """Leaves [T or 1, N, P', ...] -> [T or 1, N x P', ...]: each (env, seat) sequence one unit."""
        return jax.tree_util.tree_map(lambda x: x.reshape(x.shape[:1] + (-1,) + x.shape[3:]), batch)

    def minibatches(self, key, flat: Batch, num_minibatches: int) -> Batch:
        """The sequences permuted and split: leaves [M, T or 1, B, ...]."""
        order = jax.random.permutation(key, flat.advantages.shape[1])

        def split(x):
            x = x[:, order].reshape(x.shape[:1] + (num_minibatches, -1) + x.shape[2:])
            return jnp.moveaxis(x, 1, 0)

        return jax.tree_util.tree_map(split, flat)

    def outputs(self, network, params, minibatch: Batch):
        """The network re-run over a minibatch of sequences (leaves [T or 1, B, ...]) from its ``SequenceStart``:
        ``(logits float32[T x B, A], value float32[T x B], the minibatch's samples with leaves [T x B, ...])``."""
        logits, value = sequence_outputs(network, params, minibatch.traj.obs, minibatch.memory)
        samples = jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[2:]), minibatch.replace(memory=None))
        return logits.reshape((-1,) + logits.shape[2:]), value.reshape(-1), samples


def sequences_for(network) -> IndependentSamples | RecurrentSequences:
    """``RecurrentSequences`` for a recurrent network (``agents.core.recurrent.is_recurrent``), else
    ``IndependentSamples``."""
    return RecurrentSequences() if is_recurrent(network) else IndependentSamples()


__all__ = ["IndependentSamples", "RecurrentSequences", "sequences_for"]
