"""The GPU path checked on the CPU (agents.utils.lowering): the training chunks of the GPU presets and the env step at
4096 games lower for CUDA at their full shapes (abstract arguments: nothing allocated), with no host callback,
infeed/outfeed or float64; and the check finds each of those. A ``ppo_large`` update, compiled at its full
shapes, fits a 60 GB device (agents.utils.memory.compiled_bytes)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgame
from agents.envs.make import make_game
from agents.presets import preset_config
from agents.run.build import build
from agents.utils.lowering import lowered_text, lowering_problems, text_problems, while_body_op_counts
from agents.utils.memory import compiled_bytes


@pytest.mark.parametrize("preset", ["ppo_large", "a2c_stream", "ppo_pixels", "independent_large"])
def test_a_training_chunk_lowers_for_cuda_with_nothing_that_stalls_it(preset):
    config = preset_config(preset)
    trainer = build(config).trainer
    runner = jax.eval_shape(trainer.init, jax.random.key(config.run.seed))
    assert runner.obs.shape[0] == config.run.num_envs  # the preset's full shapes
    assert lowering_problems(jax.jit(trainer.run, static_argnums=1), runner, 1, platform="cuda") == []


def test_a_ppo_large_update_fits_60_gb_on_one_device():
    """XLA's buffer assignment of one ``ppo_large`` update (rollout of 4096 games x 32 steps, 2 epochs of 16
    minibatches) compiled for the CPU: everything it holds at once on one device. (About 9 GiB at 2026-11; the
    per-device figures on several devices are in docs/benchmarks.md, ``benchmark --what memory``.)"""
    config = preset_config("ppo_large")
    trainer = build(config).trainer
    runner = jax.eval_shape(trainer.init, jax.random.key(config.run.seed))
    sizes = compiled_bytes(jax.jit(trainer.run, static_argnums=1).lower(runner, 1).compile())
    rollout_obs = config.ppo.num_steps * config.run.num_envs * 8 * runner.obs.shape[-1] * 4
    assert sizes["temporaries"] >= rollout_obs  # the rollout is among them: the analysis sees the update
    assert sizes["peak"] <= 60e9, sizes


def test_the_env_step_of_4096_games_lowers_for_cuda_with_nothing_that_stalls_it():
    venv = jaxgame.VecEnv(make_game(preset_config("ppo_large")), 4096)
    states, _ = jax.eval_shape(venv.reset, jax.random.key(0))
    actions = jax.ShapeDtypeStruct((4096, 8), jnp.int32)
    assert lowering_problems(jax.jit(venv.step), states, actions, platform="cuda") == []


def test_the_check_finds_callbacks_host_transfers_and_float64():
    def with_callback(x):
        return jax.pure_callback(lambda a: a, jax.ShapeDtypeStruct(x.shape, x.dtype), x) + 1

    (problem,) = lowering_problems(jax.jit(with_callback), jax.ShapeDtypeStruct((3,), np.float32))
    assert problem.startswith("does not lower for cuda: ")  # a host callback cannot even be lowered from here
    assert lowering_problems(jax.jit(lambda x: x + 1), jax.ShapeDtypeStruct((3,), np.float32)) == []
    # what a lowering that did succeed might hold (StableHLO as jax.export writes it)
    assert text_problems("%0 = stablehlo.custom_call @xla_ffi_python_gpu_callback(%arg0) : ...") == [
        "host callback custom call xla_ffi_python_gpu_callback"
    ]
    assert text_problems("%1 = stablehlo.outfeed %0, %token : ...") == ["stablehlo.outfeed"]
    assert text_problems("%2 = stablehlo.infeed %token : ...") == ["stablehlo.infeed"]
    assert text_problems("func.func public @main(%arg0: tensor<3xf64>) -> tensor<3xf64>") == ["float64 values"]
    assert text_problems("%cst = stablehlo.constant dense<2.0> : tensor<f64>") == ["float64 values"]
    assert text_problems("%3 = stablehlo.custom_call @cu_threefry2x32(%a) : (tensor<3xf32>) -> tensor<3xf32>") == []


def test_while_body_op_counts_count_the_functions_a_body_calls():
    """The count of a loop body goes into the private functions JAX outlines (a nested jit): a helper of 3 ops
    called once more in the body adds 3, not 1; ops outside the loop do not count."""
    helper = jax.jit(lambda x: jnp.sin(x) + jnp.cos(x))  # sine, cosine, add

    def loop(calls):
        def body(i, x):
            for _ in range(calls):
                x = helper(x)
            return x * 2.0

        return jax.jit(lambda x: jnp.exp(jax.lax.fori_loop(0, 3, body, x)))

    x = jnp.ones(4)
    one, two = (while_body_op_counts(lowered_text(loop(n), x)) for n in (1, 2))
    assert len(one) == len(two) == 1
    assert two[0] - one[0] == 3


def test_the_fight_loop_lowers_for_cuda_without_the_cpu_workarounds():
    """On a CPU the fight loop's reductions over units are rows of elementwise ops and ``_materialize`` scatters
    intermediates into memory (XLA:CPU fusion fixes); lowered for CUDA its body has native reductions, none of
    those scatters, and under 3/4 of the CPU program's ops (``benchmark --what combat`` tracks the count against a
    baseline revision)."""
    from jaxgame import combat, rounds

    boards = [jnp.full((64, 24), -1, jnp.int32), jnp.zeros((64, 24), jnp.int32)] * 2

    def fights(hs, ht, as_, at, keys):
        return combat.simulate_fights(hs, ht, as_, at, keys, 400, 9, lanes=rounds.LANES_PER_GAME * 8)

    keys = jax.random.split(jax.random.key(0), 64)
    bodies = {p: lowered_text(jax.jit(fights), *boards, keys, platform=p) for p in ("cpu", "cuda")}
    scatters = {p: text.count('"stablehlo.scatter"') for p, text in bodies.items()}
    assert scatters["cuda"] < scatters["cpu"], scatters  # the loop's results are scattered on both
    assert "applies stablehlo.minimum" in bodies["cuda"] and "applies stablehlo.minimum" not in bodies["cpu"]
    cpu, cuda = (max(while_body_op_counts(t)) for t in (bodies["cpu"], bodies["cuda"]))
    assert cuda < 0.75 * cpu, (cuda, cpu)  # 1,795 vs 2,863 at 2026-11-28
