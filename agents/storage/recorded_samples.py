"""A recording (``agents.pipeline.recording``, ``python -m experiments.record``) as the samples a clone trains on
(``agents.algorithms.bc.DatasetCloning``): the fields it reads, the checks of a recording against the run's config,
the samples of one or several recordings joined with their digest, and their size. Host machinery: files and numpy.

    samples, digest = read(config, observation, num_actions)    # FIELDS -> numpy arrays, sha256 hex
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

import numpy as np

from agents.config import TrainConfig
from agents.storage.datasets import Dataset, DatasetError, open_dataset
from jaxgame.config import GameConfig

#: the recording's fields a dataset run reads
FIELDS = ("obs", "mask", "action", "outcome", "decision", "game")


def digest(data: Dataset) -> str:
    """sha256 over the shards' sha256s: equal digests, equal samples."""
    return hashlib.sha256("".join(s["sha256"] for s in data.manifest["shards"]).encode()).hexdigest()


def check(data: Dataset, config: TrainConfig, observation) -> None:
    """``DatasetError`` (one line naming the directory) unless ``data`` holds a recording's fields
    (``FIELDS``) with ``observation``'s per-sample shape and dtype (``ShapeDtypeStruct`` of one seat's
    observation), ``config``'s observation kind and game rules (every ``GameConfig`` field in the manifest's meta,
    those a ``TrainConfig`` cannot set at their defaults)."""
    where = data.directory
    missing = [f for f in FIELDS if f not in data.fields]
    if missing:
        raise DatasetError(f"{where}: no field(s) {missing}: not a recording of python -m experiments.record")
    meta = data.manifest.get("meta") or {}
    if meta.get("obs", config.task.obs) != config.task.obs:
        raise DatasetError(f"{where} holds {meta['obs']!r} observations; the run has obs={config.task.obs!r}")
    obs = data.fields["obs"]
    if tuple(obs["shape"]) != tuple(observation.shape) or np.dtype(obs["dtype"]) != np.dtype(observation.dtype):
        raise DatasetError(
            f"{where}: observations are {np.dtype(obs['dtype'])}{obs['shape']}, the run's "
            f"{np.dtype(observation.dtype)}{list(observation.shape)}"
        )
    rules = meta.get("rules", {})
    # every rule, those a TrainConfig leaves at their defaults too, as the manifest's JSON holds them
    run_rules = json.loads(json.dumps(dataclasses.asdict(GameConfig(**config.rules()))))
    differing = {k: (rules[k], v) for k, v in run_rules.items() if k in rules and rules[k] != v}
    if differing:
        raise DatasetError(
            f"{where} was recorded with other rules: "
            + ", ".join(f"{k}={old!r} (the run has {new!r})" for k, (old, new) in differing.items())
            + "; set those rule fields in the run's config, or record with the run's rules"
        )


def open_checked(config: TrainConfig, observation, num_actions: int) -> list[Dataset]:
    """``config.bc.bc_dataset``'s datasets (``BCConfig.dataset_dirs``), opened and each checked (``check``,
    and its action count): ``DatasetError`` with a one-line message naming the directory."""
    datasets = []
    for directory in config.bc.dataset_dirs:
        data = open_dataset(directory)
        check(data, config, observation)
        if data.fields["mask"]["shape"] != [num_actions]:
            raise DatasetError(
                f"{directory}: action masks of {data.fields['mask']['shape']} actions, the run's game has {num_actions}"
            )
        datasets.append(data)
    return datasets


def joined(datasets: list[Dataset]) -> tuple[dict, str]:
    """``(samples, digest)``: the ``FIELDS`` of every dataset's samples, concatenated in order, with each
    dataset's ``game`` shifted past the games of those before it (a game of one recording is never another's), and
    ``digest`` of one dataset, or the sha256 over the digests of several in order."""
    loaded, offset = [], 0
    for data in datasets:
        samples = data.load()
        samples = {name: samples[name] for name in FIELDS}
        samples["game"] = samples["game"].astype(np.int64) + offset
        offset = int(samples["game"].max()) + 1 if samples["game"].size else offset
        loaded.append(samples)
    digests = [digest(data) for data in datasets]
    joined_digest = digests[0] if len(digests) == 1 else hashlib.sha256("".join(digests).encode()).hexdigest()
    return {name: np.concatenate([s[name] for s in loaded]) for name in FIELDS}, joined_digest


def read(config: TrainConfig, observation, num_actions: int) -> tuple[dict, str]:
    """``(samples, digest)`` of ``config.bc.bc_dataset`` (one directory, or several cloned as one): each recording
    opened and checked (``open_checked``), then ``joined``. Raises ``DatasetError`` with a one-line message."""
    return joined(open_checked(config, observation, num_actions))


def num_bytes(directories) -> int:
    """The bytes of the ``FIELDS`` of the recordings in ``directories`` (their manifests' sizes; nothing is read)."""
    total = 0
    for directory in directories:
        data = open_dataset(directory)
        total += data.num_samples * sum(
            int(np.dtype(data.fields[f]["dtype"]).itemsize * np.prod(data.fields[f]["shape"])) for f in FIELDS
        )
    return total


__all__ = ["FIELDS", "check", "digest", "joined", "num_bytes", "open_checked", "read"]
