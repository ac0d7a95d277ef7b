"""Seat-rotated tables of policies and bots (agents.tables): the rotation bookkeeping and who plays where."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgame
from agents import tables
from jaxgame import constants as C

SHORT = dict(steps_per_round=2, max_rounds=6, starting_life=12, max_combat_ticks=150)


class PassivePolicy:
    """A 'network' that always ends its turn at once: it never buys, so it never fields a unit."""

    def apply(self, params, obs):
        logits = jnp.zeros(obs.shape[:-1] + (C.NUM_ACTIONS,)).at[..., C.ACTION_END_TURN].set(100.0 * params)
        return logits, jnp.zeros(obs.shape[:-1])


# the tests of played() share one worker (and its cached games) under pytest-xdist
pytestmark = pytest.mark.xdist_group("tables")

GREEDY = 1 + tables.TABLE_BOTS.index("greedy")  # participant index with one policy


@functools.cache
def played():
    """Game 0: 8 greedy bots; games 1 and 2: the passive policy in position 0 (resp. 5), greedy elsewhere."""
    game = jaxgame.make("autochess", **SHORT)
    run = tables.make_table_runner(game, (PassivePolicy(),), num_games=3)
    lineups = np.full((3, C.NUM_PLAYERS), GREEDY)
    lineups[1, 0] = lineups[2, 5] = 0
    return np.asarray(run((jnp.float32(1.0),), lineups, jax.random.key(0)))


def test_rotation_maps_are_inverse():
    position = tables.rotation_seats(3)
    seat = tables.rotation_seats(3, shift=1)
    for e in range(position.shape[0]):
        np.testing.assert_array_equal(position[e][seat[e]], np.arange(C.NUM_PLAYERS))
        assert position[e][e % C.NUM_PLAYERS] == 0  # rotation r: position 0 sits in seat r


def test_every_rotation_is_a_full_ranking():
    ranks = played()
    assert ranks.shape == (3, C.NUM_PLAYERS, C.NUM_PLAYERS)
    assert np.all(np.sort(ranks, axis=-1) == np.arange(1, C.NUM_PLAYERS + 1))


def test_identical_players_replay_the_same_game_in_every_rotation():
    # one participant in every seat and the same game seed: rotating the lineup only relabels positions,
    # so position j of rotation r (seat (j + r) % 8) ranks as seat (j + r) % 8 of rotation 0
    ranks = played()[0]
    for r in range(C.NUM_PLAYERS):
        np.testing.assert_array_equal(ranks[r], ranks[0][(np.arange(C.NUM_PLAYERS) + r) % C.NUM_PLAYERS])


@pytest.mark.parametrize("game, position", [(1, 0), (2, 5)])
def test_the_policy_plays_its_own_position(game, position):
    # a player that never fields a unit loses every fight: it finishes at the bottom against 7 greedy bots
    # in every rotation, wherever its lineup position puts it (were the positions mixed up, its ranks
    # would spread over the positions)
    mean_rank = played()[game].mean(axis=0)
    assert np.argmax(mean_rank) == position and mean_rank[position] >= 7.0


def test_bad_lineups_are_refused():
    game = jaxgame.make("autochess", **SHORT)
    run = tables.make_table_runner(game, (PassivePolicy(),), num_games=1)
    with pytest.raises(ValueError, match="participants 0..2"):
        run((jnp.float32(1.0),), np.full((1, 8), 3), jax.random.key(0))
    with pytest.raises(ValueError, match="shape"):
        run((jnp.float32(1.0),), np.zeros((2, 8), int), jax.random.key(0))
    with pytest.raises(ValueError, match="1 parameter tree"):
        run((), np.zeros((1, 8), int), jax.random.key(0))
