import os
import tempfile

from tests.xla_flags import set_test_flags

# Before JAX starts its backend; subprocesses (the CLI tests) inherit it. Why these flags: tests/xla_flags.py.
set_test_flags()

import jax  # noqa: E402
import pytest  # noqa: E402

import jaxgame  # noqa: E402
from tests.fake_wandb import fake_wandb  # noqa: E402,F401  (a fixture for every test module)

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


# Tests that compile a program other groups' tests load from the persistent cache run first, so the others
# find it there: test_train.py's smoke run compiles the smoke preset's chunk and bot evaluation, which the
# training notebook and the league run (same xdist group, hence the same worker, in collection order) reuse.
# Going first also starts the largest group first, which balances the two workers.
COMPILE_FIRST = ("tests/test_train.py",)


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", help="also run the tests marked slow (the opt-in tier)")


def _run_slow(config):
    """Whether the slow tier runs: ``--run-slow``, a ``-m`` expression that names ``slow`` (``-m slow`` runs only
    those tests)."""
    return config.getoption("--run-slow") or "slow" in (config.getoption("markexpr") or "")


def pytest_collection_modifyitems(config, items):
    def first(item):
        groups = [m.args[0] for m in item.iter_markers("xdist_group")]
        return not (groups == ["smoke_run"] and item.nodeid.startswith(COMPILE_FIRST))

    items.sort(key=first)  # stable: the order within each part is kept
    # Slow tests are skipped by default: `python -m pytest -m slow` runs only them, `--run-slow` runs everything.
    if not _run_slow(config):
        for item in items:
            for marker in item.iter_markers("slow"):
                why = marker.kwargs.get("reason")
                item.add_marker(
                    pytest.mark.skip(reason=f"slow{f' ({why})' if why else ''}: run with -m slow or --run-slow")
                )


if os.environ.get("JAXGAME_COMPILE_LOG"):  # diagnostics: every XLA compilation of this process, one line each
    import logging

    class _CompileLog(logging.Handler):
        def __init__(self, path):
            super().__init__()
            self.path, self.test = path, ""

        def emit(self, record):
            message = record.getMessage()
            if "Finished XLA compilation" in message or "cache hit" in message.lower():
                with open(self.path, "a") as f:
                    f.write(f"{os.getpid()}\t{self.test}\t{message}\n")

    _compile_log = _CompileLog(os.environ["JAXGAME_COMPILE_LOG"])
    for _name in ("jax._src.dispatch", "jax._src.interpreters.pxla", "jax._src.compiler", "jax._src.compilation_cache"):
        logging.getLogger(_name).addHandler(_compile_log)
        logging.getLogger(_name).setLevel(logging.DEBUG)
    jax.config.update("jax_log_compiles", True)

    @pytest.fixture(autouse=True)
    def _name_the_test(request):
        _compile_log.test = request.node.nodeid
        yield
