"""Write a trained policy as a standalone, serialized function (``python -m experiments.export``).

    export_policy(load_policy("runs/mine"), "exported/")

The directory holds ``act_greedy.jaxexport`` and ``act_sample.jaxexport`` (``jax.export`` serializations of
``act(obs, mask[, key]) -> (action, logits, value)`` with a symbolic batch dimension, lowered for each of
``platforms``), ``spec.json`` (observation kind and shape, rules, sizes, versions, where the parameters came
from) and ``policy_loader.py`` (``agents.policies.exported_loader``: loads and runs them with only jax and
numpy). The parameters are constants of the serialized functions.

A recurrent policy (``network="gru"``, ``agents.core.recurrent``) is exported as one step of its memory:
``act(obs, mask, carry float32[B, H], reset bool[B][, key]) -> (action, logits, value, carry)``, the carry put back
to zeros where ``reset`` before the step reads ``obs`` (the seat's previous step ended its game); ``spec.json``
then says ``"recurrent": {"carry_size": H}`` and the directory is format version 2, which a loader older than
recurrent exports refuses instead of calling wrongly.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from agents.core import distributions
from agents.core.recurrent import is_recurrent
from agents.policies import baselines, card
from agents.policies import exported_loader as exported_policy_loader
from agents.policies.load import PolicyError, RunPolicy, require_parameters, seat_policies
from agents.utils.versions import package_versions
from jaxgame import constants as C
from jaxgame import layout

DEFAULT_PLATFORMS = ("cpu", "cuda")
FILES = {"greedy": "act_greedy.jaxexport", "sample": "act_sample.jaxexport"}
LOADER_FILE = "policy_loader.py"


def one_seat(policy: RunPolicy, seat: int | None) -> RunPolicy:
    """The policy an export writes: ``seat``'s learner of an independent-learners run (``seat`` required there),
    else ``policy`` itself (``seat`` must be None)."""
    if policy.config.net.independent:
        if seat is None:
            raise PolicyError(f"{policy.name} trained one learner per seat: choose one with seat=0..7")
        return seat_policies(policy)[seat]
    if seat is not None:
        raise PolicyError(f"{policy.name} has one policy for every seat; seat={seat} applies to independent runs")
    return policy


def new_export_dir(out_dir) -> Path:
    """``out_dir`` as a Path; ``PolicyError`` unless it is new or an empty directory (an export never mixes with
    other files)."""
    out_dir = Path(out_dir)
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise PolicyError(f"{out_dir} exists and is not an empty directory; give a new one")
    return out_dir


def export_policy(
    policy: RunPolicy, out_dir, platforms=DEFAULT_PLATFORMS, seat: int | None = None, loader: bool = True
) -> dict:
    """Write ``policy`` to ``out_dir`` (which must not exist or be empty) and return the spec written.
    ``loader=False`` leaves out the copy of the loader (the shipped baselines: the package has it as
    ``agents.policies.exported_loader``)."""
    policy = one_seat(require_parameters(policy, "export again"), seat)
    out_dir = new_export_dir(out_dir)
    platforms = tuple(platforms)
    if not platforms or any(p not in ("cpu", "cuda", "rocm", "tpu") for p in platforms):
        raise PolicyError(f"platforms must be among cpu, cuda, rocm, tpu; got {platforms!r}")
    observation = card.observation(policy.config)
    obs_shape, obs_dtype = observation["shape"], observation["dtype"]
    greedy, sample = _act_functions(policy.network, policy.params)
    (batch,) = jax.export.symbolic_shape("B")
    obs = jax.ShapeDtypeStruct((batch, *obs_shape), obs_dtype)
    mask = jax.ShapeDtypeStruct((batch, C.NUM_ACTIONS), np.bool_)
    key = jax.ShapeDtypeStruct((2,), np.uint32)
    recurrent = is_recurrent(policy.network)
    memory = ()
    if recurrent:
        memory = (
            jax.ShapeDtypeStruct((batch, policy.network.carry_size), np.float32),
            jax.ShapeDtypeStruct((batch,), np.bool_),
        )
    serialized = {
        "greedy": jax.export.export(jax.jit(greedy), platforms=platforms)(obs, mask, *memory).serialize(),
        "sample": jax.export.export(jax.jit(sample), platforms=platforms)(obs, mask, *memory, key).serialize(),
    }
    spec = {
        "format": exported_policy_loader.FORMAT,
        "format_version": exported_policy_loader.RECURRENT_FORMAT_VERSION
        if recurrent
        else exported_policy_loader.FORMAT_VERSION,
        "name": policy.name,
        "source": {"run": policy.run_dir, "step": policy.step, "seat": seat},
        "obs": policy.config.task.obs,
        "obs_shape": list(obs_shape),
        "obs_dtype": obs_dtype.name,
        "layout_version": layout.LAYOUT_VERSIONS[policy.config.task.obs],
        "layout_fingerprint": layout.layout_fingerprint(policy.config.task.obs),
        "num_actions": C.NUM_ACTIONS,
        "num_players": C.NUM_PLAYERS,
        "rules": policy.config.rules(),
        "network": {"kind": policy.config.net.network, "hidden": list(policy.config.net.hidden)},
        "platforms": list(platforms),
        "signature": RECURRENT_SIGNATURE if recurrent else SIGNATURE,
        "files": dict(FILES),
        "versions": package_versions("jax", "jaxlib", "jaxgame"),
        "exported": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    if recurrent:
        spec["recurrent"] = {"carry_size": int(policy.network.carry_size)}
    out_dir.mkdir(parents=True, exist_ok=True)
    for variant, data in serialized.items():
        (out_dir / FILES[variant]).write_bytes(bytes(data))
    if loader:
        shutil.copyfile(exported_policy_loader.__file__, out_dir / LOADER_FILE)
    (out_dir / exported_policy_loader.SPEC_FILE).write_text(json.dumps(spec, indent=2) + "\n")
    return spec


def _act_functions(network, params):
    """``(greedy, sample)``: the functions an export serializes, the parameters closed over. Feed-forward:
    ``greedy(obs, mask)``, ``sample(obs, mask, key_data uint32[2])`` -> ``(action, logits, value)``. Recurrent:
    ``greedy(obs, mask, carry, reset)``, ``sample(obs, mask, carry, reset, key_data)`` -> ``(action, logits, value,
    carry)``, one step of ``network.apply(params, carry, obs, reset)``."""

    def act(obs, mask, memory, key_data):
        if memory:
            carry, reset = memory
            carry, logits, value = network.apply(params, carry, obs, reset)
        else:
            carry = None
            logits, value = network.apply(params, obs)
        if key_data is None:
            action = distributions.greedy(logits, mask)
        else:
            action = distributions.sample(jax.random.wrap_key_data(key_data, impl="threefry2x32"), logits, mask)
        out = (action, logits.astype(jnp.float32), value.astype(jnp.float32))
        return out if carry is None else (*out, carry.astype(jnp.float32))

    def greedy(obs, mask, *memory):
        return act(obs, mask, memory, None)

    def sample(obs, mask, *memory_and_key):
        return act(obs, mask, memory_and_key[:-1], memory_and_key[-1])

    return greedy, sample


SIGNATURE = (
    "act(obs[B, *obs_shape], mask bool[B, num_actions][, key uint32[2]]) -> "
    "(action int32[B], logits float32[B, num_actions], value float32[B])"
)
RECURRENT_SIGNATURE = (
    "act(obs[B, *obs_shape], mask bool[B, num_actions], carry float32[B, carry_size], reset bool[B][, key uint32[2]])"
    " -> (action int32[B], logits float32[B, num_actions], value float32[B], carry float32[B, carry_size])"
)


def freeze_baseline(policy: RunPolicy, name: str, results: dict | None = None, directory=None) -> Path:
    """Ship ``policy`` as baseline ``name``: ``agents.policies.baselines.freeze`` (parameters and ``NAME.json``), its
    export in ``NAME/`` beside them (without the loader copy: ``agents.policies.exported_loader`` is in the
    package) and its model card ``NAME.MODEL_CARD.md`` (``agents.policies.card``). Returns the ``.json`` path."""
    path = baselines.freeze(require_parameters(policy, "ship"), name, results, directory)
    export_policy(dataclasses.replace(policy, name=baselines.PREFIX + name), path.parent / name, loader=False)
    baselines.write_digest(name, path.parent)  # NAME.sha256 over NAME.json, NAME.msgpack and the export NAME/
    card.write_card(name, path.parent)  # derived from NAME.json: outside the digest
    return path
