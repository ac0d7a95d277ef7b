"""Actor-critic networks (flax.linen).

Both networks map observations with any leading batch dims ``[...]`` to
``(logits float32[..., A], value float32[...])``. Initialisation follows
PureJaxRL: orthogonal kernels with scale sqrt(2) for hidden layers, 0.01 for
the policy head and 1.0 for the value head; zero biases. The recurrent network
(``"gru"``, ``agents.core.recurrent``) takes and returns a carry besides:
``(carry, logits, value)`` of ``(params, carry, obs, reset)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from agents.core.entity_network import EntityActorCritic
from agents.core.layers import HIDDEN_SCALE, MLP, activation_fn, dense
from agents.core.recurrent import RecurrentActorCritic, is_recurrent
from agents.core.tile_ids import TileIdTorso
from jaxgame.observation import frame_view
from jaxgame.packing import FRAME_H, FRAME_W, PACKED_W, TILE, unpack


def unpack_frames(packed: jax.Array) -> jax.Array:
    """Packed 2bpp frames uint8[..., 72, 20] -> float32[..., 72, 80] shades scaled to [0, 1].

    Pixel ``i`` (0 = leftmost) of a byte lives in bits ``2i .. 2i+1``; the
    unpacking is ``jaxgame.packing.unpack``, one gather from its ``UNPACK_LUT``.
    """
    return unpack(packed).astype(jnp.float32) / 3.0


class PixelTorso(nn.Module):
    """float32[B, 72, 80] frames in [0, 1] -> float32[B, hidden[-1]] features.

    conv 16 5x5/2, conv 32 3x3/2, conv 32 3x3/2 (relu, SAME padding), flatten,
    then an ``MLP(hidden, activation)``.
    """

    hidden: Sequence[int] = (256,)
    activation: str = "relu"

    @nn.compact
    def __call__(self, frames: jax.Array) -> jax.Array:
        x = frames[..., None]
        for features, kernel in ((16, 5), (32, 3), (32, 3)):
            x = nn.Conv(
                features,
                (kernel, kernel),
                strides=(2, 2),
                padding="SAME",
                kernel_init=nn.initializers.orthogonal(HIDDEN_SCALE),
                bias_init=nn.initializers.zeros,
            )(x)
            x = nn.relu(x)
        x = x.reshape(x.shape[0], -1)
        return MLP(self.hidden, self.activation)(x)


class TileTorso(nn.Module):
    """float32[B, 72, 80] frames in [0, 1] -> float32[B, hidden[-1]] features.

    The frames are drawn from 8x8 tiles (docs/pixels.md), so the torso embeds each tile on its own: one
    ``features``-wide dense layer per 8x8 patch (a convolution with an 8x8 kernel and stride 8, written as a
    reshape and a matmul), relu, flatten the 9 x 10 tile grid, then an ``MLP(hidden, activation)``. With 16
    features and 256 units about 0.47M multiply-adds a frame against ``PixelTorso``'s 3.8M: sized for a
    2-core CPU (the ``ppo_pixels`` preset).
    """

    hidden: Sequence[int] = (256,)
    activation: str = "relu"
    features: int = 16

    @nn.compact
    def __call__(self, frames: jax.Array) -> jax.Array:
        batch = frames.shape[0]
        rows, cols = FRAME_H // TILE, FRAME_W // TILE
        patches = frames.reshape(batch, rows, TILE, cols, TILE).transpose(0, 1, 3, 2, 4)
        patches = patches.reshape(batch, rows, cols, TILE * TILE)
        x = nn.relu(dense(self.features, HIDDEN_SCALE, name="tile_embed")(patches))
        return MLP(self.hidden, self.activation)(x.reshape(batch, -1))


#: the pixel networks (``TrainConfig.network`` for ``obs="pixels"``) and their frame torsos
PIXEL_TORSOS = {"cnn": PixelTorso, "tiles": TileTorso, "tile_ids": TileIdTorso}
#: the torsos that read the packed frames themselves (the others get them unpacked, float32[B, 72, 80] in [0, 1])
PACKED_TORSOS = ("tile_ids",)
PIXEL_NETWORKS = tuple(PIXEL_TORSOS)
#: networks of the game's vector observation only (not oracle, not gymnax): ``agents.core.entity_network``
VECTOR_ONLY_NETWORKS = ("entity",)
#: networks that carry a hidden state from step to step (``agents.core.recurrent``): the vector observation only
RECURRENT_NETWORKS = ("gru",)
NETWORK_KINDS = ("mlp", *VECTOR_ONLY_NETWORKS, *PIXEL_NETWORKS, *RECURRENT_NETWORKS)


def _heads(make_torso, x: jax.Array, shared_torso: bool, num_actions: int) -> tuple[jax.Array, jax.Array]:
    """Inside a compact module: the policy and value heads over one shared torso ``make_torso("torso")`` or one each
    (``"actor_torso"``, ``"critic_torso"``). Returns (logits float32[B, A], value float32[B])."""
    if shared_torso:
        actor = critic = make_torso("torso")(x)
    else:
        actor, critic = make_torso("actor_torso")(x), make_torso("critic_torso")(x)
    logits = dense(num_actions, 0.01, name="policy_head")(actor)
    value = dense(1, 1.0, name="value_head")(critic)[..., 0]
    return logits, value


class ActorCritic(nn.Module):
    """Vector observations float32[..., D] -> (logits float32[..., A], value float32[...]).

    ``shared_torso``: one MLP torso feeding both heads; otherwise separate
    actor and critic torsos.
    """

    num_actions: int
    hidden: Sequence[int] = (256, 256)
    activation: str = "tanh"
    shared_torso: bool = False

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        obs = jnp.asarray(obs, jnp.float32)
        return _heads(
            lambda name: MLP(self.hidden, self.activation, name=name), obs, self.shared_torso, self.num_actions
        )


class PixelActorCritic(nn.Module):
    """Packed frames uint8[..., 72, 20] -> (logits float32[..., A], value float32[...]).

    Frames are unpacked on device (``unpack_frames``), then a ``PixelTorso`` (``torso="cnn"``) or a
    ``TileTorso`` (``torso="tiles"``); or a ``TileIdTorso`` (``torso="tile_ids"``) reads the packed frames. The torso
    is shared by both heads, or one per head when ``shared_torso`` is False.
    """

    num_actions: int
    hidden: Sequence[int] = (256,)
    activation: str = "relu"
    shared_torso: bool = True
    torso: str = "cnn"

    @nn.compact
    def __call__(self, packed: jax.Array) -> tuple[jax.Array, jax.Array]:
        if tuple(packed.shape[-2:]) != (FRAME_H, PACKED_W):
            raise ValueError(f"expected packed frames [..., {FRAME_H}, {PACKED_W}], got {packed.shape}")
        lead = packed.shape[:-2]
        if self.torso in PACKED_TORSOS:
            frames = jnp.asarray(packed).reshape(-1, FRAME_H, PACKED_W)
        else:
            frames = unpack_frames(packed).reshape(-1, FRAME_H, FRAME_W)
        torso = PIXEL_TORSOS[self.torso]
        logits, value = _heads(
            lambda name: torso(self.hidden, self.activation, name=name), frames, self.shared_torso, self.num_actions
        )
        return logits.reshape(*lead, self.num_actions), value.reshape(lead)


def actor_critic(
    kind: str,
    num_actions: int,
    hidden: Sequence[int] = (256, 256),
    activation: str = "tanh",
    shared_torso: bool = False,
) -> nn.Module | RecurrentActorCritic:
    """Build an actor-critic: ``"mlp"`` -> ``ActorCritic``; ``"entity"`` -> ``entity_network.EntityActorCritic``
    (the game's vector observation read as units; ``shared_torso`` does not apply); ``"cnn"`` (three convolutions)
    or ``"tiles"`` (one embedding per 8x8 tile) or ``"tile_ids"`` (each tile named by its index in the renderer's
    atlas, ``agents.core.tile_ids``) -> ``PixelActorCritic`` on packed frames; ``"gru"`` ->
    ``recurrent.RecurrentActorCritic`` (an MLP torso, a GRU of ``hidden[-1]`` units, two heads; its ``apply`` takes
    and returns a carry; ``shared_torso`` does not apply).

    For the pixel networks, ``hidden`` are the dense layers after the frame torso.
    """
    activation_fn(activation)
    hidden = tuple(int(h) for h in hidden)
    if kind == "mlp":
        return ActorCritic(num_actions, hidden, activation, shared_torso)
    if kind == "entity":
        return EntityActorCritic(num_actions, hidden, activation)
    if kind in PIXEL_NETWORKS:
        return PixelActorCritic(num_actions, hidden, activation, shared_torso, torso=kind)
    if kind == "gru":
        return RecurrentActorCritic(num_actions, hidden, activation)
    raise ValueError(f"unknown network kind {kind!r}; expected one of {NETWORK_KINDS}")


class PerSeat:
    """One parameter set per seat: independent learners (``TrainConfig.independent``).

    ``init(key, obs)`` returns the wrapped network's parameters stacked over ``num_seats`` (leaves
    [P, ...], each seat initialised from its own key); ``apply(params, obs)`` maps observations
    [N, P, *obs_shape] to ``(logits [N, P, A], value [N, P])``, seat p's through ``params[p]``. The
    trainer's update runs the wrapped network per seat (``network.base``), vmapped over seats.
    """

    def __init__(self, base, num_seats: int):
        self.base = base
        self.num_seats = num_seats

    def init(self, key, obs):
        keys = jax.random.split(key, self.num_seats)
        return jax.vmap(lambda k: self.base.init(k, jax.tree_util.tree_map(lambda x: x[:, :1], obs)))(keys)

    def apply(self, params, obs):
        return jax.vmap(self.base.apply, in_axes=(0, 1), out_axes=1)(params, obs)


class PublicView:
    """``base`` on the first ``width`` features of each observation: a vector-observation learner stepped on the
    oracle env's observations (``agents.algorithms.distill``), whose parameters are exactly a vector policy's.
    ``init(key, obs)`` and ``apply(params, obs)`` as flax's, obs float32[..., >= width]."""

    def __init__(self, base, width: int):
        self.base = base
        self.width = width

    def init(self, key, obs):
        return self.base.init(key, obs[..., : self.width])

    def apply(self, params, obs):
        return self.base.apply(params, obs[..., : self.width])


class FrameView:
    """``base`` on ``jaxgame.observation.frame_view`` of each vector observation (``NetConfig.view="frame"``): the
    network reads only what the seat's rendered frame shows. ``init(key, obs)`` and ``apply(params, obs)`` as
    flax's, obs float32[..., OBS_SIZE]; the parameters are exactly ``base``'s."""

    def __init__(self, base):
        self.base = base

    def init(self, key, obs):
        return self.base.init(key, frame_view(obs))

    def apply(self, params, obs):
        return self.base.apply(params, frame_view(obs))


class ObservationPart:
    """``base`` on one part of a table's ``obs="both"`` observations (``{"vector": float32[..., OBS_SIZE], "pixels":
    uint8[..., 72, 20]}``): a vector policy and a pixel policy at one table, each reading its own kind
    (``agents.policies.load.table_networks``). ``apply(params, obs)`` as flax's; the parameters are exactly
    ``base``'s."""

    def __init__(self, base, kind: str):
        self.base = base
        self.kind = kind

    def apply(self, params, obs):
        return self.base.apply(params, obs[self.kind])


class RecurrentObservationPart:
    """``ObservationPart`` of a recurrent ``base`` (``agents.core.recurrent.is_recurrent``): ``apply(params, carry,
    obs, reset) -> (carry, logits, value)`` on ``obs[kind]`` and ``initial_carry(batch_shape)`` as ``base``'s; the
    parameters and the carry are exactly ``base``'s."""

    is_recurrent = True

    def __init__(self, base, kind: str):
        self.base = base
        self.kind = kind

    def initial_carry(self, batch_shape: Sequence[int]) -> jax.Array:
        return self.base.initial_carry(batch_shape)

    def apply(self, params, carry: jax.Array, obs, reset: jax.Array):
        return self.base.apply(params, carry, obs[self.kind], reset)


def observation_part(base, kind: str) -> ObservationPart | RecurrentObservationPart:
    """``base`` on the ``kind`` part of a table's ``obs="both"`` observations: a ``RecurrentObservationPart`` for a
    recurrent network, else an ``ObservationPart``."""
    return RecurrentObservationPart(base, kind) if is_recurrent(base) else ObservationPart(base, kind)


class OneSeat:
    """Seat ``seat``'s learner of a ``PerSeat`` parameter stack, as a policy for any seat: ``apply(params,
    obs)`` runs the wrapped network with ``params[seat]`` on every observation (rating each seat's learner)."""

    def __init__(self, base, seat: int):
        self.base = base
        self.seat = seat

    def apply(self, params, obs):
        return self.base.apply(jax.tree_util.tree_map(lambda x: x[self.seat], params), obs)


class ExportedNetwork:
    """A policy written by ``jax.export`` (``agents.policies.export``: its ``greedy(obs[B, *obs_shape], mask bool[B,
    A]) -> (action int32[B], logits float32[B, A], value float32[B])``, deserialized) as a network of the tables:
    ``apply(params, obs[..., *obs_shape]) -> (logits float32[..., A], value float32[...])``, the leading axes
    flattened into the export's symbolic batch. It has no parameters here (``init`` gives ``()``; ``params`` is
    ignored): they are constants of the exported program. The mask it is called with allows every action: the
    tables mask the logits themselves."""

    def __init__(self, exported, obs_rank: int, num_actions: int):
        self.exported = exported
        self.obs_rank = obs_rank
        self.num_actions = num_actions

    def init(self, key, obs):
        return ()

    def apply(self, params, obs):
        lead, flat = _export_rows(obs, self.obs_rank)
        _, logits, value = self.exported.call(flat, jnp.ones((flat.shape[0], self.num_actions), bool))
        return logits.reshape((*lead, self.num_actions)), value.reshape(lead)


def _export_rows(obs, obs_rank: int) -> tuple:
    """``(lead, rows)``: the leading axes of ``obs[..., *obs_shape]`` (``obs_rank`` = len(obs_shape)) and ``obs``
    with them flattened into one batch axis, as an exported program takes it."""
    lead = obs.shape[: obs.ndim - obs_rank]
    return lead, obs.reshape((-1, *obs.shape[obs.ndim - obs_rank :]))


class ExportedRecurrentNetwork:
    """A recurrent policy written by ``jax.export`` (``agents.policies.export``: its ``greedy(obs[B, *obs_shape],
    mask bool[B, A], carry float32[B, H], reset bool[B]) -> (action, logits, value, carry)``, deserialized) as a
    recurrent network of the tables (``agents.core.recurrent``'s interface): ``apply(params, carry float32[..., H],
    obs[..., *obs_shape], reset bool[...]) -> (carry float32[..., H], logits float32[..., A], value float32[...])``,
    the leading axes flattened into the export's batch, and ``initial_carry``. No parameters here, and every action
    allowed in the call, as ``ExportedNetwork``."""

    #: the tables thread a carry through it (``agents.core.recurrent.is_recurrent``)
    is_recurrent = True

    def __init__(self, exported, obs_rank: int, num_actions: int, carry_size: int):
        self.exported = exported
        self.obs_rank = obs_rank
        self.num_actions = num_actions
        self.carry_size = carry_size

    def init(self, key, obs):
        return ()

    def initial_carry(self, batch_shape) -> jax.Array:
        """float32[*batch_shape, H] zeros: the memory before a game's first step."""
        return jnp.zeros((*batch_shape, self.carry_size), jnp.float32)

    def apply(self, params, carry, obs, reset):
        lead, flat = _export_rows(obs, self.obs_rank)
        rows = flat.shape[0]
        _, logits, value, carry = self.exported.call(
            flat,
            jnp.ones((rows, self.num_actions), bool),
            carry.reshape((rows, self.carry_size)),
            reset.reshape((rows,)),
        )
        return carry.reshape((*lead, self.carry_size)), logits.reshape((*lead, self.num_actions)), value.reshape(lead)
