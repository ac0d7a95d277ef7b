"""The replay file: one game's record (``agents.replays.record``) as compact JSON, versioned.

    write(record, "game.json")                 # -> bytes written
    record = read("game.json")                 # ValueError for a foreign, newer or damaged file
    actions(record)                            # int32[steps, 8]

The layout of every field is in docs/replays.md. ``VERSION`` changes when a field is removed or changes meaning
(a reader refuses a newer version than its own); a field added without changing the others keeps it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from agents.storage.run_dir import atomic_write
from jaxgame import constants as C

#: the ``"format"`` of every replay file
FORMAT = "jaxgame-replay"
#: the layout this code writes and the newest it reads
VERSION = 1
#: what a record must hold for this reader (docs/replays.md)
REQUIRED = (
    "format",
    "version",
    "settings",
    "rules",
    "players",
    "steps",
    "placements",
    "state",
    "actions",
    "fight",
    "policy",
)


def dumps(record: dict) -> str:
    """The file's text: compact JSON (no spaces), keys in the record's order; the same record, the same text."""
    return json.dumps(record, separators=(",", ":"), allow_nan=False)


def write(record: dict, path) -> int:
    """Write ``record`` to ``path`` atomically (a file, its directory created); returns the bytes written.
    ``ValueError`` for a record of another format or version."""
    check(record, str(path))
    data = (dumps(record) + "\n").encode("utf-8")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda f: f.write(data))
    return len(data)


def read(path) -> dict:
    """The record in ``path``; ``ValueError`` naming what was found when it is not JSON (a truncated file), not a
    replay, of a newer version than ``VERSION`` or missing a field."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        record = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(
            f"{path}: not a complete replay file (invalid JSON at line {err.lineno} column "
            f"{err.colno}: {err.msg}; truncated?)"
        ) from None
    check(record, str(path))
    return record


def check(record, where: str = "record") -> None:
    """``ValueError`` unless ``record`` is a replay record this code reads: ``FORMAT``, an int version from 1 to
    ``VERSION``, the ``REQUIRED`` fields, actions of 8 seats for each step."""
    if not isinstance(record, dict):
        raise ValueError(f"{where}: not a {FORMAT} file (a JSON {type(record).__name__}, not an object)")
    found = record.get("format")
    if found != FORMAT:
        raise ValueError(f"{where}: not a {FORMAT} file (format {found!r})")
    version = record.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"{where}: {FORMAT} version must be an int >= 1, got {version!r}")
    if version > VERSION:
        raise ValueError(
            f"{where}: {FORMAT} version {version} is newer than this reader's ({VERSION}); update jaxgame to read it"
        )
    missing = [name for name in REQUIRED if name not in record]
    if missing:
        raise ValueError(f"{where}: {FORMAT} version {version} without the field(s) {', '.join(missing)}")
    steps, moves = record["steps"], record["actions"]
    if (
        not isinstance(moves, list)
        or len(moves) != steps
        or any(not isinstance(row, list) or len(row) != C.NUM_PLAYERS for row in moves)
    ):
        raise ValueError(f"{where}: actions must be {steps} steps of {C.NUM_PLAYERS} ints (the steps field)")


def actions(record: dict) -> np.ndarray:
    """int32[steps, 8]: each step's action of each seat (the env's action table, docs/rules.md)."""
    return np.asarray(record["actions"], np.int32).reshape(len(record["actions"]), C.NUM_PLAYERS)


__all__ = ["FORMAT", "REQUIRED", "VERSION", "actions", "check", "dumps", "read", "write"]
