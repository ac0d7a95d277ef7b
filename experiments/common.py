"""Shared helpers of the experiment CLIs: playing batches of bot games."""

from __future__ import annotations

import logging
import os
import sys
import time
import warnings
from pathlib import Path
from typing import NoReturn

import jax
import jax.numpy as jnp
import numpy as np
from tqdm import tqdm

import jaxgame
from agents.config import TrainConfig
from jaxgame import bots
from jaxgame import constants as C
from jaxgame import species as sp

#: JAX's persistent compilation cache of the CLIs: ``$JAXGAME_CACHE_DIR`` or ``~/.cache/jaxgame/jax``
#: (``--cache-dir`` overrides, ``--no-cache`` disables).
DEFAULT_CACHE = os.environ.get("JAXGAME_CACHE_DIR") or os.path.join(
    os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "jaxgame", "jax"
)


def enable_compilation_cache(cache_dir: str | None) -> str | None:
    """Turn on JAX's persistent compilation cache in ``cache_dir`` (None: leave it off); returns the dir.

    A second run of the same program then loads it instead of compiling (seconds instead of a minute on a CPU).
    """
    if cache_dir is None:
        return None
    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(cache_dir))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
    return str(cache_dir)


def apply_sets(config: TrainConfig, overrides: dict) -> TrainConfig:
    """``config`` with ``--set`` strings (name -> text) parsed by each field's type and applied; a ``ValueError``
    names the field (unknown name, unparsable text, or a value out of its range)."""
    types = TrainConfig.field_types()
    unknown = sorted(set(overrides) - set(types))
    if unknown:
        raise ValueError(f"unknown config key(s) {unknown}; valid keys: {', '.join(sorted(types))}")
    return config.with_overrides({name: parse_value(name, types[name], text) for name, text in overrides.items()})


def parse_value(name: str, kind, text: str):
    """Parse one ``--set`` value by the field's type; errors name the field."""
    text = text.strip()
    try:
        if kind is bool:
            lowered = text.lower()
            if lowered not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(text)
            return lowered in ("true", "1", "yes")
        if kind is int:
            value = float(text)  # accepts 1e6
            if not value.is_integer():
                raise ValueError(text)
            return int(value)
        if kind is float:
            return float(text)
        if kind is tuple:
            return tuple(int(x) for x in text.replace("x", ",").split(",") if x.strip())
        return text
    except ValueError:
        kind_name = {bool: "a bool (true/false)", int: "an int", float: "a number", tuple: "comma-separated ints"}
        raise ValueError(f"TrainConfig.{name} must be {kind_name.get(kind, kind)}, got {text!r}") from None


def fail(parser, message: str, status: int = 2) -> NoReturn:
    """End a CLI with ONE line on stderr, ``PROG: error: MESSAGE`` (no usage, no traceback); exit ``status``
    (2: bad input, 1: the work failed)."""
    parser.exit(status, f"{parser.prog}: error: {' '.join(str(message).split())}\n")


def quiet_logs() -> None:
    """Warnings as one line each (``warning: ...``) and orbax/absl's informational logging off: what a CLI
    prints on stderr stays readable (a corrupt checkpoint is one warning, not a page of log lines)."""
    warnings.formatwarning = lambda message, category, *args, **kwargs: f"warning: {message}\n"
    logging.getLogger("absl").setLevel(logging.ERROR)  # orbax logs through absl's Python logger


def parse_overrides(parser, items, env=None) -> dict:
    """``--set KEY=VALUE`` strings (and ``--env``) -> {field: string}; a malformed item is a parser error."""
    overrides = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            fail(parser, f"--set {item!r}: expected KEY=VALUE")
        overrides[key.strip()] = value
    if env:
        overrides["env"] = env
    return overrides


def parse_rules(parser, items) -> dict:
    """``--rule NAME=INT`` strings -> {name: int}; a malformed item is a parser error (the names are checked by
    ``jaxgame.make``)."""
    rules = {}
    for item in items:
        name, _, value = item.partition("=")
        try:
            rules[name] = int(value)
        except ValueError:
            fail(parser, f"--rule {item!r}: expected NAME=INT")
    return rules


def status(message: str, enabled: bool = True, end: str = "\n") -> None:
    """Print a progress message to stderr at once (stdout stays for the CLIs' JSON)."""
    if enabled:
        print(message, file=sys.stderr, end=end, flush=True)


def random_board(key, units, max_stars: int = 3):
    """One random board: int32[24] species and int32[24] stars (1..max_stars), ``units`` units on random cells."""
    k1, k2, k3 = jax.random.split(key, 3)
    occupied = jax.random.permutation(k3, C.BOARD_CELLS) < units
    species = jnp.where(occupied, jax.random.randint(k1, (C.BOARD_CELLS,), 0, sp.NUM_SPECIES), -1)
    stars = jnp.where(occupied, jax.random.randint(k2, (C.BOARD_CELLS,), 1, max_stars + 1), 0)
    return species.astype(jnp.int32), stars.astype(jnp.int32)


def random_boards(key, n: int, units, max_stars: int = 3):
    """``n`` random boards: int32[n, 24] species and stars."""
    return jax.vmap(lambda k: random_board(k, units, max_stars))(jax.random.split(key, n))


def rollout_fn(venv: jaxgame.VecEnv, policy, steps: int):
    """Jitted ``(states, ts, key) -> (states, ts, done[T, E], rank[T, E, 8])`` playing ``steps`` steps.

    ``policy(key, state, mask) -> int32[8]`` is a bot from ``jaxgame.bots`` (vmapped over envs).
    """

    @jax.jit
    def rollout(states, ts, key):
        def body(carry, k):
            states, ts = carry
            actions = jax.vmap(policy)(jax.random.split(k, venv.num_envs), states, ts.action_mask)
            states, ts = venv.step(states, actions)
            return (states, ts), (ts.done, ts.info["rank"])

        (states, ts), (done, rank) = jax.lax.scan(body, (states, ts), jax.random.split(key, steps))
        return states, ts, done, rank

    return rollout


def play_games(env, seats: tuple, num_envs: int, seed: int, chunk_steps: int = 48, max_steps: int = 100_000, progress=True):
    """Play until every env has finished at least one game; return the first game's ranks.

    With ``progress`` it tells stderr what it is doing before compiling (the
    compile takes ~20-30 s on a 2-core CPU), the compile time, then shows a progress bar.

    Returns (ranks int[num_envs, 8], stats dict: steps per env, compile_seconds
    (the jitted reset and the rollout), seconds (playing, after compilation),
    seat_steps_per_s).
    """
    status(f"compiling the rollout for {num_envs} envs on {jax.default_backend()} ...", progress)
    venv = jaxgame.VecEnv(env, num_envs)
    rollout = rollout_fn(venv, bots.mixed_policy(seats), chunk_steps)
    key = jax.random.key(seed)
    key, reset_key = jax.random.split(key)
    compile_start = time.perf_counter()
    states, ts = jax.jit(venv.reset)(reset_key)  # jitted: ~4x faster than eager on a CPU, same states
    rollout = rollout.lower(states, ts, key).compile()  # compile outside the timed loop
    compile_seconds = time.perf_counter() - compile_start
    status(f"compiled in {compile_seconds:.1f} s", progress)
    first_ranks = np.zeros((num_envs, env.num_players), np.int64)
    finished = np.zeros(num_envs, bool)
    steps = 0
    start = time.perf_counter()
    bar = tqdm(total=num_envs, desc="games finished", unit="game", disable=not progress)
    while not finished.all():
        if steps >= max_steps:
            raise RuntimeError(f"games did not finish within {max_steps} steps")
        key, chunk_key = jax.random.split(key)
        states, ts, done, rank = rollout(states, ts, chunk_key)
        done, rank = np.asarray(done), np.asarray(rank)
        for t in range(done.shape[0]):
            new = done[t] & ~finished
            first_ranks[new] = rank[t][new]
            finished |= new
            bar.update(int(new.sum()))
        steps += chunk_steps
    bar.close()
    elapsed = time.perf_counter() - start
    stats = {
        "steps": steps,
        "compile_seconds": compile_seconds,
        "seconds": elapsed,
        "seat_steps_per_s": steps * num_envs * env.num_players / elapsed,
    }
    return first_ranks, stats


def placement_by_bot(ranks: np.ndarray, seats: tuple) -> dict:
    """Mean placement (1 best .. 8 worst) per bot name."""
    names = sorted(set(seats))
    return {n: float(np.mean(ranks[:, [i for i, s in enumerate(seats) if s == n]])) for n in names}


__all__ = ["DEFAULT_CACHE", "apply_sets", "enable_compilation_cache", "fail", "quiet_logs", "parse_overrides", "parse_value", "placement_by_bot", "play_games", "random_board", "random_boards", "rollout_fn", "status"]
