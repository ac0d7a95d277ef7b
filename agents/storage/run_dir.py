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
``config.json``.

``atomic_write`` (bytes) and ``atomic_write_text`` write a file to a temporary name in the same directory, flush and
fsync it, then rename it over the target: readers see the old or the new file, never a part of one.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import time
import uuid
from pathlib import Path

OWNER_FILE = "run.json"
#: the library function that continues a run of each tool (``resume=True``); the CLIs add their own flag hints
TOOLS = {"train": "agents.train", "sweep": "agents.run.sweep_loop.run_sweep",
         "pipeline": "agents.pipeline.runner.run_pipeline"}


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
    return {"tool": tool, "run_id": uuid.uuid4().hex[:12], "identity": identity_hash(identity),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S")}


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


def claim(run_dir, tool: str, identity: dict) -> dict:
    """Make ``run_dir`` a new run of ``tool`` (created if missing) and return its owner record; refuses a
    directory that holds anything (``RunError``), so nothing another run wrote is ever overwritten."""
    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise RunError(f"run directory {run_dir} is a file, not a directory")
    owner = read_owner(run_dir) if run_dir.is_dir() else None
    if owner is not None:
        if owner["tool"] == tool:
            raise RunError(f"{_describe(run_dir, owner)}; continue it with {TOOLS.get(tool, tool)}(..., resume=True), "
                           "or choose another run directory")
        raise RunError(f"{_describe(run_dir, owner)}, not a {tool} run; continue it with "
                          f"{TOOLS.get(owner['tool'], owner['tool'])}(..., resume=True), or choose another "
                          "run directory")
    if run_dir.is_dir() and any(run_dir.iterdir()):
        held = ", ".join(sorted(p.name for p in run_dir.iterdir())[:4])
        raise RunError(f"{run_dir} is not empty ({held}, ...) and is not a run directory; "
                          "choose an empty or new run directory")
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise RunError(f"run directory {run_dir} cannot be created ({err.strerror})") from None
    owner = _new_owner(tool, identity)
    try:
        write_json(run_dir / OWNER_FILE, owner)
    except OSError as err:
        raise RunError(f"run directory {run_dir} is not writable ({err.strerror})") from None
    return owner


def check_owner(run_dir, tool: str, identity: dict, marker: str) -> dict:
    """The owner record of an existing run of ``tool`` in ``run_dir`` that a resume may continue; a directory
    without ``run.json`` but with ``marker`` (``config.json``: written by an older version) is adopted."""
    run_dir = Path(run_dir)
    owner = read_owner(run_dir)
    if owner is None:
        if not (run_dir / marker).exists():
            raise RunError(f"{run_dir / marker} not found (is {str(run_dir)!r} a {tool} directory?)")
        owner = {**_new_owner(tool, identity), "adopted": True}
        write_json(run_dir / OWNER_FILE, owner)
        return owner
    if owner["tool"] != tool:
        raise RunError(f"{_describe(run_dir, owner)}, not a {tool} run; continue it with "
                          f"{TOOLS.get(owner['tool'], owner['tool'])}(..., resume=True)")
    if owner.get("identity") != identity_hash(identity):
        raise RunError(f"{run_dir}/{marker} is not the config {run_dir}/{OWNER_FILE} was created with (a "
                          "field that fixes the run was edited); restore it, or start a new run elsewhere")
    return owner


__all__ = ["OWNER_FILE", "RunError", "atomic_write", "atomic_write_text", "check_owner", "claim", "identity_hash",
           "read_owner", "write_csv", "write_json"]
