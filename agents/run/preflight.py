"""Before a run starts, and what it leaves for later runs to read: its config file, the changes a resume may make,
the checks that come before anything is compiled or written (the env, the memory, a checkpoint's config), the run
directory's claim, the run's identity and ``meta`` record, and which checkpoint is its best. Host machinery: nothing
here is compiled.

    config = load_config("runs/mine")           # the TrainConfig a run directory was started with
    check_resumable(config, new_config)         # RunError naming the fields a resume may not change
    best_checkpoint("runs/mine")                # the step its best_by ranks first (None: none was ranked)
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from pathlib import Path

import jax

from agents.config import LEGACY_LR_FLAGS, TrainConfig
from agents.envs import gymnax_env
from agents.envs.make import make_game
from agents.run import wandb_log
from agents.run.build import CHECKPOINT_DIR
from agents.storage import datasets as dataset
from agents.storage import recorded_samples
from agents.storage import run_dir as run_dir_lib
from agents.storage.checkpoints import CheckpointStore
from agents.storage.run_dir import RunError
from agents.utils import memory
from agents.utils.versions import package_versions

CONFIG_FILE = "config.json"

#: Fields a resumed run may change: they do not change shapes, the algorithm or the data seen so far.
#: ``num_devices`` too: a checkpoint holds global arrays, restored onto any number of devices (and with it
#: ``shuffle``, how the update splits its work over them); ``wandb_project`` only says where the scalars also go;
#: ``fast_compile`` only how XLA compiles.
RESUMABLE_CHANGES = frozenset(
    {
        "total_steps",
        "stop_at_update",
        "eval_every",
        "eval_games",
        "checkpoint_every",
        "keep_checkpoints",
        "updates_per_chunk",
        "num_devices",
        "shuffle",
        "fast_compile",
        "wandb_project",
    }
)


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
    if saved.optim.lr_schedule != "constant" and saved.num_updates != config.num_updates:
        raise RunError(
            f"cannot resume with total_steps={config.run.total_steps} (was {saved.run.total_steps}): with "
            f"lr_schedule={saved.optim.lr_schedule} the "
            "learning-rate schedule depends on the run's length, so the resumed run would follow neither schedule"
        )


def check_env_available(config: TrainConfig) -> None:
    """``RunError`` (one line) when the config's env cannot be made here (gymnax missing, or no such env), its
    ``wandb_project`` needs the missing wandb package or its ``bc_dataset`` is not a finished dataset."""
    if config.is_gymnax:
        try:
            gymnax_env.check_spec(config.task.env)
        except ValueError as err:
            raise RunError(str(err)) from None
    try:
        wandb_log.check_available(config.log.wandb_project)
    except RuntimeError as err:
        raise RunError(str(err)) from None
    if config.bc.bc_dataset:
        try:
            for directory in config.bc.dataset_dirs:
                dataset.open_dataset(directory)
        except dataset.DatasetError as err:
            raise RunError(f"bc_dataset {err} (record one with agents.pipeline.recording.record)") from None


def memory_needed(config: TrainConfig, program, num_devices: int = 1, runs: int = 1) -> int:
    """Bytes ``runs`` runs of ``config`` need on each of ``num_devices`` devices (``agents.utils.memory``'s estimate;
    ``program``: the run's ``agents.run.train_program.TrainProgram``, or a sweep's with its shapes and evaluator):
    the envs are split over the devices; a PPO update with the global shuffle gathers the whole rollout on
    every device, with the local one each device keeps its share."""
    if config.bc.bc_dataset:  # one device: the runner, the samples, a batch's activations
        needed = (
            memory.tree_bytes(program.run_shapes)
            + recorded_samples.num_bytes(config.bc.dataset_dirs)
            + 3 * config.bc.bc_batch_size * (sum(config.net.hidden) + program.env.num_actions + 1) * 4
        ) * runs
        sizes = {"runner": needed, "update": 0}
        num_devices = 1
    else:
        sizes = memory.train_bytes(config, program.run_shapes)
    devices = max(num_devices, 1)
    gathered = config.has_rollout and config.ppo.shuffle == "global"
    needed = (sizes["runner"] // devices + (sizes["update"] if gathered else sizes["update"] // devices)) * runs
    if program.evaluator is not None:
        needed += memory.table_bytes(make_game(config), config.log.eval_games) * runs
    return needed


def check_memory(config: TrainConfig, program, num_devices: int = 1, runs: int = 1) -> None:
    """``RunError`` with the estimate when ``runs`` runs of ``config`` cannot fit the memory of one of
    ``num_devices`` devices (``memory_needed``); nothing has been compiled or written."""
    needed = memory_needed(config, program, num_devices, runs)
    what = f"num_envs={config.run.num_envs} (num_steps={config.ppo.num_steps}, hidden={config.net.hidden})"
    try:
        memory.check_fits(f"{runs} runs of {what}" if runs > 1 else what, needed)
    except MemoryError as err:
        raise RunError(str(err)) from None


#: fields added after run directories were first written, each with the value every earlier run had: the identity
#: leaves a field out while it holds that value, so runs begun before it resume
IDENTITY_OMITTED_DEFAULTS = {"target_tau": 1.0, "n_step": 1}


def run_identity(config: TrainConfig) -> dict:
    """The config fields that fix a run (all but ``RESUMABLE_CHANGES``): its run directory's identity. The
    ``lr_schedule`` enters as the two booleans it replaced (``LEGACY_LR_FLAGS``), so a run begun before it resumes."""
    fields = {
        k: v
        for k, v in config.to_flat_dict().items()
        if k not in RESUMABLE_CHANGES and not (k in IDENTITY_OMITTED_DEFAULTS and v == IDENTITY_OMITTED_DEFAULTS[k])
    }
    schedule = fields.pop("lr_schedule")
    return {**fields, **{flag: schedule == meant for flag, meant in LEGACY_LR_FLAGS.items()}}


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
        commit = (
            subprocess.run(
                ["git", "rev-parse", "HEAD"],
                check=False,
                capture_output=True,
                text=True,
                timeout=5,
                cwd=Path(__file__).resolve().parent,
            ).stdout.strip()
            or None
        )
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {
        "preset": preset,
        "config": config.to_dict(),
        "seed": config.run.seed,
        "versions": versions,
        "devices": [str(d) for d in jax.devices()],
        "processes": jax.process_count(),
        "backend": jax.default_backend(),
        "git_commit": commit,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }


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


def best_metric(config: TrainConfig) -> tuple[str, str]:
    """(metric, "min" or "max") that ranks the checkpoints of a run of ``config`` (``TrainConfig.best_by``)."""
    if config.log.best_by == "rating":
        return "eval/rating", "max"
    if config.log.best_by == "validation":
        return "val/cross_entropy", "min"
    has_eval = not config.is_gymnax and config.log.eval_every > 0  # agents.run.build's evaluator
    return ("eval/placement_vs_greedy", "min") if has_eval else ("train/episode_return", "max")


def best_checkpoint(run_dir) -> int | None:
    """The step of a training run's best checkpoint by its ``best_metric`` (None when no step was ranked, e.g.
    a run without evaluations; then the latest is the one to use). Not checked for corruption."""
    metric, mode = best_metric(load_config(run_dir))
    return CheckpointStore(Path(run_dir) / CHECKPOINT_DIR, keep=1, best_metric=metric, best_mode=mode).best_step()


__all__ = [
    "CONFIG_FILE",
    "RESUMABLE_CHANGES",
    "RunError",
    "best_checkpoint",
    "best_metric",
    "check_checkpoint_config",
    "check_env_available",
    "check_memory",
    "check_resumable",
    "claim_run_dir",
    "load_config",
    "memory_needed",
    "run_identity",
    "run_meta",
]
