"""The search bot (jaxgame.search_bot): which moves it tries (a plain-Python reference), that it plays the expert
on public information except where it tried a board move, that it stays legal, and that a table's seat gating
leaves its actions on its own seats unchanged."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from jaxgame import actions, all_bots, bots, search_bot
from jaxgame import constants as C
from tests.test_bots import _random_states


def _reference_candidates(scores, mask):
    """(a0, candidates, legal) by hand: the best legal action, the SEARCH_MOVES best legal board moves (fewer when
    fewer are legal: the rest are marked illegal) and the best legal action that is no board move."""
    legal_scores = np.where(mask, scores, -np.inf)
    a0 = int(np.argmax(legal_scores))
    board = [a for a in np.argsort(-legal_scores, kind="stable") if a >= C.ACTION_PLACE and mask[a]]
    rest = max((a for a in range(C.ACTION_PLACE) if mask[a]), key=lambda a: legal_scores[a])
    moves = board[: search_bot.SEARCH_MOVES]
    return a0, moves, rest


def test_the_moves_tried_are_the_best_legal_board_moves_and_the_best_other_action():
    rng = np.random.default_rng(3)
    for _ in range(200):
        scores = rng.normal(size=C.NUM_ACTIONS).astype(np.float32)
        mask = rng.random(C.NUM_ACTIONS) < rng.choice([0.01, 0.1, 0.5])
        mask[C.ACTION_END_TURN] = True  # a seat that can act can always end its turn
        a0, candidates, legal = (np.asarray(x) for x in search_bot.trial_candidates(scores, mask))
        ref_a0, ref_moves, ref_rest = _reference_candidates(scores, mask)
        assert a0 == ref_a0 and candidates[-1] == ref_rest and legal[-1]
        assert list(candidates[: len(ref_moves)]) == ref_moves and legal[: len(ref_moves)].all()
        assert not legal[len(ref_moves) : search_bot.SEARCH_MOVES].any()
        if a0 >= C.ACTION_PLACE:
            assert candidates[0] == a0  # the expert's own move is the first tried, so it wins ties


@pytest.fixture(scope="module")
def searched():
    """16 random games (tests.test_bots._random_states): masks, keys, and the search bot's and expert_public's
    actions with every seat's mask, and the search bot's with one seat's mask at a time (a table's gating)."""
    states = _random_states(16, seed=11)
    masks = jax.jit(jax.vmap(jax.vmap(actions.legal_mask)))(states.players)
    keys = jax.random.split(jax.random.key(4), masks.shape[0])
    search = jax.jit(jax.vmap(all_bots.BOTS["search"]))
    full = np.asarray(search(keys, states, masks))
    seats = np.arange(C.NUM_PLAYERS)
    one_seat = [all_bots.decision_masks("search", masks, jax.numpy.asarray(seats == s)[None]) for s in seats]
    assert all(not np.asarray(m)[:, seats != s].any() for s, m in zip(seats, one_seat))  # only its seat's masks
    assert all_bots.decision_masks("expert", masks, jax.numpy.asarray(seats == 0)[None]) is masks  # not gated
    gated = np.stack([np.asarray(search(keys, states, m))[:, s] for s, m in zip(seats, one_seat)], 1)
    expert = np.asarray(jax.jit(jax.vmap(bots.expert_public_policy))(keys, states, masks))
    noise = jax.vmap(lambda k: jax.random.uniform(k, (C.NUM_PLAYERS, C.NUM_ACTIONS), maxval=1e-3))(keys)
    scores = (
        jax.vmap(jax.vmap(bots.expert_scores, in_axes=(0, None, 0)))(
            states.players, states.round, jax.vmap(bots.public_pool)(states)
        )
        + noise
    )
    _, candidates, legal = jax.vmap(jax.vmap(search_bot.trial_candidates))(scores, masks)
    return np.asarray(masks), full, gated, expert, np.asarray(candidates), np.asarray(legal)


def test_search_plays_legal_actions_and_the_expert_except_where_it_tried_a_board_move(searched):
    masks, full, _, expert, candidates, legal = searched
    games = np.arange(full.shape[0])[:, None]
    assert masks[games, np.arange(C.NUM_PLAYERS), full].all()
    tried = expert >= C.ACTION_PLACE
    np.testing.assert_array_equal(full[~tried], expert[~tried])
    assert tried.sum() >= 8  # the states do propose board moves, so the check below is not empty
    # where it tried: one of the legal moves it tried (the expert's own first), or the best action moving no unit
    for g, s in zip(*np.nonzero(tried)):
        assert candidates[g, s, 0] == expert[g, s] and full[g, s] in candidates[g, s][legal[g, s]]
    assert "search" in all_bots.SEAT_GATED and all_bots.BOTS["expert_public"] is bots.expert_public_policy


def test_a_tables_seat_gating_leaves_the_search_bots_actions_on_its_seats_unchanged(searched):
    _, full, gated, *_ = searched
    np.testing.assert_array_equal(gated, full)


def test_the_board_after_a_move_is_the_games_own():
    """``board_after`` (the trial boards of board moves) equals what ``actions.apply_action`` leaves on the board, for
    every legal board move of 16 random games' seats."""
    states = _random_states(16, seed=5)
    masks = np.asarray(jax.jit(jax.vmap(jax.vmap(actions.legal_mask)))(states.players))
    games, seats, moves = np.nonzero(masks[:, :, C.ACTION_PLACE :])
    pick = np.random.default_rng(0).choice(len(games), size=min(512, len(games)), replace=False)
    games, seats, moves = games[pick], seats[pick], moves[pick] + C.ACTION_PLACE
    players = jax.tree_util.tree_map(lambda x: x[games, seats], states.players)

    def both(p, a):
        moved, _, _ = actions.apply_action(p, a)
        return search_bot.board_after(p, a), (moved.species[C.BENCH_SIZE :], moved.stars[C.BENCH_SIZE :])

    (species, stars), (game_species, game_stars) = jax.jit(jax.vmap(both))(players, moves)
    assert len(moves) == 512 and (moves >= C.ACTION_RECALL).any() and (moves < C.ACTION_RECALL).any()
    np.testing.assert_array_equal(species, game_species)
    np.testing.assert_array_equal(stars, game_stars)
