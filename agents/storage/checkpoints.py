"""Atomic checkpoint store for training runs, built on orbax-checkpoint.

``CheckpointStore(directory, keep, best_metric=None, best_mode="min")`` manages one run's checkpoint directory::

    store = CheckpointStore("runs/ppo/ckpt", keep=3, best_metric="loss", best_mode="min")
    store.save(step, train_state, config={"lr": 3e-4}, metrics={"loss": 0.12})
    ...
    abstract = jax.eval_shape(init_fn, jax.random.key(0))  # same pytree structure, leaves ShapeDtypeStruct
    step, train_state, config = store.restore(abstract)      # newest checkpoint that actually restores
    store.close()

Layout: one sub-directory per step (``<directory>/<step>/``) holding three orbax items: ``state`` (the pytree, via
``StandardSave``: tensorstore/OCDBT array files), ``config`` (the JSON config) and ``meta`` (JSON: which leaves were
typed PRNG keys and their implementation), plus orbax's ``metrics`` item when ``best_metric`` is set.

Guarantees and behaviour:

* **Atomic, finished saves.** Orbax writes a step into ``<directory>/<step>.orbax-checkpoint-tmp`` and renames it to
  ``<directory>/<step>`` only once every item is written. Saving is synchronous (``enable_async_checkpointing=False``
  plus ``wait_until_finished()``), so once ``save()`` returns the step is complete on disk and a ``kill -9`` cannot
  lose it; a process killed *during* a save leaves only the tmp directory, which is never listed as a step (orbax
  removes it when that step is saved again).
* **Checksums.** After orbax's commit, ``save`` writes ``<step>/SHA256SUMS``: one line ``<sha256 hex>  <path>`` per
  file of the step (paths relative to the step directory, sorted; the sidecar itself excluded), atomically (tmp file,
  fsync, rename), so ``cd <directory>/<step> && sha256sum -c SHA256SUMS`` checks a step by hand. A step is listed
  only once its sidecar exists: ``save`` first drops a ``.saving-<step>`` marker in ``directory`` and removes it
  after the sidecar, and ``steps()`` skips a step that has the marker but no sidecar (a save in progress, e.g. the
  run loop's background thread, or a process killed between orbax's commit and the sidecar: that step is then
  lost like an unfinished save, and saving it again replaces it). Every load (``restore``, ``restore_subtree``,
  ``read_config``: everything that reads a checkpoint goes through them) first hashes the step's files once (a
  store remembers a step that verified, by the files' sizes and mtimes, so reading its config and then its arrays
  hashes once). A mismatch is never used: it counts as an unreadable step (fallback below, the warning naming the
  first file that differs); an explicitly asked ``step`` that fails its checksum is ``NoGoodCheckpointError``. A
  step without a sidecar loads with one warning only when it was saved before checksums (its ``meta`` says
  format 1); a step saved by a version that writes the sidecar (format 2) without one is damaged. In a
  multi-process run, process 0 writes the marker and the sidecar.
* **A step knows which it is.** The sidecar's first lines are comments (``sha256sum -c`` skips them): ``# jaxgame
  checkpoint step <step>`` and, for a store given the run's ``identity`` (``run.json``'s ``run_id``), ``# run
  <identity>``. A step whose sidecar names another step (a copy of step 10 put in ``12/``) or another run is
  damaged like a flipped byte: never used, the fallback below. ``restore(..., check=)`` also lets the caller refuse a
  restored tree (the run loop: a runner whose update counter is not the step's number), with the same fallback.
  Orbax's own log lines about a step it cannot read (``Failed to read Metadata file``) are folded into that step's
  one warning instead of printed.
* **Retention.** The last ``keep`` steps are kept, plus (if ``best_metric`` is given) the single best step by
  ``metrics[best_metric]`` (smallest for ``best_mode="min"``, largest for ``"max"``); everything else is deleted after
  each save, once the new step is in place. A step whose metrics lack ``best_metric`` or give ``None``/NaN is never the
  best one. The metrics are stored in the step (orbax ``metrics`` item), so the best step survives restarts.
* **Typed PRNG keys.** Leaves with a key dtype (``jax.random.key(...)``) are stored as ``jax.random.key_data`` (uint32)
  and restored with ``jax.random.wrap_key_data`` using the saved implementation (e.g. ``threefry2x32``), which must
  match the key dtype in the abstract tree. Legacy ``uint32[2]`` keys are ordinary arrays.
* **Self-healing restore.** ``restore(abstract)`` tries the newest step first; if it cannot be read (corrupt or
  partial files) it emits ``warnings.warn("checkpoint step S in DIR could not be restored (...); falling back to an
  earlier one")`` and tries the next older step. A structure/shape mismatch between ``abstract`` and the saved tree is
  a caller error: it raises ``CheckpointMismatchError`` (a ``ValueError``) at once, without falling back.
  ``restore(abstract, step=s)`` restores exactly step ``s`` (no fallback). ``read_config()`` falls back the same way
  (checksums included) but reads only the config and the tree metadata, not the array data.
* Saving a step that already exists replaces it (e.g. when a run resumes from step 2 after step 3 turned out to be
  corrupt and saves step 3 again). The old copy is renamed aside (``.replaced-<step>``) first and deleted only once
  the new one is complete; a process killed in between leaves it aside, and the next store put on the directory
  renames it back. Steps should otherwise be saved in increasing order; a step saved out of order
  counts as the newest one for retention until the store is reopened.
* A garbled per-step ``metrics`` file (which plain orbax would refuse at start-up) only warns: that step then has no
  metrics, cannot be ranked, and is kept (never deleted by the retention). Expect orbax/absl log lines (and,
  after a failed read, "Event loop is closed" reports from tensorstore threads) when corrupt steps are probed;
  they are harmless (the CLIs turn the absl ones off).
* Fallback warnings come once an older step was read: one line per newer step that was not, and once per store (a
  later load through the same store does not repeat it). When no step can be read, ``NoGoodCheckpointError`` alone
  says so, in one line.

Devices and hosts: the tree's arrays may be sharded over several devices (``agents.utils.distributed``); orbax saves
global arrays, so a checkpoint restores onto any device layout: give the abstract leaves the target ``sharding``
(``jax.ShapeDtypeStruct(shape, dtype, sharding=...)``) and each device reads its share (leaves without one go to the
first local device, whole). In a multi-process run every process creates the store and calls ``save`` / ``restore``
with the same arguments (orbax synchronises them; each process writes its own shards, process 0 the metadata), on a
directory all processes share. Otherwise the store assumes a single writer process.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import shutil
import sys
import threading
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp
from orbax.checkpoint import checkpoint_managers as ocm

_STATE = "state"
_CONFIG = "config"
_META = "meta"
#: the ``meta`` item's format: 2 since the sidecar names its step and run (a format-2 step without it is damaged)
_FORMAT = 2
_MAX_ERR_CHARS = 240
_ASIDE = ".replaced-"  # a step being saved again: its old copy, until the new one is complete
_SAVING = ".saving-"  # a step whose save has started and whose SHA256SUMS is not written yet: not listed
#: the per-step checksum sidecar: ``<hex>  <path relative to the step directory>`` per file (``sha256sum -c``)
SUMS_FILE = "SHA256SUMS"
#: the sidecar's comment lines that name the step and the run (``sha256sum -c`` skips lines starting with ``#``)
STEP_LINE, RUN_LINE = "# jaxgame checkpoint step ", "# run "
_HASH_CHUNK = 1 << 20


#: a run directory's checkpoints (``agents.storage.checkpoints``) live in this subdirectory
CHECKPOINT_DIR = "checkpoints"


def fresh_arrays(tree):
    """``tree`` with every leaf copied into a new, uncommitted array (typed keys stay typed).

    Restored (committed) arrays make jit lower a program with explicit shardings, which misses the
    compilation cache; fresh arrays give exactly the program of a new run."""

    def fresh(x):
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            data = jnp.asarray(np.asarray(jax.random.key_data(x)))
            return jax.random.wrap_key_data(data, impl=jax.random.key_impl(x))
        return jnp.asarray(np.asarray(x))

    return jax.tree_util.tree_map(fresh, tree)


class CheckpointMismatchError(ValueError):
    """The abstract tree given to ``restore`` does not match the saved tree (structure, shapes or key types)."""


class NoGoodCheckpointError(RuntimeError):
    """Checkpoints exist but none of them can be read."""


class _UnreadableCheckpoint(RuntimeError):
    """A step's files are missing or damaged (restore falls back to an older step)."""


class _StepMismatch(_UnreadableCheckpoint):
    """A restored tree that ``restore``'s ``check`` refuses (its update counter is not the step's number, say)."""


class _ChecksumMismatch(_UnreadableCheckpoint):
    """A step's files do not match its ``SHA256SUMS`` (the message names the first file that does not)."""


def file_sha256(path: Path) -> str:
    """The SHA-256 of one file's bytes, as 64 lowercase hex digits (read in 1 MiB chunks)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def write_sums(directory: Path, files, sums_name: str = SUMS_FILE, header=()) -> Path:
    """Write ``directory/sums_name``: the ``header`` lines (comments, each starting with ``#``), then
    ``<sha256 hex>  <relative path>`` per file of ``files`` (paths relative to ``directory``, written sorted, with
    ``/``), atomically (a ``.tmp`` file, fsync, rename) so that ``cd directory && sha256sum -c sums_name`` checks
    them. Returns its path."""
    directory = Path(directory)
    names = sorted(str(f) for f in files)
    for name in names:
        if "\n" in name or "\\" in name:  # sha256sum escapes such names; none of ours have them
            raise ValueError(f"cannot list {name!r} in {sums_name}")
    header = list(header)
    if any(not line.startswith("#") or "\n" in line for line in header):
        raise ValueError(f"header lines of {sums_name} are one-line comments starting with '#', got {header!r}")
    text = "".join(f"{line}\n" for line in header)
    text += "".join(f"{file_sha256(directory / name)}  {name}\n" for name in names)
    path = directory / sums_name
    tmp = directory / f"{sums_name}.tmp"
    with open(tmp, "w") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    try:  # make the rename durable too (best effort: not every filesystem lets a directory be fsynced)
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass
    return path


def read_sums(path: Path) -> dict[str, str]:
    """``{relative path: hex digest}`` from a ``sha256sum``-format file; ``_ChecksumMismatch`` when a line is
    malformed or names a path outside its directory."""
    sums: dict[str, str] = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        if line.startswith("#"):  # a comment (read_header): sha256sum -c skips it too
            continue
        match = re.fullmatch(r"([0-9a-f]{64}) [ *](.+)", line)
        name = match.group(2) if match else ""
        if not match or name.startswith("/") or ".." in Path(name).parts:
            raise _ChecksumMismatch(f"{Path(path).name} line {number} is malformed")
        sums[name] = match.group(1)
    return sums


def read_header(path: Path) -> dict:
    """``{"step": int or None, "run": str or None}``: what a checkpoint sidecar's comment lines name (None where a
    sidecar written before they existed names nothing); ``_ChecksumMismatch`` for a malformed step line."""
    header = {"step": None, "run": None}
    for line in Path(path).read_text().splitlines():
        if line.startswith(STEP_LINE):
            value = line[len(STEP_LINE) :].strip()
            if not value.isdigit():
                raise _ChecksumMismatch(f"{Path(path).name} names a step that is not a number: {value!r}")
            header["step"] = int(value)
        elif line.startswith(RUN_LINE):
            header["run"] = line[len(RUN_LINE) :].strip()
        elif not line.startswith("#"):
            break  # the comments come first
    return header


def _saved_format(step_dir: Path) -> int:
    """The ``meta`` item's format of a step (0 when it cannot be read: a damaged step is then judged by its
    other files)."""
    try:
        meta = json.loads((Path(step_dir) / _META / "metadata").read_text())
        return int(meta.get("format", 0)) if isinstance(meta, dict) else 0
    except (OSError, ValueError, TypeError):
        return 0


def check_sums(directory: Path, sums: dict[str, str], sums_name: str = SUMS_FILE) -> None:
    """Hash each file of ``sums`` (one pass, sorted order); ``_ChecksumMismatch`` naming the first file that is
    missing or differs."""
    for name in sorted(sums):
        path = Path(directory) / name
        if not path.is_file():
            raise _ChecksumMismatch(f"{name} is missing (listed in {sums_name})")
        if file_sha256(path) != sums[name]:
            raise _ChecksumMismatch(f"{name} does not match its SHA-256 in {sums_name}")


class _OrbaxReadErrors(logging.Filter):
    """Drops orbax's ``Failed to read Metadata file: PATH, error: ...`` log lines (absl's logger) for a step of a live
    store's directory and keeps the first per step, so that the step's one warning (``CheckpointStore``) says it."""

    PREFIX = "Failed to read Metadata file: "

    def __init__(self):
        super().__init__()
        self.directories: set[Path] = set()
        self.seen: dict[tuple[Path, int], str] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a record that cannot be formatted is not ours to judge
            return True
        if not message.startswith(self.PREFIX):
            return True
        path = Path(message[len(self.PREFIX) :].split(",", 1)[0])
        for parent in path.parents:
            if parent.parent in self.directories and parent.name.isdigit():
                with self._lock:
                    self.seen.setdefault((parent.parent, int(parent.name)), message[len(self.PREFIX) :])
                return False
        return True

    def pop(self, directory: Path, step: int) -> str | None:
        with self._lock:
            return self.seen.pop((directory, step), None)


_ORBAX_READ_ERRORS = _OrbaxReadErrors()
logging.getLogger("absl").addFilter(_ORBAX_READ_ERRORS)


class _Manager(ocp.CheckpointManager):
    """``ocp.CheckpointManager`` whose per-step metrics reading tolerates a corrupt ``metrics`` file.

    Orbax reads every step's metrics when it (re)loads the step list and only tolerates a *missing* file, so one
    garbled ``<step>/metrics/metrics`` JSON would make the whole directory unusable. Here such a step just has no
    metrics (it can't be the best one) and stays listed; restoring it may still work or fall back.
    """

    def __init__(self, *args, **kwargs):
        self._warned_metrics: set[int] = set()  # before super().__init__, which already reads the metrics
        super().__init__(*args, **kwargs)

    def _get_metrics(self, step: int):
        try:
            return super()._get_metrics(step)
        except Exception as err:  # noqa: BLE001
            if step in self._warned_metrics:
                return None
            self._warned_metrics.add(step)
            warnings.warn(
                f"metrics of checkpoint step {step} in {self.directory} could not be read ({_short(err)}); "
                "treating it as having no metrics",
                RuntimeWarning,
                stacklevel=2,
            )
            return None


def _key_name(entry) -> str:
    """One key-path entry (dict key, attribute, sequence index) as a plain string."""
    for attr in ("key", "name", "idx"):
        if hasattr(entry, attr):
            return str(getattr(entry, attr))
    return str(entry)


def _path(path) -> tuple[str, ...]:
    """A jax key path as a tuple of strings; dict keys, dataclass fields and indices all map to their names."""
    return tuple(_key_name(e) for e in path)


def _path_str(path: tuple[str, ...]) -> str:
    return "/".join(path) if path else "<root>"


def _is_typed_key(x) -> bool:
    dtype = getattr(x, "dtype", None)
    return dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)


def _short(err: BaseException) -> str:
    """``err`` in one short line: the first line of its message (orbax/tensorstore errors carry multi-line spec
    dumps), whitespace collapsed, at most ``_MAX_ERR_CHARS`` characters; the store's own errors without their type."""
    lines = [line for line in str(err).splitlines() if line.strip()]
    text = " ".join(lines[0].split()) if lines else ""
    if not isinstance(err, _UnreadableCheckpoint):
        text = f"{type(err).__name__}: {text}" if text else type(err).__name__
    if len(lines) > 1:
        text += " ..."
    return text if len(text) <= _MAX_ERR_CHARS else text[:_MAX_ERR_CHARS] + "..."


_OS_ERROR_CODE = re.compile(r"os_error_code='?(\d+)")


def disk_error(err: BaseException | None, where: str) -> OSError | None:
    """``err`` as the ``OSError`` it stands for, or None: orbax/tensorstore report a failed write (a full disk, no
    permission) as ``ValueError("RESOURCE_EXHAUSTED: ... [os_error_code='28']")``; callers (the CLIs) end a run on
    an ``OSError`` in one line, so a save raises the OSError (errno from the code, ``where`` in its message) with
    the original as its cause."""
    if err is None or isinstance(err, OSError):
        return None
    match = _OS_ERROR_CODE.search(str(err))
    if match is None:
        return None
    code = int(match.group(1))
    return OSError(code, f"{os.strerror(code)} while writing {where}")


class CheckpointStore:
    """Keeps the last ``keep`` checkpoints of a run plus the best one; saves atomically, restores the newest good one.

    Args:
        directory: the run's checkpoint directory (created if missing); steps are its sub-directories.
        keep: how many of the most recent steps to keep (int >= 1).
        best_metric: name of the entry of ``save(..., metrics=)`` that ranks checkpoints; the best step is kept in
            addition to the last ``keep``. ``None``: keep only the last ``keep`` (metrics are then not stored).
        best_mode: ``"min"`` (smaller is better) or ``"max"``.
        identity: the run's identity (``run.json``'s ``run_id``): written into each step's sidecar, and a step whose
            sidecar names another run is refused (treated as damaged). None: no run is named or checked.

    Raises:
        ValueError: ``keep`` is not an int >= 1, ``best_mode`` is not "min"/"max" or ``best_metric`` is not a
            non-empty string or None.
    """

    def __init__(
        self, directory, keep: int, best_metric: str | None = None, best_mode: str = "min", identity: str | None = None
    ):
        if isinstance(keep, bool) or not isinstance(keep, (int, np.integer)) or keep < 1:
            raise ValueError(f"keep must be an int >= 1 (number of most recent checkpoints to keep), got {keep!r}")
        if best_mode not in ("min", "max"):
            raise ValueError(f"best_mode must be 'min' or 'max', got {best_mode!r}")
        if best_metric is not None and (not isinstance(best_metric, str) or not best_metric):
            raise ValueError(f"best_metric must be a non-empty metric name or None, got {best_metric!r}")
        if identity is not None and (not isinstance(identity, str) or not re.fullmatch(r"[A-Za-z0-9_.:-]+", identity)):
            raise ValueError(f"identity must be a run id (letters, digits, _ . : -) or None, got {identity!r}")
        self.directory = Path(directory).expanduser().absolute()
        self.identity = identity
        _ORBAX_READ_ERRORS.directories.add(self.directory)
        self.keep = int(keep)
        self.best_metric = best_metric
        self.best_mode = best_mode

        policies: list[Any] = [ocm.LatestN(n=self.keep)]
        if best_metric is not None:
            policies.append(
                # a step whose metrics cannot be read (garbled file) cannot be ranked: it is kept, never deleted
                ocm.BestN(get_metric_fn=self._score, reverse=False, n=1, keep_checkpoints_without_metrics=True)
            )
        options = ocp.CheckpointManagerOptions(
            preservation_policy=ocm.AnyPreservationPolicy(policies),
            # Orbax only writes/reads the per-step metrics when `best_fn` is set (it is ignored for retention once a
            # preservation_policy is given); `_score` is "larger is better", hence best_mode="max".
            best_fn=self._score if best_metric is not None else None,
            best_mode="max",
            enable_async_checkpointing=False,
            create=True,
        )
        self._verified: dict[int, tuple] = {}  # step -> stat signature of the files that last verified
        self._warned: set[int] = set()  # steps already warned about as unreadable: one warning per store
        self._warned_unverified: set[int] = set()  # steps already warned about for having no SHA256SUMS
        self._recover_set_aside()
        self._mgr = _Manager(
            self.directory,
            options=options,
            item_names=(_STATE, _CONFIG, _META),
            item_handlers={
                _STATE: ocp.StandardCheckpointHandler(),
                _CONFIG: ocp.JsonCheckpointHandler(),
                _META: ocp.JsonCheckpointHandler(),
            },
        )

    # ------------------------------------------------------------------ metrics

    def _metric_value(self, metrics) -> float | None:
        """``metrics[best_metric]`` as a float, or None when missing/None/NaN (not a candidate for best)."""
        if not isinstance(metrics, Mapping):
            return None
        value = metrics.get(self.best_metric)
        if value is None:
            return None
        value = float(value)
        return None if math.isnan(value) else value

    def _score(self, metrics) -> float:
        """Larger-is-better score of a checkpoint's metrics; -inf when it is not a candidate."""
        value = self._metric_value(metrics)
        if value is None:
            return -math.inf
        return -value if self.best_mode == "min" else value

    @staticmethod
    def _clean_metrics(metrics: Mapping | None) -> dict[str, float]:
        """``{name: float}`` without None/NaN entries (JSON-safe)."""
        clean: dict[str, float] = {}
        for name, value in (metrics or {}).items():
            if value is None:
                continue
            try:
                value = float(value)
            except (TypeError, ValueError) as err:
                raise ValueError(f"metric {name!r} must be a float, got {value!r}") from err
            if not math.isnan(value):
                clean[str(name)] = value
        return clean

    # --------------------------------------------------------------------- save

    def save(self, step: int, tree, config: dict, metrics: dict | None = None) -> None:
        """Save ``tree`` and ``config`` as ``step``; returns once the step is completely on disk.

        Args:
            step: int >= 0. An existing step with that number is replaced.
            tree: any pytree (dicts, lists, tuples, flax ``struct.dataclass``...) of jax/numpy arrays; leaves may be
                typed PRNG keys (key dtype, any shape), stored as their uint32 ``key_data``.
            config: JSON-serialisable dict stored beside the tree (round-trips through JSON: tuples come back as
                lists).
            metrics: ``{name: float}`` for ranking (``best_metric``); may lack ``best_metric``; None/NaN values are
                dropped (that step is then not a candidate for best). Ignored when ``best_metric`` is None.
        """
        if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 0:
            raise ValueError(f"step must be an int >= 0, got {step!r}")
        step = int(step)
        if not isinstance(config, Mapping):
            raise TypeError(f"config must be a JSON-serialisable dict, got {type(config).__name__}")

        leaves, treedef = jax.tree_util.tree_flatten_with_path(tree)
        typed_keys: dict[str, str] = {}
        stored = []
        for path, leaf in leaves:
            if _is_typed_key(leaf):
                typed_keys[_path_str(_path(path))] = str(jax.random.key_impl(leaf))
                leaf = jax.random.key_data(leaf)
            stored.append(leaf)
        if all(not isinstance(leaf, jax.Array) or leaf.is_fully_addressable for leaf in stored):
            # host copies first: orbax writes numpy leaves in about 0.4x the time of jax.Array ones (a small
            # runner, 2-core CPU); a multi-process run's arrays are not addressable here and stay jax.Arrays
            stored = jax.device_get(stored)
        state = jax.tree_util.tree_unflatten(treedef, stored)
        meta = {"format": _FORMAT, "typed_keys": typed_keys}

        # every saved step has metrics (``_step`` at least): only an unreadable metrics file makes a step
        # "without metrics", which the retention keeps
        step_metrics = {"_step": float(step), **self._clean_metrics(metrics)} if self.best_metric is not None else None
        replaced = self._set_aside(step) if step in self._mgr.all_steps() else None
        marker = self.directory / f"{_SAVING}{step}"
        writer = jax.process_index() == 0  # one process writes the marker and the sums, after orbax's commit
        was_unfinished = marker.exists()  # the copy set aside never got its sums: it stays unlisted if put back
        if writer:
            marker.touch()  # until SHA256SUMS is written, the step is not listed (steps())
        self._verified.pop(step, None)
        self._warned.discard(step)
        self._warned_unverified.discard(step)
        try:
            saved = self._mgr.save(
                step,
                args=ocp.args.Composite(
                    **{
                        _STATE: ocp.args.StandardSave(state),
                        _CONFIG: ocp.args.JsonSave(dict(config)),
                        _META: ocp.args.JsonSave(meta),
                    }
                ),
                metrics=step_metrics,
                force=True,
            )
            self._mgr.wait_until_finished()
            if not saved:  # only with read-only managers; never expected here
                raise RuntimeError(f"orbax declined to save step {step} in {self.directory}")
            if writer:
                self._write_step_sums(step)
        except BaseException:
            # the new copy, if orbax committed it, has no SHA256SUMS: it is no finished step
            step_dir = self.directory / str(step)
            if writer and step_dir.is_dir() and not (step_dir / SUMS_FILE).exists():
                shutil.rmtree(step_dir, ignore_errors=True)
            if writer and not (replaced is not None and was_unfinished):
                marker.unlink(missing_ok=True)
            if replaced is not None:
                self._put_back(step, replaced)
            else:
                self._mgr.reload()
            disk = disk_error(sys.exc_info()[1], f"checkpoint step {step} in {self.directory}")
            if disk is not None:
                raise disk from sys.exc_info()[1]
            raise
        if writer:
            marker.unlink(missing_ok=True)
        if replaced is not None:
            shutil.rmtree(replaced, ignore_errors=True)

    def _write_step_sums(self, step: int) -> None:
        """``<step>/SHA256SUMS`` over every file of the committed step (after orbax's rename)."""
        step_dir = self.directory / str(step)
        if not step_dir.is_dir():  # removed by the retention at once (a step saved out of order)
            return
        files = [f.relative_to(step_dir).as_posix() for f in step_dir.rglob("*") if f.is_file()]
        header = [f"{STEP_LINE}{step}"] + ([f"{RUN_LINE}{self.identity}"] if self.identity else [])
        write_sums(step_dir, [f for f in files if f not in (SUMS_FILE, f"{SUMS_FILE}.tmp")], header=header)

    def _set_aside(self, step: int) -> Path:
        """Move an existing ``step`` out of the step list (renamed, not deleted) before it is saved again."""
        aside = self.directory / f"{_ASIDE}{step}"
        shutil.rmtree(aside, ignore_errors=True)
        os.rename(self.directory / str(step), aside)
        self._mgr.reload()
        return aside

    def _put_back(self, step: int, aside: Path) -> None:
        target = self.directory / str(step)
        if aside.exists() and not target.exists():
            os.rename(aside, target)
        self._mgr.reload()

    def _recover_set_aside(self) -> None:
        """A process killed while re-saving a step left the old copy aside: it is that step again."""
        if not self.directory.is_dir():
            return
        for aside in self.directory.glob(f"{_ASIDE}*"):
            step = aside.name[len(_ASIDE) :]
            if step.isdigit() and not (self.directory / step).exists():
                os.rename(aside, self.directory / step)
            else:
                shutil.rmtree(aside, ignore_errors=True)

    # -------------------------------------------------------------------- query

    def steps(self) -> list[int]:
        """All finalized steps on disk, ascending. Not steps: orbax tmp directories of unfinished saves, and a step
        whose save has started (a ``.saving-<step>`` marker) but whose ``SHA256SUMS`` is not written yet (a save
        in progress, or one killed between orbax's commit and the sidecar: the next save of that step replaces it)."""
        self._mgr.reload()
        return sorted(
            int(s)
            for s in self._mgr.all_steps()
            if not (self.directory / f"{_SAVING}{s}").exists() or (self.directory / str(s) / SUMS_FILE).exists()
        )

    def latest_step(self) -> int | None:
        """The newest finalized step, or None when there is none (not checked for corruption; see ``restore``)."""
        steps = self.steps()
        return steps[-1] if steps else None

    def best_step(self) -> int | None:
        """The step whose ``metrics[best_metric]`` is best (ties: the newest), or None without a ``best_metric`` or
        when no step has a value for it (not checked for corruption)."""
        if self.best_metric is None:
            return None
        scored = [(self._score(self._mgr.metrics(step)), step) for step in self.steps()]
        scored = [(score, step) for score, step in scored if score > -math.inf]
        return max(scored)[1] if scored else None

    # ------------------------------------------------------------------ restore

    def _target(self, abstract_tree):
        """The orbax restore target for ``abstract_tree``: ``(target, typed_key_dtypes)``.

        ``target`` has the structure of ``abstract_tree`` with every leaf a ``jax.ShapeDtypeStruct`` (typed keys
        replaced by their uint32 key-data shape, missing shardings set to the first local device);
        ``typed_key_dtypes`` maps the path string of each typed-key leaf to its key dtype.
        """
        default_sharding = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])
        leaves, treedef = jax.tree_util.tree_flatten_with_path(abstract_tree)
        target, key_dtypes = [], {}
        for path, leaf in leaves:
            sharding = getattr(leaf, "sharding", None) or default_sharding
            if _is_typed_key(leaf):
                key_dtypes[_path_str(_path(path))] = leaf.dtype
                data = jax.eval_shape(jax.random.key_data, jax.ShapeDtypeStruct(leaf.shape, leaf.dtype))
                target.append(jax.ShapeDtypeStruct(data.shape, data.dtype, sharding=sharding))
            else:
                if not (hasattr(leaf, "shape") and hasattr(leaf, "dtype")):
                    leaf = np.asarray(leaf)
                target.append(jax.ShapeDtypeStruct(tuple(leaf.shape), leaf.dtype, sharding=sharding))
        return jax.tree_util.tree_unflatten(treedef, target), key_dtypes

    def _saved_tree_metadata(self, step: int):
        """The saved tree's metadata (nested dicts/lists of orbax ``ArrayMetadata``); raises if unreadable."""
        metadata = self._mgr.item_metadata(step)[_STATE]
        if metadata is None:
            # e.g. a missing `state/_METADATA`: orbax then reports no item rather than raising.
            raise _UnreadableCheckpoint(f"no readable tree metadata in step {step} of {self.directory}")
        return getattr(metadata, "tree", metadata)

    def _check_structure(self, step: int, target) -> None:
        """Compare ``target`` with the saved tree's metadata; raises CheckpointMismatchError on any difference.

        Unreadable metadata (corrupt/missing files) raises orbax/tensorstore's error or ``_UnreadableCheckpoint``.
        """
        saved_tree = self._saved_tree_metadata(step)
        saved = {_path(p): leaf for p, leaf in jax.tree_util.tree_flatten_with_path(saved_tree)[0]}
        wanted = {_path(p): leaf for p, leaf in jax.tree_util.tree_flatten_with_path(target)[0]}
        if wanted and not saved:
            raise _UnreadableCheckpoint(f"no array metadata in step {step} of {self.directory}")
        problems = []
        missing = sorted(set(wanted) - set(saved))
        extra = sorted(set(saved) - set(wanted))
        if missing:
            problems.append("not in the checkpoint: " + ", ".join(_path_str(p) for p in missing[:10]))
        if extra:
            problems.append(
                "in the checkpoint but not in abstract_tree: " + ", ".join(_path_str(p) for p in extra[:10])
            )
        for p in sorted(set(saved) & set(wanted)):
            shape = getattr(saved[p], "shape", None)
            if shape is not None and tuple(shape) != tuple(wanted[p].shape):
                problems.append(
                    f"{_path_str(p)}: saved shape {tuple(shape)} != abstract shape {tuple(wanted[p].shape)}"
                )
        if problems:
            raise CheckpointMismatchError(
                f"the state saved at step {step} in {self.directory} does not have this trainer's layout (written "
                "by another config or another version of agents?): " + "; ".join(problems)
            )

    def _restore_step(self, step: int, abstract_tree, target, key_dtypes, check=None) -> tuple[int, Any, dict]:
        self._verify(step)
        self._check_structure(step, target)
        result = self._mgr.restore(
            step,
            args=ocp.args.Composite(
                **{
                    _STATE: ocp.args.StandardRestore(target),
                    _CONFIG: ocp.args.JsonRestore(),
                    _META: ocp.args.JsonRestore(),
                }
            ),
        )
        impls = (result[_META] or {}).get("typed_keys", {})
        leaves = []
        for path, leaf in jax.tree_util.tree_flatten_with_path(result[_STATE])[0]:
            name = _path_str(_path(path))
            if name in key_dtypes:
                if name not in impls:
                    raise CheckpointMismatchError(
                        f"{name} is a typed PRNG key in abstract_tree but was saved as a plain array "
                        f"(step {step} in {self.directory})"
                    )
                leaf = jax.random.wrap_key_data(leaf, impl=impls[name])
                if leaf.dtype != key_dtypes[name]:
                    raise CheckpointMismatchError(
                        f"{name}: saved PRNG key implementation {impls[name]!r} gives dtype {leaf.dtype}, "
                        f"abstract_tree expects {key_dtypes[name]} (step {step} in {self.directory})"
                    )
            leaves.append(leaf)
        tree = jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(abstract_tree), leaves)
        problem = check(step, tree) if check is not None else None
        if problem:
            raise _StepMismatch(f"step {step} is not what its name says: {problem}")
        return step, tree, dict(result[_CONFIG])

    def _verify(self, step: int) -> None:
        """Check every file of ``step`` against its ``SHA256SUMS`` (one hashing pass; skipped when the same files,
        by size and mtime, verified before in this store). ``_ChecksumMismatch`` names the first bad file; a step
        without ``SHA256SUMS`` (saved before checksums) passes with one warning per store."""
        step_dir = self.directory / str(step)
        sums_path = step_dir / SUMS_FILE
        if not sums_path.is_file():
            if _saved_format(step_dir) >= 2:
                raise _ChecksumMismatch(
                    f"{SUMS_FILE} is missing from a step saved by a version that writes it (damage, not an old step)"
                )
            if step not in self._warned_unverified:
                self._warned_unverified.add(step)
                warnings.warn(
                    f"checkpoint step {step} in {self.directory} has no {SUMS_FILE} (saved before checksums): "
                    "loading it unverified",
                    RuntimeWarning,
                    stacklevel=4,
                )
            return
        header = read_header(sums_path)
        if header["step"] is not None and header["step"] != step:
            raise _ChecksumMismatch(f"its {SUMS_FILE} names step {header['step']}, not {step} (a copy of another step)")
        if self.identity is not None and header["run"] is not None and header["run"] != self.identity:
            raise _ChecksumMismatch(
                f"its {SUMS_FILE} names run {header['run']}, not this run ({self.identity}): a step of another run"
            )
        sums = read_sums(sums_path)
        signature = []
        for name in sorted(sums):
            try:
                st = (step_dir / name).stat()
            except OSError:
                signature = None
                break
            signature.append((name, st.st_size, st.st_mtime_ns))
        if signature is not None:
            signature = (tuple(signature), sums_path.stat().st_mtime_ns)
            if self._verified.get(step) == signature:
                return
        check_sums(step_dir, sums)
        self._verified[step] = signature

    def _verified_step(self, step: int) -> int:
        """``step`` after ``_verify``; a checksum failure of an explicitly asked step is NoGoodCheckpointError."""
        try:
            self._verify(step)
        except _ChecksumMismatch as err:
            raise NoGoodCheckpointError(f"checkpoint step {step} in {self.directory} is damaged: {err}") from None
        return step

    def _fallback_warnings(self, failed) -> None:
        """One warning per newer step that could not be read, once an older one was (when none can be,
        the error says it all); a step already warned about by this store is not warned about again."""
        for step, err in failed:
            if step in self._warned:
                continue
            self._warned.add(step)
            orbax = _ORBAX_READ_ERRORS.pop(self.directory, step)
            also = ""
            if orbax:
                also = f"; orbax could not read its metadata either: {_short(_UnreadableCheckpoint(orbax))}"
            warnings.warn(
                f"checkpoint step {step} in {self.directory} could not be restored ({_short(err)}{also}); "
                "falling back to an earlier one",
                RuntimeWarning,
                stacklevel=3,
            )

    def _require_step(self, step: int) -> None:
        steps = self.steps()
        if int(step) not in steps:
            raise FileNotFoundError(f"no checkpoint for step {step} in {self.directory} (steps present: {steps})")

    def _newest_first(self) -> list[int]:
        steps = self.steps()
        if not steps:
            raise FileNotFoundError(f"no checkpoints in {self.directory}")
        return steps[::-1]

    def restore(self, abstract_tree, step: int | None = None, check=None) -> tuple[int, Any, dict]:
        """Restore a checkpoint into the structure of ``abstract_tree``.

        Args:
            abstract_tree: pytree with the saved structure, e.g. ``jax.eval_shape(init_fn, ...)``: leaves
                ``jax.ShapeDtypeStruct`` (or arrays) giving shape and dtype; typed-key leaves have a key dtype.
                Leaves without a sharding are placed on the first local device.
            step: the step to restore (no fallback); None: the newest step that restores, falling back to older
                ones with a warning.
            check: ``check(step, tree) -> None or a reason``: a restored tree it gives a reason for is not used
                (a damaged step: the fallback, or ``NoGoodCheckpointError`` for an explicit ``step``).

        Returns:
            ``(step, tree, config)``: ``tree`` has ``abstract_tree``'s structure, every leaf a ``jax.Array`` with the
            abstract shape and dtype (typed keys re-wrapped with their saved implementation); ``config`` is the saved
            dict.

        Raises:
            FileNotFoundError: no checkpoints (or no such ``step``) in the directory.
            CheckpointMismatchError (ValueError): ``abstract_tree`` differs from the saved tree.
            NoGoodCheckpointError (RuntimeError): checkpoints exist but none could be restored.
        """
        target, key_dtypes = self._target(abstract_tree)
        if step is not None:
            self._require_step(step)
            try:
                return self._restore_step(self._verified_step(int(step)), abstract_tree, target, key_dtypes, check)
            except _StepMismatch as err:
                raise NoGoodCheckpointError(f"checkpoint step {step} in {self.directory} is damaged: {err}") from None
        return self._newest_readable(
            lambda s: self._restore_step(s, abstract_tree, target, key_dtypes, check),
            "none of the checkpoints {steps} in {dir} could be restored",
        )

    def restore_subtree(self, name: str, step: int | None = None) -> tuple[int, Any, dict]:
        """Restore only the subtree ``name`` of a saved state (e.g. a runner's ``"params"``), shaped as it was saved:
        nested dicts of ``jax.Array`` on the first local device. Nothing else of the state is read, and no abstract
        tree is needed. ``step`` as in ``restore`` (None: the newest step that restores, with the same fallback).

        Returns ``(step, subtree, config)``. Raises ``CheckpointMismatchError`` when the saved state has no
        ``name``, and ``restore``'s errors otherwise."""

        def read(s):
            self._verify(s)
            saved = self._saved_tree_metadata(s)
            if not isinstance(saved, Mapping) or name not in saved:
                raise CheckpointMismatchError(f"the state saved at step {s} in {self.directory} has no {name!r}")
            device = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])
            target = {
                name: jax.tree_util.tree_map(
                    lambda m: jax.ShapeDtypeStruct(tuple(m.shape), m.dtype, sharding=device), saved[name]
                )
            }
            with ocp.PyTreeCheckpointer() as checkpointer:
                tree = checkpointer.restore(
                    self.directory / str(s) / _STATE,
                    args=ocp.args.PyTreeRestore(
                        item=target,
                        restore_args=ocp.checkpoint_utils.construct_restore_args(target),
                        partial_restore=True,
                    ),
                )
            config = self._mgr.restore(s, args=ocp.args.Composite(**{_CONFIG: ocp.args.JsonRestore()}))[_CONFIG]
            return s, tree[name], dict(config)

        if step is not None:
            self._require_step(step)
            return read(self._verified_step(int(step)))
        return self._newest_readable(read, "none of the checkpoints {steps} in {dir} could be restored")

    def read_config(self, step: int | None = None) -> dict:
        """The config dict saved with ``step``.

        ``step=None``: the newest step that passes its checksums and whose config and tree metadata can be read
        (falling back to older ones with the same warning as ``restore``). The array data is hashed, not decoded:
        a step without ``SHA256SUMS`` whose array files alone are corrupt still counts here; use ``restore`` when
        the config must match the restored tree.
        """
        if step is not None:
            self._require_step(step)
            step = self._verified_step(int(step))
            return dict(self._mgr.restore(step, args=ocp.args.Composite(**{_CONFIG: ocp.args.JsonRestore()}))[_CONFIG])

        def read(s):
            self._verify(s)
            self._saved_tree_metadata(s)
            return dict(self._mgr.restore(s, args=ocp.args.Composite(**{_CONFIG: ocp.args.JsonRestore()}))[_CONFIG])

        return self._newest_readable(read, "no readable config among checkpoints {steps} in {dir}")

    def _newest_readable(self, read, failure: str):
        """``read(step)`` of the newest step it succeeds on, with one fallback warning per newer step that
        failed; ``NoGoodCheckpointError`` (``failure`` with ``{steps}`` and ``{dir}``) when it fails on all.
        A ``CheckpointMismatchError`` is the caller's error: raised at once, no fallback."""
        candidates = self._newest_first()
        failed = []
        for s in candidates:
            try:
                value = read(s)
            except CheckpointMismatchError:
                raise
            except Exception as err:  # noqa: BLE001 - any read failure means "corrupt, try an older one"
                failed.append((s, err))
                continue
            self._fallback_warnings(failed)
            return value
        newest, err = failed[0]
        raise NoGoodCheckpointError(
            failure.format(steps=candidates[::-1], dir=self.directory) + f" (newest: step {newest}: {_short(err)})"
        )

    # -------------------------------------------------------------------- close

    def close(self) -> None:
        """Wait for outstanding orbax work and release its resources."""
        self._mgr.wait_until_finished()
        self._mgr.close()

    def __enter__(self):  # -> the store itself
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"CheckpointStore({str(self.directory)!r}, keep={self.keep}, best_metric={self.best_metric!r}, "
            f"best_mode={self.best_mode!r})"
        )
