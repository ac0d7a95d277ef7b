"""The oracle observation (``obs="oracle"``, ``jaxgame.observation.oracle_block``): the public vector followed by
what a seat may not know, checked against a plain-numpy reference on the states of tests/tiny_games.py's random
games, and the next PvP opponent against the fight plan the game computes."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgame
from jaxgame import constants as C
from jaxgame import economy, observation, rounds
from jaxgame import species as sp
from tests import tiny_games
from tests.tiny_games import NUM_ENVS, STEPS

pytestmark = pytest.mark.xdist_group(tiny_games.group)


def reference_records(species, stars):
    """numpy twin of ``observation.unit_records``: float32[n, 12] per slot."""
    species, stars = np.asarray(species), np.asarray(stars)
    out = np.zeros((species.size, observation.UNIT_FEATURES), np.float32)
    for i, (s, st) in enumerate(zip(species, stars)):
        if s >= 0:
            out[i] = [
                1.0,
                st / sp.MAX_STARS,
                sp.SPECIES_COST[s] / 5.0,
                *sp.SPECIES_TYPE_MASK[s],
                (s + 1) / sp.NUM_SPECIES,
            ]
    return out


def reference_oracle_block(players, seat, next_opponent):
    """What ``seat`` may not know, from the numpy players of one state (the layout of ``oracle_block``)."""
    rows = []
    for k in range(1, C.NUM_PLAYERS):
        other = (seat + k) % C.NUM_PLAYERS
        need = economy.XP_TO_NEXT[players.level[other]]
        xp = players.xp[other] / max(need, 1) if need > 0 else 1.0
        shop = players.shop[other]
        rows.append(
            np.concatenate(
                [
                    [players.gold[other] / 50.0, xp, float(other == next_opponent)],
                    reference_records(shop, np.where(shop >= 0, 1, 0)).ravel(),
                    reference_records(players.species[other], players.stars[other]).ravel(),
                ]
            )
        )
    return np.concatenate(rows).astype(np.float32)


def state_at(states, t, e):
    """The GameState after step ``t`` of env ``e`` of a tiny_games rollout (keys stored as key data)."""
    state = tiny_games.at(states, t, e)
    return state.replace(key=jax.random.wrap_key_data(state.key))


def test_the_oracle_observation_is_the_vector_then_the_hidden_block_of_the_reference():
    env = tiny_games.tiny_env()
    states, ts, _, _ = tiny_games.games("vec")
    oracle = jax.jit(observation.oracle_observation, static_argnums=1)
    plan = jax.jit(rounds.plan_fights, static_argnums=1)
    next_opponents = jax.jit(observation.next_pvp_opponents, static_argnums=1)
    checked = pvp = 0
    for t in range(0, STEPS, 3):
        for e in range(NUM_ENVS):
            state = state_at(states, t, e)
            got = np.asarray(oracle(state, env.config))
            assert got.shape == (C.NUM_PLAYERS, observation.OBS_SIZE + observation.ORACLE_SIZE)
            np.testing.assert_array_equal(got[:, : observation.OBS_SIZE], ts.observation[t, e])
            opponents = np.asarray(next_opponents(state, env.config))
            # the pairing the fight plan makes at the end of this round: ghosts, PvE rounds and the dead are -1
            np.testing.assert_array_equal(opponents, np.asarray(plan(state, env.config, jax.random.key(t)).opponent))
            pvp += int((opponents >= 0).any())
            players = jax.tree_util.tree_map(np.asarray, state.players)
            for seat in range(C.NUM_PLAYERS):
                np.testing.assert_allclose(
                    got[seat, observation.OBS_SIZE :],
                    reference_oracle_block(players, seat, opponents[seat]),
                    rtol=1e-6,
                    err_msg=f"step {t} env {e} seat {seat}",
                )
            checked += 1
    assert checked == NUM_ENVS * len(range(0, STEPS, 3)) and pvp > 0  # some states before a PvP fight


def test_the_env_and_a_training_config_take_oracle_observations():
    from agents.algorithms.registry import make_train
    from agents.config import TrainConfig
    from agents.envs.make import make_env

    env = jaxgame.make("autochess", obs="oracle")
    assert env.obs_shape == (observation.OBS_SIZE + observation.ORACLE_SIZE,)
    _, ts = jax.eval_shape(env.reset, jax.random.key(0))
    assert ts.observation.shape == (C.NUM_PLAYERS, *env.obs_shape) and ts.observation.dtype == jnp.float32
    config = TrainConfig.from_fields(
        obs="oracle", num_envs=2, num_steps=4, total_steps=8, num_minibatches=2, hidden=(16,)
    )
    trainer = make_train(config, make_env(config))
    runner = jax.eval_shape(trainer.init, jax.random.key(0))
    assert runner.obs.shape == (2, C.NUM_PLAYERS, observation.OBS_SIZE + observation.ORACLE_SIZE)
    jax.eval_shape(lambda r: trainer.run(r, 1), runner)  # the PPO update traces on the oracle's width
    with pytest.raises(ValueError, match="'mlp', 'entity' or 'gru' for obs='vector', 'mlp' for 'oracle'"):
        TrainConfig.from_fields(obs="oracle", network="tiles")
