"""The vector observation cut to what the rendered frame shows (``jaxgame.observation.frame_view``,
``NetConfig.view="frame"``, a diagnostic of ppo_pixels): what it keeps and zeroes on a real game's observations, that
changing only what the frame does not show leaves the view and a frame-view network's output unchanged, and the
config rule."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgame
from agents import preset
from agents.algorithms.base import make_network
from agents.core import networks
from jaxgame.observation import OBS_LAYOUT, OBS_SIZE, OPPONENT_FEATURES, frame_view


@pytest.fixture(scope="module")
def observations():
    """float32[8, OBS_SIZE] of every seat in a game of random actions, at the first step after a PvP fight."""
    env = jaxgame.make()
    state, ts = env.reset(jax.random.key(3))
    step = jax.jit(env.step)
    for i in range(1000):
        logits = jnp.where(ts.action_mask, 0.0, -jnp.inf)
        state, ts = step(state, jax.random.categorical(jax.random.key(i), logits))
        if _opponents(np.asarray(ts.observation))[..., 5].any():
            return np.asarray(ts.observation)
    raise AssertionError("no PvP fight in 1,000 steps")


def _opponents(obs):
    start, end = OBS_LAYOUT["opponents"]
    return obs[..., start:end].reshape(*obs.shape[:-1], -1, OPPONENT_FEATURES)


def test_the_frame_view_keeps_the_frames_information_and_zeroes_the_rest(observations):
    view = np.asarray(frame_view(observations))
    assert view.shape == observations.shape == (8, OBS_SIZE) and view.dtype == np.float32
    pool = slice(*OBS_LAYOUT["pool"])
    assert observations[:, pool].any() and not view[:, pool].any()
    kept = slice(0, OBS_LAYOUT["pool"][0])  # self, shop, bench and board, synergies: as given
    np.testing.assert_array_equal(view[:, kept], observations[:, kept])
    np.testing.assert_array_equal(view[:, slice(*OBS_LAYOUT["owned"])], observations[:, slice(*OBS_LAYOUT["owned"])])
    theirs, mine = _opponents(observations), _opponents(view)
    last = theirs[..., 5] == 1
    assert last.sum(axis=1).max() <= 1 and last.any()
    for seat in range(8):
        for row in range(7):
            expected = theirs[seat, row] * np.array([1, 1, 1, 1, 0, 1]) if last[seat, row] else np.zeros(6)
            np.testing.assert_array_equal(mine[seat, row], expected)
    # any leading shape: the view of a batch is the batch of views
    np.testing.assert_array_equal(np.asarray(frame_view(observations[None, :, None]))[0, :, 0], view)


def test_what_the_frame_does_not_show_changes_neither_the_view_nor_a_frame_view_network(observations):
    rng = np.random.default_rng(0)
    changed = observations.copy()
    changed[:, slice(*OBS_LAYOUT["pool"])] = rng.uniform(size=(8, 28))
    opponents = _opponents(changed)
    hidden_rows = opponents[..., 5] != 1
    opponents[..., :5] = np.where(hidden_rows[..., None], rng.uniform(size=(8, 7, 5)), opponents[..., :5])
    opponents[..., 4] = rng.uniform(size=(8, 7))  # every streak
    start, end = OBS_LAYOUT["opponents"]
    changed[:, start:end] = opponents.reshape(8, -1)
    assert not np.array_equal(changed, observations)
    np.testing.assert_array_equal(np.asarray(frame_view(changed)), np.asarray(frame_view(observations)))

    config = preset("ppo_small").with_overrides({"view": "frame"})
    network = make_network(config, jaxgame.make().num_actions)
    assert isinstance(network, networks.FrameView)
    params = network.init(jax.random.key(0), observations)
    same = [network.apply(params, o) for o in (observations, changed)]
    jax.tree_util.tree_map(np.testing.assert_array_equal, same[0], same[1])
    base = network.base.apply(params, observations)  # the parameters are the plain network's: it sees all
    assert not np.array_equal(np.asarray(base[1]), np.asarray(network.base.apply(params, changed)[1]))


def test_the_frame_view_needs_the_games_vector_observation():
    with pytest.raises(ValueError, match="view='frame'.*obs='vector'"):
        preset("ppo_pixels").with_overrides({"view": "frame"})
    with pytest.raises(ValueError, match="view"):
        preset("ppo_small").with_overrides({"view": "pixels"})
