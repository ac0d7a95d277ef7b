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
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import re
from pathlib import Path

import jax
import numpy as np
from flax import serialization

from agents.config import TrainConfig
from agents.policies.network import ShapeMismatchError, check_params, policy_network

#: where the versions live (package data)
DIRECTORY = Path(__file__).resolve().parent / "baseline_policies"
#: the prefix of a baseline in a player spec
PREFIX = "baseline:"
_NAME = re.compile(r"^[a-z0-9_]+-v[0-9]+$")


class BaselineError(ValueError):
    """A baseline that does not exist, does not load, or cannot be frozen as asked."""


def available(directory: Path | None = None) -> list[str]:
    """The shipped versions' names, sorted."""
    return sorted(p.stem for p in Path(directory or DIRECTORY).glob("*.json") if (p.with_suffix(".msgpack")).exists())


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


def load_baseline(name: str, directory: Path | None = None) -> Baseline:
    """Baseline ``name`` (e.g. ``ppo_small-v1``) on one device (``agents.policies.load.load_policy("baseline:NAME")``
    gives it as a ``RunPolicy``). ``BaselineError`` when it is not shipped or its parameters do not fit its
    network."""
    directory = Path(directory or DIRECTORY)
    meta = describe(name, directory)
    config = dataclasses.replace(TrainConfig.from_dict(meta["config"]), num_devices=1)
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
    (``<what>-v<N>``: ``NAME.msgpack`` and ``NAME.json``; ``agents.policies.export.freeze_baseline`` adds the export
    ``NAME/``, as ``experiments.baseline freeze`` does); ``results``: what it measured (e.g. placements), kept in
    ``NAME.json``. Refuses an
    existing name (versions are never overwritten) and a run of independent learners. Returns the ``.json``
    path."""
    if not _NAME.match(name):
        raise BaselineError(f"baseline names look like 'ppo_small-v2' (lowercase, -v<N>), got {name!r}")
    directory = Path(directory or DIRECTORY)
    if any((directory / f).exists() for f in (f"{name}.json", f"{name}.msgpack", name)):
        raise BaselineError(f"baseline {name!r} exists; versions are never overwritten: name the next one")
    if policy.config.independent:
        raise BaselineError(f"{policy.name} is a run of independent learners: freeze one seat's run instead")
    params = jax.tree_util.tree_map(np.asarray, jax.device_get(policy.params))
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.msgpack").write_bytes(serialization.msgpack_serialize(params))
    meta = {
        "name": name,
        "config": policy.config.to_dict(),
        "source": {"run": str(getattr(policy, "run_dir", policy.name)), "step": policy.step,
                   "frozen": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")},
        "results": results or {},
    }
    path = directory / f"{name}.json"
    path.write_text(json.dumps(meta, indent=1) + "\n")
    return path


__all__ = ["DIRECTORY", "PREFIX", "Baseline", "BaselineError", "available", "describe", "freeze", "load_baseline"]
