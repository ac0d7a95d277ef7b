"""Where a command writes: check an output path can be written BEFORE any work, creating nothing.

    check_writable("runs/ratings-ab")                 # a directory: it or its first existing ancestor is writable
    check_writable("plots/curves.png", kind="file")   # a file: not a directory, its directory writable

A path that cannot be written raises ``UnwritableOutputError`` (a ``ValueError``) with one line naming it and why.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


class UnwritableOutputError(ValueError):
    """An output path that cannot be written (a file where a directory goes, a read-only or virtual filesystem)."""


def _first_existing(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists (``.`` for a relative path whose parents are all missing)."""
    for candidate in (path, *path.parents):
        if candidate.exists() or candidate.is_symlink():
            return candidate
    return Path(".")


def _probe(directory: Path) -> str | None:
    """Why a file cannot be created in the existing ``directory`` (None: it can). Root passes ``os.access`` on
    ``/proc``, so this opens an unnamed temporary file there (``O_TMPFILE``; else a named one, removed at once)."""
    if not os.access(directory, os.W_OK | os.X_OK):
        return "permission denied"
    try:
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as err:
        return err.strerror or type(err).__name__
    return None


def check_writable(path, kind: str = "dir", flag: str | None = None) -> None:
    """Raise ``UnwritableOutputError`` unless ``path`` can be written as a ``kind`` (``"dir"``: a directory
    created with its parents if missing; ``"file"``: a file whose parent directories are created if missing).
    Creates nothing. ``flag``: how the message names the path (e.g. ``--out``)."""
    if kind not in ("dir", "file"):
        raise ValueError(f"check_writable kind must be 'dir' or 'file', got {kind!r}")
    path = Path(path)
    name = f"{flag} {path}" if flag else str(path)
    if kind == "dir" and path.exists() and not path.is_dir():
        raise UnwritableOutputError(f"{name} is a file, not a directory")
    if kind == "file" and path.is_dir():
        raise UnwritableOutputError(f"{name} is a directory, not a file")
    if kind == "file" and path.exists() and not os.access(path, os.W_OK):
        raise UnwritableOutputError(f"{name}: cannot write (permission denied)")
    start = path if kind == "dir" else path.parent
    existing = _first_existing(start)
    if not existing.is_dir():
        raise UnwritableOutputError(f"{name}: cannot be created ({existing} is not a directory)")
    why = _probe(existing)
    if why is not None:
        raise UnwritableOutputError(f"{name}: cannot write in {existing} ({why})")


__all__ = ["UnwritableOutputError", "check_writable"]
