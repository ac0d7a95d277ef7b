"""Throughput benchmarks; prints one JSON object (the last line of stdout).

    python -m experiments.benchmark --what env
    python -m experiments.benchmark --what env --full
    python -m experiments.benchmark --what env --num-envs 1,64 --rounds 1
    python -m experiments.benchmark --what combat --baseline 14c8e52
    python -m experiments.benchmark --what render
    python -m experiments.benchmark --what train
    python -m experiments.benchmark --what train --presets smoke --updates 2 --gymnax-steps 20000
    python -m experiments.benchmark --what sweep --presets smoke --runs 4

The default sweep of ``--what env`` depends on the backend. On a GPU/TPU it is
the full sweep: 1, 64, 1024 and 4096 envs, 1024 fights, fight-skip at 256 envs.
On a CPU it is a quick one: 1 and 64 envs, 256 fights, fight-skip at 64 envs,
about 2 minutes on a 2-core CPU, most of it XLA compiling; ``--full`` runs the
full sweep anyway (about 10 minutes on a 2-core CPU). ``--what render`` uses
the same sizes everywhere (1, 64 and 256 states; 16 envs), about 1 minute on a
2-core CPU. ``--num-envs``, ``--render-batch``, ``--fights`` and
``--skip-envs`` override single sizes. Progress goes to stderr as it happens,
one line per configuration (its size, compile time and result); ``--quiet``
silences it.

``--what env`` reports:
  * ``seat_steps_per_s[num_envs]``: VecEnv steps x 8 seats per second with
    random bots, measured over whole rounds (so fight steps are included in
    their real proportion), after compilation;
  * ``combat``: fights per second of the combat simulation alone, vmapped
    over random boards;
  * ``fight_skip``: the cost of one VecEnv step that is not a fight step vs
    one that is, and of a non-fight step under plain ``jax.vmap(env.step)``
    (where the per-env ``lax.cond`` turns into a select and the combat runs on
    every step) — the proof that VecEnv skips the combat when it is not due.

``--what combat`` reports the combat alone and the env around it, optionally
next to a baseline revision (``--baseline REV``: ``jaxgame/combat.py`` and
``jaxgame/rounds.py`` as of that git revision, loaded from ``git show``; each
baseline measurement runs right after the current one, so both see the same
machine load):
  * ``combat[n]``: fights/s of ``n`` random fights (``--combat-batch``, default
    64 and 1024) with 3 and 9 units a side, ``current`` (as the game runs its
    fights: 9 units a side, n/2 lanes), ``baseline`` (``jax.vmap`` of its
    ``simulate_fight``) and ``speedup``;
  * ``seat_steps_per_s``: VecEnv seat-steps/s as ``--what env`` measures them
    (``--num-envs``, default 64; ``--rounds`` rounds from the start of the
    game, default 1: the first 3 rounds are PvE), current, baseline and speedup;
    with a baseline both rollouts are compiled first and timed in turn, the
    best of 5 calls each.
About 3 minutes on a 2-core CPU with a baseline, most of it compiling.

``--what render`` reports:
  * ``render[n]``: frames/s of ``render.render_all`` vmapped over ``n`` game
    states (8 frames each; ``--render-batch``), packed uint8[72, 20] as the env
    returns them vs unpacked (the same frames then ``packing.unpack``-ed to
    uint8[72, 80], i.e. the cost of materialising them), for states with
    random boards, benches and opponents;
  * ``env_seat_steps_per_s``: VecEnv seat-steps/s with obs="vector" vs
    obs="pixels" (``--num-envs``, default 16 here; whole rounds, random bots),
    and ``observe_ms``: one vmapped ``env.observe`` of the largest batch per
    obs kind (the observation's own cost, free of the step's noise).

``--what train`` reports, per preset shape (``--presets``: game presets, or
``none``; default ``smoke`` and ``ppo_small`` on a CPU, plus ``ppo_large`` on
a GPU/TPU or with ``--full``), under ``train[preset]``:
  * ``train_seat_steps_per_s``: end-to-end training throughput, env steps x 8
    seats per second of the preset's trainer (``make_train(config,
    make_env(config)).run``: policy forward and sampling, env steps, GAE, the
    PPO epochs), the best of 2 jitted chunks of ``updates`` updates after a
    warm-up chunk (``jax.block_until_ready``); ``compile_s`` is the chunk's
    compile time, ``init_s`` the jitted ``init`` (compile included),
    ``update_ms`` one update;
  * ``env_seat_steps_per_s``: the env alone at the same ``num_envs``: VecEnv
    with the preset's rules and obs kind, random bots, as ``--what env``
    measures it, over whole rounds (``env_steps_timed``: the smallest multiple
    of ``steps_per_round`` that covers a chunk's steps; ``env_compile_s``);
  * ``overhead_ratio``: train / env-only. The goal (``overhead_goal``) is
    >= 0.8 on a CPU: learning should cost at most a fifth on top of stepping
    the game. On an accelerator it is for information.
  ``updates`` per chunk is ``--updates``, by default enough for 64 steps of
  every env on a CPU (4 updates of smoke, 2 of ppo_small) and 128 with
  ``--full`` or on an accelerator (4 of ppo_large).
  With ``--presets ...,ppo_small,league_small`` it adds ``league_over_self_play``:
  the league's training seat-steps/s over plain self-play's at the same shape
  (the cost of the pool seats' forward passes; the goal is >= 0.7).
It also reports ``gymnax``: our ``ppo_gymnax`` preset, the whole run as one
jitted call (``jax.jit(make_train(cfg, make_env(cfg)))(key)``), vs the
PureJaxRL reference (``experiments/purejaxrl_reference.py``) on CartPole-v1,
both for ``--gymnax-steps`` env steps (default 500,000, PureJaxRL's, on every
backend; 0 skips it): per side ``compile_s``, ``run_s``, ``sps`` (env steps/s
after compilation) and ``final_return`` (mean return of the episodes that
finished in the last 5% of the updates), and ``ours_over_purejaxrl_sps``.
Compile times are honest: the benchmark does not turn JAX's persistent
compilation cache on (``compilation_cache`` says whether the environment did).
The CPU default takes about 3 minutes on a 2-core CPU, most of it XLA compiling
the game (the trainer and the env-only rollout of each preset) and the two
CartPole trainers; ``--presets none`` times only the gymnax section.

``--what sweep`` reports, per preset shape (``--presets``, default ``smoke``
and ``ppo_small``; experiments/bench_sweep.py): the best time of a jitted chunk of ``--updates`` updates (default as for ``--what
train``) for one run, under ``sweep_vs_separate[preset]``, for a vmapped sweep of ``--runs`` runs (default 4 on a
CPU, 16 on an accelerator or with ``--full``), and for the same sweep without
the shared branch predicates (the combat then runs on every step);
``ratio`` = sweep / (runs x single run), <= 1 when the sweep costs no more
than the runs one after another, and ``naive_ratio`` likewise.

All modes also report ``sweep``: "quick" or "full", the default sizes used.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import platform
import subprocess
import sys
import time
import types
from pathlib import Path

import jax
import jax.numpy as jnp

import jaxgame
from experiments.common import random_boards, rollout_fn, status
from jaxgame import bots, combat, packing, render, rounds
from jaxgame import constants as C

#: Default sizes per sweep; ``default_sweep`` picks one for the backend.
SWEEPS = {
    "full": {
        "num_envs": [1, 64, 1024, 4096],  # --what env
        "fights": 1024,
        "skip_envs": 256,
        "render_batch": [1, 64, 256],  # --what render
        "render_num_envs": [16],
        "train_presets": ["smoke", "ppo_small", "ppo_large"],  # --what train
        "train_steps": 128,
    },
    "quick": {
        "num_envs": [1, 64],
        "fights": 256,
        "skip_envs": 64,
        "render_batch": [1, 64, 256],  # --what render is ~1 min on a 2-core CPU: the same sizes
        "render_num_envs": [16],
        "train_presets": ["smoke", "ppo_small"],  # --what train is ~3 min on a 2-core CPU (mostly compiling)
        "train_steps": 64,
    },
}


def default_sweep(backend: str, full: bool = False) -> dict:
    """The default sizes for ``backend`` (``jax.default_backend()``): the quick sweep on "cpu",
    the full one on an accelerator or with ``full=True``. Returns a fresh dict with ``name`` and the sizes."""
    name = "full" if full or backend != "cpu" else "quick"
    sizes = SWEEPS[name]
    return {"name": name, **{k: list(v) if isinstance(v, list) else v for k, v in sizes.items()}}


def _compile(fn, *args, progress: bool, what: str = "", then: str = "; timing ..."):
    """``fn.lower(*args).compile()``, telling stderr (on the current line) how long it took."""
    status(f"{what}compiling ...", progress, end="")
    start = time.perf_counter()
    compiled = fn.lower(*args).compile()
    status(f" {time.perf_counter() - start:.1f} s{then}", progress, end="")
    return compiled


def _time(fn, *args, repeats: int = 3) -> float:
    """Best wall time of ``fn(*args)`` in seconds, after one warm-up call."""
    jax.block_until_ready(fn(*args))
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - start)
    return best


def _random_rollout(env, num_envs: int, steps: int):
    """(jitted rollout of ``steps`` VecEnv steps with random bots, its arguments (states, ts, key))."""
    venv = jaxgame.VecEnv(env, num_envs)
    states, ts = jax.jit(venv.reset)(jax.random.key(0))
    return rollout_fn(venv, bots.random_policy, steps), (states, ts, jax.random.key(1))


def bench_env_throughput(env, num_envs_list, rounds, progress, label="env"):
    out = {}
    steps = rounds * env.config.steps_per_round
    for i, n in enumerate(num_envs_list):
        status(f"[{label} {i + 1}/{len(num_envs_list)}] {n} envs x {steps} steps: ", progress, end="")
        rollout, args = _random_rollout(env, n, steps)
        run = _compile(rollout, *args, progress=progress)
        seconds = _time(run, *args, repeats=2)
        out[str(n)] = round(steps * n * C.NUM_PLAYERS / seconds, 1)
        status(f" {out[str(n)]:,.0f} seat-steps/s", progress)
    return out


def bench_combat(num_fights, units_list, max_ticks, progress, combat_module=None, label="combat"):
    """Fights/s of the combat on random boards, one entry per number of units a side.

    This tree's combat runs as the game runs it: ``combat.simulate_fights`` with ``MAX_LEVEL`` units a
    side and half as many lanes as fights (``rounds.LANES_PER_GAME`` of a game's 8 slots).
    ``combat_module``: another implementation of ``jaxgame.combat`` to time instead (``--baseline``), as
    ``jax.vmap(simulate_fight)`` (how every revision before lanes ran its fights).
    """
    if combat_module is None:
        lanes = max(1, num_fights * rounds.LANES_PER_GAME // C.NUM_PLAYERS)
        fight = jax.jit(functools.partial(combat.simulate_fights, max_ticks=max_ticks, max_units=C.MAX_LEVEL,
                                          lanes=lanes))
    else:
        fight = jax.jit(jax.vmap(functools.partial(combat_module.simulate_fight, max_ticks=max_ticks)))
    keys = jax.random.split(jax.random.key(2), num_fights)
    out = []
    for i, units in enumerate(units_list):
        status(f"[{label} {i + 1}/{len(units_list)}] {num_fights} fights, {units} units a side: ", progress, end="")
        hs, ht = random_boards(jax.random.key(0), num_fights, units)
        as_, at = random_boards(jax.random.key(1), num_fights, units)
        if i == 0:  # the same shapes for every unit count: compile once
            fight = _compile(fight, hs, ht, as_, at, keys, progress=progress)
        else:
            status("timing ...", progress, end="")
        seconds = _time(fight, hs, ht, as_, at, keys)
        ticks = fight(hs, ht, as_, at, keys).ticks
        out.append({
            "num_fights": num_fights,
            "units_per_side": units,
            "fights_per_s": round(num_fights / seconds, 1),
            "mean_ticks": round(float(jnp.mean(ticks)), 1),
        })
        status(f" {out[-1]['fights_per_s']:,.0f} fights/s", progress)
    return out


def load_baseline(rev: str):
    """``jaxgame/combat.py`` and ``jaxgame/rounds.py`` as of git revision ``rev`` (``git show``), as modules
    ``(combat, rounds)``; the baseline rounds module calls the baseline combat."""
    root = Path(__file__).resolve().parent.parent
    loaded = []
    for name in ("combat", "rounds"):
        source = subprocess.run(["git", "show", f"{rev}:jaxgame/{name}.py"], cwd=root, capture_output=True,
                                text=True, check=True).stdout
        module = types.ModuleType(f"jaxgame_baseline_{name}")
        sys.modules[module.__name__] = module  # dataclasses look their module up
        exec(compile(source, f"{rev}:jaxgame/{name}.py", "exec"), module.__dict__)  # noqa: S102 (the baseline's own source, from git)
        if loaded:
            module.combat = loaded[0]  # rounds: ``from jaxgame import combat`` -> the baseline combat
        loaded.append(module)
    return tuple(loaded)


@contextlib.contextmanager
def baseline_fights(rounds_module):
    """Within the block, envs traced anew run their fights with ``rounds_module.run_fights``."""
    current = rounds.run_fights
    rounds.run_fights = rounds_module.run_fights
    try:
        yield
    finally:
        rounds.run_fights = current


def bench_combat_vs_baseline(batch_sizes, num_envs_list, rev, progress, num_rounds=1):
    """``--what combat``: fights/s of the combat alone per batch size (3 and 9 units a side) and env-only
    seat-steps/s over ``num_rounds`` rounds from the start of the game, of this tree and (with ``rev``) of
    the baseline revision, measured back to back."""
    env = jaxgame.make("autochess")
    max_ticks = env.config.max_combat_ticks
    baseline = load_baseline(rev) if rev else None
    out = {"baseline": rev, "combat": {}, "seat_steps_per_s": {}}
    for n in batch_sizes:
        entry = {"current": bench_combat(n, (3, 9), max_ticks, progress)}
        if baseline:
            entry["baseline"] = bench_combat(n, (3, 9), max_ticks, progress, baseline[0], label="baseline combat")
            entry["speedup"] = [round(c["fights_per_s"] / b["fights_per_s"], 2)
                                for c, b in zip(entry["current"], entry["baseline"])]
        out["combat"][str(n)] = entry
    if not baseline:
        out["seat_steps_per_s"]["current"] = bench_env_throughput(env, num_envs_list, num_rounds, progress)
        return out
    current, base = {}, {}
    steps = num_rounds * env.config.steps_per_round
    for i, n in enumerate(num_envs_list):
        status(f"[env A/B {i + 1}/{len(num_envs_list)}] {n} envs x {steps} steps: ", progress, end="")
        rollout, args = _random_rollout(env, n, steps)
        runs = {"current": _compile(rollout, *args, progress=progress, what="current ", then="; ")}
        with baseline_fights(baseline[1]):  # a new rollout function: traced anew with the baseline fights
            runs["baseline"] = _compile(_random_rollout(env, n, steps)[0], *args, progress=progress,
                                        what="baseline ")
        best = _time_interleaved(runs, args, AB_REPEATS)
        current[str(n)], base[str(n)] = (round(steps * n * C.NUM_PLAYERS / best[k], 1) for k in ("current", "baseline"))
        status(f" {current[str(n)]:,.0f} vs {base[str(n)]:,.0f} seat-steps/s", progress)
    out["seat_steps_per_s"].update(current=current, baseline=base,
                                   speedup={n: round(current[n] / base[n], 2) for n in current})
    return out


#: Timed calls of each side of an A/B env measurement, alternating (so both see the same machine load).
AB_REPEATS = 5


def _time_interleaved(fns: dict, args, repeats: int) -> dict:
    """Best wall time (s) of each ``fns[name](*args)``, after a warm-up call each, timing the functions
    in turn ``repeats`` times."""
    for fn in fns.values():
        jax.block_until_ready(fn(*args))
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            jax.block_until_ready(fn(*args))
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def bench_fight_skip(env, num_envs, warm_rounds, progress):
    """Per-step cost at a non-fight vs a fight step, with boards filled by greedy bots."""
    label = f"[fight-skip] {num_envs} envs"
    venv = jaxgame.VecEnv(env, num_envs)
    states, ts = jax.jit(venv.reset)(jax.random.key(0))
    actions = jnp.zeros((num_envs, C.NUM_PLAYERS), jnp.int32)
    status(f"{label}, VecEnv step: ", progress, end="")
    vec_step = _compile(jax.jit(venv.step), states, actions, progress=progress, then="\n")
    status(f"{label}, warm-up: {warm_rounds} rounds of greedy play ...", progress, end="")
    start = time.perf_counter()
    greedy = jax.jit(jax.vmap(bots.greedy_policy))
    for k in jax.random.split(jax.random.key(1), warm_rounds * env.config.steps_per_round):
        states, ts = vec_step(states, greedy(jax.random.split(k, num_envs), states, ts.action_mask))
    jax.block_until_ready(states)  # now at step 0 of a round, boards filled
    status(f" {time.perf_counter() - start:.1f} s", progress)
    non_fight = _time(vec_step, states, actions)
    status(f"{label}, plain jax.vmap(env.step): ", progress, end="")
    naive_step = _compile(jax.jit(jax.vmap(env.step)), states, actions, progress=progress)
    naive_non_fight = _time(naive_step, states, actions)
    status(f" non-fight step {naive_non_fight * 1e3:,.1f} ms", progress)
    # advance to the last decision step of the round: that step runs the fights
    for _ in range(env.config.steps_per_round - 1):
        states, ts = vec_step(states, actions)
    assert bool(jnp.all(states.step_in_round == env.config.steps_per_round - 1))
    fight = _time(vec_step, states, actions)
    status(f"{label}, VecEnv step: non-fight {non_fight * 1e3:,.1f} ms, fight {fight * 1e3:,.1f} ms; plain vmap "
           f"non-fight step {naive_non_fight / non_fight:.1f}x the VecEnv one", progress)
    board_units = float(jnp.mean(jnp.sum(states.players.species[..., C.BENCH_SIZE :] >= 0, -1)))
    return {
        "num_envs": num_envs,
        "mean_board_units": round(board_units, 2),
        "vecenv_non_fight_step_ms": round(non_fight * 1e3, 3),
        "vecenv_fight_step_ms": round(fight * 1e3, 3),
        "fight_over_non_fight": round(fight / non_fight, 1),
        "naive_vmap_non_fight_step_ms": round(naive_non_fight * 1e3, 3),
        "naive_over_vecenv_non_fight": round(naive_non_fight / non_fight, 1),
    }


def _batch_of_states(env, num_states):
    """``num_states`` fresh games whose seats get random boards (6 units), benches (5 units) and opponents."""

    @jax.jit
    def make(key):
        k_reset, k_board, k_bench, k_opp = jax.random.split(key, 4)
        states = jax.vmap(env.new_game)(jax.random.split(k_reset, num_states))
        n = num_states * C.NUM_PLAYERS
        board_sp, board_st = random_boards(k_board, n, 6)
        bench_sp, bench_st = random_boards(k_bench, n, 5)
        species = jnp.concatenate([bench_sp[:, : C.BENCH_SIZE], board_sp], axis=1)
        stars = jnp.concatenate([bench_st[:, : C.BENCH_SIZE], board_st], axis=1)
        opp = jax.random.randint(k_opp, (num_states, C.NUM_PLAYERS), 0, C.NUM_PLAYERS)
        shape = (num_states, C.NUM_PLAYERS, C.NUM_SLOTS)
        players = states.players.replace(
            species=species.reshape(shape), stars=stars.reshape(shape), last_opponent=opp.astype(jnp.int32)
        )
        return states.replace(players=players)

    return make(jax.random.key(0))


def bench_render(batch_sizes, progress):
    """Frames/s of ``render.render_all`` (packed) vs the same frames unpacked (``packing.unpack``)."""
    env = jaxgame.make("autochess")
    states = _batch_of_states(env, max(batch_sizes))
    packed = jax.jit(jax.vmap(render.render_all))
    unpacked = jax.jit(jax.vmap(lambda s: packing.unpack(render.render_all(s))))
    out = {}
    for i, n in enumerate(batch_sizes):
        batch = jax.tree_util.tree_map(lambda x, n=n: x[:n], states)
        frames = n * C.NUM_PLAYERS
        status(f"[render {i + 1}/{len(batch_sizes)}] {n} states ({frames} frames): ", progress, end="")
        t_packed = _time(_compile(packed, batch, progress=progress, what="packed: "), batch, repeats=5)
        status(f" {frames / t_packed:,.0f} frames/s; ", progress, end="")
        t_unpacked = _time(_compile(unpacked, batch, progress=progress, what="unpacked: "), batch, repeats=5)
        status(f" {frames / t_unpacked:,.0f} frames/s", progress)
        out[str(n)] = {
            "frames": frames,
            "packed_frames_per_s": round(frames / t_packed, 1),
            "unpacked_frames_per_s": round(frames / t_unpacked, 1),
            "packed_over_unpacked": round(t_unpacked / t_packed, 2),
            "bytes_per_frame_packed": packing.FRAME_H * packing.PACKED_W,
            "bytes_per_frame_unpacked": packing.FRAME_H * packing.FRAME_W,
        }
    return out


def bench_obs_kinds(num_envs_list, rounds, progress):
    """VecEnv seat-steps/s (random bots, whole rounds) with obs="vector" vs obs="pixels", and the cost of
    the observation alone (``env.observe`` vmapped over the largest batch)."""
    out = {}
    n_obs = max(num_envs_list)
    states = _batch_of_states(jaxgame.make("autochess"), n_obs)
    observe_ms = {}
    for kind in ("vector", "pixels"):
        env = jaxgame.make("autochess", obs=kind)
        out[kind] = bench_env_throughput(env, num_envs_list, rounds, progress, label=f"env obs={kind}")
        status(f"[observe obs={kind}] {n_obs} states: ", progress, end="")
        observe = _compile(jax.jit(jax.vmap(env.observe)), states, progress=progress)
        observe_ms[kind] = round(_time(observe, states, repeats=5) * 1e3, 3)
        status(f" {observe_ms[kind]:,.3f} ms", progress)
    out["pixels_over_vector"] = {n: round(out["pixels"][n] / out["vector"][n], 3) for n in out["vector"]}
    out["observe_ms"] = {"num_envs": n_obs, **observe_ms}
    return out


#: ``--what train``: the goal for ``overhead_ratio`` on a CPU (training at >= 80% of the env-only speed).
OVERHEAD_GOAL = 0.8
#: ``--what train``: the gymnax section's ``final_return`` pools the episodes of the last 5% of the updates.
FINAL_FRACTION = 0.05
#: ``--what train``: the gymnax section's default run length, PureJaxRL's CartPole TOTAL_TIMESTEPS.
GYMNAX_STEPS = 500_000


def _rounded(x, digits=1):
    """``round(x, digits)`` as a float, or None where ``x`` is not finite (JSON has no NaN)."""
    x = float(x)
    return round(x, digits) if math.isfinite(x) else None


def _time_chunks(chunk, runner, repeats: int = 2) -> float:
    """Best wall time of one jitted training chunk, after one warm-up chunk; the runner is carried along."""
    runner, _ = jax.block_until_ready(chunk(runner))
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        runner, _ = jax.block_until_ready(chunk(runner))
        best = min(best, time.perf_counter() - start)
    return best


def train_updates(config, steps_per_env: int, updates: int | None = None) -> int:
    """Updates per timed chunk: ``updates``, or by default enough for ``steps_per_env`` steps of every env."""
    per_update = config.steps_per_update // config.num_envs  # num_steps (PPO) or update_every (A2C)
    return updates if updates is not None else max(1, -(-steps_per_env // per_update))


def bench_train(name, steps_per_env, updates, progress, label):
    """One preset's shape: training seat-steps/s over jitted chunks vs env-only seat-steps/s (random bots)."""
    from agents.envs import make_env, make_game
    from agents.trainers import make_train
    from experiments.presets import preset_config

    config = preset_config(name)
    updates = train_updates(config, steps_per_env, updates)
    per_update = config.steps_per_update // config.num_envs
    seat_steps = updates * config.steps_per_update * config.num_seats
    status(f"{label} {name}: {config.algo}, {config.num_envs} envs x {per_update} steps x {config.num_seats} seats "
           f"per update, {updates} updates per chunk: ", progress, end="")
    trainer = make_train(config, make_env(config))
    start = time.perf_counter()
    runner = jax.block_until_ready(jax.jit(trainer.init)(jax.random.key(config.seed)))
    init_s = time.perf_counter() - start
    start = time.perf_counter()
    chunk = _compile(trainer.run, runner, updates, progress=progress)
    compile_s = time.perf_counter() - start
    seconds = _time_chunks(chunk, runner)
    train_sps = seat_steps / seconds
    status(f" {train_sps:,.0f} seat-steps/s ({seconds * 1e3 / updates:,.1f} ms per update)", progress)

    # the env alone, as bench_env_throughput measures it: VecEnv + random bots over whole rounds
    game = make_game(config)
    rounds = max(1, -(-updates * per_update // game.config.steps_per_round))
    steps = rounds * game.config.steps_per_round
    status(f"{label} {name} env-only: {config.num_envs} envs x {steps} steps ({rounds} rounds), random bots: ",
           progress, end="")
    venv = jaxgame.VecEnv(game, config.num_envs)
    states, ts = jax.jit(venv.reset)(jax.random.key(0))
    key = jax.random.key(1)
    start = time.perf_counter()
    rollout = _compile(rollout_fn(venv, bots.random_policy, steps), states, ts, key, progress=progress)
    env_compile_s = time.perf_counter() - start
    env_sps = steps * config.num_envs * C.NUM_PLAYERS / _time(rollout, states, ts, key, repeats=2)
    ratio = train_sps / env_sps
    status(f" {env_sps:,.0f} seat-steps/s; train / env-only = {ratio:.2f} (goal on a CPU: >= {OVERHEAD_GOAL})",
           progress)
    return {
        "algo": config.algo,
        "num_envs": config.num_envs,
        "steps_per_update": per_update,
        "seats": config.num_seats,
        "hidden": list(config.hidden),
        "obs": config.obs,
        "updates": updates,
        "seat_steps_per_chunk": seat_steps,
        "init_s": round(init_s, 2),
        "compile_s": round(compile_s, 2),
        "update_ms": round(seconds * 1e3 / updates, 2),
        "train_seat_steps_per_s": round(train_sps, 1),
        "env_steps_timed": steps,
        "env_compile_s": round(env_compile_s, 2),
        "env_seat_steps_per_s": round(env_sps, 1),
        "overhead_ratio": round(ratio, 3),
    }


def bench_gymnax(total_steps, progress):
    """Our ``ppo_gymnax`` preset, the whole run jitted, vs the PureJaxRL reference on CartPole-v1."""
    try:
        from experiments import purejaxrl_reference as reference
    except ImportError as error:
        status(f"[gymnax] skipped: {error}", progress)
        return {"skipped": f"gymnax is not installed ({error})"}
    from agents.envs import make_env
    from agents.trainers import make_train
    from experiments.presets import preset_config

    config = preset_config("ppo_gymnax").with_overrides({"total_steps": total_steps})
    num_updates, steps = config.num_updates, config.num_updates * config.steps_per_update
    last = max(1, round(num_updates * FINAL_FRACTION))
    status(f"[gymnax 1/2] ours (ppo_gymnax on {config.env}), {num_updates} updates = {steps} steps: ",
           progress, end="")
    key = jax.random.key(config.seed)
    start = time.perf_counter()
    train = _compile(jax.jit(make_train(config, make_env(config))), key, progress=progress, then="; running ...")
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    _, metrics = jax.block_until_ready(train(key))
    run_s = time.perf_counter() - start
    episodes = float(jnp.sum(metrics["sums/episodes"][-last:]))
    ours_return = float(jnp.sum(metrics["sums/return_sum"][-last:])) / episodes if episodes else float("nan")
    ours = {"compile_s": round(compile_s, 2), "run_s": round(run_s, 3), "sps": round(steps / run_s, 1),
            "final_return": _rounded(ours_return)}
    status(f" {run_s:.1f} s, {ours['sps']:,.0f} steps/s, final return {ours_return:.1f}", progress)

    status("[gymnax 2/2] PureJaxRL reference (experiments/purejaxrl_reference.py): compiling and running ...",
           progress, end="")
    out = reference.run(seed=config.seed, total_timesteps=total_steps)
    assert out["steps"] == steps, (out["steps"], steps)
    ref_return = reference.final_return(out["metrics"], FINAL_FRACTION)
    ref = {"compile_s": round(out["compile_s"], 2), "run_s": round(out["run_s"], 3), "sps": round(out["sps"], 1),
           "final_return": _rounded(ref_return)}
    status(f" compile {out['compile_s']:.1f} s, run {out['run_s']:.1f} s, {ref['sps']:,.0f} steps/s, "
           f"final return {ref_return:.1f}", progress)
    return {
        "env": config.env,
        "steps": steps,
        "num_updates": num_updates,
        "final_return_updates": last,
        "ours": ours,
        "purejaxrl": ref,
        "ours_over_purejaxrl_sps": round(ours["sps"] / ref["sps"], 3),
    }


def _train_presets(text, parser):
    """``--presets``: comma-separated game presets, or "none"."""
    from experiments.presets import PRESETS

    names = [] if text.strip().lower() == "none" else [n.strip() for n in text.split(",") if n.strip()]
    for name in names:
        if name not in PRESETS:
            parser.error(f"--presets: unknown preset {name!r}; available: {', '.join(PRESETS)} (or none)")
        if PRESETS[name].config.is_gymnax:
            parser.error(f"--presets: {name!r} is a gymnax preset; the gymnax section times it (--gymnax-steps)")
    return names


def _ints(text):
    return [int(x) for x in text.split(",")]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--what", choices=["env", "combat", "render", "train", "sweep"], default="env")
    parser.add_argument(
        "--full", action="store_true",
        help="the full sweep even on a CPU (the default on a GPU; ~10 min for --what env on a 2-core CPU)",
    )
    parser.add_argument(
        "--num-envs", default=None,
        help="comma-separated batch sizes (default: env 1,64 on CPU, 1,64,1024,4096 with --full or on GPU; render 16)",
    )
    parser.add_argument(
        "--render-batch", default=None,
        help="render: comma-separated numbers of game states (default 1,64,256)",
    )
    parser.add_argument("--rounds", type=int, default=1, help="rounds timed per batch size (default 1)")
    parser.add_argument("--fights", type=int, default=None,
                        help="fights in the combat benchmark (default: 256 on CPU, 1024 with --full or on GPU)")
    parser.add_argument("--skip-envs", type=int, default=None,
                        help="batch size of the fight-skip benchmark (default: 64 on CPU, 256 with --full or on GPU)")
    parser.add_argument("--presets", default=None,
                        help="train: comma-separated game presets, or none (default: smoke,ppo_small on CPU, "
                             "plus ppo_large with --full or on GPU)")
    parser.add_argument("--updates", type=int, default=None,
                        help="train: updates per timed chunk (default: 64 steps of every env on CPU, 128 with --full "
                             "or on GPU, e.g. 2 PPO updates of ppo_small on CPU)")
    parser.add_argument("--gymnax-steps", type=int, default=GYMNAX_STEPS,
                        help=f"train: CartPole env steps of the gymnax section, ours and PureJaxRL's (default "
                             f"{GYMNAX_STEPS:,}, PureJaxRL's; 0 skips it)")
    parser.add_argument("--runs", type=int, default=None,
                        help="sweep: runs in the vmapped sweep (default 4 on CPU, 16 with --full or on GPU)")
    parser.add_argument("--combat-batch", default="64,1024",
                        help="combat: comma-separated numbers of fights timed together (default 64,1024)")
    parser.add_argument("--baseline", default=None,
                        help="combat: a git revision whose jaxgame/combat.py and rounds.py are timed too, back to back")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = parser.parse_args(argv)
    backend = jax.default_backend()
    sweep = default_sweep(backend, args.full)
    try:
        num_envs_list = (
            _ints(args.num_envs) if args.num_envs
            else sweep["num_envs"] if args.what == "env" else [64] if args.what == "combat" else sweep["render_num_envs"]
        )
        render_batch = _ints(args.render_batch) if args.render_batch else sweep["render_batch"]
        combat_batch = _ints(args.combat_batch)
    except ValueError:
        parser.error(f"--num-envs/--render-batch must be comma-separated ints, got {args.num_envs!r}, {args.render_batch!r}")
    fights = sweep["fights"] if args.fights is None else args.fights
    skip_envs = sweep["skip_envs"] if args.skip_envs is None else args.skip_envs
    if any(n < 1 for n in num_envs_list + render_batch + combat_batch) or min(args.rounds, fights, skip_envs) < 1:
        parser.error("--num-envs, --render-batch, --rounds, --fights and --skip-envs must be positive")
    if args.what in ("train", "sweep"):
        presets = _train_presets(args.presets if args.presets is not None else ",".join(sweep["train_presets"]), parser)
        if args.updates is not None and args.updates < 1:
            parser.error("--updates must be positive")
        if args.gymnax_steps and args.gymnax_steps < 512:
            parser.error("--gymnax-steps must be 0 (skip) or >= 512 (one update of 4 envs x 128 steps)")
    progress = not args.quiet
    start = time.perf_counter()
    if args.what == "render":
        sizes = f"render states {','.join(map(str, render_batch))}; envs {','.join(map(str, num_envs_list))}"
    elif args.what == "sweep":
        runs = args.runs or (4 if sweep["name"] == "quick" else 16)
        if runs < 1:
            parser.error("--runs must be positive")
        sizes = f"presets {','.join(presets)}, {runs} runs"
    elif args.what == "combat":
        sizes = (f"fights {','.join(map(str, combat_batch))}; envs {','.join(map(str, num_envs_list))}; "
                 f"baseline {args.baseline or 'none'}")
    elif args.what == "train":
        updates = f"{args.updates} updates" if args.updates else f"{sweep['train_steps']} steps of every env"
        gymnax = f"gymnax {args.gymnax_steps} steps" if args.gymnax_steps else "gymnax skipped"
        sizes = f"presets {','.join(presets) or 'none'}, {updates} per chunk; {gymnax}"
    else:
        sizes = f"envs {','.join(map(str, num_envs_list))}; {fights} fights; fight-skip at {skip_envs} envs"
    hint = "; --full for the full sweep (~10 min on a 2-core CPU)" if sweep["name"] == "quick" and args.what == "env" else ""
    status(f"benchmark --what {args.what} on {backend}, {sweep['name']} sweep ({sizes}){hint}", progress)
    result = {
        "what": args.what,
        "backend": backend,
        "device": str(jax.devices()[0]),
        "machine": platform.machine(),
        "sweep": sweep["name"],
    }
    if args.what == "train":
        cache = jax.config.jax_compilation_cache_dir if jax.config.jax_enable_compilation_cache else None
        if cache:
            status(f"warning: JAX's persistent compilation cache is on ({cache}): compile times may be cache hits",
                   progress)
        result["compilation_cache"] = cache or None
        result["overhead_goal"] = OVERHEAD_GOAL
        result["train"] = {
            name: bench_train(name, sweep["train_steps"], args.updates, progress, f"[train {i + 1}/{len(presets)}]")
            for i, name in enumerate(presets)
        }
        trained = result["train"]
        if "league_small" in trained and "ppo_small" in trained:  # the league's cost: pool seats' forward passes
            result["league_over_self_play"] = round(trained["league_small"]["train_seat_steps_per_s"]
                                                    / trained["ppo_small"]["train_seat_steps_per_s"], 3)
        skipped = {"skipped": "--gymnax-steps 0"}
        result["gymnax"] = bench_gymnax(args.gymnax_steps, progress) if args.gymnax_steps else skipped
    elif args.what == "sweep":
        from experiments.bench_sweep import bench_sweep
        from experiments.presets import preset_config

        result["sweep_vs_separate"] = {
            name: bench_sweep(name, runs, train_updates(preset_config(name), sweep["train_steps"], args.updates),
                              progress, f"[sweep {i + 1}/{len(presets)}]")
            for i, name in enumerate(presets)
        }
    elif args.what == "combat":
        result["rounds"] = args.rounds
        result.update(bench_combat_vs_baseline(combat_batch, num_envs_list, args.baseline, progress, args.rounds))
    elif args.what == "render":
        result["render"] = bench_render(render_batch, progress)
        result["env_seat_steps_per_s"] = bench_obs_kinds(num_envs_list, args.rounds, progress)
    else:
        env = jaxgame.make("autochess")
        result["steps_per_round"] = env.config.steps_per_round
        result["seat_steps_per_s"] = bench_env_throughput(env, num_envs_list, args.rounds, progress)
        result["combat"] = bench_combat(fights, (3, 9), env.config.max_combat_ticks, progress)
        result["fight_skip"] = bench_fight_skip(env, skip_envs, 4, progress)
    status(f"done in {time.perf_counter() - start:.1f} s", progress)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
