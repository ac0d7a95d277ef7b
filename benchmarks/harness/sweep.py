"""``--what sweep``: a vmapped sweep of R runs vs R separate runs.

Per preset shape: the best wall time of one jitted chunk of ``updates``
updates of a single run, of the sweep of R runs (``agents.run.sweep.Sweep``,
seeds 0..R-1, the game's branches shared over the sweep axis), and of the
same sweep built without shared branches (``share_branches=False``: under
``vmap`` every fight/reset ``cond`` becomes a select, so the combat runs on
every step: the trap the sweep design avoids). ``ratio`` is the sweep's time
over R separate chunks (R x the single run's): <= 1 means the sweep costs no
more than running the runs one after another.

JSON fields, under ``sweep_vs_separate[preset]`` (``bench_sweep``): ``num_envs``, ``runs``, ``updates``,
``single_chunk_s``, ``single_compile_s``, ``separate_runs_s`` (runs x single_chunk_s), ``sweep_chunk_s``,
``sweep_compile_s``, ``ratio``, ``single_seat_steps_per_s``, ``sweep_seat_steps_per_s``, and (``naive``)
``naive_vmap_chunk_s`` and ``naive_ratio``, the same sweep without shared branches.
"""

from __future__ import annotations

import time

import jax

from agents.algorithms.registry import make_train
from agents.envs.make import make_env
from agents.presets import preset_config
from agents.run.sweep import Sweep, SweepSpec
from benchmarks.harness.timing import aot_compile, time_chunks
from experiments.common import status


def bench_sweep(name: str, runs: int, updates: int, progress: bool, label: str, naive: bool = True) -> dict:
    """One preset's shape: the best chunk time of a single run, of a sweep of ``runs`` runs (seeds 0..runs-1) and,
    with ``naive``, of that sweep without shared branches."""
    config = preset_config(name)
    seat_steps = updates * config.steps_per_update * config.num_seats
    status(
        f"{label} {name}: {config.run.num_envs} envs x {config.ppo.num_steps} steps x {config.num_seats} seats, "
        f"{updates} updates per chunk, {runs} runs",
        progress,
    )

    def timed(run, runner, what):
        start = time.perf_counter()
        chunk = aot_compile(run, runner, updates, progress=progress, what=f"  {what}: ")
        compile_s = time.perf_counter() - start
        seconds = time_chunks(chunk, runner)
        status(f" {seconds:.2f} s per chunk", progress)
        return seconds, compile_s

    trainer = make_train(config, make_env(config))
    run = jax.jit(trainer.run, static_argnums=1)
    single_s, single_compile = timed(run, jax.jit(trainer.init)(jax.random.key(0)), "single run")
    spec = SweepSpec.make(range(runs))
    sweep = Sweep(config, spec)
    sweep_s, sweep_compile = timed(sweep.run, sweep.init(), f"sweep of {runs}")
    out = {
        "num_envs": config.run.num_envs,
        "runs": runs,
        "updates": updates,
        "single_chunk_s": round(single_s, 3),
        "single_compile_s": round(single_compile, 2),
        "separate_runs_s": round(runs * single_s, 3),
        "sweep_chunk_s": round(sweep_s, 3),
        "sweep_compile_s": round(sweep_compile, 2),
        "ratio": round(sweep_s / (runs * single_s), 3),
        "single_seat_steps_per_s": round(seat_steps / single_s, 1),
        "sweep_seat_steps_per_s": round(runs * seat_steps / sweep_s, 1),
    }
    if naive:
        unshared = Sweep(config, spec, share_branches=False)
        naive_s, _ = timed(unshared.run, unshared.init(), f"sweep of {runs} without shared branches")
        out["naive_vmap_chunk_s"] = round(naive_s, 3)
        out["naive_ratio"] = round(naive_s / (runs * single_s), 3)
    status(
        f"{label} {name}: sweep / separate runs = {out['ratio']:.2f}"
        + (f"; without shared branches {out['naive_ratio']:.2f}" if naive else ""),
        progress,
    )
    return out
