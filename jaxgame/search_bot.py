"""``search``: the expert's plan, with each move of its board tried in the game's own combat before it is made.

A scripted player meant to stand above the expert bots (a fixed reference at the top of the ladder), on public
information only. Per seat and step:

1. ``expert_public``'s scores (``bots.expert_scores`` with ``bots.public_pool``, the same tie-breaking noise for
   the same key) pick the action it would play, ``a0``. Anything but a board move (a buy, XP, a reroll, a sale,
   the lock, the end of the turn) is played as it is: the economy and the shopping are the expert's.
2. When ``a0`` moves the board (bench -> cell, a swap with the unit there, a recall), the ``SEARCH_MOVES``
   best-scored legal board moves and "no board move" (the best legal action that is none) each give a board
   (``board_after``; the last by ``actions.apply_action``, as a buy may merge units on the board). Each board
   fights the board of every other seat still alive, as it stands (the boards are public: they can be scouted),
   once, in the game's combat (``combat.simulate_fight``, the game's
   default ``TRIAL_TICKS``), with the same random keys for every candidate, so that candidates differ by their
   board alone. The candidate with the most wins (a draw counts half; the survivors' margin breaks ties) is
   played; on a tie the expert's own choice.

``search_policy(key, state, mask) -> int32[8]``, like ``jaxgame.bots``' bots. A seat whose mask has no legal
action, or whose ``a0`` is no board move, fights nothing (its trial boards are empty, decided before the first
tick; the fights run in ``LANE_SHARE`` of one lane a fight). The tables (``agents.arena.tables``) therefore pass
a bot in ``SEAT_GATED`` only the masks of the seats it plays, which leaves its actions there unchanged and spares
the fights of the other seats; called with every seat's mask it decides for every seat.

Cost: (``SEARCH_MOVES`` + 1) x 7 trial fights for each seat-step that proposes a board move.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxgame import actions, bots, combat
from jaxgame import constants as C
from jaxgame.state import GameState, Players
from jaxgame.validation import as_key

#: board moves tried besides "no board move"
SEARCH_MOVES = 3
#: a trial fight's tick limit: the game's default ``max_combat_ticks``
TRIAL_TICKS = 400
#: fighters simulated per side: a board holds at most ``MAX_LEVEL`` units, so this is exact
TRIAL_UNITS = C.MAX_LEVEL
#: lanes per trial fight of a batch (``combat.simulate_fight``'s ``lane_share``): few seat-steps search at once
LANE_SHARE = 1 / 64
#: the bots whose work for a seat is wasted unless they play it: the tables give them only their seats' masks
SEAT_GATED = ("search",)
#: folded into the key for the trial fights (the tie-breaking noise uses the key itself, as ``expert_public``)
_FIGHT_STREAM = 0x5EA2C4


def board_after(p: Players, action) -> tuple[jax.Array, jax.Array]:
    """(species int32[24], stars int32[24]) of the seat's board after the legal board move ``action`` (bench ->
    cell or a recall): what ``actions.apply_action`` leaves there, without its other effects (a move puts the bench
    unit in the cell, a recall empties it)."""
    species, stars = p.species[C.BENCH_SIZE :], p.stars[C.BENCH_SIZE :]
    cells = jnp.arange(C.BOARD_CELLS)
    bench, cell = jnp.divmod(action - C.ACTION_PLACE, C.BOARD_CELLS)
    bench = jnp.clip(bench, 0, C.BENCH_SIZE - 1)
    placed = (action < C.ACTION_RECALL) & (cells == cell)
    recalled = (action >= C.ACTION_RECALL) & (cells == action - C.ACTION_RECALL)
    species = jnp.where(placed, p.species[bench], jnp.where(recalled, -1, species))
    return species, jnp.where(placed, p.stars[bench], jnp.where(recalled, 0, stars))


def _board_after_any(p: Players, action) -> tuple[jax.Array, jax.Array]:
    """The board after any legal ``action`` (a buy may merge units on it): ``actions.apply_action``'s."""
    moved, _, _ = actions.apply_action(p, action)
    return moved.species[C.BENCH_SIZE :], moved.stars[C.BENCH_SIZE :]


def trial_candidates(scores: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(a0 int32, candidates int32[SEARCH_MOVES + 1], legal bool[SEARCH_MOVES + 1])`` for one seat: the best legal
    action by ``scores`` (float32[NUM_ACTIONS], noise included), the best-scored legal board moves (``a0`` first
    when it is one) and last the best legal action that moves no unit of the board."""
    legal_scores = jnp.where(mask, scores, -jnp.inf)
    a0 = jnp.argmax(legal_scores).astype(jnp.int32)
    board_move = jnp.arange(C.NUM_ACTIONS) >= C.ACTION_PLACE
    board_scores = jnp.where(board_move, legal_scores, -jnp.inf)
    best, moves = jax.lax.top_k(board_scores, SEARCH_MOVES)
    rest = jnp.argmax(jnp.where(board_move, -jnp.inf, legal_scores))
    candidates = jnp.concatenate([moves, rest[None]]).astype(jnp.int32)
    legal = jnp.concatenate([best > -jnp.inf, mask[rest][None]])
    return a0, candidates, legal


def _seat_action(p: Players, round_, pool, mask, noise, seat, board_species, board_stars, alive, key):
    """One seat's action (int32): ``a0``, or the trial fights' choice when ``a0`` moves the board."""
    a0, candidates, legal = trial_candidates(bots.expert_scores(p, round_, pool) + noise, mask)
    search = mask.any() & (a0 >= C.ACTION_PLACE)
    moved_species, moved_stars = jax.vmap(lambda a: board_after(p, a))(candidates[:-1])  # [M, 24]
    rest_species, rest_stars = _board_after_any(p, candidates[-1])
    home_species = jnp.concatenate([moved_species, rest_species[None]])  # [M + 1, 24]
    home_stars = jnp.concatenate([moved_stars, rest_stars[None]])
    home_species = jnp.where((legal & search)[:, None], home_species, -1)
    opponent = alive & (jnp.arange(C.NUM_PLAYERS) != seat) & search  # [8]
    away_species = jnp.where(opponent[:, None], board_species, -1)  # [8, 24]
    keys = jax.vmap(lambda o: jax.random.fold_in(key, o))(jnp.arange(C.NUM_PLAYERS))  # shared by the candidates

    def fight(hs, ht, as_, at, k):
        return combat.simulate_fight(hs, ht, as_, at, k, TRIAL_TICKS, TRIAL_UNITS, LANE_SHARE)

    per_opponent = jax.vmap(fight, in_axes=(None, None, 0, 0, 0))
    result = jax.vmap(per_opponent, in_axes=(0, 0, None, None, None))(
        home_species, home_stars, away_species, board_stars, keys
    )  # [M + 1, 8] fields
    wins = jnp.where(result.winner == 0, 1.0, jnp.where(result.winner == 2, 0.5, 0.0))
    margin = (result.home_survivors - result.away_survivors) / (10.0 * C.NUM_PLAYERS * C.MAX_LEVEL)
    value = jnp.sum(jnp.where(opponent[None, :], wins + margin, 0.0), axis=1)  # the margin < 1 / 8 of a win
    choice = candidates[jnp.argmax(jnp.where(legal, value, -jnp.inf))]  # the first of equals: a0
    return jnp.where(search, choice, a0).astype(jnp.int32)


@jax.jit
def search_policy(key: jax.Array, state: GameState, mask: jnp.ndarray) -> jnp.ndarray:
    """The module docstring's player for every seat whose mask has a legal action. Returns int32[8]."""
    key = as_key(key, "search_policy key")
    noise = jax.random.uniform(key, (C.NUM_PLAYERS, C.NUM_ACTIONS), maxval=1e-3)  # expert_public's, same key
    fight_keys = jax.random.split(jax.random.fold_in(key, _FIGHT_STREAM), C.NUM_PLAYERS)
    players = state.players
    board_species, board_stars = players.species[:, C.BENCH_SIZE :], players.stars[:, C.BENCH_SIZE :]
    return jax.vmap(_seat_action, in_axes=(0, None, 0, 0, 0, 0, None, None, None, 0))(
        players,
        state.round,
        bots.public_pool(state),
        mask,
        noise,
        jnp.arange(C.NUM_PLAYERS),
        board_species,
        board_stars,
        players.alive,
        fight_keys,
    )


__all__ = [
    "LANE_SHARE",
    "SEARCH_MOVES",
    "SEAT_GATED",
    "TRIAL_TICKS",
    "TRIAL_UNITS",
    "board_after",
    "search_policy",
    "trial_candidates",
]
