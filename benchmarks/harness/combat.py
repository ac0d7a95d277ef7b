"""``--what combat``: the combat alone and the env around it, optionally next to a baseline revision.

``--baseline REV``: ``jaxgame/combat.py`` and ``jaxgame/rounds.py`` as of that git revision, loaded from
``git show``; each baseline measurement runs right after the current one, so both see the same machine load.
JSON fields (``bench_combat_vs_baseline``; ``--what combat`` adds ``rounds``):
  * ``baseline``: the revision, or null;
  * ``combat[n]``: fights/s of ``n`` random fights (``--combat-batch``, default 64 and 1024, multiples of 8)
    with 3 and 9 units a side, each side as its own game runs its fights (its ``rounds.run_fights`` on the
    plans of n/8 games, every slot a fight): ``current``, ``baseline`` and ``speedup``; each entry of
    ``current``/``baseline`` is ``bench_combat``'s: ``num_fights``, ``units_per_side``, ``fights_per_s``,
    ``mean_ticks``;
  * ``tick_loop_ops``: the StableHLO ops of each fight loop's body (one per lane stage) in the program of the
    largest batch lowered for CUDA (``tick_loop_ops``; no GPU needed): ``current``, ``baseline`` and
    ``ratio`` (the largest bodies, current / baseline), a GPU-free proxy of the kernels a tick launches;
  * ``seat_steps_per_s``: VecEnv seat-steps/s as ``--what env`` measures them (``--num-envs``, default 64;
    ``--rounds`` rounds from the start of the game, default 1: the first 3 rounds are PvE), ``current``,
    ``baseline`` and ``speedup``; with a baseline both rollouts are compiled first and timed in turn, the
    best of 5 calls each (``AB_REPEATS``).
``bench_combat`` also gives ``--what env`` its ``combat`` field: fights per second of the combat simulation
alone, vmapped over random boards.
"""

from __future__ import annotations

import contextlib
import dataclasses
import subprocess
import sys
import types
from pathlib import Path

import jax
import jax.numpy as jnp

import jaxgame
from agents.utils.lowering import lowered_text, while_body_op_counts
from benchmarks.harness.env import bench_env_throughput, random_rollout
from benchmarks.harness.timing import aot_compile, best_time, time_interleaved
from experiments.common import status
from jaxgame import constants as C
from jaxgame import rounds
from jaxgame.play import random_boards

#: Timed calls of each side of an A/B env measurement, alternating (so both see the same machine load).
AB_REPEATS = 5

#: The repository's root, where ``git show`` finds the baseline revision.
REPO_ROOT = Path(__file__).resolve().parent.parent.parent


def fight_plans(rounds_module, home_species, home_stars, away_species, away_stars, key):
    """``rounds_module.FightPlan`` of ``n / 8`` games from n boards per side (int32[n, 24] each): every slot a
    PvP-like fight between the two boards, one key per game; the other fields as a PvP round's."""
    games = home_species.shape[0] // C.NUM_PLAYERS
    slots = lambda a: a.reshape(games, C.NUM_PLAYERS, C.BOARD_CELLS)  # noqa: E731
    known = dict(
        home_species=slots(home_species),
        home_stars=slots(home_stars),
        away_species=slots(away_species),
        away_stars=slots(away_stars),
        active=jnp.ones((games, C.NUM_PLAYERS), bool),
        opponent=jnp.full((games, C.NUM_PLAYERS), -1, jnp.int32),
        ghost_source=jnp.full((games, C.NUM_PLAYERS), -1, jnp.int32),
        is_pve=jnp.zeros(games, bool),
        key=jax.random.split(key, games),
    )
    names = [field.name for field in dataclasses.fields(rounds_module.FightPlan)]
    if set(names) - set(known):
        raise ValueError(
            f"FightPlan of {rounds_module.__name__} has fields this benchmark cannot fill: "
            f"{sorted(set(names) - set(known))}"
        )
    return rounds_module.FightPlan(**{name: known[name] for name in names})


def game_fights(max_ticks: int, rounds_module=None):
    """Jitted ``(home_species, home_stars, away_species, away_stars, key) -> FightResult [n / 8, 8]``: n fights
    (int32[n, 24] boards) run as a game runs them, by ``rounds_module.run_fights`` (default this tree's
    ``jaxgame.rounds``; ``--baseline``: the baseline revision's, which calls its own combat) on the plans of n / 8
    games (:func:`fight_plans`)."""
    rounds_module = rounds if rounds_module is None else rounds_module

    def fight(hs, ht, as_, at, key):
        return rounds_module.run_fights(fight_plans(rounds_module, hs, ht, as_, at, key), max_ticks)

    return jax.jit(fight)


def bench_combat(num_fights, units_list, max_ticks, progress, rounds_module=None, label="combat"):
    """Fights/s of the combat on random boards, one entry per number of units a side.

    The fights run as a game runs them (:func:`game_fights` of ``rounds_module``).
    """
    if num_fights < C.NUM_PLAYERS or num_fights % C.NUM_PLAYERS:
        raise ValueError(
            f"--combat-batch sizes must be positive multiples of {C.NUM_PLAYERS} (8 fight slots a "
            f"game), got {num_fights}"
        )
    fight = game_fights(max_ticks, rounds_module)
    keys = jax.random.key(2)
    out = []
    for i, units in enumerate(units_list):
        status(f"[{label} {i + 1}/{len(units_list)}] {num_fights} fights, {units} units a side: ", progress, end="")
        hs, ht = random_boards(jax.random.key(0), num_fights, units)
        as_, at = random_boards(jax.random.key(1), num_fights, units)
        if i == 0:  # the same shapes for every unit count: compile once
            fight = aot_compile(fight, hs, ht, as_, at, keys, progress=progress)
        else:
            status("timing ...", progress, end="")
        seconds = best_time(fight, hs, ht, as_, at, keys)
        ticks = fight(hs, ht, as_, at, keys).ticks  # [games, 8]
        out.append(
            {
                "num_fights": num_fights,
                "units_per_side": units,
                "fights_per_s": round(num_fights / seconds, 1),
                "mean_ticks": round(float(jnp.mean(ticks)), 1),
            }
        )
        status(f" {out[-1]['fights_per_s']:,.0f} fights/s", progress)
    return out


def tick_loop_ops(num_fights: int, rounds_module=None) -> list[int]:
    """StableHLO ops of each fight loop's body (``agents.utils.lowering.while_body_op_counts``) in the program
    that runs ``num_fights`` fights as :func:`bench_combat` does, lowered for CUDA (no GPU needed): the loop
    copies of the lane stages, in order."""
    fight = game_fights(jaxgame.make("autochess").config.max_combat_ticks, rounds_module)
    boards = [*random_boards(jax.random.key(0), num_fights, 9), *random_boards(jax.random.key(1), num_fights, 9)]
    return while_body_op_counts(lowered_text(fight, *boards, jax.random.key(2), platform="cuda"))


def load_baseline(rev: str):
    """``jaxgame/combat.py`` and ``jaxgame/rounds.py`` as of git revision ``rev`` (``git show``), as modules
    ``(combat, rounds)``; the baseline rounds module calls the baseline combat."""
    loaded = []
    for name in ("combat", "rounds"):
        source = subprocess.run(
            ["git", "show", f"{rev}:jaxgame/{name}.py"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
        ).stdout
        module = types.ModuleType(f"jaxgame_baseline_{name}")
        sys.modules[module.__name__] = module  # dataclasses look their module up
        # exec: the baseline's own source, from git
        exec(compile(source, f"{rev}:jaxgame/{name}.py", "exec"), module.__dict__)  # noqa: S102
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
            entry["baseline"] = bench_combat(n, (3, 9), max_ticks, progress, baseline[1], label="baseline combat")
            entry["speedup"] = [
                round(c["fights_per_s"] / b["fights_per_s"], 2) for c, b in zip(entry["current"], entry["baseline"])
            ]
        out["combat"][str(n)] = entry
    n = max(batch_sizes)
    ops = {"num_fights": n, "current": tick_loop_ops(n)}
    if baseline:
        ops["baseline"] = tick_loop_ops(n, baseline[1])
        ops["ratio"] = round(max(ops["current"]) / max(ops["baseline"]), 2)
    out["tick_loop_ops"] = ops
    status(f"fight loop body ops (StableHLO lowered for CUDA, {n} fights): {ops}", progress)
    if not baseline:
        out["seat_steps_per_s"]["current"] = bench_env_throughput(env, num_envs_list, num_rounds, progress)
        return out
    current, base = {}, {}
    steps = num_rounds * env.config.steps_per_round
    for i, n in enumerate(num_envs_list):
        status(f"[env A/B {i + 1}/{len(num_envs_list)}] {n} envs x {steps} steps: ", progress, end="")
        rollout, args = random_rollout(env, n, steps)
        runs = {"current": aot_compile(rollout, *args, progress=progress, what="current ", then="; ")}
        with baseline_fights(baseline[1]):  # a new rollout function: traced anew with the baseline fights
            runs["baseline"] = aot_compile(random_rollout(env, n, steps)[0], *args, progress=progress, what="baseline ")
        best = time_interleaved(runs, args, AB_REPEATS)
        current[str(n)], base[str(n)] = (round(steps * n * C.NUM_PLAYERS / best[k], 1) for k in ("current", "baseline"))
        status(f" {current[str(n)]:,.0f} vs {base[str(n)]:,.0f} seat-steps/s", progress)
    out["seat_steps_per_s"].update(
        current=current, baseline=base, speedup={n: round(current[n] / base[n], 2) for n in current}
    )
    return out
