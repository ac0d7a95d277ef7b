"""``--what env``: VecEnv throughput with random bots, and the fight-skip check.

JSON fields (the combat's ``combat`` field of ``--what env`` comes from ``benchmarks.harness.combat``):
  * ``seat_steps_per_s[num_envs]`` (``bench_env_throughput``): VecEnv steps x 8 seats per second with
    random bots, measured over whole rounds (so fight steps are included in their real proportion), after
    compilation; ``steps_per_round`` says how many steps a round has;
  * ``fight_skip`` (``bench_fight_skip``), on mid-game boards (greedy bots play the first rounds): the
    cost of one VecEnv step that is not a fight step vs one that is; of a non-fight step under plain
    ``jax.vmap(env.step)``, which runs the same batch-level step through the env's vmap rule
    (``jaxgame.batched_step``); and of a non-fight step of the per-game step vmapped without that rule
    (the per-game ``lax.cond`` turns into a select and the combat runs on every step: what the rule
    avoids) — the proof that the combat is skipped when it is not due: ``num_envs``, ``round``,
    ``mean_board_units``, ``vecenv_non_fight_step_ms``, ``vecenv_fight_step_ms``, ``fight_over_non_fight``,
    ``vmap_non_fight_step_ms``, ``vmap_over_vecenv_non_fight`` (goal <= 1.5),
    ``select_vmap_non_fight_step_ms``, ``select_over_vecenv_non_fight``.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp

import jaxgame
from benchmarks.harness.timing import aot_compile, best_time
from experiments.common import status
from jaxgame import bots
from jaxgame import constants as C
from jaxgame.play import rollout_fn


def random_rollout(env, num_envs: int, steps: int):
    """(jitted rollout of ``steps`` VecEnv steps with random bots, its arguments (states, ts, key))."""
    venv = jaxgame.VecEnv(env, num_envs)
    states, ts = jax.jit(venv.reset)(jax.random.key(0))
    return rollout_fn(venv, bots.random_policy, steps), (states, ts, jax.random.key(1))


def bench_env_throughput(env, num_envs_list, rounds, progress, label="env"):
    out = {}
    steps = rounds * env.config.steps_per_round
    for i, n in enumerate(num_envs_list):
        status(f"[{label} {i + 1}/{len(num_envs_list)}] {n} envs x {steps} steps: ", progress, end="")
        rollout, args = random_rollout(env, n, steps)
        run = aot_compile(rollout, *args, progress=progress)
        seconds = best_time(run, *args, repeats=2)
        out[str(n)] = round(steps * n * C.NUM_PLAYERS / seconds, 1)
        status(f" {out[str(n)]:,.0f} seat-steps/s", progress)
    return out


def bench_fight_skip(env, num_envs, warm_rounds, progress):
    """Per-step cost at a non-fight vs a fight step, with boards filled by greedy bots."""
    label = f"[fight-skip] {num_envs} envs"
    venv = jaxgame.VecEnv(env, num_envs)
    states, ts = jax.jit(venv.reset)(jax.random.key(0))
    actions = jnp.zeros((num_envs, C.NUM_PLAYERS), jnp.int32)
    status(f"{label}, VecEnv step: ", progress, end="")
    vec_step = aot_compile(jax.jit(venv.step), states, actions, progress=progress, then="\n")
    status(f"{label}, warm-up: {warm_rounds} rounds of greedy play ...", progress, end="")
    start = time.perf_counter()
    greedy = jax.jit(jax.vmap(bots.greedy_policy))
    for k in jax.random.split(jax.random.key(1), warm_rounds * env.config.steps_per_round):
        states, ts = vec_step(states, greedy(jax.random.split(k, num_envs), states, ts.action_mask))
    jax.block_until_ready(states)  # now at step 0 of a round, boards filled
    status(f" {time.perf_counter() - start:.1f} s", progress)
    non_fight = best_time(vec_step, states, actions)
    timed = {}
    # env.step carries the batch-level step as its vmap rule; env._step_impl is the per-game step without it
    for name, step, what in (
        ("vmap", env.step, "plain jax.vmap(env.step)"),
        ("select_vmap", env._step_impl, "the per-game step vmapped without the rule"),
    ):
        status(f"{label}, {what}: ", progress, end="")
        compiled = aot_compile(jax.jit(jax.vmap(step)), states, actions, progress=progress)
        timed[name] = best_time(compiled, states, actions)
        status(f" non-fight step {timed[name] * 1e3:,.1f} ms", progress)
    game_round = int(states.round[0])
    # advance to the last decision step of the round: that step runs the fights
    for _ in range(env.config.steps_per_round - 1):
        states, ts = vec_step(states, actions)
    assert bool(jnp.all(states.step_in_round == env.config.steps_per_round - 1))
    fight = best_time(vec_step, states, actions)
    status(
        f"{label}, VecEnv step: non-fight {non_fight * 1e3:,.1f} ms, fight {fight * 1e3:,.1f} ms; non-fight "
        f"step under jax.vmap(env.step) {timed['vmap'] / non_fight:.2f}x the VecEnv one (without the vmap rule "
        f"{timed['select_vmap'] / non_fight:.0f}x)",
        progress,
    )
    board_units = float(jnp.mean(jnp.sum(states.players.species[..., C.BENCH_SIZE :] >= 0, -1)))
    return {
        "num_envs": num_envs,
        "round": game_round,
        "mean_board_units": round(board_units, 2),
        "vecenv_non_fight_step_ms": round(non_fight * 1e3, 3),
        "vecenv_fight_step_ms": round(fight * 1e3, 3),
        "fight_over_non_fight": round(fight / non_fight, 1),
        "vmap_non_fight_step_ms": round(timed["vmap"] * 1e3, 3),
        "vmap_over_vecenv_non_fight": round(timed["vmap"] / non_fight, 2),
        "select_vmap_non_fight_step_ms": round(timed["select_vmap"] * 1e3, 3),
        "select_over_vecenv_non_fight": round(timed["select_vmap"] / non_fight, 1),
    }
