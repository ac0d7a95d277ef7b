import jax
import pytest

import jaxgame


@pytest.fixture(scope="session")
def env():
    return jaxgame.make("autochess")


@pytest.fixture(scope="session")
def small_env():
    """Short games (few steps per round, low round cap) for long-run tests."""
    return jaxgame.make("autochess", steps_per_round=3, max_rounds=25, max_combat_ticks=200)


@pytest.fixture(scope="session")
def jit_step(env):
    return jax.jit(env.step)
