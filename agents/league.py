"""Self-play league inside the compiled program: a pool of frozen policy snapshots and seat roles.

Every game (env) gives each of its 8 seats a *role* when it starts: the
learner (training data), a pool snapshot, or a scripted bot. ``learner_seats``
seats (chosen at random) are the learner's; each other seat is a pool seat
with probability ``pool_prob``, else a bot seat (``league_bot``).

The pool holds ``K`` snapshots of the learner's parameters as ONE stacked
pytree (leading axis K), a ring buffer: slot 0 starts with the initial
parameters, and every ``snapshot_every`` updates the learner's parameters
overwrite the oldest slot. Its forward passes are batched: each update draws
``G`` snapshots (uniformly over the filled slots, or prioritised by how often
the learner loses to them: prioritised fictitious self-play), the envs are
split into G equal groups, and group g's pool seats all play snapshot g, so
one update costs G forward passes over 1/G of the envs each: one more pass
over the batch, whatever K. A game that lasts over several updates meets the
snapshots drawn for its group in each.

Shapes: N envs, P = 8 seats, K pool slots, G groups.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from agents import distributions
from jaxgame import bots
from jaxgame import constants as C

ROLE_LEARNER, ROLE_POOL, ROLE_BOT = 0, 1, 2


@struct.dataclass
class Pool:
    """K frozen snapshots and what the learner did against them."""

    params: object  # every leaf [K, ...]
    update: jax.Array  # int32[K]: the update each snapshot was taken at; -1 = empty slot
    games: jax.Array  # float32[K]: finished games in which the learner met the snapshot
    losses: jax.Array  # float32[K]: of those, games where the snapshot's seats placed better on average
    rating: jax.Array  # float32[K]: OpenSkill ordinal at the last rating evaluation; NaN = not yet rated
    next: jax.Array  # int32[]: the slot the next snapshot overwrites


def pool_init(params, capacity: int) -> Pool:
    """A pool of ``capacity`` slots holding ``params`` (the initial parameters) in slot 0."""
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
        raise ValueError(f"pool capacity must be a positive int, got {capacity!r}")
    stacked = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (capacity,) + x.shape), params)
    update = jnp.full(capacity, -1, jnp.int32).at[0].set(0)
    zeros = jnp.zeros(capacity, jnp.float32)
    return Pool(stacked, update, zeros, zeros, jnp.full(capacity, jnp.nan, jnp.float32), jnp.int32(1 % capacity))


def pool_insert(pool: Pool, params, update, insert=True) -> Pool:
    """``params`` into slot ``pool.next`` (the oldest, once the pool is full) when ``insert`` (bool[],
    may be traced); the slot's statistics and rating restart."""
    slot = pool.next
    insert = jnp.asarray(insert)

    def put(stack, x):
        return stack.at[slot].set(jnp.where(insert, x, stack[slot]))

    return Pool(
        params=jax.tree_util.tree_map(put, pool.params, params),
        update=put(pool.update, jnp.asarray(update, jnp.int32)),
        games=put(pool.games, jnp.float32(0)),
        losses=put(pool.losses, jnp.float32(0)),
        rating=put(pool.rating, jnp.float32(jnp.nan)),
        next=jnp.where(insert, (slot + 1) % pool.update.shape[0], slot),
    )


def snapshot_name(update) -> str:
    """A snapshot's player name in ratings tables: ``snapshot@UPDATE``."""
    return f"snapshot@{int(update)}"


def with_ratings(pool: Pool, ordinals: dict) -> Pool:
    """The pool with ``rating[k]`` set to ``ordinals[snapshot_name(update[k])]`` for the filled slots that
    have an entry; a host-side call between compiled chunks (it reads ``pool.update``). The other slots
    keep their rating."""
    rating = np.array(pool.rating, np.float32)  # a host copy
    for k, u in enumerate(np.asarray(pool.update)):
        name = snapshot_name(u)
        if u >= 0 and name in ordinals:
            rating[k] = ordinals[name]
    # from a callback, so it works whatever devices (and processes) the pool's sharding spans
    return pool.replace(rating=jax.make_array_from_callback(rating.shape, pool.rating.sharding, lambda i: rating[i]))


def sampling_weights(pool: Pool, prioritized: bool) -> jax.Array:
    """float32[K], summing to 1 over the filled slots: uniform, or (prioritised) proportional to the
    learner's smoothed loss rate against each snapshot, (losses + 1) / (games + 2)."""
    filled = (pool.update >= 0).astype(jnp.float32)
    weights = filled * ((pool.losses + 1.0) / (pool.games + 2.0) if prioritized else 1.0)
    return weights / weights.sum()


def sample_snapshots(pool: Pool, key, num: int, prioritized: bool = False) -> jax.Array:
    """int32[num]: slots drawn independently with ``sampling_weights``."""
    logits = jnp.log(sampling_weights(pool, prioritized))
    return jax.random.categorical(key, logits, shape=(num,)).astype(jnp.int32)


def snapshot_params(pool: Pool, slots):
    """The parameters of ``slots`` int32[G], stacked: every leaf [G, ...]."""
    return jax.tree_util.tree_map(lambda stack: stack[slots], pool.params)


def assign_roles(key, num_envs: int, learner_seats: int, pool_prob) -> jax.Array:
    """int32[N, 8] roles: per env, ``learner_seats`` random seats are ROLE_LEARNER; each other seat is
    ROLE_POOL with probability ``pool_prob``, else ROLE_BOT."""
    perm_key, pool_key = jax.random.split(key)
    order = jax.vmap(lambda k: jax.random.permutation(k, C.NUM_PLAYERS))(jax.random.split(perm_key, num_envs))
    learner = jnp.argsort(order, axis=-1) < learner_seats  # seat s is learner if it comes early in the order
    pool = jax.random.uniform(pool_key, (num_envs, C.NUM_PLAYERS)) < pool_prob
    return jnp.where(learner, ROLE_LEARNER, jnp.where(pool, ROLE_POOL, ROLE_BOT)).astype(jnp.int32)


def group_of_env(num_envs: int, groups: int) -> np.ndarray:
    """int[N]: the group of each env (equal, contiguous groups)."""
    return np.arange(num_envs) // (num_envs // groups)


def pool_logits(network, group_params, obs) -> jax.Array:
    """float32[N, P, A]: each env's pool-seat logits from its group's snapshot.

    ``group_params``: leaves [G, ...]; ``obs`` [N, P, *obs_shape] with N divisible by G."""
    groups = jax.tree_util.tree_leaves(group_params)[0].shape[0]
    by_group = jax.tree_util.tree_map(lambda x: x.reshape((groups, -1) + x.shape[1:]), obs)
    logits, _ = jax.vmap(network.apply)(group_params, by_group)
    return logits.reshape((-1,) + logits.shape[2:])


def record_results(pool: Pool, slots, roles, done, rank, groups: int) -> Pool:
    """Count the games that ended (``done`` bool[N], ``rank`` int32[N, P], ``roles`` the roles they were
    played with) against the snapshot each env's group played (``slots`` int32[G]): a loss when the
    snapshot's seats placed better on average than the learner's."""
    num_envs = done.shape[0]
    slot = slots[jnp.asarray(group_of_env(num_envs, groups))]
    learner, pooled = roles == ROLE_LEARNER, roles == ROLE_POOL

    def mean_rank(which):
        return (rank * which).sum(-1) / jnp.maximum(which.sum(-1), 1)

    met = done & pooled.any(-1) & learner.any(-1)
    lost = met & (mean_rank(pooled) < mean_rank(learner))
    return pool.replace(
        games=pool.games.at[slot].add(met.astype(jnp.float32)),
        losses=pool.losses.at[slot].add(lost.astype(jnp.float32)),
    )


def bot_actions(bot: str, key, games, masks):
    """int32[N, P]: the bot's choice for every seat (the caller keeps the bot seats')."""
    return jax.vmap(bots.BOTS[bot])(jax.random.split(key, masks.shape[0]), games, masks)


# ---------------------------------------------------------------- the trainer's interface


class FixedSeats:
    """The seats of a run without a league: ``learner`` (numpy bool[P]) marks the learner's seats in every game;
    the env plays the others (scripted bots). The no-op counterpart of ``LeaguePlayers``, same interface."""

    def __init__(self, learner: np.ndarray):
        self.learner = learner

    def start(self, pool, key):
        """Before a rollout: ``(key, context)``; a league draws the rollout's snapshots here."""
        return key, None

    def seats(self, context, env_state, obs, mask, key):
        """One step's seats: ``(key, learner bool[P] or [N, P], others)``; ``others`` is None or
        ``(bool[N, P] seats acting with other parameters, their int32[N, P] actions)``."""
        return key, self.learner, None

    def stats(self, pool):
        """The part of the pool carried through the rollout's scan (its statistics)."""
        return None

    def record(self, context, stats, ts):
        """``stats`` after a step (``ts``: its TimeStep): a league counts the games that ended."""
        return stats

    def finish(self, pool, stats):
        """The pool after a rollout, from its carried ``stats``."""
        return pool

    def after_update(self, pool, params, update):
        """``(pool, metrics)`` after update number ``update`` (1-based) produced ``params``."""
        return pool, {}


class LeaguePlayers(FixedSeats):
    """A league's seats (see the module docstring): every game draws its seats' roles (``env_state.roles``);
    each rollout draws ``league_groups`` snapshots, and the pool seats of group g act with snapshot g."""

    def __init__(self, config, network):
        super().__init__(None)
        self.network = network
        self.groups = config.league_groups
        self.prioritized = config.league_sampling == "pfsp"
        self.snapshot_every = config.snapshot_every

    def start(self, pool: Pool, key):
        key, draw_key = jax.random.split(key)
        slots = sample_snapshots(pool, draw_key, self.groups, prioritized=self.prioritized)
        return key, (slots, snapshot_params(pool, slots))

    def seats(self, context, env_state, obs, mask, key):
        _, group_params = context
        key, pool_key = jax.random.split(key)
        learner = env_state.roles == ROLE_LEARNER
        pool_action = distributions.sample(pool_key, pool_logits(self.network, group_params, obs), mask)
        return key, learner, (env_state.roles == ROLE_POOL, pool_action)

    def stats(self, pool: Pool):
        return pool.replace(params=None)  # the pool's parameters stay out of the loop's carry

    def record(self, context, stats, ts):
        slots, _ = context
        return record_results(stats, slots, ts.info["roles"], ts.done, ts.info["rank"], self.groups)

    def finish(self, pool: Pool, stats):
        return stats.replace(params=pool.params)

    def after_update(self, pool: Pool, params, update):
        pool = pool_insert(pool, params, update, update % self.snapshot_every == 0)
        metrics = {
            "league/snapshots": (pool.update >= 0).sum().astype(jnp.float32),
            "league/loss_rate": pool.losses.sum() / jnp.maximum(pool.games.sum(), 1.0),
        }
        return pool, metrics


def make_players(config, learner: np.ndarray, network) -> FixedSeats:
    """``LeaguePlayers`` for a league config (``league_size > 0``), else ``FixedSeats(learner)``."""
    return LeaguePlayers(config, network) if config.league_size else FixedSeats(learner)
