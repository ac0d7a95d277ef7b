"""Scripted bots: legal actions only, and greedy beats random clearly."""

import jax
import numpy as np
import pytest

import jaxgame
from experiments.common import placement_by_bot, play_games
from jaxgame import bots

SEATS = ("greedy", "random") * 4


@pytest.mark.xdist_group("default_step")  # one worker compiles the default env's step (conftest.jit_step)
def test_bots_pick_legal_actions(env, jit_step):
    state, ts = env.reset(jax.random.key(0))
    step = jit_step
    policy = jax.jit(bots.mixed_policy(SEATS))
    for t in range(30):
        a = np.asarray(policy(jax.random.key(t), state, ts.action_mask))
        mask = np.asarray(ts.action_mask)
        assert mask[np.arange(8), a].all()
        state, ts = step(state, a)


def test_mixed_policy_validates_names():
    import pytest

    with pytest.raises(ValueError, match="need 8 bot names"):
        bots.mixed_policy(("greedy",) * 7)
    with pytest.raises(ValueError, match="need 8 bot names"):
        bots.mixed_policy(("greedy",) * 7 + ("smart",))


@pytest.mark.xdist_group("play_games")  # the quickstart notebook plays the same games
def test_greedy_beats_random():
    env = jaxgame.make("autochess", steps_per_round=6, max_rounds=18)
    ranks, _ = play_games(env, SEATS, num_envs=8, seed=0, progress=False)
    placement = placement_by_bot(ranks, SEATS)
    # 4 greedy vs 4 random: a perfectly dominant greedy places 2.5 on average, an equal one 4.5
    assert placement["greedy"] < 3.5 < placement["random"], placement
    assert np.all(np.sort(ranks, axis=1) == np.arange(1, 9))


def test_random_policy_is_uniform_over_legal_actions():
    mask = np.zeros((8, 258), bool)
    mask[:, [3, 10, 11, 200, 257]] = True
    mask[5] = False
    mask[5, 0] = True  # a seat with one legal action
    keys = jax.random.split(jax.random.key(2), 20000)
    actions = np.asarray(jax.jit(jax.vmap(lambda k: bots.random_policy(k, None, mask)))(keys))  # [20000, 8]
    assert np.all(actions[:, 5] == 0)
    others = np.delete(actions, 5, axis=1).ravel()
    values, counts = np.unique(others, return_counts=True)
    np.testing.assert_array_equal(values, [3, 10, 11, 200, 257])
    np.testing.assert_allclose(counts / others.size, 0.2, atol=0.005)  # 140k draws: sd ~0.001
