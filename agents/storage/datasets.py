"""On-disk datasets of recorded samples: numpy arrays in sharded ``.npz`` files plus a verified manifest.

A dataset holds named fields, each an array with a leading sample axis: ``field[N, *shape]`` of one fixed dtype
(e.g. ``obs float32[N, 8, 300]``, ``pixels uint8[N, 72, 20]``, ``mask bool[N, A]``, ``action int32[N]``). The module is
generic over the field names; bool, (u)int and float dtypes of any per-sample shape round-trip exactly.

Layout of a dataset directory::

    shard-00000.npz   # np.savez (no pickle): one array per field, all with the same leading length n_0
    shard-00001.npz   # same field names, dtypes and per-sample shapes, n_1 samples
    ...
    manifest.json     # {"format": FORMAT, "jaxgame_version", "created" (UTC ISO), "fields": {name: {"dtype",
                      #  "shape"}}, "num_samples", "shards": [{"file", "samples", "bytes", "sha256"}], "meta"}

Guarantees:

* **Atomic, finished writes.** Every file is written under a temporary name in the directory and renamed into place
  (``agents.storage.run_dir.atomic_write``); ``manifest.json`` is written last, so a directory without it is an
  unfinished
  write and ``open_dataset`` refuses it.
* **Verification.** ``Dataset.shard(i)`` checks the file's size and sha256 against the manifest before loading it
  (``np.load(allow_pickle=False)``), then its field names, dtypes, per-sample shapes and sample count. A corrupt,
  truncated or missing shard raises ``DatasetError`` (a ``ValueError`` with a one-line message naming the file); it is
  never silently read.
"""

import hashlib
import json
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from agents.storage.run_dir import atomic_write, write_json
from agents.utils.versions import package_version

__all__ = ["FORMAT", "MANIFEST", "DatasetError", "check_new_directory", "write_dataset", "open_dataset", "Dataset"]

FORMAT = "jaxgame-dataset/1"
MANIFEST = "manifest.json"
_MANIFEST_KEYS = ("format", "jaxgame_version", "created", "fields", "num_samples", "shards", "meta")
_RESERVED = ("file", "allow_pickle")  # np.savez's own parameter names (numpy >= 2.1) cannot be field names


class DatasetError(ValueError):
    """A dataset directory that cannot be written or read as asked; the message is one line naming the file."""


def _shard_name(index: int) -> str:
    return f"shard-{index:05d}.npz"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _check_shard(index: int, shard, fields: dict | None) -> tuple[dict[str, np.ndarray], int]:
    """Validate one shard (dict name -> array ``[n, *shape]``) against the first shard's ``fields``; returns
    (arrays, n). ``fields`` is None for the first shard."""
    if not isinstance(shard, dict) or not shard:
        raise DatasetError(f"shard {index}: expected a non-empty dict of name -> array, got {type(shard).__name__}")
    arrays, lengths = {}, set()
    for name, value in shard.items():
        if not isinstance(name, str) or not name or name in _RESERVED:
            raise DatasetError(f"shard {index}: field name {name!r} is not allowed")
        try:
            arr = np.asarray(value)
        except ValueError as e:  # e.g. a ragged nested list
            raise DatasetError(f"shard {index}, field {name!r}: not an array ({e})".replace("\n", " ")) from None
        if arr.dtype.hasobject:
            raise DatasetError(f"shard {index}, field {name!r}: object dtype cannot be stored (no pickle)")
        if arr.ndim == 0:
            raise DatasetError(f"shard {index}, field {name!r}: a scalar, it needs a leading sample axis")
        arrays[name] = arr
        lengths.add(arr.shape[0])
    if len(lengths) > 1:
        sizes = ", ".join(f"{name!r}: {arr.shape[0]}" for name, arr in arrays.items())
        raise DatasetError(f"shard {index}: fields have unequal leading lengths ({sizes})")
    if fields is not None:
        if set(arrays) != set(fields):
            raise DatasetError(f"shard {index}: field names {sorted(arrays)} differ from shard 0's {sorted(fields)}")
        for name, arr in arrays.items():
            dtype, shape = np.dtype(fields[name]["dtype"]), fields[name]["shape"]
            if arr.dtype != dtype or list(arr.shape[1:]) != shape:
                raise DatasetError(
                    f"shard {index}, field {name!r}: {arr.dtype.name}{list(arr.shape[1:])} per "
                    f"sample differs from shard 0's {dtype.name}{shape}"
                )
    return arrays, lengths.pop()


def check_new_directory(directory) -> None:
    """``DatasetError`` unless ``directory`` is missing or an empty directory (where a dataset may be written)."""
    directory = Path(directory)
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise DatasetError(f"{directory} exists and is not empty (a dataset goes to a new or empty directory)")


def write_dataset(directory, shards, meta: dict | None = None) -> dict:
    """Write ``shards`` to ``directory`` and return the manifest dict.

    ``shards`` is an iterable (a generator is fine) of dicts name -> array ``[n_i, *shape]``: within a shard every
    array has the same leading length n_i (0 is allowed), and every shard has the first shard's field names, dtypes
    and per-sample shapes; object dtypes are refused. ``directory`` must not exist or be empty; it is created
    (parents too). Each shard goes to ``shard-00000.npz``, ``shard-00001.npz``, ... and ``manifest.json`` last.
    ``meta`` (JSON-serialisable dict, e.g. players, rules, seed) is stored as given. Raises ``DatasetError`` (a
    shard refused mid-way leaves the earlier shards but no manifest: an unfinished write).
    """
    directory = Path(directory)
    meta = {} if meta is None else meta
    if not isinstance(meta, dict):
        raise DatasetError(f"{directory}: meta must be a dict, got {type(meta).__name__}")
    try:
        json.dumps(meta)
    except (TypeError, ValueError) as e:
        raise DatasetError(f"{directory}: meta is not JSON-serialisable ({e})") from None
    check_new_directory(directory)
    directory.mkdir(parents=True, exist_ok=True)

    fields, entries = None, []
    for index, shard in enumerate(shards):
        arrays, samples = _check_shard(index, shard, fields)
        if fields is None:
            fields = {name: {"dtype": arr.dtype.str, "shape": list(arr.shape[1:])} for name, arr in arrays.items()}
        path = directory / _shard_name(index)
        atomic_write(path, lambda fh, arrays=arrays: np.savez(fh, **arrays))
        entries.append({"file": path.name, "samples": samples, "bytes": path.stat().st_size, "sha256": _sha256(path)})
    if not entries:
        raise DatasetError(f"{directory}: no shards to write (a dataset needs at least one)")

    manifest = {
        "format": FORMAT,
        "jaxgame_version": package_version("jaxgame"),
        "created": datetime.now(timezone.utc).isoformat(),
        "fields": fields,
        "num_samples": sum(entry["samples"] for entry in entries),
        "shards": entries,
        "meta": meta,
    }
    write_json(directory / MANIFEST, manifest)
    return manifest


def open_dataset(directory) -> "Dataset":
    """Open a finished dataset directory (its manifest is read and checked; shards are verified when read)."""
    return Dataset(directory)


class Dataset:
    """A dataset written by ``write_dataset``. ``fields``: name -> {"dtype": str, "shape": list[int]} (per-sample
    shape, so field ``name`` of a shard is ``dtype[n, *shape]``); ``num_samples`` and ``num_shards`` as in the
    manifest."""

    def __init__(self, directory):
        self.directory = Path(directory)
        path = self.directory / MANIFEST
        if not self.directory.is_dir() or not path.is_file():
            raise DatasetError(f"{self.directory}: no {MANIFEST}: not a dataset, or its write did not finish")
        try:
            manifest = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise DatasetError(f"{path}: not valid JSON ({e})") from None
        if not isinstance(manifest, dict):
            raise DatasetError(f"{path}: expected a JSON object, got {type(manifest).__name__}")
        if "format" in manifest and manifest["format"] != FORMAT:
            raise DatasetError(f"{path}: format {manifest['format']!r} is not {FORMAT!r}")
        missing = [key for key in _MANIFEST_KEYS if key not in manifest]
        if missing:
            raise DatasetError(f"{path}: missing keys {missing}")
        shards = manifest["shards"]
        if not (
            isinstance(shards, list)
            and shards
            and all(
                isinstance(s, dict)
                and {"file", "samples", "bytes", "sha256"} <= set(s)
                and isinstance(s["file"], str)
                and Path(s["file"]).name == s["file"]
                for s in shards
            )
        ):
            raise DatasetError(f"{path}: malformed 'shards' list")
        if sum(s["samples"] for s in shards) != manifest["num_samples"]:
            raise DatasetError(f"{path}: num_samples {manifest['num_samples']} is not the shards' total")
        self.manifest = manifest
        self.fields: dict = manifest["fields"]
        self.num_samples: int = manifest["num_samples"]
        self.num_shards: int = len(shards)

    def _verified_path(self, index: int) -> Path:
        if not 0 <= index < self.num_shards:
            raise IndexError(f"shard index {index} out of range for {self.num_shards} shards in {self.directory}")
        entry = self.manifest["shards"][index]
        path = self.directory / entry["file"]
        if not path.is_file():
            raise DatasetError(f"{path}: shard file is missing")
        size = path.stat().st_size
        if size != entry["bytes"]:
            raise DatasetError(f"{path} is truncated or extended: {size} bytes, the manifest says {entry['bytes']}")
        digest = _sha256(path)
        if digest != entry["sha256"]:
            raise DatasetError(
                f"{path} is corrupt: its sha256 {digest} does not match the manifest's {entry['sha256']}"
            )
        return path

    def shard(self, index: int) -> dict[str, np.ndarray]:
        """Shard ``index`` (0 <= index < num_shards, else IndexError), verified, then loaded:
        name -> ``dtype[n, *shape]`` as in ``fields``, n the shard's sample count."""
        path, samples = self._verified_path(index), self.manifest["shards"][index]["samples"]
        try:
            with np.load(path, allow_pickle=False) as npz:
                arrays = {name: npz[name] for name in npz.files}
        except Exception as e:  # a file matching its sha256 but unreadable: the manifest itself is wrong
            raise DatasetError(f"{path}: cannot be loaded ({type(e).__name__}: {e})".replace("\n", " ")) from None
        if set(arrays) != set(self.fields):
            raise DatasetError(f"{path}: fields {sorted(arrays)} differ from the manifest's {sorted(self.fields)}")
        for name, arr in arrays.items():
            dtype, shape = np.dtype(self.fields[name]["dtype"]), list(self.fields[name]["shape"])
            if arr.dtype != dtype or list(arr.shape) != [samples, *shape]:
                raise DatasetError(
                    f"{path}: field {name!r} is {arr.dtype.name}{list(arr.shape)}, the manifest says "
                    f"{dtype.name}{[samples, *shape]}"
                )
        return arrays

    def verify(self) -> None:
        """Check every shard's size and sha256 against the manifest; raises ``DatasetError`` at the first mismatch."""
        for index in range(self.num_shards):
            self._verified_path(index)

    def load(self) -> dict[str, np.ndarray]:
        """All shards, each verified, concatenated in order: name -> ``dtype[num_samples, *shape]``."""
        shards = [self.shard(index) for index in range(self.num_shards)]
        return {name: np.concatenate([shard[name] for shard in shards]) for name in self.fields}
