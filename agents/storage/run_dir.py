"""Run directories: who owns one, and files written so that a kill never leaves half of one.

A run directory belongs to one run of one tool. ``claim`` writes ``run.json`` when the directory is created:
the tool (``"train"`` or ``"sweep"``), a run id and a hash of the config fields that fix the run (those a
resume may not change), and refuses a directory that holds anything else:

- a directory of another tool (a sweep started in a training run's directory, or the other way round);
- another run of the same tool (continue it with ``resume=True``, or choose another directory);
- a non-empty directory that is not a run directory at all (for example one holding an older run's
  checkpoints without its ``metrics.jsonl``).

``check_owner`` is the resume side: the directory must be this tool's, and its ``config.json`` must be the run's
(same identity hash). Directories written before ``run.json`` existed are adopted on resume when they hold
``config.json``, with a one-line ``RuntimeWarning``; a directory without ``run.json`` that holds ``.lock`` was
written by a version that writes ``run.json`` (both appeared before ``.lock`` did), so its ``run.json`` was deleted:
it is refused, never re-adopted (restore ``run.json``, or start a new run elsewhere).

One process per run directory: ``claim`` and ``check_owner`` take an exclusive lock on ``<run_dir>/.lock``
(``fcntl.flock``, ``LOCK_EX | LOCK_NB``) before they write anything, and the caller holds it until the run ends
(``release``, also on exceptions). The file holds the holder's host, pid and start time (JSON text); a second
process is refused in one line naming them (``RunError``). The kernel drops a flock when its process dies (kill -9
included), so a lock is never stale: the file may stay behind, only the flock counts, and the next process takes it.
A multi-process run takes it in process 0 only. Limits: on a network filesystem flock may be local to one host
(older NFS clients) or emulated with byte-range locks (Linux NFS since 2.6.12); count on it protecting the directory
only against processes on the same host. On a platform without ``fcntl`` (Windows) no lock is taken: the module
imports and runs, unprotected. A process that forks without ``exec`` shares the lock with its child.

``atomic_write`` (bytes) and ``atomic_write_text`` write a file to a temporary name in the same directory, flush and
fsync it, then rename it over the target: readers see the old or the new file, never a part of one.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import socket
import time
import uuid
import warnings
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no flock; run directories are not locked (module docstring)
    fcntl = None

OWNER_FILE = "run.json"
LOCK_FILE = ".lock"  # the flock of the process that owns the run directory (never listed as the run's content)
_HELD: dict[str, int | None] = {}  # realpath of a run directory this process holds -> the lock file's descriptor
#: the library function that continues a run of each tool (``resume=True``); the CLIs add their own flag hints
TOOLS = {
    "train": "agents.train",
    "sweep": "agents.run.sweep_loop.run_sweep",
    "pipeline": "agents.pipeline.runner.run_pipeline",
}


class RunError(ValueError):
    """A run cannot start or continue as asked (a one-line message saying what is there and what to do)."""


def atomic_write(path, write) -> None:
    """Write ``path`` all at once: ``write(f)`` fills a binary file at a temporary name beside it, which is
    fsynced, then renamed over ``path``; the temporary file is removed when ``write`` fails."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write_text(path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` all at once (``atomic_write``)."""
    atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def write_json(path, data) -> None:
    """``data`` as indented JSON, atomically."""
    atomic_write_text(path, json.dumps(data, indent=2) + "\n")


def write_csv(path, rows):
    """``rows`` (dicts) as CSV with every column any row has, written atomically."""
    columns = list(dict.fromkeys(c for row in rows for c in row))
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(path, text.getvalue())


def identity_hash(fields: dict) -> str:
    """A short hash of the fields that fix a run (sorted JSON)."""
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]


def _describe(run_dir: Path, owner: dict) -> str:
    tool = owner.get("tool", "?")
    return f"{run_dir} holds a {tool} run (run id {owner.get('run_id', '?')})"


def _new_owner(tool: str, identity: dict) -> dict:
    return {
        "tool": tool,
        "run_id": uuid.uuid4().hex[:12],
        "identity": identity_hash(identity),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }


def read_owner(run_dir) -> dict | None:
    """The directory's ``run.json``, or None when it has none; an unreadable one is a ``RunError``."""
    path = Path(run_dir) / OWNER_FILE
    if not path.exists():
        return None
    try:
        owner = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise RunError(f"{path} is not readable ({err}); it is not a run directory this tool can use") from None
    if not isinstance(owner, dict) or "tool" not in owner:
        raise RunError(f"{path} is not a jaxgame run.json; choose another run directory")
    return owner


def _lock_path(run_dir: Path) -> Path:
    return Path(run_dir) / LOCK_FILE


def _in_use(run_dir: Path, path: Path) -> RunError:
    try:
        holder = json.loads(path.read_text())
        who = f"pid {holder['pid']} on host {holder['host']} since {holder['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        who = "another process"  # it holds the flock but has not written its line yet (or wrote garbage)
    return RunError(f"run directory {run_dir} is in use by {who}; wait for it to end, or choose another run directory")


def _probe(run_dir: Path) -> None:
    """``RunError`` when another process holds ``run_dir``'s lock; creates nothing (a read-only try, dropped)."""
    path = _lock_path(run_dir)
    if fcntl is None or not path.is_file():
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise _in_use(run_dir, path) from None
    finally:
        os.close(fd)  # closing drops the probe's flock


def lock(run_dir) -> None:
    """Hold ``run_dir`` (an existing directory) for this process until ``release`` (or the process ends): an
    exclusive flock on ``run_dir/.lock``, which then names this host, pid and start time. ``RunError`` in one line
    naming the holder when another process (or another claim in this one) holds it."""
    run_dir = Path(run_dir)
    key = os.path.realpath(run_dir)
    if fcntl is None:
        _HELD[key] = None
        return
    path = _lock_path(run_dir)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)  # never truncated before the flock is ours
    except OSError as err:
        raise RunError(f"run directory {run_dir} is not writable ({err.strerror})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise _in_use(run_dir, path) from None
    holder = {"host": socket.gethostname(), "pid": os.getpid(), "since": time.strftime("%Y-%m-%dT%H:%M:%S")}
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(holder) + "\n").encode(), 0)
    _HELD[key] = fd


def release(run_dir) -> None:
    """Let ``run_dir`` go (``lock``); nothing when this process does not hold it. The file stays."""
    fd = _HELD.pop(os.path.realpath(Path(run_dir)), None)
    if fd is not None:
        os.close(fd)  # closing the only descriptor of the open file drops its flock


def _check_new(run_dir: Path, tool: str) -> None:
    """``RunError`` unless ``run_dir`` is missing or empty (its lock file aside)."""
    if run_dir.exists() and not run_dir.is_dir():
        raise RunError(f"run directory {run_dir} is a file, not a directory")
    owner = read_owner(run_dir) if run_dir.is_dir() else None
    if owner is not None:
        if owner["tool"] == tool:
            raise RunError(
                f"{_describe(run_dir, owner)}; continue it with {TOOLS.get(tool, tool)}(..., resume=True), "
                "or choose another run directory"
            )
        raise RunError(
            f"{_describe(run_dir, owner)}, not a {tool} run; continue it with "
            f"{TOOLS.get(owner['tool'], owner['tool'])}(..., resume=True), or choose another "
            "run directory"
        )
    held = sorted(p.name for p in run_dir.iterdir() if p.name != LOCK_FILE) if run_dir.is_dir() else []
    if held:
        raise RunError(
            f"{run_dir} is not empty ({', '.join(held[:4])}, ...) and is not a run directory; "
            "choose an empty or new run directory"
        )


def claim(run_dir, tool: str, identity: dict) -> dict:
    """Make ``run_dir`` a new run of ``tool`` (created if missing), hold it (``lock``: the caller releases it)
    and return its owner record; refuses a directory that holds anything or that another process holds
    (``RunError``), so nothing another run wrote is ever overwritten."""
    run_dir = Path(run_dir)
    _probe(run_dir)
    _check_new(run_dir, tool)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise RunError(f"run directory {run_dir} cannot be created ({err.strerror})") from None
    lock(run_dir)
    try:
        _check_new(run_dir, tool)  # again, held: another process may have claimed it since the first look
        owner = _new_owner(tool, identity)
        try:
            write_json(run_dir / OWNER_FILE, owner)
        except OSError as err:
            raise RunError(f"run directory {run_dir} is not writable ({err.strerror})") from None
    except BaseException:
        release(run_dir)
        raise
    return owner


def check_owner(run_dir, tool: str, identity: dict, marker: str) -> dict:
    """The owner record of an existing run of ``tool`` in ``run_dir`` that a resume may continue, held (``lock``:
    the caller releases it). A directory without ``run.json`` but with ``marker`` (``config.json``) is adopted
    with a ``RuntimeWarning`` when an older version wrote it (no ``.lock``), and refused when this one did."""
    run_dir = Path(run_dir)
    _probe(run_dir)
    owner = read_owner(run_dir)
    if owner is None:
        if not (run_dir / marker).exists():
            raise RunError(f"{run_dir / marker} not found (is {str(run_dir)!r} a {tool} directory?)")
        if _lock_path(run_dir).exists():
            raise RunError(
                f"{run_dir / OWNER_FILE} is missing, but {run_dir} was written by a version that writes it "
                f"({LOCK_FILE} is there): restore it, or start a new run elsewhere"
            )
    elif owner["tool"] != tool:
        raise RunError(
            f"{_describe(run_dir, owner)}, not a {tool} run; continue it with "
            f"{TOOLS.get(owner['tool'], owner['tool'])}(..., resume=True)"
        )
    elif owner.get("identity") != identity_hash(identity):
        raise RunError(
            f"{run_dir}/{marker} is not the config {run_dir}/{OWNER_FILE} was created with (a "
            "field that fixes the run was edited); restore it, or start a new run elsewhere"
        )
    lock(run_dir)
    if owner is not None:
        return owner
    try:
        warnings.warn(
            f"{run_dir} has no {OWNER_FILE}: adopting it as a {tool} run written by an older version",
            RuntimeWarning,
            stacklevel=2,
        )
        owner = {**_new_owner(tool, identity), "adopted": True}
        write_json(run_dir / OWNER_FILE, owner)
    except BaseException:
        release(run_dir)
        raise
    return owner


__all__ = [
    "LOCK_FILE",
    "OWNER_FILE",
    "RunError",
    "atomic_write",
    "atomic_write_text",
    "check_owner",
    "claim",
    "identity_hash",
    "lock",
    "read_owner",
    "release",
    "write_csv",
    "write_json",
]
