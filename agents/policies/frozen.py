"""Phase transitions: a run that starts from a saved policy (``TrainConfig.init_from``).

The design's pipeline trains in phases (behaviour cloning, then distillation and RL, then a league), each phase
starting from the previous one's best policy. ``TrainConfig(init_from="RUN_DIR[:STEP]")`` (or ``baseline:NAME``)
makes a new run start from that policy's parameters:

* **Carried over:** the network's parameters (both heads and torsos), nothing else.
* **Reset:** the optimizer state (Adam's moments), the learning-rate schedule (warm it up again with
  ``warmup_updates``), the update count, the envs and their games, the random streams (from this run's seed),
  a league's pool (its first snapshot is the loaded policy) and the metrics.
* **Shapes:** the saved network must be this run's (kind, hidden sizes, activation, shared torso, independent
  learners, actions). One widening is allowed: a policy trained on ``obs="vector"`` may start a run on
  ``obs="oracle"`` (an oracle teacher from a public-observation policy): the input layers' weights of the oracle
  block start at 0, so the new policy plays exactly as the saved one until it learns to use the block.

A resumed run continues from its own checkpoints; ``init_from`` only decides update 0.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from agents.config import REFERENCE_ROLES, TrainConfig
from agents.core import networks
from agents.policies.load import PolicyError, load_policy, parse_spec, require_parameters
from agents.storage import recorded_samples
from agents.storage.datasets import DatasetError
from jaxgame.observation import OBS_SIZE

#: the config fields that fix a network's parameter shapes (besides the observation)
NETWORK_FIELDS = ("network", "hidden", "activation", "shared_torso", "independent")


class PhaseError(ValueError):
    """A saved policy that cannot start this run; the message is one line."""


def _path(key_path) -> str:
    return "/".join(str(getattr(k, "key", k)) for k in key_path)


def transfer_params(saved, fresh, widen_inputs: bool):
    """``saved`` parameters shaped like ``fresh`` (this run's freshly initialised ones): equal shapes are taken as
    saved; with ``widen_inputs``, a kernel whose first (input) axis is longer in ``fresh`` gets the saved rows
    first and zeros after (the new inputs start with no effect). ``PhaseError`` naming the first parameter that
    fits neither way, or when the two trees differ in structure. ``fresh``'s leaves may be arrays or
    ``jax.ShapeDtypeStruct``s (only their shapes and dtypes are read)."""
    saved_leaves = dict((_path(p), x) for p, x in jax.tree_util.tree_leaves_with_path(saved))
    fresh_paths = [_path(p) for p, _ in jax.tree_util.tree_leaves_with_path(fresh)]
    if sorted(saved_leaves) != sorted(fresh_paths):
        missing = sorted(set(fresh_paths) - set(saved_leaves)) or sorted(set(saved_leaves) - set(fresh_paths))
        raise PhaseError(f"the saved network's parameters are not this run's (e.g. {missing[0]})")

    def one(key_path, new):
        old = saved_leaves[_path(key_path)]
        if old.shape == new.shape:
            return jnp.asarray(old, new.dtype)
        if (
            widen_inputs
            and old.ndim == 2
            and new.ndim == 2
            and old.shape[1] == new.shape[1]
            and old.shape[0] < new.shape[0]
        ):
            return jnp.concatenate(
                [jnp.asarray(old, new.dtype), jnp.zeros((new.shape[0] - old.shape[0], new.shape[1]), new.dtype)]
            )
        raise PhaseError(
            f"parameter {_path(key_path)} is {list(old.shape)} in the saved network, {list(new.shape)} in this run's"
        )

    return jax.tree_util.tree_map_with_path(one, fresh)


def check_start(saved: TrainConfig, config: TrainConfig, name: str) -> bool:
    """``PhaseError`` unless a policy of ``saved`` can start a run of ``config``; returns whether the inputs widen
    (vector -> oracle)."""
    differing = [f for f in NETWORK_FIELDS if getattr(saved.net, f) != getattr(config.net, f)]
    if differing:
        raise PhaseError(
            f"init_from {name}: its network differs from this run's in "
            + ", ".join(f"{f} ({getattr(saved.net, f)!r} vs {getattr(config.net, f)!r})" for f in differing)
        )
    if saved.task.env != config.task.env:
        raise PhaseError(f"init_from {name}: it played {saved.task.env}, this run {config.task.env}")
    widen = saved.task.obs == "vector" and config.task.obs == "oracle"
    if saved.task.obs != config.task.obs and not widen:
        raise PhaseError(
            f"init_from {name}: it saw obs={saved.task.obs!r}, this run obs={config.task.obs!r} (only a vector "
            "policy may start an oracle run)"
        )
    return widen


def load_saved(config: TrainConfig, field: str):
    """The saved policy (``agents.policies.load.RunPolicy``) that ``config.<field>`` names (``init_from``, ``teacher``,
    ``anchor``); ``PhaseError`` (one line) for a bot's name or a policy that cannot be loaded."""
    text = config.get(field)
    try:
        spec = parse_spec(text)
    except PolicyError as err:  # an unknown player (with the closest valid ones) or a bad STEP
        raise PhaseError(f"{field} {text}: {err}") from None
    if isinstance(spec, str):
        raise PhaseError(f"{field} must name a saved policy (RUN_DIR[:STEP] or baseline:NAME), got the bot {spec!r}")
    try:
        return require_parameters(load_policy(*spec, game_only=not config.is_gymnax), f"read as {field}")
    except (PolicyError, FileNotFoundError) as err:
        raise PhaseError(f"{field} {text}: {err}") from None


def start_params(config: TrainConfig, fresh):
    """The parameters a run of ``config`` starts from: ``fresh`` (this run's initial ones), or with
    ``config.run.init_from`` the saved policy's, transferred onto ``fresh``'s shapes (``transfer_params``). Raises
    ``PhaseError`` (one line) when the policy cannot be loaded or does not fit."""
    if not config.run.init_from:
        return fresh
    policy = load_saved(config, "init_from")
    widen = check_start(policy.config, config, policy.name)
    return transfer_params(jax.device_get(policy.params), fresh, widen)


class Reference:
    """A frozen policy a run reads (``agents.algorithms.distill``): ``role`` ("teacher"/"anchor"), ``name``
    (``RUN_DIR:STEP``
    or the baseline's), ``network`` on the training env's observations (a ``networks.PublicView`` unless it reads
    the oracle's), ``oracle`` (it reads the hidden information) and ``params`` (host arrays)."""

    def __init__(self, role: str, name: str, network, oracle: bool, params):
        self.role, self.name, self.network, self.oracle, self.params = role, name, network, oracle, params


def load_reference(config: TrainConfig, role: str) -> Reference:
    """The frozen policy ``config.<role>`` names; ``PhaseError`` (one line) when it cannot be loaded or cannot
    play this run's game: another game or rules, independent learners, pixels, or an oracle anchor."""
    policy = load_saved(config, role)
    saved = policy.config
    if saved.rules() != config.rules():
        differing = sorted(k for k, v in config.rules().items() if saved.rules().get(k) != v)
        raise PhaseError(
            f"{role} {policy.name} played other rules: "
            + ", ".join(f"{k}={saved.rules().get(k)!r} (this run {config.rules()[k]!r})" for k in differing)
        )
    if saved.net.independent:
        raise PhaseError(f"{role} {policy.name} is independent learners (one network per seat); name one policy")
    allowed = ("vector", "oracle") if role == "teacher" else ("vector",)
    if saved.task.obs not in allowed:
        raise PhaseError(
            f"{role} {policy.name} saw obs={saved.task.obs!r}; a {role} must have seen "
            + " or ".join(map(repr, allowed))
        )
    oracle = saved.task.obs == "oracle"
    network = policy.network if oracle else networks.PublicView(policy.network, OBS_SIZE)
    return Reference(role, policy.name, network, oracle, jax.device_get(policy.params))


def load_references(config: TrainConfig, params=None) -> dict:
    """``{role: Reference}`` of the frozen policies ``config`` names (``teacher``, ``anchor``), loaded once;
    ``PhaseError`` (one line) when one cannot be used (``load_reference``), ``oracle_dropout_updates`` is set
    for a teacher that did not see the oracle's observation, or an anchor that plays league games
    (``league_anchor_share``) has other parameter shapes than ``params`` (this run's, arrays or
    ``ShapeDtypeStruct``s; it plays with the learner's network)."""
    references = {role: load_reference(config, role) for role in REFERENCE_ROLES if config.get(role)}
    teacher = references.get("teacher")
    if config.distill.oracle_dropout_updates and not teacher.oracle:
        raise PhaseError(
            f"oracle_dropout_updates fades an oracle teacher's hidden inputs; teacher {teacher.name} saw obs='vector'"
        )
    if config.league.league_anchor_share:
        anchor = references["anchor"]
        try:
            anchor.params = jax.device_get(transfer_params(anchor.params, params, widen_inputs=False))
        except PhaseError as err:
            raise PhaseError(f"anchor {anchor.name} plays league games with this run's network: {err}") from None
    return references


def trainer_inputs(trainer, config: TrainConfig, params) -> tuple:
    """The arguments a trainer's ``run`` / ``update`` / ``rollout`` take after the runner: its frozen policies
    (``trainer.facts.roles``) loaded and handed to it first (``load_references``; ``params``: this run's, arrays or
    ``ShapeDtypeStruct``s) or the recording it clones (``trainer.facts.reads_recording``: ``config.bc.bc_dataset``
    read and checked, ``agents.storage.recorded_samples.read``), then ``trainer.chunk_inputs()``. Each call loads
    them anew, and a trainer that clones a recording forgets it once handed over (the caller holds it).
    A recording that does not fit the run is a ``DatasetError``."""
    if trainer.facts.roles:
        trainer.use_references(load_references(config, params))
    if trainer.facts.reads_recording:
        samples, digest = recorded_samples.read(config, trainer.observation, trainer.env.num_actions)
        try:
            trainer.use_recording(samples, digest)
        except ValueError as err:
            raise DatasetError(str(err)) from None
        # the caller holds the samples from here: the trainer is cached per config (registry.built_trainer), and
        # one that kept them would keep every run's recording alive (a 1,024-game recording is 6 GB on the device)
        inputs = trainer.chunk_inputs()
        trainer.forget_recording()
        return inputs
    return trainer.chunk_inputs()


__all__ = [
    "NETWORK_FIELDS",
    "PhaseError",
    "Reference",
    "check_start",
    "load_reference",
    "load_references",
    "load_saved",
    "start_params",
    "trainer_inputs",
    "transfer_params",
]
