"""One step of a batch of games that pays for the combat only on fight steps.

Under a plain ``jax.vmap`` the per-game ``lax.cond`` around the fight becomes a
select that runs the combat on every step. ``step_batch`` instead vmaps the
cheap pieces and branches ONCE for the whole batch: the fight phase runs only
when at least one game is on its fight step (with fixed-length rounds all games
are phase aligned, so that is every ``steps_per_round``-th step), the new
shops of rerolling seats only when some seat rerolled, and the reset only when
some game ended; within the fight phase the fight loop runs only the
fights actually played (``rounds.run_fights``). ``sync_axes`` names vmapped
axes around the batch (e.g. a sweep's) over which these decisions are shared
too (see ``jaxgame.batching``).

``with_batch_rule`` gives a per-game function that batch-level version as its
``vmap`` rule (``jax.custom_batching.custom_vmap``): ``AutoChessEnv.step`` is
built with it, so anyone's ``jax.vmap(env.step)`` runs ``step_batch``, and
nested vmaps (a sweep's axis around a batch of games) flatten their axes into
one batch for it.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

from jaxgame import constants as C
from jaxgame import game
from jaxgame.batching import any_in_batch


def select(mask: jax.Array, a, b):
    """Per-game select of two batched pytrees; mask bool[num_games]."""
    return jax.tree_util.tree_map(lambda x, y: jnp.where(mask.reshape((-1,) + (1,) * (x.ndim - 1)), x, y), a, b)


def step_batch(env, states, actions: jax.Array, sync_axes: tuple[str, ...] = ()):
    """``env.step`` for a batch: states and actions int32[N, 8] with a leading [N] axis ->
    (states, TimeStep), a leading [N] axis on both; leaf for leaf what ``jax.vmap`` of the per-game
    step computes. ``env`` is an ``AutoChessEnv``."""
    num_games = actions.shape[0]
    states, needs_refill, reroll_keys, fight_keys, reset_keys, due = jax.vmap(env.apply_actions)(states, actions)
    # the new shops of rerolling seats: 48 draws one after another, skipped when no seat rerolled
    states = jax.lax.cond(
        any_in_batch(needs_refill, sync_axes),
        lambda s: jax.vmap(game.reroll_shops)(s, needs_refill, reroll_keys),
        lambda s: s,
        states,
    )

    def fight(states):
        plans = jax.vmap(env.prepare_fights)(states, fight_keys)
        plans = plans.replace(active=plans.active & due[:, None])  # no combat for games not due
        results = env.run_fights(plans, sync_axes)  # one batch-level fight loop
        fought, reward = jax.vmap(env.finish_fights)(states, plans, results, fight_keys)
        return select(due, fought, states), jnp.where(due[:, None], reward, 0.0)

    def skip(states):
        return states, jnp.zeros((num_games, C.NUM_PLAYERS), jnp.float32)

    states, reward = jax.lax.cond(any_in_batch(due, sync_axes), fight, skip, states)
    done = states.done
    final_obs, final_mask = jax.vmap(env.observe)(states), jax.vmap(env.action_mask)(states)
    current = (states, final_obs, final_mask)
    fresh, obs, mask = jax.lax.cond(
        any_in_batch(done, sync_axes), lambda: select(done, jax.vmap(env.start)(reset_keys), current), lambda: current
    )
    return fresh, jax.vmap(env.timestep)(states, final_obs, obs, mask, reward)


def _broadcast_unbatched(axis_size: int, in_batched, args):
    """Give every unbatched leaf of ``args`` the leading [axis_size] axis the batched ones have."""
    return jax.tree_util.tree_map(
        lambda batched, x: x if batched else jnp.broadcast_to(x, (axis_size, *jnp.shape(x))), tuple(in_batched), args
    )


def _all_batched(tree):
    return jax.tree_util.tree_map(lambda _: True, tree)


def _flattening_batch(batch_fn: Callable) -> Callable:
    """``batch_fn`` (leading [N] axis on every input and output leaf) whose own vmap rule merges the
    vmapped axis into the batch: [M, N, ...] -> one call on [M*N, ...] -> [M, N, ...]."""
    flat = custom_vmap(batch_fn)

    @flat.def_vmap
    def rule(axis_size, in_batched, *args):
        args = _broadcast_unbatched(axis_size, in_batched, args)
        merged = jax.tree_util.tree_map(lambda x: x.reshape(axis_size * x.shape[1], *x.shape[2:]), args)
        out = flat(*merged)  # itself batch-ruled: a third vmap around merges again
        out = jax.tree_util.tree_map(lambda x: x.reshape(axis_size, x.shape[0] // axis_size, *x.shape[1:]), out)
        return out, _all_batched(out)

    return flat


def with_batch_rule(single_fn: Callable, batch_fn: Callable) -> Callable:
    """``single_fn`` (one game) with ``batch_fn`` (the same function of a leading batch axis on every
    argument and result leaf) as its ``jax.vmap`` rule, at any depth of nested vmaps. Unbatched
    arguments are broadcast to the batch first. Not differentiable (``custom_vmap``)."""
    single = custom_vmap(single_fn)
    batch = _flattening_batch(batch_fn)

    @single.def_vmap
    def rule(axis_size, in_batched, *args):
        out = batch(*_broadcast_unbatched(axis_size, in_batched, args))
        return out, _all_batched(out)

    return single
