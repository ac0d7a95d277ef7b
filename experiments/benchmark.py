"""Throughput benchmarks; prints one JSON object (the last line of stdout).

    python -m experiments.benchmark --what env
    python -m experiments.benchmark --what env --full
    python -m experiments.benchmark --what env --num-envs 1,64 --rounds 1
    python -m experiments.benchmark --what render

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

Both also report ``sweep``: "quick" or "full", the default sizes used.
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import jax
import jax.numpy as jnp

import jaxgame
from experiments.common import random_boards, rollout_fn, status
from jaxgame import bots, combat, packing, render
from jaxgame import constants as C

#: Default sizes per sweep; ``default_sweep`` picks one for the backend.
SWEEPS = {
    "full": {
        "num_envs": [1, 64, 1024, 4096],  # --what env
        "fights": 1024,
        "skip_envs": 256,
        "render_batch": [1, 64, 256],  # --what render
        "render_num_envs": [16],
    },
    "quick": {
        "num_envs": [1, 64],
        "fights": 256,
        "skip_envs": 64,
        "render_batch": [1, 64, 256],  # --what render is ~1 min on a 2-core CPU: the same sizes
        "render_num_envs": [16],
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


def bench_env_throughput(env, num_envs_list, rounds, progress, label="env"):
    out = {}
    steps = rounds * env.config.steps_per_round
    for i, n in enumerate(num_envs_list):
        status(f"[{label} {i + 1}/{len(num_envs_list)}] {n} envs x {steps} steps: ", progress, end="")
        venv = jaxgame.VecEnv(env, n)
        states, ts = jax.jit(venv.reset)(jax.random.key(0))
        key = jax.random.key(1)
        run = _compile(rollout_fn(venv, bots.random_policy, steps), states, ts, key, progress=progress)
        seconds = _time(run, states, ts, key, repeats=2)
        out[str(n)] = round(steps * n * C.NUM_PLAYERS / seconds, 1)
        status(f" {out[str(n)]:,.0f} seat-steps/s", progress)
    return out


def bench_combat(num_fights, units_list, max_ticks, progress):
    """Fights/s of the vmapped combat on random boards, one entry per number of units a side."""
    fight = jax.jit(jax.vmap(lambda a, b, c, d, k: combat.simulate_fight(a, b, c, d, k, max_ticks=max_ticks)))
    keys = jax.random.split(jax.random.key(2), num_fights)
    out = []
    for i, units in enumerate(units_list):
        status(f"[combat {i + 1}/{len(units_list)}] {num_fights} fights, {units} units a side: ", progress, end="")
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


def _ints(text):
    return [int(x) for x in text.split(",")]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--what", choices=["env", "render"], default="env")
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
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = parser.parse_args(argv)
    backend = jax.default_backend()
    sweep = default_sweep(backend, args.full)
    try:
        num_envs_list = (
            _ints(args.num_envs) if args.num_envs
            else sweep["num_envs"] if args.what == "env" else sweep["render_num_envs"]
        )
        render_batch = _ints(args.render_batch) if args.render_batch else sweep["render_batch"]
    except ValueError:
        parser.error(f"--num-envs/--render-batch must be comma-separated ints, got {args.num_envs!r}, {args.render_batch!r}")
    fights = sweep["fights"] if args.fights is None else args.fights
    skip_envs = sweep["skip_envs"] if args.skip_envs is None else args.skip_envs
    if any(n < 1 for n in num_envs_list + render_batch) or args.rounds < 1 or fights < 1 or skip_envs < 1:
        parser.error("--num-envs, --render-batch, --rounds, --fights and --skip-envs must be positive")
    progress = not args.quiet
    start = time.perf_counter()
    if args.what == "render":
        sizes = f"render states {','.join(map(str, render_batch))}; envs {','.join(map(str, num_envs_list))}"
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
    if args.what == "render":
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
