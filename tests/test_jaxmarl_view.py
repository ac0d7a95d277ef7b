"""The JaxMARL-style multi-agent view (agents.interop.jaxmarl_env): pure JAX, at VecEnv speed under vmap."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgame
from agents.interop.jaxmarl_env import AutoChessMultiAgentEnv
from tests import tiny_games
from tests.jaxprs import cond_count
from tests.tiny_games import TINY, tiny_env


def test_jaxmarl_view_keeps_vecenv_branches_under_vmap():
    """jax.vmap of the view's step has VecEnv's fight and reset conds (traced, not compiled)."""
    marl, num = AutoChessMultiAgentEnv(rules=TINY), 4
    keys = jax.random.split(jax.random.key(0), num)
    _, states = jax.eval_shape(jax.vmap(marl.reset), keys)
    actions = {a: jax.ShapeDtypeStruct((num,), jnp.int32) for a in marl.agents}
    vec_conds = cond_count(jax.make_jaxpr(jaxgame.VecEnv(tiny_env(), num).step)(
        states, jax.ShapeDtypeStruct((num, 8), jnp.int32)).jaxpr)
    assert cond_count(jax.make_jaxpr(jax.vmap(marl.step))(keys, states, actions).jaxpr) == vec_conds >= 2


@pytest.mark.xdist_group(tiny_games.group)  # env.step of the tiny game: test_env.py's loop compiles it too
def test_jaxmarl_view_is_the_game_step_by_step():
    """The dicts hold the game's own step, seat by seat, over fights, knock-outs and a game end (the view's
    step calls the jitted env.step: the same program as the game's)."""
    marl, game = AutoChessMultiAgentEnv(rules=TINY), tiny_env()
    obs, state = marl.reset(jax.random.key(5))
    game_state, ts = game.reset(jax.random.key(5))
    rng, agents, ended, knocked_out = np.random.default_rng(0), marl.agents, False, False
    while not ended:
        avail = marl.get_avail_actions(state)
        np.testing.assert_array_equal(np.stack([avail[a] for a in agents]), ts.action_mask)
        chosen = np.array([rng.choice(np.flatnonzero(avail[a])) for a in agents], np.int32)
        obs, state, rewards, dones, infos = marl.step(jax.random.key(0), state, dict(zip(agents, chosen)))
        game_state, ts = game.step(game_state, chosen)
        for i, a in enumerate(agents):
            np.testing.assert_array_equal(obs[a], ts.observation[i])
            np.testing.assert_array_equal(rewards[a], ts.reward[i])
            assert bool(dones[a]) == bool(ts.done | ~ts.info["alive"][i])
        knocked_out |= any(bool(dones[a]) for a in agents) and not bool(ts.done)
        ended = bool(dones["__all__"])
        assert ended == bool(ts.done)
    assert knocked_out, "no seat was knocked out before the game ended"
    np.testing.assert_array_equal(infos["rank"], ts.info["rank"])
    assert sorted(np.asarray(infos["rank"]).tolist()) == list(range(1, 9))
    assert all(bool(marl.observation_space(a).contains(obs[a])) for a in agents)
