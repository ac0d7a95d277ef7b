"""A recurrent actor-critic: an MLP torso, a GRU whose hidden state is reset where an episode begins, two heads.

The way of PureJaxRL's ``ppo_rnn.py``: the GRU cell is ``nn.scan``ned over time (``ScannedGRU``), and every step
takes a ``reset`` flag that puts the carry back to its initial value (zeros) before the step reads its observation,
so one sequence may cross episode edges. ``RecurrentActorCritic`` is what the trainers hold (``network="gru"``,
``agents.core.networks.actor_critic``):

    network = RecurrentActorCritic(num_actions=A, hidden=(64, 64))
    params = network.init(key, obs)                                       # obs float32[*B, D]
    carry = network.initial_carry(obs.shape[:-1])                         # float32[*B, H], zeros
    carry, logits, value = network.apply(params, carry, obs, reset)      # one step; reset bool[*B]
    carry, logits, value = network.apply_sequence(params, carry, obs_seq, reset_seq)   # [T, *B, ...]

Shapes: ``*B`` any batch dims (the trainers' are [N, P], or [B] sequences in an update's minibatch), ``D`` the
vector observation's size, ``A`` actions, ``H = hidden[-1]`` the GRU's width (the hidden size rule). The torso is
``MLP(hidden, activation)`` of each observation; the GRU (flax's ``GRUCell``, its carry float32[*B, H]) reads the
torso's features; each head has one more ``H``-unit layer with the activation, then the policy head
(``A`` logits, orthogonal scale 0.01) and the value head (scale 1.0), as in PureJaxRL. The torso and the heads run
on all ``T x B`` rows at once; only the cell is sequential. Action masks are not the network's business: the
trainers mask the logits exactly as for a feed-forward network (``agents.core.distributions``).
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from agents.core.layers import HIDDEN_SCALE, MLP, activation_fn, dense


class ScannedGRU(nn.Module):
    """A GRU cell scanned over a sequence's leading time axis, the carry reset before each step where ``reset``.

    ``__call__(carry float32[*B, H], (features float32[T, *B, F], reset bool[T, *B]))`` -> ``(carry float32[*B, H],
    outputs float32[T, *B, H])``: at step t the carry becomes zeros (the initial carry) where ``reset[t]``, then the
    cell reads ``features[t]``. One set of parameters for every step (``variable_broadcast="params"``)."""

    features: int

    @functools.partial(nn.scan, variable_broadcast="params", in_axes=0, out_axes=0, split_rngs={"params": False})
    @nn.compact
    def __call__(self, carry: jax.Array, inputs: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        features, reset = inputs
        carry = jnp.where(reset[..., None], jnp.zeros_like(carry), carry)
        return nn.GRUCell(self.features, name="cell")(carry, features)


class GRUActorCritic(nn.Module):
    """The flax module of ``RecurrentActorCritic`` (see the module docstring): ``__call__(carry float32[*B, H], obs
    float32[T, *B, D], reset bool[T, *B])`` -> ``(carry float32[*B, H], logits float32[T, *B, A], value float32[T,
    *B])``."""

    num_actions: int
    hidden: Sequence[int] = (256, 256)
    activation: str = "tanh"

    @nn.compact
    def __call__(self, carry: jax.Array, obs: jax.Array, reset: jax.Array):
        act = activation_fn(self.activation)
        width = self.hidden[-1]
        features = MLP(self.hidden, self.activation, name="torso")(jnp.asarray(obs, jnp.float32))
        carry, memory = ScannedGRU(width, name="memory")(carry, (features, jnp.asarray(reset, bool)))
        actor = act(dense(width, HIDDEN_SCALE, name="actor_layer")(memory))
        critic = act(dense(width, HIDDEN_SCALE, name="critic_layer")(memory))
        logits = dense(self.num_actions, 0.01, name="policy_head")(actor)
        value = dense(1, 1.0, name="value_head")(critic)[..., 0]
        return carry, logits, value


class RecurrentActorCritic:
    """A recurrent actor-critic as the trainers use it (``network="gru"``; the module docstring has the shapes).

    ``init(key, obs)`` as a feed-forward network's (``obs`` float32[*B, D]: the parameters do not depend on the
    batch); ``apply(params, carry, obs, reset)`` one step; ``apply_sequence(params, carry, obs, reset)`` a sequence
    (one ``lax.scan`` of the cell); ``initial_carry(batch_shape)`` the carry an episode starts from."""

    #: the trainers thread a carry through it (``is_recurrent``)
    is_recurrent = True

    def __init__(self, num_actions: int, hidden: Sequence[int] = (256, 256), activation: str = "tanh"):
        self.module = GRUActorCritic(num_actions, tuple(int(h) for h in hidden), activation)
        self.num_actions = num_actions
        #: H, the GRU's width: the last entry of ``hidden``
        self.carry_size = int(hidden[-1])

    def __eq__(self, other: object) -> bool:
        """Equal networks compare equal by value (their flax modules), as a feed-forward network's flax module does:
        the tables' runner cache (``agents.arena.tables.make_table_runner``) shares their programs."""
        return type(other) is type(self) and other.module == self.module

    def __hash__(self) -> int:
        return hash((type(self), self.module))

    def initial_carry(self, batch_shape: Sequence[int]) -> jax.Array:
        """float32[*batch_shape, H] zeros: the hidden state before an episode's first step."""
        return jnp.zeros((*batch_shape, self.carry_size), jnp.float32)

    def init(self, key: jax.Array, obs: jax.Array):
        """The parameters, from one step on ``obs`` float32[*B, D] (any batch dims)."""
        batch = obs.shape[:-1]
        return self.module.init(key, self.initial_carry(batch), obs[None], jnp.zeros((1, *batch), bool))

    def apply(self, params, carry: jax.Array, obs: jax.Array, reset: jax.Array):
        """One step: ``carry`` float32[*B, H], ``obs`` float32[*B, D], ``reset`` bool[*B] (start from the initial
        carry: the seat's previous step ended its episode) -> ``(carry float32[*B, H], logits float32[*B, A],
        value float32[*B])``."""
        carry, logits, value = self.apply_sequence(params, carry, obs[None], reset[None])
        return carry, logits[0], value[0]

    def apply_sequence(
        self, params, carry: jax.Array, obs: jax.Array, reset: jax.Array
    ) -> tuple[jax.Array, jax.Array, jax.Array]:
        """A sequence: ``carry`` float32[*B, H] before step 0, ``obs`` float32[T, *B, D], ``reset`` bool[T, *B] ->
        ``(carry float32[*B, H] after step T - 1, logits float32[T, *B, A], value float32[T, *B])``; the same as
        ``apply`` step after step."""
        carry, logits, value = typing.cast(tuple, self.module.apply(params, carry, obs, reset))
        return carry, logits, value


def is_recurrent(network) -> bool:
    """Whether ``network`` holds a carry from step to step (``RecurrentActorCritic``)."""
    return getattr(network, "is_recurrent", False) is True


__all__ = ["GRUActorCritic", "RecurrentActorCritic", "ScannedGRU", "is_recurrent"]
