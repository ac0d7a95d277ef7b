"""The chunk driver every training run and sweep shares: a ``ChunkProgram`` (a compiled chunk of updates and the
host work between chunks) driven by ``ChunkLoop`` from its first runner (``start_run``: a new one or a checkpoint's)
to its last update, logging, evaluating and checkpointing between chunks (``compile_and_loop``). Host machinery: the
compiled programs come from the program; this module only calls them.

``agents.run.train_program.TrainProgram`` (one run) and ``agents.run.sweep_loop.SweepProgram`` (a vmapped sweep, one
log per run) are the two programs; ``agents.run.training.train`` and ``agents.run.sweep_loop.run_sweep`` the entry
points.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import time
from pathlib import Path

import jax
import numpy as np

from agents.config import TrainConfig
from agents.run.build import CHECKPOINT_DIR
from agents.run.preflight import check_checkpoint_config
from agents.run.signals import StopSignals
from agents.storage import run_dir as run_dir_lib
from agents.storage.checkpoints import CheckpointStore
from agents.utils import health
from agents.utils.progress import Progress
from jaxgame.xla_flags import fast_compile_options


def compile_together(*lowerings, compiler_options: dict | None = None):
    """Compile ``lowerings`` (zero-argument callables returning a ``Lowered``, or None) in parallel threads, with
    XLA's ``compiler_options`` (None: its defaults): XLA compiles one program per core. Returns the compiled
    programs (None where None was given)."""
    with concurrent.futures.ThreadPoolExecutor(max(1, len(lowerings))) as pool:
        futures = [
            pool.submit(lambda f=f: f().compile(compiler_options=compiler_options)) if f else None for f in lowerings
        ]
        return [f.result() if f else None for f in futures]


class ChunkProgram:
    """What ``ChunkLoop`` drives: a compiled chunk of updates and the host work between chunks.

    A subclass sets ``config``, ``trainer`` (one run's) and ``num_players``, says how its chunk, its ``run_upto``
    and its evaluation are lowered (``lower_chunk``, ``lower_upto``, ``lower_eval``) and implements the host
    methods below; this class compiles them (``compile_all``, ``compile``). ``TrainProgram`` (one run) and
    ``agents.run.sweep_loop.SweepProgram`` (a vmapped sweep, one log per run) are the two.
    """

    config: TrainConfig
    trainer: object
    num_players: int = 1
    has_eval: bool = False
    #: the axis of a chunk's metrics that counts its updates: 0 for one run's [U], 1 for a sweep's [R, U]
    metrics_update_axis: int = 0
    #: the compiled ``run_upto`` when the chunk is it (``compile_all``), else None
    compiled_upto = None
    #: the compiled evaluation (``compile_all``), else None
    compiled_eval = None

    @functools.cached_property
    def compiler_options(self) -> dict | None:
        """The XLA options the run's programs compile with: ``run.fast_compile``'s on a CPU (less those the process's
        XLA_FLAGS name), else None (XLA's defaults and XLA_FLAGS)."""
        if not self.config.run.fast_compile or jax.default_backend() != "cpu":
            return None
        return fast_compile_options() or None

    @functools.cached_property
    def run_shapes(self):
        """The abstract runner of one run (``ShapeDtypeStruct`` leaves): traced once, for the memory estimate
        and the restore target."""
        return jax.eval_shape(jax.jit(self.trainer.init), jax.random.key(self.config.run.seed))

    def updates_done(self, runner) -> int:
        raise NotImplementedError

    def step_check(self, step: int, runner) -> str | None:
        """Why a runner restored from checkpoint ``step`` is not that step's (None: it is): its update counter must
        be ``step`` (``CheckpointStore.restore``'s ``check``: a step that fails it is damaged, the fallback)."""
        done = self.updates_done(runner)
        return None if done == step else f"its runner's update counter is {done}"

    # --- the compiled programs: how the subclass lowers them, then compiled here --------------------------------

    def chunk_args(self) -> tuple:
        """The chunk's arguments after the runner (a dataset run's samples); () by default."""
        return ()

    def lower_chunk(self, runner, num_updates: int):
        """The ``Lowered`` chunk of exactly ``num_updates`` updates: ``(runner, *chunk_args) -> (runner, metrics)``."""
        raise NotImplementedError

    def lower_upto(self, runner, num_updates: int):
        """The ``Lowered`` ``run_upto`` of at most ``num_updates`` updates: ``(runner, count int32, *chunk_args) ->
        (runner, metrics)``, its metrics ``num_updates`` long on ``metrics_update_axis``."""
        raise NotImplementedError

    def lower_eval(self, runner):
        """A zero-argument callable returning the ``Lowered`` evaluation of ``runner``'s parameters, or None."""
        return None

    def compile_all(self, runner):
        """The chunk and the evaluation, compiled in parallel (``compiled_eval``); returns the chunk, ``(runner) ->
        (runner, metrics)``. When the updates left are no multiple of ``updates_per_chunk`` and the trainer runs
        a count given at run time (``runs_upto``), the chunk is ``run_upto``'s program, which runs the last,
        shorter chunk too (no second program); otherwise ``run``'s."""
        chunk = self.config.run.updates_per_chunk
        self.chunk_args()  # read on this thread, once, before the compiles
        shorter = (self.config.last_update - self.updates_done(runner)) % chunk != 0
        if shorter and self.trainer.facts.runs_upto:
            self.compiled_upto, self.compiled_eval = compile_together(
                lambda: self.lower_upto(runner, chunk), self.lower_eval(runner), compiler_options=self.compiler_options
            )
            return self._upto(chunk)
        compiled_run, self.compiled_eval = compile_together(
            lambda: self.lower_chunk(runner, chunk), self.lower_eval(runner), compiler_options=self.compiler_options
        )
        return self._with_args(compiled_run)

    def compile(self, runner, num_updates: int):
        """``(runner) -> (runner, metrics)`` for ``num_updates`` updates: ``run_upto``'s program when the chunk is
        it (nothing to compile), else a chunk compiled for that count."""
        if self.compiled_upto is not None:
            return self._upto(num_updates)
        return self._with_args(self.lower_chunk(runner, num_updates).compile(compiler_options=self.compiler_options))

    def shorter_chunk_compiles(self) -> bool:
        """Whether ``compile`` of a count other than ``updates_per_chunk`` compiles a program (the loop then says so
        and counts it as compiling); False where the chunk's program runs any count."""
        return self.compiled_upto is None

    def _with_args(self, compiled):
        args = self.chunk_args()
        return (lambda runner: compiled(runner, *args)) if args else compiled

    def _upto(self, num_updates: int):
        """``runner -> (runner, metrics)``: ``num_updates`` updates by the compiled ``run_upto``, metrics cut to
        them on ``metrics_update_axis``."""
        args, compiled = self.chunk_args(), self.compiled_upto
        cut = (slice(None),) * self.metrics_update_axis + (slice(0, num_updates),)

        def run(runner):
            runner, metrics = compiled(runner, np.int32(num_updates), *args)
            return runner, jax.tree_util.tree_map(lambda m: m[cut], metrics)

        return run

    # --- the host work between chunks ------------------------------------------------------------------------------

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

    def __init__(
        self,
        program: ChunkProgram,
        store: CheckpointStore | None,
        logs,
        progress: Progress,
        wall_before: float = 0.0,
        before_chunk=None,
    ):
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
        chunk, total = config.run.updates_per_chunk, config.last_update
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
                    self.progress.status(
                        f"compiling the last chunk ({n} updates; a multiple of updates_per_chunk "
                        f"= {chunk} in total updates needs none) ..."
                    )
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
        args = (
            result.updates,
            result.runner,
            self.program.checkpoint_payload(self.wall_before + result.train_s),
            self.program.checkpoint_metrics(result.records),
        )
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
        chunks_done = -(-done // config.run.updates_per_chunk)  # from the run's start: a resume keeps the schedule
        finished = done >= config.last_update or program.finished_early(runner)
        steps = done * config.steps_per_update
        base = {
            "update": done,
            "env_steps": steps,
            "seat_steps": steps * program.num_players,
            "wall_s": round(self.wall_before + result.train_s, 3),
        }
        result.records = program.records(base, metrics, n, elapsed)
        if program.has_eval and (chunks_done % config.log.eval_every == 0 or finished):
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
            finished or (config.log.checkpoint_every and chunks_done % config.log.checkpoint_every == 0)
        )
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


@dataclasses.dataclass
class Started:
    """A run directory claimed (or checked for a resume) and its program's runner ready (``start_run``)."""

    store: CheckpointStore
    runner: object
    wall_before: float  # training seconds of the checkpoint resumed (0 for a new run)
    restored: bool  # a checkpoint was restored
    compile_start: float  # ``time.perf_counter()`` before the runner was built (compiling counts from here)


def start_run(program: ChunkProgram, run_dir: Path, resume: bool, progress: Progress, best=(None, "min")) -> Started:
    """The checkpoint store of ``run_dir`` (ranking by ``best``: ``(metric, "min"/"max")``) and the program's first
    runner: the newest good checkpoint with ``resume`` (its config checked against the program's), else a new one."""
    config = program.config
    metric, mode = best
    # its run_id names the run in every step's digest, checked on restore; a directory adopted from an older version
    # (its run.json written now) has no identity its steps could name
    owner = run_dir_lib.read_owner(run_dir) or {}
    store = CheckpointStore(
        run_dir / CHECKPOINT_DIR,
        keep=config.log.keep_checkpoints,
        best_metric=metric,
        best_mode=mode,
        identity=None if owner.get("adopted") else owner.get("run_id"),
    )
    if resume:
        check_checkpoint_config(store, config)
    compile_start = time.perf_counter()
    runner, wall_before, restored = restore_or_init(program, store, resume, progress)
    return Started(store, runner, wall_before, restored, compile_start)


def compile_and_loop(
    program: ChunkProgram,
    started: Started,
    logs: list,
    progress: Progress,
    what: str,
    stop: StopSignals | None,
    before_chunk=None,
) -> tuple[LoopResult, float]:
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
        progress.status(
            f"compiling {what} ({program.config.run.updates_per_chunk} updates)"
            + (" and the evaluation" if program.has_eval else "")
            + " ..."
        )
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


__all__ = [
    "ChunkLoop",
    "ChunkProgram",
    "LoopResult",
    "Started",
    "compile_and_loop",
    "compile_together",
    "restore_or_init",
    "start_run",
]
