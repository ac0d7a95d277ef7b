"""Self-play league inside the compiled program: a pool of frozen policy snapshots and seat roles.

Every game (env) gives each of its 8 seats a *role* when it starts: the
learner (training data), a pool snapshot, or a scripted bot. ``learner_seats``
seats (chosen at random) are the learner's; each other seat is a pool seat
with probability ``pool_prob``, else a bot seat (``league_bot``). The env draws
the roles (``agents.envs.make.LeagueTask``).

The pool holds ``K`` snapshots of the learner's parameters as ONE stacked
pytree (leading axis K), a ring buffer: slot 0 starts with the initial
parameters, and every ``snapshot_every`` updates the learner's parameters
overwrite the oldest slot.

Every game plays ONE snapshot, drawn when the game starts (uniformly over the
filled slots, or prioritised by how often the learner loses to them:
prioritised fictitious self-play): all its pool seats play that snapshot
until the game ends, and the game's result is credited to it. The pool
carries, per env, the slot of the game being played (``Pool.env_slot``) from
one rollout to the next. Inside a rollout (one ``lax.scan``) the step cannot
write into its carried pool before the next step acts, so ``LeaguePlayers.start``
draws, with the sampling weights of the rollout's start, the snapshots of the
games that start during the rollout: ``upcoming[e, j]`` for the j-th game that
starts in env e (one per env and step, the most that can start). The env
counts its games (``LeagueTaskState.game``) and the pool counts them the same
way (``Pool.env_game``), so every step knows which game each env is playing.
A game whose slot is overwritten by a new snapshot before it ends is played
on by the new snapshot and credited to nobody.

The pool's forward pass is batched by snapshot: every step the envs are
sorted by the slot they play and cut into batches of ``C = N / G`` envs
(``G = league_groups``) that each play one slot (a slot's last batch padded);
each batch runs the network once, on its envs' 8 - ``learner_seats``
non-learner seats, with its slot's parameters: B = min(N, G + min(K, N) - 1)
batches (the most that N envs over K slots can need), B parameter sets gathered.

Shapes: N envs, P = 8 seats, K pool slots, S = 8 - learner_seats non-learner seats, T rollout steps.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from agents.core import distributions
from jaxgame import all_bots
from jaxgame import constants as C

ROLE_LEARNER, ROLE_POOL, ROLE_BOT = 0, 1, 2


@struct.dataclass
class Pool:
    """K frozen snapshots, what the learner did against them, and the snapshot each env's game plays."""

    params: object  # every leaf [K, ...]
    update: jax.Array  # int32[K]: the update each snapshot was taken at; -1 = empty slot
    games: jax.Array  # float32[K]: finished games in which the learner met the snapshot
    losses: jax.Array  # float32[K]: of those, games where the snapshot's seats placed better on average
    rating: jax.Array  # float32[K]: OpenSkill ordinal at the last rating evaluation; NaN = not yet rated
    next: jax.Array  # int32[]: the slot the next snapshot overwrites
    env_slot: jax.Array  # int32[N]: the slot whose snapshot plays the pool seats of each env's current game
    env_update: jax.Array  # int32[N]: that snapshot's update when the game started (credited only if unchanged)
    env_game: jax.Array  # int32[N]: games started in each env since the reset (the env's LeagueTaskState.game)


def pool_init(params, capacity: int, num_envs: int = 0) -> Pool:
    """A pool of ``capacity`` slots holding ``params`` (the initial parameters) in slot 0; the first games of
    ``num_envs`` envs all play it (the only snapshot there is)."""
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
        raise ValueError(f"pool capacity must be a positive int, got {capacity!r}")
    stacked = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (capacity,) + x.shape), params)
    update = jnp.full(capacity, -1, jnp.int32).at[0].set(0)
    zeros = jnp.zeros(capacity, jnp.float32)
    per_env = jnp.zeros(num_envs, jnp.int32)
    return Pool(
        stacked,
        update,
        zeros,
        zeros,
        jnp.full(capacity, jnp.nan, jnp.float32),
        jnp.int32(1 % capacity),
        env_slot=per_env,
        env_update=per_env,
        env_game=per_env,
    )


def pool_insert(pool: Pool, params, update, insert=True) -> Pool:
    """``params`` into slot ``pool.next`` (the oldest, once the pool is full) when ``insert`` (bool[],
    may be traced); the slot's statistics and rating restart. Games under way keep their slot (so they go on
    with the new snapshot if it was theirs; ``Pool.env_update`` then keeps them from being credited)."""
    slot = pool.next
    insert = jnp.asarray(insert)

    def put(stack, x):
        return stack.at[slot].set(jnp.where(insert, x, stack[slot]))

    return pool.replace(
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


def sample_snapshots(pool: Pool, key, shape, prioritized: bool = False) -> jax.Array:
    """int32[*shape] (``shape`` an int or a tuple): slots drawn independently with ``sampling_weights``
    (by inverse CDF: O(log K) a draw, never an empty slot)."""
    cdf = jnp.cumsum(sampling_weights(pool, prioritized))
    last = jnp.argmax(cdf >= cdf[-1])  # the last filled slot: the CDF is flat after it
    u = jax.random.uniform(key, (shape,) if isinstance(shape, int) else tuple(shape)) * cdf[-1]
    return jnp.minimum(jnp.searchsorted(cdf, u, side="right"), last).astype(jnp.int32)


def assign_roles(key, num_envs: int, learner_seats: int, pool_prob, self_share: float = 0.0) -> jax.Array:
    """int32[N, 8] roles: per env, with probability ``self_share`` (static) every seat is ROLE_LEARNER (a
    self-play game); otherwise ``learner_seats`` random seats are ROLE_LEARNER and each other seat is ROLE_POOL
    with probability ``pool_prob``, else ROLE_BOT."""
    perm_key, pool_key = jax.random.split(key)
    order = jax.vmap(lambda k: jax.random.permutation(k, C.NUM_PLAYERS))(jax.random.split(perm_key, num_envs))
    learner = jnp.argsort(order, axis=-1) < learner_seats  # seat s is learner if it comes early in the order
    pool = jax.random.uniform(pool_key, (num_envs, C.NUM_PLAYERS)) < pool_prob
    if self_share:  # static: a run without self-play games draws exactly what it always drew
        self_play = jax.random.uniform(jax.random.fold_in(key, 1), (num_envs, 1)) < self_share
        learner = learner | self_play
    return jnp.where(learner, ROLE_LEARNER, jnp.where(pool, ROLE_POOL, ROLE_BOT)).astype(jnp.int32)


def num_batches(num_envs: int, batch_envs: int, capacity: int) -> int:
    """The most batches of ``batch_envs`` envs, each batch playing one slot, that ``num_envs`` envs playing
    any of ``capacity`` slots can need: with D slots in play, sum over them of ceil(n_d / C) < N / C + D."""
    return min(num_envs, -(-num_envs // batch_envs) + min(capacity, num_envs) - 1)


def snapshot_batches(env_slot, capacity: int, batch_envs: int):
    """How ``pool_logits`` batches the envs by slot: ``(table, batch_slot, env_batch, env_pos)``.

    ``env_slot`` int32[N] -> ``table`` int32[B, C] (the envs of each batch; padding repeats env 0),
    ``batch_slot`` int32[B] (each batch's slot), and ``env_batch``, ``env_pos`` int32[N] (where each env
    sits in ``table``). The envs are sorted by slot; slot k's envs fill ceil(n_k / C) consecutive batches."""
    num_envs = env_slot.shape[0]
    batches = num_batches(num_envs, batch_envs, capacity)
    order = jnp.argsort(env_slot, stable=True)
    sorted_slot = env_slot[order]
    counts = jnp.bincount(env_slot, length=capacity)
    first_env = jnp.cumsum(counts) - counts  # where each slot's envs start in the sorted order
    per_slot = (counts + batch_envs - 1) // batch_envs  # batches of each slot
    ends = jnp.cumsum(per_slot)
    rank = jnp.arange(num_envs) - first_env[sorted_slot]  # place among its slot's envs
    batch = (ends - per_slot)[sorted_slot] + rank // batch_envs
    pos = rank % batch_envs
    table = jnp.zeros((batches, batch_envs), jnp.int32).at[batch, pos].set(order.astype(jnp.int32))
    batch_slot = jnp.minimum(jnp.searchsorted(ends, jnp.arange(batches), side="right"), capacity - 1)
    env_batch = jnp.zeros(num_envs, jnp.int32).at[order].set(batch)
    env_pos = jnp.zeros(num_envs, jnp.int32).at[order].set(pos)
    return table, batch_slot.astype(jnp.int32), env_batch, env_pos


def pool_logits(network, pool_params, obs, env_slot, batch_envs: int) -> jax.Array:
    """float32[N, S, A]: the logits of each env's seats ``obs`` [N, S, *obs_shape] (any pytree with leading
    [N, S]) from the snapshot its game plays, slot ``env_slot`` int32[N] of ``pool_params`` (leaves [K, ...]).

    Batched by slot (``snapshot_batches``): one network call per batch of ``batch_envs`` envs, vmapped."""
    capacity = jax.tree_util.tree_leaves(pool_params)[0].shape[0]
    table, batch_slot, env_batch, env_pos = snapshot_batches(env_slot, capacity, batch_envs)
    batch_obs = jax.tree_util.tree_map(lambda x: x[table], obs)  # [B, C, S, ...]
    batch_params = jax.tree_util.tree_map(lambda stack: stack[batch_slot], pool_params)
    logits, _ = jax.vmap(network.apply)(batch_params, batch_obs)  # the values are dead code, dropped by XLA
    return logits[env_batch, env_pos]


def record_results(pool: Pool, env_slot, roles, done, rank, credit=True) -> Pool:
    """Count the games that ended (``done`` bool[N], ``rank`` int32[N, P], ``roles`` the roles they were
    played with) against the snapshot each one played (slot ``env_slot`` int32[N]), where ``credit`` (bool[N]
    or a scalar: the slot still holds that snapshot): a loss when the snapshot's seats placed better on
    average than the learner's."""
    learner, pooled = roles == ROLE_LEARNER, roles == ROLE_POOL

    def mean_rank(which):
        return (rank * which).sum(-1) / jnp.maximum(which.sum(-1), 1)

    met = done & credit & pooled.any(-1) & learner.any(-1)
    lost = met & (mean_rank(pooled) < mean_rank(learner))
    return pool.replace(
        games=pool.games.at[env_slot].add(met.astype(jnp.float32)),
        losses=pool.losses.at[env_slot].add(lost.astype(jnp.float32)),
    )


def bot_actions(bot: str, key, games, masks):
    """int32[N, P]: the bot's choice for every seat (the caller keeps the bot seats')."""
    return jax.vmap(all_bots.BOTS[bot])(jax.random.split(key, masks.shape[0]), games, masks)


# ---------------------------------------------------------------- the trainer's interface


class FixedSeats:
    """The seats of a run without a league: ``learner`` (numpy bool[P]) marks the learner's seats in every game;
    the env plays the others (scripted bots). The no-op counterpart of ``LeaguePlayers``, same interface."""

    def __init__(self, learner: np.ndarray):
        self.learner = learner

    def start(self, pool, key, *inputs):
        """Before a rollout: ``(key, context)``; a league draws the snapshots of the games starting during it.
        ``inputs``: the trainer's ``chunk_inputs()``."""
        return key, None

    def seats(self, context, env_state, obs, mask, key):
        """One step's seats: ``(key, learner bool[P] or [N, P], others)``; ``others`` is None or
        ``(bool[N, P] seats acting with other parameters, their int32[N, P] actions)``."""
        return key, self.learner, None

    def stats(self, pool):
        """The part of the pool carried through the rollout's scan (its statistics, each env's snapshot)."""
        return None

    def record(self, context, stats, ts):
        """``stats`` after a step (``ts``: its TimeStep): a league credits the games that ended and gives the
        games that start their snapshot."""
        return stats

    def finish(self, pool, stats):
        """The pool after a rollout, from its carried ``stats``."""
        return pool

    def after_update(self, pool, params, update):
        """``(pool, metrics)`` after update number ``update`` (1-based) produced ``params``."""
        return pool, {}


@struct.dataclass
class Draws:
    """A league rollout's context (``LeaguePlayers.start``): who plays the pool seats of every game."""

    params: object  # the pool's snapshots, every leaf [K, ...]
    slot: jax.Array  # int32[N]: the slot of the game each env plays at the rollout's start
    game: jax.Array  # int32[N]: the env's game count then (``Pool.env_game``)
    upcoming: jax.Array  # int32[N, T]: the slot of the j-th game that starts in the env during the rollout


class LeaguePlayers(FixedSeats):
    """A league's seats (see the module docstring): every game draws its seats' roles (``env_state.roles``)
    and one snapshot for its pool seats when it starts; the games that end are credited to their snapshot."""

    def __init__(self, config, network):
        super().__init__(None)
        self.network = network
        self.num_steps = config.ppo.num_steps
        self.batch_envs = config.run.num_envs // config.league.league_groups
        self.others = C.NUM_PLAYERS - config.league.league_learner_seats  # non-learner seats per game
        self.prioritized = config.league.league_sampling == "pfsp"
        self.snapshot_every = config.league.snapshot_every
        # a game's pool seats play the anchor (slot K, past the pool's) with this probability, given that the
        # game is not a self-play one: the anchor's share of all games is league_anchor_share
        not_self = 1.0 - config.league.league_self_share
        self.anchor_prob = (
            min(config.league.league_anchor_share / not_self, 1.0) if config.league.league_anchor_share else 0.0
        )

    def start(self, pool: Pool, key, *inputs):
        """Draw the snapshots of the games that will start during the rollout (with the weights of now); with an
        anchor (``inputs``: ``({"anchor": params, ...},)``, ``agents.algorithms.distill``) its parameters join the
        snapshots
        as slot K and a game draws it with probability ``anchor_prob``."""
        key, draw_key, anchor_key = jax.random.split(key, 3)
        shape = (pool.env_slot.shape[0], self.num_steps)
        upcoming = sample_snapshots(pool, draw_key, shape, prioritized=self.prioritized)
        params = pool.params
        if self.anchor_prob:
            capacity = pool.update.shape[0]
            upcoming = jnp.where(jax.random.bernoulli(anchor_key, self.anchor_prob, shape), capacity, upcoming)
            params = jax.tree_util.tree_map(
                lambda stack, x: jnp.concatenate([stack, x[None].astype(stack.dtype)]), params, inputs[0]["anchor"]
            )
        return key, Draws(params, pool.env_slot, pool.env_game, upcoming)

    def _upcoming(self, draws: Draws, started):
        """int32[N]: the slot of game number ``started`` (0-based, int32[N]) to start in each env this rollout."""
        index = jnp.clip(started, 0, self.num_steps - 1)[:, None]
        return jnp.take_along_axis(draws.upcoming, index, axis=1)[:, 0]

    def playing(self, draws: Draws, env_state) -> jax.Array:
        """int32[N]: the slot whose snapshot plays each env's current game (its pool seats)."""
        started = env_state.game - draws.game  # games that started in the env during this rollout
        return jnp.where(started == 0, draws.slot, self._upcoming(draws, started - 1))

    def seats(self, context, env_state, obs, mask, key):
        key, pool_key = jax.random.split(key)
        learner = env_state.roles == ROLE_LEARNER
        # the S seats that are not the learner's (exactly S per game), in seat order: only those run the pool
        others = jnp.argsort(learner, axis=-1, stable=True)[:, : self.others]  # int[N, S]
        rows = jnp.arange(learner.shape[0])[:, None]
        other_obs = jax.tree_util.tree_map(lambda x: x[rows, others], obs)
        logits = pool_logits(self.network, context.params, other_obs, self.playing(context, env_state), self.batch_envs)
        action = distributions.sample(pool_key, logits, mask[rows, others])
        pool_action = jnp.zeros(learner.shape, jnp.int32).at[rows, others].set(action)
        return key, learner, (env_state.roles == ROLE_POOL, pool_action)

    def stats(self, pool: Pool):
        return pool.replace(params=None)  # the pool's parameters stay out of the loop's carry

    def record(self, context, stats, ts):
        """Credit the games that ended to the snapshot they played (if its slot still holds it); the new games
        that started in their envs play the next of the rollout's drawn snapshots."""
        capacity = stats.update.shape[0]  # slot ``capacity`` is the anchor's: never credited
        snapshot = stats.env_slot < capacity
        credit = snapshot & (stats.env_update == stats.update[jnp.minimum(stats.env_slot, capacity - 1)])
        stats = record_results(
            stats, jnp.minimum(stats.env_slot, capacity - 1), ts.info["roles"], ts.done, ts.info["rank"], credit
        )
        new = self._upcoming(context, stats.env_game - context.game)
        return stats.replace(
            env_slot=jnp.where(ts.done, new, stats.env_slot),
            env_update=jnp.where(ts.done, stats.update[jnp.minimum(new, capacity - 1)], stats.env_update),
            env_game=stats.env_game + ts.done.astype(jnp.int32),
        )

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
    return LeaguePlayers(config, network) if config.league.league_size else FixedSeats(learner)
