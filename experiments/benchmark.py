"""Throughput benchmarks; prints one JSON object.

    python -m experiments.benchmark --what env
    python -m experiments.benchmark --what env --num-envs 1,64 --rounds 1
    python -m experiments.benchmark --what render

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
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import jax
import jax.numpy as jnp
from tqdm import tqdm

import jaxgame
from experiments.common import random_boards, rollout_fn
from jaxgame import bots, combat, packing, render
from jaxgame import constants as C


def _time(fn, *args, repeats: int = 3) -> float:
    """Best wall time of ``fn(*args)`` in seconds, compiled beforehand."""
    jax.block_until_ready(fn(*args))
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - start)
    return best


def bench_env_throughput(env, num_envs_list, rounds, progress):
    out = {}
    steps = rounds * env.config.steps_per_round
    for n in tqdm(num_envs_list, desc="env throughput", disable=not progress):
        venv = jaxgame.VecEnv(env, n)
        states, ts = venv.reset(jax.random.key(0))
        run = rollout_fn(venv, bots.random_policy, steps)
        seconds = _time(run, states, ts, jax.random.key(1), repeats=2)
        out[str(n)] = round(steps * n * C.NUM_PLAYERS / seconds, 1)
    return out


def bench_combat(num_fights, units, max_ticks):
    hs, ht = random_boards(jax.random.key(0), num_fights, units)
    as_, at = random_boards(jax.random.key(1), num_fights, units)
    keys = jax.random.split(jax.random.key(2), num_fights)
    fight = jax.jit(jax.vmap(lambda a, b, c, d, k: combat.simulate_fight(a, b, c, d, k, max_ticks=max_ticks)))
    seconds = _time(fight, hs, ht, as_, at, keys)
    ticks = fight(hs, ht, as_, at, keys).ticks
    return {
        "num_fights": num_fights,
        "units_per_side": units,
        "fights_per_s": round(num_fights / seconds, 1),
        "mean_ticks": round(float(jnp.mean(ticks)), 1),
    }


def bench_fight_skip(env, num_envs, warm_rounds):
    """Per-step cost at a non-fight vs a fight step, with boards filled by greedy bots."""
    venv = jaxgame.VecEnv(env, num_envs)
    states, ts = venv.reset(jax.random.key(0))
    warm = rollout_fn(venv, bots.greedy_policy, warm_rounds * env.config.steps_per_round)
    states, ts, _, _ = warm(states, ts, jax.random.key(1))  # now at step 0 of a round, boards filled
    actions = jnp.zeros((num_envs, C.NUM_PLAYERS), jnp.int32)
    vec_step = jax.jit(venv.step)
    naive_step = jax.jit(jax.vmap(env.step))
    non_fight = _time(vec_step, states, actions)
    naive_non_fight = _time(naive_step, states, actions)
    # advance to the last decision step of the round: that step runs the fights
    for _ in range(env.config.steps_per_round - 1):
        states, ts = vec_step(states, actions)
    assert bool(jnp.all(states.step_in_round == env.config.steps_per_round - 1))
    fight = _time(vec_step, states, actions)
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
    for n in tqdm(batch_sizes, desc="render", disable=not progress):
        batch = jax.tree_util.tree_map(lambda x: x[:n], states)
        frames = n * C.NUM_PLAYERS
        t_packed = _time(packed, batch, repeats=5)
        t_unpacked = _time(unpacked, batch, repeats=5)
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
        out[kind] = bench_env_throughput(env, num_envs_list, rounds, progress)
        observe_ms[kind] = round(_time(jax.jit(jax.vmap(env.observe)), states, repeats=5) * 1e3, 3)
    out["pixels_over_vector"] = {n: round(out["pixels"][n] / out["vector"][n], 3) for n in out["vector"]}
    out["observe_ms"] = {"num_envs": n_obs, **observe_ms}
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--what", choices=["env", "render"], default="env")
    parser.add_argument(
        "--num-envs", default=None, help="comma-separated batch sizes (default: 1,64,1024,4096 for env, 16 for render)"
    )
    parser.add_argument("--render-batch", default="1,64,256", help="render: comma-separated numbers of game states")
    parser.add_argument("--rounds", type=int, default=1, help="rounds timed per batch size")
    parser.add_argument("--fights", type=int, default=1024, help="fights in the combat benchmark")
    parser.add_argument("--skip-envs", type=int, default=256, help="batch size of the fight-skip benchmark")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    if args.num_envs is None:
        args.num_envs = "1,64,1024,4096" if args.what == "env" else "16"
    try:
        num_envs_list = [int(x) for x in args.num_envs.split(",")]
        render_batch = [int(x) for x in args.render_batch.split(",")]
    except ValueError:
        parser.error(f"--num-envs/--render-batch must be comma-separated ints, got {args.num_envs!r}, {args.render_batch!r}")
    if any(n < 1 for n in num_envs_list + render_batch) or args.rounds < 1 or args.fights < 1 or args.skip_envs < 1:
        parser.error("--num-envs, --render-batch, --rounds, --fights and --skip-envs must be positive")
    if args.what == "render":
        result = {
            "what": "render",
            "backend": jax.default_backend(),
            "device": str(jax.devices()[0]),
            "machine": platform.machine(),
            "render": bench_render(render_batch, not args.quiet),
            "env_seat_steps_per_s": bench_obs_kinds(num_envs_list, args.rounds, not args.quiet),
        }
        print(json.dumps(result))
        return result

    env = jaxgame.make("autochess")
    progress = not args.quiet
    result = {
        "what": args.what,
        "backend": jax.default_backend(),
        "device": str(jax.devices()[0]),
        "machine": platform.machine(),
        "steps_per_round": env.config.steps_per_round,
        "seat_steps_per_s": bench_env_throughput(env, num_envs_list, args.rounds, progress),
        "combat": [bench_combat(args.fights, u, env.config.max_combat_ticks) for u in (3, 9)],
        "fight_skip": bench_fight_skip(env, args.skip_envs, warm_rounds=4),
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
