"""``--what render``: frames/s of the renderer, and env throughput with pixel vs vector observations.

JSON fields:
  * ``render[n]`` (``bench_render``): frames/s of ``render.render_all`` vmapped over ``n`` game states
    (8 frames each; ``--render-batch``), packed uint8[72, 20] as the env returns them vs unpacked (the same
    frames then ``packing.unpack``-ed to uint8[72, 80], i.e. the cost of materialising them), for states
    with random boards, benches and opponents: ``frames``, ``packed_frames_per_s``,
    ``unpacked_frames_per_s``, ``packed_over_unpacked``, ``bytes_per_frame_packed``,
    ``bytes_per_frame_unpacked``;
  * ``env_seat_steps_per_s`` (``bench_obs_kinds``): VecEnv seat-steps/s with obs="vector" vs obs="pixels"
    (``vector[n]``, ``pixels[n]``, ``pixels_over_vector[n]``; ``--num-envs``, default 16 here; whole rounds,
    random bots), and ``observe_ms``: one vmapped ``env.observe`` of the largest batch per obs kind (the
    observation's own cost, free of the step's noise).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

import jaxgame
from benchmarks.harness.env import bench_env_throughput
from benchmarks.harness.timing import aot_compile, best_time
from experiments.common import status
from jaxgame import constants as C
from jaxgame import packing, render
from jaxgame.play import random_boards


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
        t_packed = best_time(aot_compile(packed, batch, progress=progress, what="packed: "), batch, repeats=5)
        status(f" {frames / t_packed:,.0f} frames/s; ", progress, end="")
        t_unpacked = best_time(aot_compile(unpacked, batch, progress=progress, what="unpacked: "), batch, repeats=5)
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
        observe = aot_compile(jax.jit(jax.vmap(env.observe)), states, progress=progress)
        observe_ms[kind] = round(best_time(observe, states, repeats=5) * 1e3, 3)
        status(f" {observe_ms[kind]:,.3f} ms", progress)
    out["pixels_over_vector"] = {n: round(out["pixels"][n] / out["vector"][n], 3) for n in out["vector"]}
    out["observe_ms"] = {"num_envs": n_obs, **observe_ms}
    return out
