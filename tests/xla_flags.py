"""The XLA flags the test suite compiles with (tests/conftest.py sets them; tests/data/record_smoke_metrics.py
records the pinned metrics under the same ones).

The suite is compile-bound (XLA:CPU compiling the game's programs), so both flags trade run speed for compile
speed, and neither changes integer results:

- ``--xla_backend_optimization_level=0`` skips LLVM's optimisation passes: about a third off every compile.
- ``--xla_cpu_use_fusion_emitters=false`` emits fused loops with XLA:CPU's older elemental emitters instead
  of the MLIR fusion emitters: about a quarter off the remaining compile time of the game's programs
  (the smoke preset's training chunk 17 s -> 12.5 s on the 2-core CPU).

Float results may differ in the last bits from a default build, and the elemental emitters may compile a
batched (vmapped) float expression differently from the unbatched one (a division by a constant as a
multiplication by its reciprocal): every comparison in the suite is between programs built with these flags,
and the game keeps float constants it compares across batching in tables (``jaxgame.game.PLACEMENT_REWARDS``).
"""

from jaxgame.xla_flags import FAST_COMPILE_OPTIONS, set_default_flags, with_flags

#: the two options of ``run.fast_compile`` (``jaxgame.xla_flags.FAST_COMPILE_OPTIONS``) as XLA_FLAGS:
#: "--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false"
TEST_XLA_FLAGS = tuple(f"--{name}={str(value).lower()}" for name, value in FAST_COMPILE_OPTIONS.items())

#: ``compiler_options`` that undo the test flags for one program: XLA's defaults, as users compile. For the tests
#: whose time is the program's run, not its compile (long learning runs: -O0 runs them 3-6x slower), and whose
#: float trajectory over many updates should be the one users get.
USER_COMPILER_OPTIONS = {"xla_backend_optimization_level": 2, "xla_cpu_use_fusion_emitters": True}


def compile_as_users_do(jitted, *args):
    """``jitted`` (a ``jax.jit`` function) lowered for ``args`` and compiled with ``USER_COMPILER_OPTIONS``."""
    return jitted.lower(*args).compile(compiler_options=USER_COMPILER_OPTIONS)


def with_test_flags(flags: str) -> str:
    """``flags`` (an XLA_FLAGS value) plus each test flag it does not already set."""
    return with_flags(flags, *TEST_XLA_FLAGS)


def set_test_flags() -> None:
    """Add the test flags to this process's XLA_FLAGS (before JAX starts its backend; subprocesses inherit it)."""
    set_default_flags(*TEST_XLA_FLAGS)
