"""A run's metrics file: ``metrics.jsonl`` written chunk by chunk (with tensorboardX beside it), and read back.

``metrics.jsonl`` holds a first line ``{"meta": {...}}`` (config, seed, versions: ``agents.run.preflight.run_meta``),
then one JSON record per training chunk (``update``, ``env_steps``, ``seat_steps``, ``wall_s``, ``train/...``,
``loss/...``, ``perf/...`` and, on evaluation chunks only, ``eval/...``). Non-finite floats are written as
``null``. ``MetricsLog`` writes it (and the same scalars to tensorboardX under ``tb/`` and, with
``TrainConfig.wandb_project``, to Weights & Biases: ``agents.run.wandb_log``); ``load_metrics`` reads it.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import warnings
from pathlib import Path

from tensorboardX import SummaryWriter

from agents.storage.run_dir import atomic_write_text

METRICS_FILE = "metrics.jsonl"


def scalars(record: dict) -> dict[str, float]:
    """The scalars of a record that go to tensorboard and W&B: the finite numbers named ``group/name``."""
    return {
        name: value
        for name, value in record.items()
        if "/" in name and isinstance(value, (int, float)) and math.isfinite(value)
    }


class TensorboardSink:
    """tensorboardX event files under ``run_dir/tb``, written anew at every start (each step shown once)."""

    replays_kept = True  # a resumed run's kept records are written again into the new files

    def __init__(self, run_dir: Path):
        shutil.rmtree(run_dir / "tb", ignore_errors=True)
        self.writer = SummaryWriter(str(run_dir / "tb"))

    def add(self, step: int, values: dict[str, float]) -> None:
        for name, value in values.items():
            self.writer.add_scalar(name, value, step)

    def flush(self) -> None:
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class MetricsLog:
    """``metrics.jsonl`` in ``run_dir``, and the same scalars to tensorboardX and the ``extra_sinks``.

    ``meta``: a new run's meta record (the file is started with it). ``keep_until_update``: a resumed run's
    update: the records after it (written after the checkpoint it resumes from) are dropped, the rest kept; a line
    cut by a kill among the kept ones is dropped with one ``RuntimeWarning`` (``metrics.jsonl: dropped a cut record
    after update N``): that update's record is missing for good.
    ``extra_sinks``: more scalar sinks (``agents.run.wandb_log.WandbSink``): ``add(step, {name: value})``,
    ``flush()``, ``close()`` and ``replays_kept`` (whether a resume sends them the kept records again).
    Every sink gets the scalars of every record (``scalars``) at step ``env_steps``.
    """

    def __init__(self, run_dir: Path, meta: dict | None, keep_until_update: int | None, extra_sinks=()):
        run_dir = Path(run_dir)
        self.path = run_dir / METRICS_FILE
        kept = []
        if keep_until_update is not None and self.path.exists():
            lines, last = [], 0
            for line in self.path.read_text(errors="replace").splitlines():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:  # a line cut by a kill: a record lost for good if the run kept it
                    if line.strip() and last < keep_until_update:
                        warnings.warn(
                            f"{METRICS_FILE}: dropped a cut record after update {last}", RuntimeWarning, stacklevel=2
                        )
                    continue
                if not isinstance(record, dict):
                    continue
                if isinstance(record.get("update"), int):
                    last = record["update"]
                if "meta" in record or record.get("update", math.inf) <= keep_until_update:
                    lines.append(line)
                    kept.append(record)
            atomic_write_text(self.path, "".join(f"{line}\n" for line in lines))
        elif meta is not None:
            atomic_write_text(self.path, json.dumps({"meta": meta}) + "\n")
        self.sinks = [TensorboardSink(run_dir), *extra_sinks]
        for sink in self.sinks:
            if sink.replays_kept:
                for record in kept:
                    if "meta" not in record:
                        sink.add(record["env_steps"], scalars(record))
            sink.flush()

    def write(self, record: dict) -> None:
        """Append one record (flushed to the OS at once) and its scalars to the sinks."""
        clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in record.items()}
        with self.path.open("a") as f:
            f.write(json.dumps(clean) + "\n")
        for sink in self.sinks:
            sink.add(record["env_steps"], scalars(record))
            sink.flush()

    def sync(self) -> None:
        """Force the records written so far onto the disk (before a checkpoint that they describe)."""
        with self.path.open("a") as f:
            os.fsync(f.fileno())

    def close(self) -> None:
        for sink in self.sinks:
            sink.close()


class NullLog:
    """A ``MetricsLog`` that writes nothing (the processes other than 0 of a multi-process run)."""

    def write(self, record: dict) -> None:
        pass

    def sync(self) -> None:
        pass

    def close(self) -> None:
        pass


def metrics_path(run_dir: str) -> str:
    """The ``metrics.jsonl`` of ``run_dir`` (or ``run_dir`` itself when it is a ``.jsonl`` file)."""
    if os.path.isfile(run_dir) and run_dir.endswith(".jsonl"):
        return run_dir
    return os.path.join(run_dir, METRICS_FILE)


def run_label(run_dir: str) -> str:
    """The run directory's name (``runs/ppo_s0/`` and ``runs/ppo_s0/metrics.jsonl`` -> ``ppo_s0``)."""
    path = os.path.abspath(run_dir)
    if os.path.isfile(path) and path.endswith(".jsonl"):
        path = os.path.dirname(path)
    return os.path.basename(path) or path


def load_metrics(run_dir: str) -> tuple[dict, list[dict]]:
    """(meta, records) of a run; unparsable lines are skipped with a ``RuntimeWarning``.

    ``meta`` is the payload of the ``{"meta": {...}}`` line ({} when there is
    none); ``records`` are the other JSON objects, in file order, as written
    (values may be None or NaN). Raises FileNotFoundError without a metrics file.
    """
    path = metrics_path(run_dir)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{run_dir}: no {METRICS_FILE}")
    meta: dict = {}
    records: list[dict] = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                warnings.warn(f"{path}:{lineno}: skipping unparsable line ({e.msg})", RuntimeWarning, stacklevel=2)
                continue
            if not isinstance(obj, dict):
                warnings.warn(f"{path}:{lineno}: skipping non-object line", RuntimeWarning, stacklevel=2)
                continue
            if set(obj) == {"meta"} and isinstance(obj["meta"], dict):
                meta = obj["meta"]
                continue
            records.append(obj)
    return meta, records


def finite_or_none(value):
    """``value`` when it is a finite int/float, else None."""
    return value if isinstance(value, (int, float)) and math.isfinite(value) else None


__all__ = [
    "METRICS_FILE",
    "MetricsLog",
    "NullLog",
    "TensorboardSink",
    "finite_or_none",
    "load_metrics",
    "metrics_path",
    "run_label",
    "scalars",
]
