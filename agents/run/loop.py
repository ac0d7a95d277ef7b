"""A training run as a library: build it from a config, drive its compiled chunks, log, evaluate, checkpoint, resume.

    from agents.run.loop import train
    summary = train(preset_config("smoke"), "runs/mine")                  # a new run; returns the JSON summary
    summary = train(load_config("runs/mine"), "runs/mine", resume=True)   # continue it from its last checkpoint
    summary = train(config, "runs/nb", progress=ConsoleProgress())         # with progress on stderr

``train`` is what ``python -m experiments.train`` runs; ``agents.run.sweep_loop.run_sweep`` drives a vmapped sweep
with the same loop (``ChunkLoop``). A run directory holds ``config.json``, ``metrics.jsonl``
(``agents.storage.metrics``:
a ``{"meta": ...}`` line, then one record per chunk), tensorboardX event files under ``tb/`` and ``checkpoints/``
(``agents.storage.checkpoints``). Training runs in jitted chunks of ``updates_per_chunk`` updates; between chunks the
host
logs, evaluates (every ``eval_every`` chunks) and checkpoints (every ``checkpoint_every`` chunks, and at the end).

The library prints nothing: progress goes to a ``Progress`` callback (``agents.utils.progress``), problems raise
``RunError`` (a ``ValueError`` with a one-line message) or the error of the layer below.

Devices and hosts (``agents.utils.distributed``): in a multi-process run every process calls ``train`` with the same
arguments; only process 0 writes ``config.json``, ``metrics.jsonl``, tensorboard and reports progress; every
process saves its shards of the checkpoints.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import functools
import json
import math
import signal
import subprocess
import threading
import time
from pathlib import Path

import jax
import numpy as np
from jax.experimental import multihost_utils

from agents.algorithms import registry as trainers
from agents.arena import ladder
from agents.arena.evaluation import EVAL_STREAM, OPPONENTS, placement_summary
from agents.config import TrainConfig
from agents.envs import gymnax_env
from agents.envs.make import make_game
from agents.league import pool as league_lib
from agents.league.pool import with_ratings
from agents.policies import frozen as phases
from agents.policies.load import RunPolicy
from agents.run import wandb_log
from agents.run.build import CHECKPOINT_DIR, Built, build, fresh_arrays
from agents.storage import datasets as dataset
from agents.storage import run_dir as run_dir_lib
from agents.storage.checkpoints import CheckpointStore
from agents.storage.metrics import MetricsLog, NullLog, finite_or_none
from agents.storage.run_dir import RunError
from agents.utils import compile_cache, distributed, health, memory
from agents.utils.progress import NoProgress, Progress
from agents.utils.versions import package_versions

CONFIG_FILE = "config.json"

#: Fields a resumed run may change: they do not change shapes, the algorithm or the data seen so far.
#: ``num_devices`` too: a checkpoint holds global arrays, restored onto any number of devices (and with it
#: ``shuffle``, how the update splits its work over them); ``wandb_project`` only says where the scalars also go.
RESUMABLE_CHANGES = frozenset(
    {"total_steps", "stop_at_update", "eval_every", "eval_games", "checkpoint_every", "keep_checkpoints",
     "updates_per_chunk", "num_devices", "shuffle", "wandb_project"}
)


# ---------------------------------------------------------------- configs and directories


def load_config(run_dir) -> TrainConfig:
    """The ``TrainConfig`` saved in ``run_dir/config.json``; ``RunError`` when there is none or it is unreadable.

    Example::

        config = agents.load_config("runs/nb")     # then agents.train(config, "runs/nb", resume=True)
    """
    path = Path(run_dir) / CONFIG_FILE
    try:
        return TrainConfig.from_dict(json.loads(path.read_text()))
    except FileNotFoundError:
        raise RunError(f"{path} not found (is {str(run_dir)!r} a run directory?)") from None
    except (json.JSONDecodeError, TypeError) as err:
        raise RunError(f"{path} is not a readable config ({err})") from None


def check_resumable(saved: TrainConfig, config: TrainConfig) -> None:
    """``RunError`` naming the fields when ``config`` changes more than ``RESUMABLE_CHANGES`` of ``saved``."""
    old, new = saved.to_flat_dict(), config.to_flat_dict()
    differing = sorted(k for k, v in new.items() if v != old[k] and k not in RESUMABLE_CHANGES)
    if differing:
        raise RunError(
            f"cannot resume with changed field(s) {differing}: they change shapes, the algorithm or the run; "
            f"only {sorted(RESUMABLE_CHANGES)} may change"
        )
    if (saved.anneal_lr or saved.cosine_lr) and saved.num_updates != config.num_updates:
        raise RunError(
            f"cannot resume with total_steps={config.total_steps} (was {saved.total_steps}): with "
            f"{'anneal_lr' if saved.anneal_lr else 'cosine_lr'} the "
            "learning-rate schedule depends on the run's length, so the resumed run would follow neither schedule"
        )


def check_env_available(config: TrainConfig) -> None:
    """``RunError`` (one line) when the config's env cannot be made here (gymnax missing, or no such env), its
    ``wandb_project`` needs the missing wandb package or its ``bc_dataset`` is not a finished dataset."""
    if config.is_gymnax:
        try:
            gymnax_env.check_spec(config.env)
        except ValueError as err:
            raise RunError(str(err)) from None
    try:
        wandb_log.check_available(config.wandb_project)
    except RuntimeError as err:
        raise RunError(str(err)) from None
    if config.bc_dataset:
        try:
            for directory in config.bc.dataset_dirs:
                dataset.open_dataset(directory)
        except dataset.DatasetError as err:
            raise RunError(f"bc_dataset {err} (record one with agents.pipeline.recording.record)") from None


def memory_needed(config: TrainConfig, program: TrainProgram, num_devices: int = 1, runs: int = 1) -> int:
    """Bytes ``runs`` runs of ``config`` need on each of ``num_devices`` devices (``agents.utils.memory``'s estimate):
    the envs are split over the devices; a PPO update with the global shuffle gathers the whole rollout on
    every device, with the local one each device keeps its share."""
    if config.bc_dataset:  # one device: the runner, the samples, a batch's activations
        needed = (memory.tree_bytes(program.run_shapes) + program.trainer.data_bytes()
                  + 3 * config.bc_batch_size * (sum(config.hidden) + program.env.num_actions + 1) * 4) * runs
        sizes = {"runner": needed, "update": 0}
        num_devices = 1
    else:
        sizes = memory.train_bytes(config, program.run_shapes)
    devices = max(num_devices, 1)
    gathered = config.has_rollout and config.shuffle == "global"
    needed = (sizes["runner"] // devices + (sizes["update"] if gathered else sizes["update"] // devices)) * runs
    if program.evaluator is not None:
        needed += memory.table_bytes(make_game(config), config.eval_games) * runs
    return needed


def check_memory(config: TrainConfig, program: TrainProgram, num_devices: int = 1, runs: int = 1) -> None:
    """``RunError`` with the estimate when ``runs`` runs of ``config`` cannot fit the memory of one of
    ``num_devices`` devices (``memory_needed``); nothing has been compiled or written."""
    needed = memory_needed(config, program, num_devices, runs)
    what = f"num_envs={config.num_envs} (num_steps={config.num_steps}, hidden={config.hidden})"
    try:
        memory.check_fits(f"{runs} runs of {what}" if runs > 1 else what, needed)
    except MemoryError as err:
        raise RunError(str(err)) from None


def run_identity(config: TrainConfig) -> dict:
    """The config fields that fix a run (all but ``RESUMABLE_CHANGES``): its run directory's identity."""
    return {k: v for k, v in config.to_flat_dict().items() if k not in RESUMABLE_CHANGES}


def check_checkpoint_config(store: CheckpointStore, config: TrainConfig) -> None:
    """``RunError`` naming the fields when the newest readable checkpoint was saved with another config than
    ``config`` in a field a resume may not change (for example a ``config.json`` edited by hand)."""
    try:
        saved = TrainConfig.from_dict(store.read_config()["config"])
    except (FileNotFoundError, RuntimeError, KeyError):
        return  # no checkpoint (a resume from update 0), or none readable (restore says so)
    try:
        check_resumable(saved, config)
    except RunError as err:
        raise RunError(f"{store.directory.parent}/{CONFIG_FILE} and its checkpoints disagree: {err}") from None


def run_meta(config: TrainConfig, preset: str | None) -> dict:
    """The ``{"meta": ...}`` record of a new run: config, seed, package versions, devices, git commit, start time."""
    versions = package_versions("jax", "jaxlib", "flax", "optax", "orbax-checkpoint", "jaxgame")
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


# ---------------------------------------------------------------- the chunk loop


def compile_together(*lowerings):
    """Compile ``lowerings`` (zero-argument callables returning a ``Lowered``, or None) in parallel threads:
    XLA compiles one program per core. Returns the compiled programs (None where None was given)."""
    with concurrent.futures.ThreadPoolExecutor(max(1, len(lowerings))) as pool:
        futures = [pool.submit(lambda f=f: f().compile()) if f else None for f in lowerings]
        return [f.result() if f else None for f in futures]


class ChunkProgram:
    """What ``ChunkLoop`` drives: a compiled chunk of updates and the host work between chunks.

    A subclass sets ``config``, ``trainer`` (one run's) and ``num_players`` and implements the methods below;
    ``TrainProgram`` (one run) and ``agents.run.sweep_loop.SweepProgram`` (a vmapped sweep, one log per run) are the
    two.
    """

    config: TrainConfig
    trainer: object
    num_players: int = 1
    has_eval: bool = False

    @functools.cached_property
    def run_shapes(self):
        """The abstract runner of one run (``ShapeDtypeStruct`` leaves): traced once, for the memory estimate
        and the restore target."""
        return jax.eval_shape(jax.jit(self.trainer.init), jax.random.key(self.config.seed))

    def updates_done(self, runner) -> int:
        raise NotImplementedError

    def step_check(self, step: int, runner) -> str | None:
        """Why a runner restored from checkpoint ``step`` is not that step's (None: it is): its update counter must
        be ``step`` (``CheckpointStore.restore``'s ``check``: a step that fails it is damaged, the fallback)."""
        done = self.updates_done(runner)
        return None if done == step else f"its runner's update counter is {done}"

    def compile(self, runner, num_updates: int):
        """``(runner) -> (runner, metrics)``, compiled for ``num_updates`` updates."""
        raise NotImplementedError

    def shorter_chunk_compiles(self) -> bool:
        """Whether ``compile`` of a count other than ``updates_per_chunk`` compiles a program (the loop then says so
        and counts it as compiling); False where the chunk's program runs any count."""
        return True

    def records(self, base: dict, metrics, num_updates: int, seconds: float) -> list[dict]:
        """One record per log from the chunk's fetched metrics; ``base`` holds update/env_steps/seat_steps/wall_s."""
        raise NotImplementedError

    def evaluate(self, runner, update: int):
        """``(runner, [evaluation metrics per log])``."""
        raise NotImplementedError

    def checkpoint_payload(self, wall_s: float) -> dict:
        """The JSON saved beside the runner in each checkpoint."""
        return {"config": self.config.to_dict(), "wall_s": wall_s}

    def checkpoint_metrics(self, records: list[dict]) -> dict | None:
        return None

    def finished_early(self, runner) -> bool:
        """Whether the run is done before ``config.num_updates`` (a dataset run's early stopping)."""
        return False

    def progress_text(self, records: list[dict], evaluation: list[dict]) -> str:
        return ""


@dataclasses.dataclass
class LoopResult:
    """Where a ``ChunkLoop`` stands (and, at the end, what it did)."""

    runner: object
    updates: int
    trained_updates: int
    train_s: float  # the chunks: each one's run and the fetch and check of its metrics
    records: list  # the last chunk's records, one per log ([] when no chunk ran)
    evaluation: list  # the latest evaluation, one dict per log
    stopped: str | None = None  # the signal that stopped the run early ("SIGTERM", "SIGINT"), else None
    early_stopped: bool = False  # the program ended the run before its last update (``finished_early``)
    loop_s: float = 0.0  # the whole loop: the chunks and the host work between them (logs, evaluations, saves);
    # a last, shorter chunk's compile aside (``last_chunk_compile_s``)
    # the loop's own thread's time outside the chunks: checkpoints (its saves, and its waits for the background
    # ones; a background save's work beside a chunk shows in ``train_s`` instead), evaluations, log records
    checkpoint_s: float = 0.0
    eval_s: float = 0.0
    log_s: float = 0.0
    #: compiling the last chunk when it is shorter than ``updates_per_chunk`` (a program of its own; counted in
    #: the run's ``compile_s``, outside ``train_s``)
    last_chunk_compile_s: float = 0.0


class StopSignals:
    """While active (a ``with`` block, in the main thread), Ctrl-C (SIGINT) and SIGTERM ask a run to stop: the
    chunk loop saves a checkpoint at the next chunk boundary and returns. The first signal puts back the
    default action, so a second one ends the process at once. In a multi-process run every process stops at
    the same chunk (``requested`` agrees over the processes; a signal to any of them stops all)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, progress: Progress | None = None):
        self.progress = progress or NoProgress()
        self.received: str | None = None
        self._previous: dict = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            self._previous = {s: signal.signal(s, self._handle) for s in self.SIGNALS}
        return self

    def __exit__(self, *exc) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous = {}

    def _handle(self, signum, frame) -> None:
        self.received = signal.Signals(signum).name
        for s in self.SIGNALS:
            signal.signal(s, signal.SIG_DFL)
        self.progress.status(f"{self.received}: saving a checkpoint at the next chunk boundary, then stopping "
                             "(a second signal stops at once, without saving)")

    def requested(self) -> str | None:
        """The signal that asked to stop (here or, in a multi-process run, in any process), or None."""
        if jax.process_count() == 1:
            return self.received
        code = self.SIGNALS.index(signal.Signals[self.received]) + 1 if self.received else 0
        codes = np.asarray(multihost_utils.process_allgather(np.int32(code)))
        return signal.Signals(self.SIGNALS[int(codes.max()) - 1]).name if codes.max() else None


class ChunkLoop:
    """Runs ``program`` chunk by chunk from ``runner`` to ``config.last_update`` updates (``num_updates``, or
    ``stop_at_update``).

    After each chunk: one record per log (``logs``, ``MetricsLog``-like), an evaluation every ``eval_every``
    chunks and after the last, a checkpoint in ``store`` every ``checkpoint_every`` chunks and after the last.
    The chunk count is taken from the run's start, so a resumed run keeps the schedule. ``before_chunk`` runs
    before each chunk (a multi-process barrier). A chunk whose parameters or metrics are not finite raises
    ``agents.utils.health.NonFiniteError`` before anything of it is logged or saved.

    A checkpoint in the middle of a run is written by a background thread while the next chunk trains (in a
    one-process run): the chunk does not consume its input, so the saved runner stays valid. At most one save
    is in flight; the next save, the end of the loop, a stop and an error each wait for it first, so the last
    good checkpoint is complete on disk whenever the loop returns or raises. The last save and a stop's are
    written before the loop returns. A failed background save raises its error at the next of those waits.
    """

    def __init__(self, program: ChunkProgram, store: CheckpointStore | None, logs, progress: Progress,
                 wall_before: float = 0.0, before_chunk=None):
        self.program = program
        self.store = store
        self.logs = logs
        self.progress = progress
        self.wall_before = wall_before
        self.before_chunk = before_chunk or (lambda: None)
        self._saver: concurrent.futures.ThreadPoolExecutor | None = None  # while ``run`` runs
        self._saving: concurrent.futures.Future | None = None

    def run(self, runner, compiled_chunk, stop: StopSignals | None = None) -> LoopResult:
        """Chunks until the run is done, or until ``stop`` says a signal asked it to stop: then it checkpoints
        the chunk it just finished (if not saved already) and returns with ``result.stopped`` set."""
        config = self.program.config
        chunk, total = config.updates_per_chunk, config.last_update
        done = self.program.updates_done(runner)
        self.progress.start(total, done)
        result = LoopResult(runner, done, 0, 0.0, [], [{} for _ in self.logs])
        # orbax synchronises the processes of a multi-process save: those stay in the loop's own thread
        if self.store is not None and jax.process_count() == 1:
            self._saver = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="checkpoint")
        start = time.perf_counter()
        result.stopped = stop.requested() if stop is not None else None  # a signal before the first chunk
        try:
            while not result.stopped and result.updates < total and not self.program.finished_early(result.runner):
                n = min(chunk, total - result.updates)
                if n == chunk:
                    run = compiled_chunk
                elif not self.program.shorter_chunk_compiles():  # the chunk's program runs n updates too
                    run = self.program.compile(result.runner, n)
                else:  # a last, shorter chunk: a program of its own, its compile counted as compiling
                    self.progress.status(f"compiling the last chunk ({n} updates; a multiple of updates_per_chunk "
                                         f"= {chunk} in total updates needs none) ...")
                    compiling = time.perf_counter()
                    run = self.program.compile(result.runner, n)
                    result.last_chunk_compile_s += time.perf_counter() - compiling
                saved = self._chunk(result, run, n)
                result.stopped = stop.requested() if stop is not None else None
                if result.stopped:
                    if not saved and self.store is not None:
                        self._save(result)
                    break
        except BaseException:
            self._wait_for_save(raise_error=False)  # the error in flight is the one to report
            raise
        else:
            waited = time.perf_counter()
            self._wait_for_save()
            result.checkpoint_s += time.perf_counter() - waited
        finally:
            if self._saver is not None:
                self._saver.shutdown()
                self._saver = None
            self.progress.close()
        result.loop_s = time.perf_counter() - start - result.last_chunk_compile_s
        result.early_stopped = result.updates < total and self.program.finished_early(result.runner)
        return result

    def _wait_for_save(self, raise_error: bool = True) -> None:
        """Wait for the background save in flight (if any); its error is raised here with ``raise_error``."""
        saving, self._saving = self._saving, None
        if saving is not None:
            error = saving.exception()
            if error is not None and raise_error:
                raise error

    def _save(self, result: LoopResult, background: bool = False) -> None:
        """Checkpoint ``result``'s runner; with ``background`` (and a one-process run) in the saver thread."""
        start = time.perf_counter()
        for log in self.logs:
            log.sync()  # the records a checkpoint follows are on disk before it
        self._wait_for_save()
        args = (result.updates, result.runner, self.program.checkpoint_payload(self.wall_before + result.train_s),
                self.program.checkpoint_metrics(result.records))
        try:
            if background and self._saver is not None:
                self._saving = self._saver.submit(self.store.save, *args)
            else:
                self.store.save(*args)
        finally:
            result.checkpoint_s += time.perf_counter() - start

    def _chunk(self, result: LoopResult, run, n: int) -> bool:
        """One chunk of ``n`` updates, then its records, evaluation, logs and checkpoint; updates ``result``.
        Returns whether it saved a checkpoint."""
        program, config = self.program, self.program.config
        self.before_chunk()
        t0 = time.perf_counter()
        runner, metrics = run(result.runner)
        metrics = health.check_chunk(jax.device_get(metrics), result.updates)  # raises before anything is kept
        elapsed = time.perf_counter() - t0
        result.train_s += elapsed
        result.trained_updates += n
        done = result.updates = program.updates_done(runner)
        chunks_done = -(-done // config.updates_per_chunk)  # from the run's start: a resume keeps the schedule
        finished = done >= config.last_update or program.finished_early(runner)
        steps = done * config.steps_per_update
        base = {"update": done, "env_steps": steps, "seat_steps": steps * program.num_players,
                "wall_s": round(self.wall_before + result.train_s, 3)}
        result.records = program.records(base, metrics, n, elapsed)
        if program.has_eval and (chunks_done % config.eval_every == 0 or finished):
            evaluating = time.perf_counter()
            runner, result.evaluation = program.evaluate(runner, done)
            result.eval_s += time.perf_counter() - evaluating
            for record, values in zip(result.records, result.evaluation):
                record.update(values)
        writing = time.perf_counter()
        for log, record in zip(self.logs, result.records):
            log.write(record)
        result.log_s += time.perf_counter() - writing
        result.runner = runner
        save = self.store is not None and (
            finished or (config.checkpoint_every and chunks_done % config.checkpoint_every == 0))
        if save:
            self._save(result, background=not finished)
        self.progress.chunk(n, program.progress_text(result.records, result.evaluation))
        return bool(save)


def restore_or_init(program, store: CheckpointStore, resume: bool, progress: Progress):
    """``(runner, training seconds before, restored)``: with ``resume``, the newest good checkpoint of
    ``store``; a new runner without ``resume`` or when the run stopped before its first checkpoint (it then
    starts again from update 0, ``restored`` False)."""
    if resume and store.steps():
        step, runner, saved = program.restore(store)
        progress.status(f"resuming from update {step}")
        return runner, float(saved.get("wall_s", 0.0)), True
    if resume:
        progress.status("no checkpoint yet: starting again from update 0")
    return program.init(), 0.0, False


def best_metric(config: TrainConfig) -> tuple[str, str]:
    """(metric, "min" or "max") that ranks the checkpoints of a run of ``config`` (``TrainConfig.best_by``)."""
    if config.best_by == "rating":
        return "eval/rating", "max"
    if config.best_by == "validation":
        return "val/cross_entropy", "min"
    has_eval = not config.is_gymnax and config.eval_every > 0  # agents.run.build's evaluator
    return ("eval/placement_vs_greedy", "min") if has_eval else ("train/episode_return", "max")


def best_checkpoint(run_dir) -> int | None:
    """The step of a training run's best checkpoint by its ``best_metric`` (None when no step was ranked, e.g.
    a run without evaluations; then the latest is the one to use). Not checked for corruption."""
    metric, mode = best_metric(load_config(run_dir))
    return CheckpointStore(Path(run_dir) / CHECKPOINT_DIR, keep=1, best_metric=metric, best_mode=mode).best_step()


# ---------------------------------------------------------------- one training run


class TrainProgram(ChunkProgram):
    """One run of ``config`` (``build(config)``) as a ``ChunkProgram``: one log, the bot evaluation, and for a
    league the ratings of its snapshots."""

    #: the compiled ``run_upto`` when the chunk is it (``compile_all``), else None
    compiled_upto = None

    def __init__(self, config: TrainConfig):
        self.config = config
        built = build(config)
        self.env, self.trainer, self.evaluator, self.rater = built.env, built.trainer, built.evaluator, built.rater
        self.num_players = self.trainer.players_per_step
        self.inputs = None  # the chunk's data (``trainer.chunk_inputs()``), read when first compiled
        self.initial_params = None  # config.init_from's parameters (``start_params``), loaded once
        self.has_eval = self.evaluator is not None
        self.eval_key = jax.random.fold_in(jax.random.key(config.seed), EVAL_STREAM)
        self.compiled_eval = None
        # the progress line's training placement is 4.5 by symmetry under pure self-play
        self.self_play = bool(self.trainer.learner.all()) and not config.league_size

    @property
    def best_metric(self) -> tuple[str, str]:
        """(metric, "min" or "max") that ranks the run's checkpoints (``best_metric``)."""
        return best_metric(self.config)

    def start_params(self):
        """The parameters ``config.init_from`` names, on this run's shapes (``agents.policies.frozen``), loaded once;
        None
        without ``init_from``. A policy that cannot start the run is a ``RunError``."""
        if self.config.init_from and self.initial_params is None:
            try:
                self.initial_params = phases.start_params(self.config, self.run_shapes.params)
            except phases.PhaseError as err:
                raise RunError(str(err)) from None
        return self.initial_params

    def init(self):
        runner = jax.jit(self.trainer.init)(jax.random.key(self.config.seed))
        params = self.start_params()
        if params is None:
            return runner
        # only the parameters carry over: Adam's moments are zeros of the same shapes either way
        runner = runner.replace(params=params)
        if self.config.league_size:  # the pool's first snapshot is the policy the run starts from
            runner = runner.replace(league=league_lib.pool_init(params, self.config.league_size, self.config.num_envs))
        return self.trainer.place(runner)  # the new parameters are uncommitted host-made arrays, like a new run's

    def restore(self, store: CheckpointStore):
        """``(step, runner, saved payload)`` of the newest good checkpoint, placed for this run's devices."""
        abstract = self.run_shapes
        shardings = self.trainer.shardings(abstract)
        if shardings is not None:  # read each device's share straight into place (any device count saved it)
            abstract = jax.tree_util.tree_map(
                lambda a, s: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s), abstract, shardings
            )
        step, runner, saved = store.restore(abstract, check=self.step_check)
        self.chunk_inputs()  # reads a dataset's digest, a distillation's frozen policies (once)
        for name, value in self.trainer.input_identity().items():
            if name in saved and saved[name] != value:
                raise RunError(f"this run's inputs are not those its checkpoints trained on ({name}: "
                               f"{saved[name]} then, {value} now; a dataset's digest covers its shards' sha256s): "
                               "a resume would not continue the same run")
        runner = fresh_arrays(runner) if self.trainer.mesh is None else self.trainer.place(runner)
        return step, runner, saved

    def updates_done(self, runner) -> int:
        return int(runner.update)

    def finished_early(self, runner) -> bool:
        return self.trainer.finished_early(runner)

    def chunk_inputs(self) -> tuple:
        """The chunk's arguments after the runner (a dataset run's samples), read once; a dataset that does not
        fit the run is a ``RunError``."""
        if self.inputs is None:
            try:
                self.inputs = phases.trainer_inputs(self.trainer, self.config, self.run_shapes.params)
            except (dataset.DatasetError, phases.PhaseError) as err:
                raise RunError(str(err)) from None
        return self.inputs

    def _with_inputs(self, compiled):
        inputs = self.chunk_inputs()
        return (lambda runner: compiled(runner, *inputs)) if inputs else compiled

    def _eval_params(self, params):
        """The evaluation runs on one device: replicated parameters are fetched to the host first."""
        return params if self.trainer.mesh is None else jax.device_get(params)

    def compile(self, runner, num_updates: int):
        if self.compiled_upto is not None:  # the chunk's program runs any count: nothing to compile
            return self._upto(num_updates)
        return self._with_inputs(self.trainer.run.lower(runner, num_updates, *self.chunk_inputs()).compile())

    def shorter_chunk_compiles(self) -> bool:
        return self.compiled_upto is None

    def _upto(self, num_updates: int):
        """``runner -> (runner, metrics)``: ``num_updates`` updates by the compiled ``run_upto``, metrics cut to
        them."""
        inputs, compiled = self.chunk_inputs(), self.compiled_upto

        def run(runner):
            runner, metrics = compiled(runner, np.int32(num_updates), *inputs)
            return runner, jax.tree_util.tree_map(lambda m: m[:num_updates], metrics)

        return run

    def compile_all(self, runner):
        """The chunk and the evaluation, compiled in parallel; returns the chunk. When the updates left are no
        multiple of ``updates_per_chunk`` the chunk is ``run_upto``'s program, which runs the last, shorter chunk
        too (no second program); otherwise ``run``'s."""
        chunk = self.config.updates_per_chunk
        eval_lowering = self.evaluator and (
            lambda: self.evaluator.run.lower(self._eval_params(runner.params), self.eval_key, np.int32(0))
        )
        inputs = self.chunk_inputs()
        shorter = (self.config.last_update - self.updates_done(runner)) % chunk != 0
        if shorter and self.trainer.runs_upto:
            compiled, self.compiled_eval = compile_together(
                lambda: self.trainer.run_upto.lower(runner, chunk, np.int32(chunk), *inputs), eval_lowering)
            self.compiled_upto = compiled
            return self._upto(chunk)
        compiled_run, self.compiled_eval = compile_together(lambda: self.trainer.run.lower(runner, chunk, *inputs),
                                                            eval_lowering)
        return self._with_inputs(compiled_run)

    def records(self, base, metrics, num_updates, seconds):
        sps = num_updates * self.config.steps_per_update / seconds
        return [{
            **base,
            "sps": sps,
            **trainers.summarize(metrics),
            "perf/sps": sps,
            "perf/seat_sps": sps * self.num_players,
        }]

    def evaluate(self, runner, update):
        """Placements vs each bot (and for a league, ratings); a league's runner comes back with its snapshots'
        new ratings."""
        config = self.config
        key = jax.random.fold_in(self.eval_key, update)
        params = self._eval_params(runner.params)
        out = {}
        for index, name in enumerate(OPPONENTS):
            ranks = np.asarray(self.compiled_eval(params, key, np.int32(index)))
            summary = placement_summary(ranks)
            out[f"eval/placement_vs_{name}"] = summary["mean_placement"]
            out[f"eval/placement_vs_{name}_ci95"] = summary["ci95"]  # half-width over game seeds (None: 1 seed)
            if config.independent:  # rotation r puts the policy in seat r: seat r's own learner
                out.update({f"eval/seat_{r}/placement_vs_{name}": float(m) for r, m in enumerate(ranks.mean(0))})
        if config.league_size:  # the learner rated against its pool and the bots (fresh ratings each time)
            table = self.rater(params, self._eval_params(runner.league), jax.random.fold_in(key, 1),
                                        [config.seed, update])
            rows = {row["name"]: row for row in table}
            out["eval/rating"] = rows["learner"]["ordinal"]
            out.update({f"eval/rating_{bot}": rows[bot]["ordinal"] for bot in OPPONENTS if bot in rows})
            runner = runner.replace(league=with_ratings(runner.league, {n: r["ordinal"] for n, r in rows.items()}))
        if config.eval_ladder:
            out.update(self._ladder_rating(params, update))
        return runner, [out]

    def _ladder_rating(self, params, update: int) -> dict:
        """``eval/ladder_points``, ``eval/ladder_low`` and ``eval/ladder_high`` of the policy at ``update``
        (``agents.arena.ladder.rate_on_ladder`` on ``eval_ladder`` game seeds, the ladder's default seed)."""
        policy = RunPolicy(f"learner:{update}", "", update, dataclasses.replace(self.config, num_devices=1),
                           self.trainer.network, fresh_arrays(params))
        rated = ladder.rate_on_ladder(policy, games=self.config.eval_ladder)
        low, high = rated["ci95"]
        return {"eval/ladder_points": rated["rating"], "eval/ladder_low": low, "eval/ladder_high": high}

    def checkpoint_metrics(self, records):
        return {k: v for k, v in records[0].items() if isinstance(v, float) and math.isfinite(v)}

    def checkpoint_payload(self, wall_s: float) -> dict:
        return {**super().checkpoint_payload(wall_s), **self.trainer.input_identity()}

    def progress_text(self, records, evaluation):
        """Throughput, training placement (not under pure self-play), return, the latest evaluation, two losses."""
        record, last_eval = records[0], evaluation[0]
        parts = [f"{record['perf/seat_sps']:.0f} {self.trainer.sample_unit}/s"]
        if not self.self_play and math.isfinite(record.get("train/placement", math.nan)):
            parts.append(f"place {record['train/placement']:.2f}")
        if math.isfinite(record.get("train/episode_return", math.nan)):
            parts.append(f"ret {record['train/episode_return']:.2f}")
        for name in OPPONENTS:
            if f"eval/placement_vs_{name}" in last_eval:
                parts.append(f"vs {name} {last_eval[f'eval/placement_vs_{name}']:.2f}")
        if "eval/rating" in last_eval:
            parts.append(f"rating {last_eval['eval/rating']:.1f}")
        return " | ".join(parts + self.trainer.progress(record))


# ---------------------------------------------------------------- the set-up train and sweeps share


@dataclasses.dataclass
class Started:
    """A run directory claimed (or checked for a resume) and its program's runner ready (``start_run``)."""

    store: CheckpointStore
    runner: object
    wall_before: float  # training seconds of the checkpoint resumed (0 for a new run)
    restored: bool  # a checkpoint was restored
    compile_start: float  # ``time.perf_counter()`` before the runner was built (compiling counts from here)


@contextlib.contextmanager
def claim_run_dir(run_dir: Path, kind: str, identity: dict, owner_file: str, resume: bool, take: bool = True):
    """A new run claims ``run_dir`` (it must be new or empty); a resume needs a run of ``kind`` and ``identity``
    there (``agents.storage.run_dir``; ``RunError`` otherwise). Either way this process holds the directory's lock
    (another process is refused) until the ``with`` block ends, also by an exception. ``take=False``: nothing
    (the processes of a multi-process run other than process 0)."""
    if not take:
        yield
        return
    if resume:
        run_dir_lib.check_owner(run_dir, kind, identity, owner_file)
    else:
        run_dir_lib.claim(run_dir, kind, identity)
    try:
        yield
    finally:
        run_dir_lib.release(run_dir)


def start_run(program: ChunkProgram, run_dir: Path, resume: bool, progress: Progress, best=(None, "min")) -> Started:
    """The checkpoint store of ``run_dir`` (ranking by ``best``: ``(metric, "min"/"max")``) and the program's first
    runner: the newest good checkpoint with ``resume`` (its config checked against the program's), else a new one."""
    config = program.config
    metric, mode = best
    # its run_id names the run in every step's digest, checked on restore; a directory adopted from an older version
    # (its run.json written now) has no identity its steps could name
    owner = run_dir_lib.read_owner(run_dir) or {}
    store = CheckpointStore(run_dir / CHECKPOINT_DIR, keep=config.keep_checkpoints, best_metric=metric,
                            best_mode=mode, identity=None if owner.get("adopted") else owner.get("run_id"))
    if resume:
        check_checkpoint_config(store, config)
    compile_start = time.perf_counter()
    runner, wall_before, restored = restore_or_init(program, store, resume, progress)
    return Started(store, runner, wall_before, restored, compile_start)


def stop_signals(stop_on_signals: bool, progress: Progress):
    """``StopSignals(progress)`` with ``stop_on_signals``, else a context that gives None. A run enters it before
    it builds anything: a signal while the run is built (its first runner compiled and made, a checkpoint
    restored) is then a stop before the first chunk, never an exception inside a compile."""
    return StopSignals(progress) if stop_on_signals else contextlib.nullcontext()


def compile_and_loop(program: ChunkProgram, started: Started, logs: list, progress: Progress, what: str,
                     stop: StopSignals | None, before_chunk=None) -> tuple[LoopResult, float]:
    """Compile ``program``'s chunk (and evaluation), then drive the chunk loop to the end (or to a stop signal,
    with ``stop``, ``stop_signals``'s: a signal before the compile stops the run without compiling, one during
    the compile before its first chunk, one during a chunk, an evaluation or a save at the chunk's end); closes
    ``logs`` and the store. Returns ``(result, compile seconds)``."""
    try:
        stopped = stop.requested() if stop is not None else None
        if stopped:  # asked while the run was built: nothing to compile for
            done = program.updates_done(started.runner)
            result = LoopResult(started.runner, done, 0, 0.0, [], [{} for _ in logs], stopped=stopped)
            return result, time.perf_counter() - started.compile_start
        progress.status(f"compiling {what} ({program.config.updates_per_chunk} updates)"
                        + (" and the evaluation" if program.has_eval else "") + " ...")
        compiled_chunk = program.compile_all(started.runner)
        compile_s = time.perf_counter() - started.compile_start
        progress.status(f"compiled in {compile_s:.1f} s")
        loop = ChunkLoop(program, started.store, logs, progress, started.wall_before, before_chunk=before_chunk)
        result = loop.run(started.runner, compiled_chunk, stop)
        compile_s += result.last_chunk_compile_s
    finally:
        for log in logs:
            log.close()
        started.store.close()
    return result, compile_s


def train(config: TrainConfig, run_dir, resume: bool = False, preset: str | None = None,
          progress: Progress | None = None, stop_on_signals: bool = False) -> dict:
    """Run (or with ``resume``, continue) a training run of ``config`` in ``run_dir``; returns the JSON summary.

    A new run claims ``run_dir`` (``agents.storage.run_dir``: it must be new or empty; ``RunError`` otherwise),
    and the run holds its lock until it ends (a second process on ``run_dir`` is refused in one line);
    ``resume`` needs a training run directory of the same run, restores its newest good checkpoint
    (``agents.storage.checkpoints``: a damaged one falls back to an older one with a warning; none yet: update 0) and
    drops the metrics records past it, so the run ends with the numbers of an uninterrupted one. A chunk that
    is not finite raises ``agents.utils.health.NonFiniteError`` before it is logged or saved. ``progress``: a
    ``agents.utils.progress.Progress`` (``ConsoleProgress()`` for stderr); None reports nothing.
    ``stop_on_signals``: Ctrl-C and SIGTERM save a checkpoint at the next chunk boundary and end the run early
    (``StopSignals``; the summary's ``"stopped"`` names the signal), as the CLI does.

    Example::

        summary = agents.train(agents.preset("smoke"), "runs/nb", progress=ConsoleProgress())
        summary = agents.train(agents.load_config("runs/nb"), "runs/nb", resume=True)   # continue it
        summary["final_eval"]["eval/placement_vs_greedy"]                                # 1 (best) .. 8
    """
    start_wall = time.perf_counter()
    compile_cache.use_default_cache()  # the next run of the same program loads it (agents.utils.compile_cache)
    run_dir = Path(run_dir)
    main_process = distributed.is_main_process()
    progress = progress if (progress is not None and main_process) else NoProgress()
    check_env_available(config)  # before the run directory is created: nothing is left behind
    num_devices = len(distributed.resolve_devices(config.num_devices))
    program = TrainProgram(config)
    check_memory(config, program, num_devices)
    program.chunk_inputs()  # a dataset that does not fit the run fails here, before the run directory is claimed
    if not resume:
        program.start_params()  # and so does a policy init_from cannot start from
    with stop_signals(stop_on_signals, progress) as stop, \
            claim_run_dir(run_dir, "train", run_identity(config), CONFIG_FILE, resume, take=main_process):
        distributed.barrier("start")  # process 0 has checked (or created) run_dir before the others look at it
        progress.status(f"run dir {run_dir}; building {config.algo} on {config.env} with {config.num_envs} envs "
                        f"({num_devices} {jax.default_backend()} device(s)"
                        + (f" in {jax.process_count()} processes)" if jax.process_count() > 1 else ")"))
        started = start_run(program, run_dir, resume, progress, program.best_metric)
        done = program.updates_done(started.runner)
        if main_process:
            run_dir_lib.write_json(run_dir / CONFIG_FILE, config.to_dict())  # a resume's new total_steps etc.
            log = MetricsLog(run_dir, None if started.restored else run_meta(config, preset),
                             done if started.restored else None, wandb_log.sinks(config, run_dir))
        else:
            log = NullLog()
        result, compile_s = compile_and_loop(program, started, [log], progress, "the training chunk",
                                             stop, before_chunk=lambda: distributed.barrier("chunk"))
        evaluation = result.evaluation[0]
        if result.updates and not result.records and program.has_eval and not result.stopped:  # resumed, finished
            _, (evaluation,) = program.evaluate(result.runner, result.updates)
    return _train_summary(program, result, evaluation, run_dir, preset, num_devices, start_wall, compile_s)


def _train_summary(program: TrainProgram, result: LoopResult, evaluation: dict, run_dir: Path, preset: str | None,
                  num_devices: int, start_wall: float, compile_s: float) -> dict:
    """``train``'s JSON summary of a finished (or stopped) run."""
    config = program.config
    record = result.records[0] if result.records else {}
    steps_per_update = config.steps_per_update
    return {
        "run_dir": str(run_dir),
        "preset": preset,
        "updates": result.updates,
        "env_steps": result.updates * steps_per_update,
        "seat_steps": result.updates * steps_per_update * program.num_players,
        "wall_s": round(time.perf_counter() - start_wall, 2),
        "compile_s": round(compile_s, 2),
        "train_s": round(result.train_s, 3),  # ms: a tiny run's chunks can take less than 5 ms in all
        "loop_s": round(result.loop_s, 3),
        "sps": round(result.trained_updates * steps_per_update / result.train_s, 1) if result.train_s else None,
        # what a user waits for: the chunks and the logs, evaluations and checkpoints between them
        "loop_sps": (round(result.trained_updates * steps_per_update / result.loop_s, 1)
                     if result.trained_updates and result.loop_s else None),
        # where the loop's time beside the chunks went (the rest: records, progress)
        "checkpoint_s": round(result.checkpoint_s, 3),
        "eval_s": round(result.eval_s, 3),
        "log_s": round(result.log_s, 3),
        "final_eval": evaluation,
        "episode_return": finite_or_none(record.get("train/episode_return")),  # None: no episode finished
        "devices": num_devices,
        "processes": jax.process_count(),
        "stopped": result.stopped,
        "early_stopped": result.early_stopped,
    }


__all__ = [
    "RESUMABLE_CHANGES", "Built", "ChunkLoop", "ChunkProgram", "LoopResult", "RunError", "Started", "StopSignals",
    "TrainProgram", "claim_run_dir", "compile_and_loop", "start_run", "stop_signals",
    "best_checkpoint", "best_metric", "build", "check_checkpoint_config", "check_env_available", "check_memory",
    "check_resumable", "compile_together", "fresh_arrays", "load_config", "restore_or_init", "run_identity",
    "run_meta", "train",
]
