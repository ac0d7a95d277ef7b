"""Shipped baseline policies: trained game policies frozen into the package, usable wherever a player is named.

    policy = load_baseline("ppo_small-v1")               # .network, .params, .config, .step
    logits, value = policy.network.apply(policy.params, obs)
    python -m experiments.evaluate runs/mine --vs baseline:ppo_small-v1

Each version is in ``agents/policies/baseline_policies/``: ``NAME.msgpack`` (the parameters,
``flax.serialization.msgpack_serialize`` of the parameter tree, float32), ``NAME.json`` (the training
config that builds the network, where the parameters came from and what they measured) and ``NAME/``, the same
policy in the export format (``agents.policies.export``: ``jax.export``-serialized ``act`` functions for CPU and CUDA
and
their ``spec.json``, written by ``agents.policies.export.freeze_baseline``;
``agents.policies.exported_loader.ExportedPolicy(".../baseline_policies/NAME")`` runs them with
only jax and numpy, and ``python -m experiments.export baseline:NAME --out DIR`` writes a copy with the loader
beside it). Versions are never
overwritten: a run that beats the current baseline significantly becomes the next version (``freeze``,
``python -m experiments.baseline freeze``) and old ones stay, so results measured against ``ppo_small-v1``
stay comparable. A player spec ``baseline:NAME`` (``agents.policies.load``) loads one.

Each version carries ``NAME.sha256``: the SHA-256 of each of its files (``NAME.json``, ``NAME.msgpack`` and every
file of ``NAME/``), one line ``<hex>  <path relative to baseline_policies/>`` (``cd baseline_policies && sha256sum -c
NAME.sha256`` checks them); ``load_baseline`` verifies them first, and a mismatch is a ``BaselineError`` naming the
file. Freezing writes it (``write_digest``); a version without one loads with one warning.

Each version has a model card ``NAME.MODEL_CARD.md`` beside them (``agents.policies.card``, generated from
``NAME.json``; outside the digest, as it is derived from files the digest covers).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import re
import warnings
from pathlib import Path

import jax
import numpy as np
from flax import serialization

from agents.config import TrainConfig
from agents.policies.network import ShapeMismatchError, check_params, policy_network
from agents.policies.specs import BASELINE_DIRECTORY, BASELINE_PREFIX, available_baselines
from agents.storage.checkpoints import check_sums, read_sums, write_sums

#: where the versions live (package data)
DIRECTORY = BASELINE_DIRECTORY
#: the prefix of a baseline in a player spec
PREFIX = BASELINE_PREFIX
_NAME = re.compile(r"^[a-z0-9_]+-v[0-9]+$")


class BaselineError(ValueError):
    """A baseline that does not exist, does not load, or cannot be frozen as asked."""


def available(directory: Path | None = None) -> list[str]:
    """The shipped versions' names, sorted (``agents.policies.specs.available_baselines``)."""
    return available_baselines(directory or DIRECTORY)


def describe(name: str, directory: Path | None = None) -> dict:
    """A version's ``NAME.json``: ``config``, ``source`` (run, step, date) and ``results``."""
    path = Path(directory or DIRECTORY) / f"{name}.json"
    if not path.is_file():
        raise BaselineError(f"no baseline {name!r}; shipped: {', '.join(available(directory)) or 'none'}")
    return json.loads(path.read_text())


@dataclasses.dataclass(frozen=True)
class Baseline:
    """A loaded baseline: ``name`` is ``baseline:NAME``; ``step`` the update it was frozen at."""

    name: str
    step: int
    config: TrainConfig
    network: object
    params: object


def digest_path(name: str, directory: Path | None = None) -> Path:
    """Where version ``name``'s digest lives: ``<directory>/NAME.sha256``."""
    return Path(directory or DIRECTORY) / f"{name}.sha256"


def write_digest(name: str, directory: Path | None = None) -> Path:
    """Write ``NAME.sha256`` over the version's files as they are now (``NAME.json``, ``NAME.msgpack``, every file
    of ``NAME/``), atomically. Returns its path."""
    directory = Path(directory or DIRECTORY)
    files = [f"{name}.json", f"{name}.msgpack"]
    if (directory / name).is_dir():
        files += [f.relative_to(directory).as_posix() for f in (directory / name).rglob("*") if f.is_file()]
    return write_sums(directory, [f for f in files if (directory / f).is_file()], f"{name}.sha256")


def verify(name: str, directory: Path | None = None) -> bool:
    """Check version ``name``'s files against ``NAME.sha256`` (one hashing pass). ``BaselineError`` in one line
    naming the first file that is missing or differs; without a digest file: one warning, and False."""
    directory = Path(directory or DIRECTORY)
    path = digest_path(name, directory)
    if not path.is_file():
        warnings.warn(
            f"baseline {name!r} in {directory} has no {path.name} (frozen before digests): loading it unverified",
            RuntimeWarning,
            stacklevel=3,
        )
        return False
    try:
        sums = read_sums(path)
        if f"{name}.msgpack" not in sums or f"{name}.json" not in sums:
            raise RuntimeError(f"{path.name} does not list {name}.msgpack and {name}.json")
        check_sums(directory, sums, path.name)
    except (OSError, RuntimeError) as err:  # a mismatch (the store's RuntimeError) or an unreadable file
        raise BaselineError(f"baseline {name!r} in {directory} is damaged: {err}") from None
    return True


def load_baseline(name: str, directory: Path | None = None) -> Baseline:
    """Baseline ``name`` (e.g. ``ppo_small-v1``) on one device (``agents.policies.load.load_policy("baseline:NAME")``
    gives it as a ``RunPolicy``). ``BaselineError`` when it is not shipped, its files do not match ``NAME.sha256``
    or its parameters do not fit its network."""
    directory = Path(directory or DIRECTORY)
    describe(name, directory)  # not shipped: the error lists the versions that are
    verify(name, directory)
    meta = describe(name, directory)
    config = TrainConfig.from_dict(meta["config"]).with_overrides({"num_devices": 1})
    network, shapes = policy_network(config)  # only the network: no env steps, no trainer
    raw = serialization.msgpack_restore((directory / f"{name}.msgpack").read_bytes())
    try:
        check_params(shapes, raw, f"baseline {name!r}")
    except ShapeMismatchError as err:
        raise BaselineError(str(err)) from None
    params = jax.tree_util.tree_map(lambda s, a: jax.numpy.asarray(a, s.dtype), shapes, raw)
    return Baseline(PREFIX + name, int(meta["source"]["step"]), config, network, params)


def freeze(policy, name: str, results: dict | None = None, directory: Path | None = None) -> Path:
    """Write ``policy`` (an ``agents.policies.load.RunPolicy``: ``load_policy(run_dir, step)``) as baseline ``name``
    (``<what>-v<N>``: ``NAME.msgpack``, ``NAME.json`` and their digest ``NAME.sha256``;
    ``agents.policies.export.freeze_baseline`` adds the export ``NAME/`` and writes the digest again, as
    ``experiments.baseline freeze`` does); ``results``: what it measured (e.g. placements), kept in ``NAME.json``.
    Refuses an existing name (versions are never overwritten) and a run of independent learners. Returns the
    ``.json`` path."""
    if not _NAME.match(name):
        raise BaselineError(f"baseline names look like 'ppo_small-v2' (lowercase, -v<N>), got {name!r}")
    directory = Path(directory or DIRECTORY)
    if any((directory / f).exists() for f in (f"{name}.json", f"{name}.msgpack", f"{name}.sha256", name)):
        raise BaselineError(f"baseline {name!r} exists; versions are never overwritten: name the next one")
    if policy.config.net.independent:
        raise BaselineError(f"{policy.name} is a run of independent learners: freeze one seat's run instead")
    params = jax.tree_util.tree_map(np.asarray, jax.device_get(policy.params))
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.msgpack").write_bytes(serialization.msgpack_serialize(params))
    meta = {
        "name": name,
        "config": policy.config.to_dict(),
        "source": {
            "run": str(getattr(policy, "run_dir", policy.name)),
            "step": policy.step,
            "frozen": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        },
        "results": results or {},
    }
    path = directory / f"{name}.json"
    path.write_text(json.dumps(meta, indent=1) + "\n")
    write_digest(name, directory)  # agents.policies.export.freeze_baseline writes it again with the export NAME/
    return path


__all__ = [
    "DIRECTORY",
    "PREFIX",
    "Baseline",
    "BaselineError",
    "available",
    "describe",
    "digest_path",
    "freeze",
    "load_baseline",
    "verify",
    "write_digest",
]
