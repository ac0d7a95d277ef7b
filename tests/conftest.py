import os
import tempfile

# The suite is compile-bound (XLA:CPU compiling the game's programs): skip LLVM's optimisation passes,
# about a third off every compile for slower but identical integer arithmetic (float results may differ
# in the last bits from an optimised build; every comparison here is between programs built alike).
# Set before JAX starts its backend; subprocesses (the CLI tests) inherit it.
if "--xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0").strip()

import jax  # noqa: E402
import pytest

import jaxgame

# One persistent compilation cache for the whole test session (shared by the
# pytest-xdist workers and by subprocesses, which inherit the variable): many
# tests jit the same programs (the VecEnv step, the trainers' chunks) through
# different function objects, which would otherwise each compile from scratch.
# A fresh directory per session, so no run reuses another run's compilations.
os.environ.setdefault("JAXGAME_TEST_COMPILE_CACHE", tempfile.mkdtemp(prefix="jaxgame-test-xla-"))
os.environ.setdefault("JAXGAME_CACHE_DIR", os.environ["JAXGAME_TEST_COMPILE_CACHE"])  # the CLIs' default
jax.config.update("jax_compilation_cache_dir", os.environ["JAXGAME_TEST_COMPILE_CACHE"])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)


@pytest.fixture(scope="session")
def env():
    return jaxgame.make("autochess")


@pytest.fixture(scope="session")
def small_env():
    """Short games (few steps per round, low round cap) for long-run tests."""
    return jaxgame.make("autochess", steps_per_round=3, max_rounds=25, max_combat_ticks=200)


@pytest.fixture(scope="session")
def jit_step(env):
    return env.step  # jitted inside the env
