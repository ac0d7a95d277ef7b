"""``--what train``: end-to-end training throughput per preset shape, and gymnax CartPole vs PureJaxRL.

JSON fields, per preset shape (``--presets``: game presets, or ``none``; default ``smoke`` and ``ppo_small``
on a CPU, plus ``ppo_large`` on a GPU/TPU or with ``--full``), under ``train[preset]`` (``bench_train``):
  * ``train_seat_steps_per_s``: end-to-end training throughput, env steps x 8 seats per second of the
    preset's trainer (``make_train(config, make_env(config)).run``: policy forward and sampling, env steps,
    GAE, the PPO epochs), the best of 2 jitted chunks of ``updates`` updates after a warm-up chunk
    (``jax.block_until_ready``); ``compile_s`` is the chunk's compile time, ``init_s`` the jitted ``init``
    (compile included), ``update_ms`` one update; also ``algo``, ``num_envs``, ``steps_per_update``,
    ``seats``, ``hidden``, ``obs``, ``updates``, ``seat_steps_per_chunk``; for PPO, ``rollout_ms``: one
    update's rollout alone (env steps, policy forward, sampling; jitted, best of 2, from the runner the timed
    chunks ended with) and ``rollout_share`` = ``rollout_ms / update_ms`` (the rest is GAE and the epochs);
  * ``env_seat_steps_per_s``: the env alone at the same ``num_envs``: VecEnv with the preset's rules and obs
    kind, random bots, as ``--what env`` measures it, over whole rounds (``env_steps_timed``: the smallest
    multiple of ``steps_per_round`` that covers a chunk's steps; ``env_compile_s``);
  * ``overhead_ratio``: train / env-only. The goal (``overhead_goal``, ``OVERHEAD_GOAL``) is >= 0.8 on a
    CPU: learning should cost at most a fifth on top of stepping the game. On an accelerator it is for
    information.
``updates`` per chunk (``train_updates``) is ``--updates``, by default enough for 64 steps of every env on a
CPU (4 updates of smoke, 2 of ppo_small) and 128 with ``--full`` or on an accelerator (4 of ppo_large).
With ``--presets ...,ppo_small,league_small`` the CLI adds ``league_over_self_play``: the league's training
seat-steps/s over plain self-play's at the same shape (the cost of the pool seats' forward passes; the goal
is >= 0.7).

``gymnax`` (``bench_gymnax``): our ``ppo_gymnax`` preset vs the PureJaxRL reference
(``benchmarks/harness/purejaxrl_reference.py``, PureJaxRL's ``ppo.py`` with its CartPole config) on each
``--gymnax-envs`` env (default gymnax's discrete-action classic control: CartPole-v1, Acrobot-v1,
MountainCar-v0), both for ``--gymnax-steps`` env steps (default 500,000, PureJaxRL's, on every backend; 0 skips
it). Per env, under ``envs[name]``: ``steps``, ``num_updates``, ``final_return_updates``; ``ours`` (the whole run
as one jitted call, ``jax.jit(make_train(cfg, make_env(cfg)))(key)``) and ``purejaxrl``, each ``compile_s``,
``run_s`` (the best of ``--gymnax-reps`` runs, default 3, the two sides run in turn so both see the same machine
load), ``sps`` (env steps/s after compilation) and ``final_return`` (mean return of the episodes that finished
in the last 5% of the updates); ``cli``: what ``python -m experiments.train --env gymnax:NAME
--preset=ppo_gymnax`` runs (``agents.run.training.train``, in a temporary run directory; the CLI's compilation cache is
not used), run after each rep of the two sides (``--gymnax-reps`` runs; the one with the smallest ``loop_s`` is
reported): chunks of 61 updates with logs and checkpoints between them, its ``compile_s`` (the smallest),
``train_s`` (the chunks' seconds: each chunk's run and the fetch and check of its metrics), ``sps`` (steps over
``train_s``), ``loop_s`` and ``loop_sps`` (the whole chunk loop: the chunks plus the logging and checkpoints
between them), of the loop's time beside the chunks ``checkpoint_s`` (its saves and its waits for the background
ones) and ``log_s`` (writing the records), and ``final_return`` (the last chunk's); ``ours_over_purejaxrl_sps``,
``cli_over_purejaxrl_sps`` (the CLI's ``loop_sps``: what a user waits for) and ``cli_chunks_over_purejaxrl_sps``
(its chunks alone, ``sps``).
``min_ratio`` is the smallest ``ours_over_purejaxrl_sps`` or ``cli_over_purejaxrl_sps`` over the envs (the goal:
>= 1.0). ``{"skipped": ...}`` without gymnax or with ``--gymnax-steps 0``.
Compile times are honest: the benchmark does not turn JAX's persistent compilation cache on
(``compilation_cache`` says whether the environment did).
"""

from __future__ import annotations

import importlib.util
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxgame
from agents.algorithms.registry import make_train
from agents.envs.make import make_env, make_game
from agents.policies import frozen as phases
from agents.presets import preset_config
from agents.run.training import train as train_run
from benchmarks.harness import purejaxrl_reference as reference
from benchmarks.harness.timing import aot_compile, best_time, rounded, time_chunks
from experiments.common import status
from jaxgame import bots
from jaxgame import constants as C
from jaxgame.play import rollout_fn

#: ``--what train``: the goal for ``overhead_ratio`` on a CPU (training at >= 80% of the env-only speed).
OVERHEAD_GOAL = 0.8
#: ``--what train``: the gymnax section's ``final_return`` pools the episodes of the last 5% of the updates.
FINAL_FRACTION = 0.05
#: ``--what train``: the gymnax section's default run length, PureJaxRL's CartPole TOTAL_TIMESTEPS.
GYMNAX_STEPS = 500_000
#: ``--what train``: the gymnax section's envs by default, gymnax's discrete-action classic-control tasks.
GYMNAX_ENVS = ("CartPole-v1", "Acrobot-v1", "MountainCar-v0")


def train_updates(config, steps_per_env: int, updates: int | None = None) -> int:
    """Updates per timed chunk: ``updates``, or by default enough for ``steps_per_env`` steps of every env."""
    per_update = config.steps_per_update // config.run.num_envs  # num_steps (PPO) or update_every (A2C)
    return updates if updates is not None else max(1, -(-steps_per_env // per_update))


def bench_train(name, steps_per_env, updates, progress, label, config=None):
    """One preset's shape: training seat-steps/s over jitted chunks vs env-only seat-steps/s (random bots).
    ``config``: the preset's config with ``--set`` overrides (default: the preset's)."""
    config = config or preset_config(name)
    updates = train_updates(config, steps_per_env, updates)
    per_update = config.steps_per_update // config.run.num_envs
    seat_steps = updates * config.steps_per_update * config.num_seats
    status(
        f"{label} {name}: {config.run.algo}, {config.run.num_envs} envs x {per_update} steps x "
        f"{config.num_seats} seats per update, {updates} updates per chunk: ",
        progress,
        end="",
    )
    trainer = make_train(config, make_env(config))
    start = time.perf_counter()
    runner = jax.block_until_ready(jax.jit(trainer.init)(jax.random.key(config.run.seed)))
    init_s = time.perf_counter() - start
    inputs = phases.trainer_inputs(trainer, config, runner.params)  # a league's anchor, say (not in compile_s)
    start = time.perf_counter()
    compiled = aot_compile(jax.jit(trainer.run, static_argnums=1), runner, updates, *inputs, progress=progress)
    compile_s = time.perf_counter() - start
    seconds, runner = time_chunks(lambda r: compiled(r, *inputs), runner, return_runner=True)
    train_sps = seat_steps / seconds
    status(f" {train_sps:,.0f} seat-steps/s ({seconds * 1e3 / updates:,.1f} ms per update)", progress)
    split = {}
    if config.run.algo == "ppo":  # where an update's time goes: the rollout alone, from where the timed chunks ended
        key = jax.random.key(0)
        rollout = aot_compile(
            jax.jit(lambda r, k, *i: trainer.rollout(r, k, *i)[1:]),
            runner,
            key,
            *inputs,
            progress=progress,
            what=f"{label} {name} rollout alone: ",
        )
        rollout_ms = best_time(rollout, runner, key, *inputs, repeats=2) * 1e3
        share = rollout_ms / (seconds * 1e3 / updates)
        status(f" {rollout_ms:,.1f} ms per rollout, {share:.0%} of an update", progress)
        split = {"rollout_ms": round(rollout_ms, 2), "rollout_share": round(share, 3)}

    # the env alone, as bench_env_throughput measures it: VecEnv + random bots over whole rounds
    game = make_game(config)
    rounds = max(1, -(-updates * per_update // game.config.steps_per_round))
    steps = rounds * game.config.steps_per_round
    status(
        f"{label} {name} env-only: {config.run.num_envs} envs x {steps} steps ({rounds} rounds), random bots: ",
        progress,
        end="",
    )
    venv = jaxgame.VecEnv(game, config.run.num_envs)
    states, ts = jax.jit(venv.reset)(jax.random.key(0))
    key = jax.random.key(1)
    start = time.perf_counter()
    rollout = aot_compile(rollout_fn(venv, bots.random_policy, steps), states, ts, key, progress=progress)
    env_compile_s = time.perf_counter() - start
    env_sps = steps * config.run.num_envs * C.NUM_PLAYERS / best_time(rollout, states, ts, key, repeats=2)
    ratio = train_sps / env_sps
    status(
        f" {env_sps:,.0f} seat-steps/s; train / env-only = {ratio:.2f} (goal on a CPU: >= {OVERHEAD_GOAL})", progress
    )
    return {
        "algo": config.run.algo,
        "num_envs": config.run.num_envs,
        "steps_per_update": per_update,
        "seats": config.num_seats,
        "hidden": list(config.net.hidden),
        "obs": config.task.obs,
        "updates": updates,
        "seat_steps_per_chunk": seat_steps,
        "init_s": round(init_s, 2),
        "compile_s": round(compile_s, 2),
        "update_ms": round(seconds * 1e3 / updates, 2),
        **split,
        "train_seat_steps_per_s": round(train_sps, 1),
        "env_steps_timed": steps,
        "env_compile_s": round(env_compile_s, 2),
        "env_seat_steps_per_s": round(env_sps, 1),
        "overhead_ratio": round(ratio, 3),
    }


def bench_gymnax(total_steps, progress, envs=GYMNAX_ENVS, reps: int = 3):
    """Our ``ppo_gymnax`` preset vs the PureJaxRL reference on each gymnax env of ``envs``, side by side."""
    if importlib.util.find_spec("gymnax") is None:
        status("[gymnax] skipped: gymnax is not installed", progress)
        return {"skipped": "gymnax is not installed (pip install -e '.[gymnax]')"}
    out = {}
    for i, name in enumerate(envs):
        out[name] = _gymnax_one(name, total_steps, reps, progress, f"[gymnax {i + 1}/{len(envs)}] {name}")
    ratios = [out[name][key] for name in envs for key in ("ours_over_purejaxrl_sps", "cli_over_purejaxrl_sps")]
    return {"steps": out[envs[0]]["steps"], "reps": reps, "envs": out, "min_ratio": min(ratios)}


def _gymnax_one(name, total_steps, reps, progress, label):
    """One env: both whole runs compiled, then run ``reps`` times in turn (best time each, so both see the same
    machine load), each rep followed by a run of the training CLI's run loop (the run whose loop, compile
    excluded, took the least time is reported)."""
    config = preset_config("ppo_gymnax").with_overrides({"env": f"gymnax:{name}", "total_steps": total_steps})
    num_updates, steps = config.num_updates, config.num_updates * config.steps_per_update
    last = max(1, round(num_updates * FINAL_FRACTION))
    status(f"{label}: {num_updates} updates = {steps} steps; compiling ours and PureJaxRL's ...", progress, end="")
    key, rng = jax.random.key(config.run.seed), jax.random.PRNGKey(config.run.seed)
    start = time.perf_counter()
    ours_fn = jax.jit(make_train(config, make_env(config))).lower(key).compile()
    ours_compile = time.perf_counter() - start
    ref_fn, ref_compile = reference.compiled(seed=config.run.seed, total_timesteps=total_steps, env_name=name)
    ours_times, ref_times, cli_runs = [], [], []
    for _ in range(reps):
        start = time.perf_counter()
        _, metrics = jax.block_until_ready(ours_fn(key))
        ours_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        ref_out = jax.block_until_ready(ref_fn(rng))
        ref_times.append(time.perf_counter() - start)
        with tempfile.TemporaryDirectory() as tmp:  # the run loop of python -m experiments.train, its summary
            cli_runs.append(train_run(config, f"{tmp}/run", preset="ppo_gymnax"))
    episodes = float(jnp.sum(metrics["sums/episodes"][-last:]))
    ours_return = float(jnp.sum(metrics["sums/return_sum"][-last:])) / episodes if episodes else float("nan")
    ref_metrics = {k: np.asarray(v) for k, v in ref_out["metrics"].items()}
    ref_return = reference.final_return(ref_metrics, FINAL_FRACTION)
    ours = {
        "compile_s": round(ours_compile, 2),
        "run_s": round(min(ours_times), 3),
        "sps": round(steps / min(ours_times), 1),
        "final_return": rounded(ours_return),
    }
    ref = {
        "compile_s": round(ref_compile, 2),
        "run_s": round(min(ref_times), 3),
        "sps": round(steps / min(ref_times), 1),
        "final_return": rounded(ref_return),
    }
    summary = min(cli_runs, key=lambda s: s["loop_s"])  # every run trains the same updates (same seed)
    cli = {
        "compile_s": round(min(s["compile_s"] for s in cli_runs), 2),
        "train_s": summary["train_s"],
        "sps": summary["sps"],
        "loop_s": summary["loop_s"],
        "loop_sps": summary["loop_sps"],
        "checkpoint_s": summary["checkpoint_s"],
        "log_s": summary["log_s"],
        "final_return": rounded(summary["episode_return"]),
    }
    status(
        f" ours {ours['sps']:,.0f} steps/s (return {ours_return:.1f}), PureJaxRL {ref['sps']:,.0f} "
        f"(return {ref_return:.1f}), the CLI {cli['loop_sps']:,.0f}",
        progress,
    )
    return {
        "steps": steps,
        "num_updates": num_updates,
        "final_return_updates": last,
        "ours": ours,
        "cli": cli,
        "purejaxrl": ref,
        "ours_over_purejaxrl_sps": round(ours["sps"] / ref["sps"], 3),
        "cli_over_purejaxrl_sps": round(cli["loop_sps"] / ref["sps"], 3),
        "cli_chunks_over_purejaxrl_sps": round(cli["sps"] / ref["sps"], 3),
    }
