"""Whole-game env throughput of this tree against an earlier git revision, timed in turn.

    python -m benchmarks.compare_revisions --baseline 3661beb --num-envs 64 --rounds 1
    python -m benchmarks.compare_revisions --baseline d768e84 --workload midgame

``benchmark --what combat --baseline REV`` swaps in only the baseline's combat
(``combat.py`` and ``rounds.py``); this swaps in the baseline's whole
``jaxgame`` package (shop, actions, observations, env, combat), so the ratio
is the one a user upgrading from REV would see. Each side runs in its own
worker process (``jaxgame`` imported from a ``git archive`` of REV, or from
this tree), both compile a VecEnv rollout of ``--rounds`` rounds from the
start of a game, then the parent times them in turn, ``--repeats`` calls each,
and keeps the best. Prints JSON: seat-steps/s (steps x envs x 8 seats per second)
of each side and the speed-up, per batch size.

Workloads (``--workload``):
  * ``opening`` (the default): the random bot, defined here (one uniform draw
    per seat picks the k-th legal action, so the bot's cost is the same on
    both sides), ``--rounds`` rounds from the start of the game: small boards,
    short fights, the first 3 rounds PvE;
  * ``midgame``: where the fights dominate. Every seat plays each side's own
    ``jaxgame.bots.greedy_policy`` (its time counts on both sides); the first
    ``MIDGAME_SKIP`` (10) rounds fill the boards untimed (compiled and run
    once, before the timing), then ``--rounds`` rounds (default 4: rounds
    11-14) are timed from that state.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: Rounds of greedy play that fill the boards before the ``midgame`` workload's timed rounds.
MIDGAME_SKIP = 10
#: ``--rounds`` when not given, per workload.
DEFAULT_ROUNDS = {"opening": 1, "midgame": 4}


def _worker(num_envs: int, rounds: int, workload: str) -> None:
    """Compile a rollout with whatever ``jaxgame`` is importable, then time it on each 'time' line of stdin."""
    # imported here, not at the top: the worker imports jaxgame from the sys.path its parent set up (this
    # tree's or a git archive of the baseline revision), which the parent process never imports itself
    import jax
    import jax.numpy as jnp

    import jaxgame
    from jaxgame import bots, units

    def random_policy(key, mask):  # mask bool[8, A] -> int32[8]
        counts = jnp.sum(mask, axis=-1, dtype=jnp.int32)
        k = jnp.minimum((jax.random.uniform(key, counts.shape) * counts).astype(jnp.int32), counts - 1)
        return jnp.argmax(jnp.cumsum(mask, axis=-1, dtype=jnp.int32) > k[:, None], axis=-1).astype(jnp.int32)

    env = jaxgame.make("autochess")
    venv = jaxgame.VecEnv(env, num_envs)
    steps = rounds * env.config.steps_per_round
    if workload == "midgame":

        def policy(keys, states, mask):
            return jax.vmap(bots.greedy_policy)(keys, states, mask)
    else:

        def policy(keys, states, mask):
            return jax.vmap(random_policy)(keys, mask)

    def play(states, ts, key, num_steps):
        def body(carry, k):
            states, ts = carry
            actions = policy(jax.random.split(k, num_envs), states, ts.action_mask)
            return venv.step(states, actions), None

        (states, ts), _ = jax.lax.scan(body, (states, ts), jax.random.split(key, num_steps))
        return states, ts

    rollout = jax.jit(lambda states, ts, key: play(states, ts, key, steps))
    start = time.perf_counter()
    states, ts = jax.jit(venv.reset)(jax.random.key(0))
    skip = MIDGAME_SKIP if workload == "midgame" else 0
    if skip:  # fill the boards: untimed, each side with its own game and bot
        states, ts = jax.jit(lambda s, t, k: play(s, t, k, skip * env.config.steps_per_round))(
            states, ts, jax.random.key(2)
        )
    args = (states, ts, jax.random.key(1))
    jax.block_until_ready(rollout(*args))
    board = units.board_count(states.players.species)  # [E, 8]
    board_units = float(jnp.sum(jnp.where(states.players.alive, board, 0)) / jnp.sum(states.players.alive))
    print(
        json.dumps(
            {
                "ready": round(time.perf_counter() - start, 1),
                "steps": steps,
                "start_round": skip + 1,
                "mean_board_units": round(board_units, 2),
                "jaxgame": os.path.dirname(jaxgame.__file__),
            }
        ),
        flush=True,
    )
    for line in sys.stdin:
        if line.strip() != "time":
            break
        start = time.perf_counter()
        jax.block_until_ready(rollout(*args))
        print(json.dumps({"seconds": time.perf_counter() - start}), flush=True)


def _spawn(tree: str, num_envs: int, rounds: int, workload: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([tree, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    return subprocess.Popen(
        [
            sys.executable,
            os.path.abspath(__file__),
            "--worker",
            "--num-envs",
            str(num_envs),
            "--rounds",
            str(rounds),
            "--workload",
            workload,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def _read(worker: subprocess.Popen, label: str) -> dict:
    line = worker.stdout.readline()
    if not line:
        raise RuntimeError(f"the {label} worker exited with status {worker.wait()} (its error is above)")
    return json.loads(line)


def _export(rev: str, into: str) -> str:
    """``jaxgame/`` as of git revision ``rev``, unpacked under ``into``; returns ``into``."""
    archive = os.path.join(into, "jaxgame.tar")
    try:
        subprocess.run(
            ["git", "archive", "--output", archive, rev, "jaxgame"],
            cwd=REPO_ROOT,
            check=True,
            capture_output=True,
            text=True,
        )
    except subprocess.CalledProcessError as err:
        raise SystemExit(f"--baseline {rev!r}: git archive failed: {err.stderr.strip()}") from None
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into


def compare(
    rev: str, num_envs: int, rounds: int, repeats: int, progress: bool = True, workload: str = "opening"
) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"baseline": _export(rev, tmp), "current": REPO_ROOT}
        workers = {side: _spawn(tree, num_envs, rounds, workload) for side, tree in trees.items()}
        try:
            ready = {side: _read(w, side) for side, w in workers.items()}
            if progress:
                compiled = ", ".join(f"{side} {r['ready']} s" for side, r in ready.items())
                print(
                    f"{num_envs} envs: compiled ({compiled}); timing {repeats} calls each, in turn",
                    file=sys.stderr,
                    flush=True,
                )
            best = {side: float("inf") for side in workers}
            for _ in range(repeats):
                for side, w in workers.items():
                    w.stdin.write("time\n")
                    w.stdin.flush()
                    best[side] = min(best[side], _read(w, side)["seconds"])
        finally:
            for w in workers.values():
                if w.poll() is None:
                    w.stdin.close()
                    w.wait()
    steps = ready["current"]["steps"]
    rate = {side: round(steps * num_envs * 8 / best[side], 1) for side in best}
    return {
        **rate,
        "speedup": round(rate["current"] / rate["baseline"], 2),
        "compile_s": {side: r["ready"] for side, r in ready.items()},
        "mean_board_units": {side: r["mean_board_units"] for side, r in ready.items()},
    }


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.compare_revisions",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--baseline", help="git revision whose jaxgame/ is the baseline (required)")
    parser.add_argument("--num-envs", default="64", help="comma-separated batch sizes (default 64)")
    parser.add_argument(
        "--workload",
        choices=sorted(DEFAULT_ROUNDS),
        default="opening",
        help="opening: random bots from the game start; midgame: greedy bots, timed after "
        f"{MIDGAME_SKIP} rounds (default opening)",
    )
    parser.add_argument(
        "--rounds",
        type=_positive,
        default=None,
        help="rounds per timed rollout (default: 1 for opening, 4 for midgame)",
    )
    parser.add_argument(
        "--repeats", type=_positive, default=5, help="timed calls per side, in turn; the best counts (default 5)"
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = parser.parse_args(argv)
    rounds = DEFAULT_ROUNDS[args.workload] if args.rounds is None else args.rounds
    if args.worker:
        return _worker(int(args.num_envs), rounds, args.workload)
    if not args.baseline:
        parser.error("--baseline REV is required")
    try:
        sizes = [_positive(n) for n in args.num_envs.split(",")]
    except (ValueError, argparse.ArgumentTypeError) as err:
        parser.error(f"--num-envs: comma-separated positive ints, got {args.num_envs!r} ({err})")
    current = subprocess.run(
        ["git", "describe", "--always", "--dirty"], cwd=REPO_ROOT, capture_output=True, text=True
    ).stdout.strip()
    out = {
        "what": "compare_revisions",
        "baseline": args.baseline,
        "current": current,
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "workload": args.workload,
        "rounds": rounds,
        "repeats": args.repeats,
        "seat_steps_per_s": {},
    }
    for n in sizes:
        out["seat_steps_per_s"][str(n)] = compare(args.baseline, n, rounds, args.repeats, not args.quiet, args.workload)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
