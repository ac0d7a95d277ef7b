"""Train an agent: ``python -m experiments.train --preset=NAME [--set key=value ...]``.

    python -m experiments.train --preset=smoke                     # CPU, about a minute
    python -m experiments.train --preset=ppo_small --set lr=1e-4 --run-dir runs/mine
    python -m experiments.train --run-dir runs/mine --resume       # continue where it stopped
    python -m experiments.train --env gymnax:CartPole-v1 --preset=ppo_gymnax
    python -m experiments.train --list-presets
    python -m experiments.train --preset=ppo_large --set num_devices=4   # data parallel over 4 devices (0: all)
    python -m experiments.train --preset=ppo_large --coordinator=host0:1234 --num-processes=2 --process-id=0

The run directory (default ``runs/<preset>-<timestamp>``) gets ``config.json``,
``metrics.jsonl`` (a ``{"meta": ...}`` line, then one record per chunk),
tensorboardX event files and ``checkpoints/`` (orbax). Training runs in jitted
chunks of ``updates_per_chunk`` updates; between chunks the host logs,
evaluates (every ``eval_every`` chunks) and checkpoints (every
``checkpoint_every`` chunks, and at the end). Progress goes to stderr; the
last line on stdout is a JSON summary. JAX's persistent compilation cache is
on (``--cache-dir``, default ``~/.cache/jaxgame/jax``; ``--no-cache``).

Devices and hosts (``agents.distributed``, docs/training.md): the envs are sharded over
``num_devices`` devices (0 = all). For several hosts, run the same command once per host with
``--coordinator HOST:PORT --num-processes N --process-id I`` (or ``$JAXGAME_COORDINATOR``,
``$JAXGAME_NUM_PROCESSES``, ``$JAXGAME_PROCESS_ID``; ``--distributed`` lets JAX detect a SLURM or Open
MPI job); every process trains and saves its shards of the checkpoints, only process 0 writes the logs.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import functools
import json
import math
import sys
import time
from pathlib import Path

# Nothing that imports jaxgame at module level: a multi-host run must start jax.distributed before the
# first JAX computation, and importing jaxgame computes its tables (see ``main``).


def add_host_args(parser):
    """The multi-host flags (also parsed on their own, before anything starts JAX's backend)."""
    hosts = parser.add_argument_group("multi-host (one process per host, the same command on each)")
    hosts.add_argument("--coordinator", metavar="HOST:PORT",
                       help="process 0's address and a free port ($JAXGAME_COORDINATOR)")
    hosts.add_argument("--num-processes", type=int, metavar="N", help="processes in the run ($JAXGAME_NUM_PROCESSES)")
    hosts.add_argument("--process-id", type=int, metavar="I", help="this process, 0..N-1 ($JAXGAME_PROCESS_ID)")
    hosts.add_argument("--distributed", action="store_true",
                       help="let JAX detect the cluster (SLURM, Open MPI, ...) instead of the three flags above")


def start_distributed(argv=None) -> bool:
    """``agents.distributed.initialize`` from the multi-host flags of ``argv`` (or the environment); True when
    this process is part of a multi-process run. Runs before jaxgame is imported."""
    from agents import distributed

    parser = argparse.ArgumentParser(add_help=False)
    add_host_args(parser)
    args, _ = parser.parse_known_args(argv)
    try:
        return distributed.initialize(args.coordinator, args.num_processes, args.process_id, auto=args.distributed)
    except ValueError as err:
        parser.error(str(err))


def parse_args(argv=None):
    from experiments.common import DEFAULT_CACHE, parse_overrides
    from experiments.presets import PRESETS

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", choices=sorted(PRESETS), help="named config (see --list-presets)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config field (repeatable), e.g. --set lr=1e-4")
    parser.add_argument("--env", help="env override: 'autochess' or 'gymnax:<EnvName>'")
    parser.add_argument("--run-dir", help="run directory (default runs/<preset>-<timestamp>)")
    parser.add_argument("--resume", action="store_true", help="continue the run in --run-dir from its latest checkpoint")
    parser.add_argument("--list-presets", action="store_true", help="print the presets and exit")
    parser.add_argument("--cache-dir", default=DEFAULT_CACHE, help=f"JAX compilation cache (default {DEFAULT_CACHE})")
    parser.add_argument("--no-cache", action="store_true", help="do not use the persistent compilation cache")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    add_host_args(parser)
    args = parser.parse_args(argv)
    if not args.list_presets and not args.resume and not args.preset:
        parser.error("give --preset NAME (or --resume with --run-dir, or --list-presets)")
    if args.resume and not args.run_dir:
        parser.error("--resume needs --run-dir")
    return parser, args, parse_overrides(parser, args.set, args.env)


def build_config(parser, args, overrides):
    """The run's TrainConfig; a bad override is a parser error (nothing is trained)."""
    from agents.config import TrainConfig
    from experiments.presets import preset_config

    try:
        if args.resume:
            saved = TrainConfig.from_dict(json.loads((Path(args.run_dir) / "config.json").read_text()))
            config = saved.with_overrides(overrides)
            check_resumable(saved, config)
            return config
        return preset_config(args.preset).with_overrides(overrides)
    except FileNotFoundError as err:
        parser.error(f"--resume: {err.filename} not found (is {args.run_dir!r} a run directory?)")
    except ValueError as err:
        parser.error(str(err))


#: Fields a resumed run may change: they do not change shapes, the algorithm or the data seen so far.
#: ``num_devices`` too: a checkpoint holds global arrays, restored onto any number of devices.
RESUMABLE_CHANGES = frozenset(
    {"total_steps", "eval_every", "eval_games", "checkpoint_every", "keep_checkpoints", "updates_per_chunk",
     "num_devices"}
)


def check_resumable(saved, config):
    differing = sorted(
        k for k, v in config.to_dict().items() if v != saved.to_dict()[k] and k not in RESUMABLE_CHANGES
    )
    if differing:
        raise ValueError(
            f"cannot resume with changed field(s) {differing}: they change shapes, the algorithm or the run; "
            f"only {sorted(RESUMABLE_CHANGES)} may change"
        )


def run_meta(config, preset):
    import importlib.metadata
    import subprocess

    import jax

    versions = {}
    for package in ("jax", "jaxlib", "flax", "optax", "orbax-checkpoint", "jaxgame"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], check=False, capture_output=True, text=True, timeout=5,
            cwd=Path(__file__).resolve().parent,
        ).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {
        "preset": preset,
        "config": config.to_dict(),
        "seed": config.seed,
        "versions": versions,
        "devices": [str(d) for d in jax.devices()],
        "processes": jax.process_count(),
        "backend": jax.default_backend(),
        "git_commit": commit,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }


class MetricsLog:
    """``metrics.jsonl`` + tensorboardX, with the same names."""

    def __init__(self, run_dir: Path, meta: dict | None, keep_until_update: int | None):
        from tensorboardX import SummaryWriter

        self.path = run_dir / "metrics.jsonl"
        if keep_until_update is not None and self.path.exists():  # resume: drop records after the checkpoint
            kept = []
            for line in self.path.read_text().splitlines():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by a kill
                if "meta" in record or record.get("update", math.inf) <= keep_until_update:
                    kept.append(line)
            self.path.write_text("".join(f"{line}\n" for line in kept))
        elif meta is not None:
            self.path.write_text(json.dumps({"meta": meta}) + "\n")
        self.writer = SummaryWriter(str(run_dir / "tb"))

    def write(self, record: dict):
        clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in record.items()}
        with self.path.open("a") as f:
            f.write(json.dumps(clean) + "\n")
        step = record["env_steps"]
        for name, value in record.items():
            if "/" in name and isinstance(value, (int, float)) and math.isfinite(value):
                self.writer.add_scalar(name, value, step)
        self.writer.flush()

    def close(self):
        self.writer.close()


def main(argv=None):
    start_distributed(argv)
    from experiments.common import enable_compilation_cache

    parser, args, overrides = parse_args(argv)
    if args.list_presets:
        from experiments.presets import describe

        print(describe())
        return None
    config = build_config(parser, args, overrides)
    try:
        from agents import distributed

        distributed.make_mesh(config.num_devices, config.num_envs)  # more devices than there are: a usage error
    except ValueError as err:
        parser.error(str(err))
    quiet = args.quiet
    run_dir = Path(args.run_dir or f"runs/{args.preset}-{time.strftime('%Y%m%d-%H%M%S')}")
    if not args.resume and (run_dir / "metrics.jsonl").exists():
        parser.error(f"{run_dir} already holds a run; use --resume to continue it or choose another --run-dir")
    cache = enable_compilation_cache(None if args.no_cache else args.cache_dir)
    return train(config, run_dir, resume=args.resume, preset=args.preset, quiet=quiet, cache_dir=cache)


def fresh_arrays(tree):
    """``tree`` with every leaf copied into a new, uncommitted array (typed keys stay typed).

    Restored (committed) arrays make jit lower a program with explicit shardings, which misses the
    compilation cache; fresh arrays give exactly the program of a new run."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    def fresh(x):
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            data = jnp.asarray(np.asarray(jax.random.key_data(x)))
            return jax.random.wrap_key_data(data, impl=jax.random.key_impl(x))
        return jnp.asarray(np.asarray(x))

    return jax.tree_util.tree_map(fresh, tree)


@functools.lru_cache(maxsize=4)
def build(config):
    """(env, trainer, evaluator or None) of a config; cached, so that runs of the same config in one
    process (a resume after a crash, notebooks, tests) reuse the jitted functions instead of retracing."""
    from agents import trainers
    from agents.envs import make_env, make_game
    from agents.evaluation import make_evaluator, make_rating_evaluator

    env = make_env(config)
    trainer = trainers.make_train(config, env)
    evaluator = None
    if not config.is_gymnax and config.eval_every > 0:
        evaluator = make_evaluator(make_game(config), trainer.network, config.eval_games)
        if config.league_size:
            evaluator.rate = make_rating_evaluator(make_game(config), trainer.network, config.eval_games,
                                                   config.league_size)
    return env, trainer, evaluator


def train(config, run_dir, resume=False, preset=None, quiet=False, cache_dir=None):
    """Run (or continue) a training run in ``run_dir``; returns the JSON summary dict.

    In a multi-process run every process calls this (the same arguments); only process 0 writes
    ``config.json``, ``metrics.jsonl``, tensorboard and stderr/stdout; all save the checkpoints."""
    import jax
    import numpy as np
    from tqdm import tqdm

    from agents import distributed, trainers
    from agents.evaluation import placement_summary
    from agents.league import with_ratings
    from experiments.checkpoints import CheckpointStore
    from experiments.common import status

    start_wall = time.perf_counter()
    main_process = distributed.is_main_process()
    quiet = quiet or not main_process
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    distributed.barrier("start")  # every process has looked at run_dir before process 0 writes to it
    num_devices = len(distributed.resolve_devices(config.num_devices))
    status(f"run dir {run_dir}; building {config.algo} on {config.env} with {config.num_envs} envs "
           f"({num_devices} {jax.default_backend()} device(s)"
           + (f" in {jax.process_count()} processes)" if jax.process_count() > 1 else ")"), not quiet)
    env, trainer, evaluator = build(config)
    best, mode = ("eval/placement_vs_greedy", "min") if evaluator else ("train/episode_return", "max")
    if config.best_by == "rating":
        best, mode = "eval/rating", "max"
    store = CheckpointStore(run_dir / "checkpoints", keep=config.keep_checkpoints, best_metric=best, best_mode=mode)
    master = jax.random.key(config.seed)
    eval_key = jax.random.fold_in(master, 3)

    compile_start = time.perf_counter()
    init = jax.jit(trainer.init)
    if resume:
        abstract = jax.eval_shape(init, master)
        shardings = trainer.shardings(abstract)
        if shardings is not None:  # read each device's share straight into place (any device count saved it)
            abstract = jax.tree_util.tree_map(
                lambda a, s: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s), abstract, shardings
            )
        step, runner, saved = store.restore(abstract)
        runner = fresh_arrays(runner) if trainer.mesh is None else trainer.place(runner)
        wall_before = float(saved.get("wall_s", 0.0))
        status(f"resuming from update {step}", not quiet)
    else:
        if main_process:
            (run_dir / "config.json").write_text(json.dumps(config.to_dict(), indent=2) + "\n")
        runner = init(master)
        wall_before = 0.0
    done_updates = int(runner.update)
    if main_process:
        log = MetricsLog(run_dir, None if resume else run_meta(config, preset), done_updates if resume else None)
    else:
        log = _NoLog()

    def eval_params(params):
        """The evaluation runs on one device: replicated parameters are fetched to the host first."""
        return params if trainer.mesh is None else jax.device_get(params)

    chunk = config.updates_per_chunk
    status(f"compiling the training chunk ({chunk} updates)"
           + (" and the evaluation" if evaluator else "") + " ...", not quiet)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:  # XLA compiles one program per core
        run_future = pool.submit(lambda: trainer.run.lower(runner, chunk).compile())
        eval_future = evaluator and pool.submit(
            lambda: evaluator.run.lower(eval_params(runner.params), eval_key, np.int32(0)).compile()
        )
        compiled_run = run_future.result()
        compiled_eval = eval_future.result() if evaluator else None
    compile_s = time.perf_counter() - compile_start
    status(f"compiled in {compile_s:.1f} s", not quiet)

    def evaluate(runner, update):
        """``(runner, metrics)``: a league's runner comes back with its snapshots' new ratings."""
        key = jax.random.fold_in(eval_key, update)
        params = eval_params(runner.params)
        out = {}
        for index, name in enumerate(("random", "greedy")):
            ranks = np.asarray(compiled_eval(params, key, np.int32(index)))
            out[f"eval/placement_vs_{name}"] = placement_summary(ranks)["mean_placement"]
            if config.independent:  # rotation r puts the policy in seat r: seat r's own learner
                out.update({f"eval/seat_{r}/placement_vs_{name}": float(m) for r, m in enumerate(ranks.mean(0))})
        if config.league_size:  # the learner rated against its pool and the bots (fresh ratings each time)
            table = evaluator.rate(params, eval_params(runner.league), jax.random.fold_in(key, 1), [config.seed, update])
            rows = {row["name"]: row for row in table}
            out["eval/rating"] = rows["learner"]["ordinal"]
            out.update({f"eval/rating_{bot}": rows[bot]["ordinal"] for bot in ("random", "greedy") if bot in rows})
            runner = runner.replace(league=with_ratings(runner.league, {n: r["ordinal"] for n, r in rows.items()}))
        return runner, out

    def save(update, metrics):
        store.save(update, runner, {"config": config.to_dict(), "wall_s": wall_before + train_s}, metrics)

    steps_per_update = config.steps_per_update
    total = config.num_updates
    bar = tqdm(total=total, initial=done_updates, unit="upd", disable=quiet, file=sys.stderr, dynamic_ncols=True)
    train_s, record, trained_updates = 0.0, {}, 0
    last_eval = {}
    while done_updates < total:
        n = min(chunk, total - done_updates)
        run = compiled_run if n == chunk else trainer.run.lower(runner, n).compile()  # a last, shorter chunk
        distributed.barrier("chunk")  # the chunk's collectives start together (no-op for one process)
        t0 = time.perf_counter()
        runner, metrics = run(runner)
        metrics = trainers.summarize(jax.device_get(metrics))
        elapsed = time.perf_counter() - t0
        train_s += elapsed
        done_updates = int(runner.update)
        trained_updates += n
        chunks_done = -(-done_updates // chunk)  # counted from the run's start, so a resume keeps the schedule
        record = {
            "update": done_updates,
            "env_steps": done_updates * steps_per_update,
            "seat_steps": done_updates * steps_per_update * env.num_players,
            "wall_s": round(wall_before + train_s, 3),
            "sps": n * steps_per_update / elapsed,
            **metrics,
            "perf/sps": n * steps_per_update / elapsed,
            "perf/seat_sps": n * steps_per_update * env.num_players / elapsed,
        }
        finished = done_updates >= total
        if evaluator and (chunks_done % config.eval_every == 0 or finished):
            runner, last_eval = evaluate(runner, done_updates)
            record.update(last_eval)
        log.write(record)
        if finished or (config.checkpoint_every and chunks_done % config.checkpoint_every == 0):
            save(done_updates, {k: v for k, v in record.items() if isinstance(v, float) and math.isfinite(v)})
        bar.update(n)
        bar.set_postfix_str(progress_text(record, last_eval, bool(trainer.learner.all()) and not config.league_size))
    bar.close()
    if done_updates and not record:  # resumed a finished run
        runner, last_eval = evaluate(runner, done_updates) if evaluator else (runner, {})
    log.close()
    store.close()
    summary = {
        "run_dir": str(run_dir),
        "preset": preset,
        "updates": done_updates,
        "env_steps": done_updates * steps_per_update,
        "seat_steps": done_updates * steps_per_update * env.num_players,
        "wall_s": round(time.perf_counter() - start_wall, 2),
        "compile_s": round(compile_s, 2),
        "train_s": round(train_s, 2),
        "sps": round(trained_updates * steps_per_update / train_s, 1) if train_s else None,
        "final_eval": last_eval,
        "episode_return": _finite_or_none(record.get("train/episode_return")),  # None: no episode finished
        "cache_dir": cache_dir,
        "devices": num_devices,
        "processes": jax.process_count(),
    }
    if main_process:
        print(json.dumps(summary))
    return summary


class _NoLog:
    """``MetricsLog`` of the processes other than 0 in a multi-process run: writes nothing."""

    def write(self, record: dict):
        pass

    def close(self):
        pass


def _finite_or_none(value):
    return value if isinstance(value, (int, float)) and math.isfinite(value) else None


def progress_text(record, last_eval, self_play):
    """The progress bar's postfix: throughput, training placement (not under pure self-play,
    where it is 4.5 by symmetry), return, the latest evaluation and two losses."""
    parts = [f"{record['perf/seat_sps']:.0f} seat-steps/s"]
    if not self_play and math.isfinite(record.get("train/placement", math.nan)):
        parts.append(f"place {record['train/placement']:.2f}")
    if math.isfinite(record.get("train/episode_return", math.nan)):
        parts.append(f"ret {record['train/episode_return']:.2f}")
    for name in ("random", "greedy"):
        if f"eval/placement_vs_{name}" in last_eval:
            parts.append(f"vs {name} {last_eval[f'eval/placement_vs_{name}']:.2f}")
    if "eval/rating" in last_eval:
        parts.append(f"rating {last_eval['eval/rating']:.1f}")
    parts.append(f"entropy {record['loss/entropy']:.2f} | value loss {record['loss/value']:.3f}")
    return " | ".join(parts)


if __name__ == "__main__":
    main()
