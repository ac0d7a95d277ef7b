"""A training run as a library: build it from a config, drive its compiled chunks, log, evaluate, checkpoint, resume.

    from agents.run.training import train
    summary = train(preset_config("smoke"), "runs/mine")                  # a new run; returns the JSON summary
    summary = train(load_config("runs/mine"), "runs/mine", resume=True)   # continue it from its last checkpoint
    summary = train(config, "runs/nb", progress=ConsoleProgress())         # with progress on stderr

``train`` is what ``python -m experiments.train`` runs; ``agents.run.sweep_loop.run_sweep`` drives a vmapped sweep
with the same chunk driver (``agents.run.chunks``). A run directory holds ``config.json``, ``metrics.jsonl``
(``agents.storage.metrics``: a ``{"meta": ...}`` line, then one record per chunk), tensorboardX event files under
``tb/`` and ``checkpoints/`` (``agents.storage.checkpoints``). Training runs in jitted chunks of
``updates_per_chunk`` updates; between chunks the host logs, evaluates (every ``eval_every`` chunks) and checkpoints
(every ``checkpoint_every`` chunks, and at the end).

The library prints nothing: progress goes to a ``Progress`` callback (``agents.utils.progress``), problems raise
``RunError`` (a ``ValueError`` with a one-line message) or the error of the layer below.

Devices and hosts (``agents.utils.distributed``): in a multi-process run every process calls ``train`` with the same
arguments; only process 0 writes ``config.json``, ``metrics.jsonl``, tensorboard and reports progress; every
process saves its shards of the checkpoints.
"""

from __future__ import annotations

import time
from pathlib import Path

import jax

from agents.config import TrainConfig
from agents.run import wandb_log
from agents.run.chunks import LoopResult, compile_and_loop, start_run
from agents.run.preflight import CONFIG_FILE, check_env_available, check_memory, claim_run_dir, run_identity, run_meta
from agents.run.signals import stop_signals
from agents.run.train_program import TrainProgram
from agents.storage import run_dir as run_dir_lib
from agents.storage.metrics import MetricsLog, NullLog, finite_or_none
from agents.utils import compile_cache, distributed
from agents.utils.progress import NoProgress, Progress


def train(
    config: TrainConfig,
    run_dir,
    resume: bool = False,
    preset: str | None = None,
    progress: Progress | None = None,
    stop_on_signals: bool = False,
) -> dict:
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
    num_devices = len(distributed.resolve_devices(config.run.num_devices))
    program = TrainProgram(config)
    check_memory(config, program, num_devices)
    program.chunk_inputs()  # a dataset that does not fit the run fails here, before the run directory is claimed
    if not resume:
        program.start_params()  # and so does a policy init_from cannot start from
    with (
        stop_signals(stop_on_signals, progress) as stop,
        claim_run_dir(run_dir, "train", run_identity(config), CONFIG_FILE, resume, take=main_process),
    ):
        distributed.barrier("start")  # process 0 has checked (or created) run_dir before the others look at it
        progress.status(
            f"run dir {run_dir}; building {config.run.algo} on {config.task.env} with {config.run.num_envs} envs "
            f"({num_devices} {jax.default_backend()} device(s)"
            + (f" in {jax.process_count()} processes)" if jax.process_count() > 1 else ")")
        )
        started = start_run(program, run_dir, resume, progress, program.best_metric)
        done = program.updates_done(started.runner)
        if main_process:
            run_dir_lib.write_json(run_dir / CONFIG_FILE, config.to_dict())  # a resume's new total_steps etc.
            log = MetricsLog(
                run_dir,
                None if started.restored else run_meta(config, preset),
                done if started.restored else None,
                wandb_log.sinks(config, run_dir),
            )
        else:
            log = NullLog()
        result, compile_s = compile_and_loop(
            program,
            started,
            [log],
            progress,
            "the training chunk",
            stop,
            before_chunk=lambda: distributed.barrier("chunk"),
        )
        evaluation = result.evaluation[0]
        if result.updates and not result.records and program.has_eval and not result.stopped:  # resumed, finished
            _, (evaluation,) = program.evaluate(result.runner, result.updates)
    return _train_summary(program, result, evaluation, run_dir, preset, num_devices, start_wall, compile_s)


def _train_summary(
    program: TrainProgram,
    result: LoopResult,
    evaluation: dict,
    run_dir: Path,
    preset: str | None,
    num_devices: int,
    start_wall: float,
    compile_s: float,
) -> dict:
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
        "loop_sps": (
            round(result.trained_updates * steps_per_update / result.loop_s, 1)
            if result.trained_updates and result.loop_s
            else None
        ),
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


__all__ = ["train"]
