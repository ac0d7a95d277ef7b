"""Saved policies: load a training run's policy from its run directory, and name the players of a table.

    policy = load_policy("runs/mine")            # the latest good checkpoint (or step=120)
    logits, value = policy.network.apply(policy.params, obs)

A player spec is a scripted bot (``PLAYER_BOTS``), ``baseline:NAME``
(a shipped baseline policy, ``agents.policies.baselines``), ``RUN_DIR`` /
``RUN_DIR:STEP``: the policy of a training run at its latest good
checkpoint, or at checkpoint STEP (an update number), or ``EXPORT_DIR``: a
policy ``experiments.export`` wrote (``load_exported``). Problems raise
``PolicyError`` (a ``ValueError``) with a one-line message.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from agents.config import TrainConfig
from agents.core.networks import ExportedNetwork, ExportedRecurrentNetwork, OneSeat, observation_part
from agents.core.recurrent import is_recurrent
from agents.policies import baselines, exported_loader
from agents.policies.network import ShapeMismatchError, check_params, policy_network

# the player specs need no JAX (a CLI checks them before it imports JAX): agents.policies.specs
from agents.policies.specs import PLAYER_BOTS, TABLE_BOTS, PolicyError, check_player, is_baseline, parse_spec  # noqa: F401
from agents.storage.checkpoints import CHECKPOINT_DIR, CheckpointMismatchError, CheckpointStore, fresh_arrays
from agents.storage.run_dir import read_owner
from jaxgame import layout


@dataclasses.dataclass(frozen=True)
class RunPolicy:
    """A trained policy restored from a run directory (``name`` is ``RUN_DIR:STEP``), a baseline or an export
    directory (``step`` None: ``name`` is the directory)."""

    name: str
    run_dir: str
    step: int | None
    config: object  # agents.config.TrainConfig
    network: object
    params: object


def checkpoint_steps(run_dir) -> list[int]:
    """The steps (updates) of a run's saved checkpoints, oldest first; ``PolicyError`` when ``run_dir`` is not
    a training run directory (nothing is created)."""
    return _store_steps(_checkpoints_of(run_dir))


def _store_steps(directory: Path) -> list[int]:
    with CheckpointStore(directory, keep=1) as store:
        return store.steps()


def _checkpoints_of(run_dir) -> Path:
    """``run_dir/checkpoints`` of a training run; ``PolicyError`` for anything else (a file, a sweep, nothing)."""
    run_dir = Path(run_dir)
    owner = read_owner(run_dir) if run_dir.is_dir() else None
    if owner is not None and owner["tool"] != "train":
        raise PolicyError(
            f"{run_dir} is a {owner['tool']} directory (its checkpoints hold all its runs stacked); "
            "give a training run directory"
        )
    if not (run_dir / CHECKPOINT_DIR).is_dir():
        raise PolicyError(f"{run_dir}: no checkpoints/ there (is it a training run directory?)")
    return run_dir / CHECKPOINT_DIR


def is_export_dir(path) -> bool:
    """Whether ``path`` is a directory ``experiments.export`` wrote (it holds ``spec.json``)."""
    return (Path(path) / exported_loader.SPEC_FILE).is_file()


def load_exported(directory) -> RunPolicy:
    """The policy of an ``experiments.export`` directory, as a table's player: its network is the exported program
    (``agents.core.networks.ExportedNetwork``, ``ExportedRecurrentNetwork`` for a recurrent policy: the tables keep
    its carry; no parameters of its own), its config the observation, network kind
    and game rules its ``spec.json`` records. ``PolicyError`` (one line) for a directory that cannot be loaded or
    whose observation layout is not this game's (``jaxgame.layout``); a jaxlib outside ``jax.export``'s window
    warns (``ExportedPolicyVersionWarning``)."""
    try:
        exported = exported_loader.ExportedPolicy(directory)
    except exported_loader.ExportedPolicyError as err:
        raise PolicyError(str(err)) from None
    spec = exported.spec
    obs = spec.get("obs")
    if obs not in layout.LAYOUT_VERSIONS or layout.LAYOUT_VERSIONS[obs] != exported.layout_version:
        raise PolicyError(
            f"{directory}: reads the {obs!r} observation of layout version {exported.layout_version}; this game "
            f"writes layout version {layout.LAYOUT_VERSIONS.get(obs)}"
        )
    try:
        config = TrainConfig.from_fields(
            obs=obs, network=spec["network"]["kind"], hidden=tuple(spec["network"]["hidden"]), **spec["rules"]
        )
    except (KeyError, TypeError, ValueError) as err:
        raise PolicyError(f"{directory}: its {exported_loader.SPEC_FILE} names no playable config ({err})") from None
    if exported.carry_size is None:
        network = ExportedNetwork(exported.exported("greedy"), len(exported.obs_shape), exported.num_actions)
    else:
        network = ExportedRecurrentNetwork(
            exported.exported("greedy"), len(exported.obs_shape), exported.num_actions, exported.carry_size
        )
    return RunPolicy(str(directory), str(directory), None, config, network, ())


def require_parameters(policy: RunPolicy, use: str) -> RunPolicy:
    """``policy``, or ``PolicyError`` when it is an exported program (``load_exported``): it plays at a table, but has
    no parameters to ``use`` (start a run from, distil, export again, ship)."""
    if isinstance(policy.network, (ExportedNetwork, ExportedRecurrentNetwork)):
        spec = json.loads((Path(policy.run_dir) / exported_loader.SPEC_FILE).read_text())  # no re-deserializing
        raise PolicyError(
            f"{policy.name} is an exported policy: it has no parameters to {use}; give the run or baseline it was "
            f"exported from ({(spec.get('source') or {}).get('run')})"
        )
    return policy


def load_policy(run_dir, step: int | None = None, game_only: bool = True) -> RunPolicy:
    """The policy (network, parameters, config) of a run at checkpoint ``step`` (default: the latest good one),
    on one device; ``run_dir`` may be ``baseline:NAME`` (no step) or a directory ``experiments.export`` wrote (no
    step: ``load_exported``). ``game_only``: refuse a gymnax run (only game policies can play at a table).

    Example::

        policy = agents.load_policy("runs/nb")                 # or ("runs/nb", step=40), ("baseline:ppo_small-v1")
        logits, value = policy.network.apply(policy.params, observation)   # observation: float32[..., OBS_SIZE]
    """
    if is_baseline(run_dir):
        if step is not None:
            raise PolicyError(f"{run_dir}: a baseline has no checkpoint steps")
        try:
            b = baselines.load_baseline(str(run_dir)[len(baselines.PREFIX) :])
        except baselines.BaselineError as err:
            raise PolicyError(str(err)) from None
        return RunPolicy(b.name, b.name, b.step, b.config, b.network, b.params)
    if is_export_dir(run_dir):
        if step is not None:
            raise PolicyError(f"{run_dir}: an exported policy has no checkpoint steps")
        return load_exported(run_dir)
    run_dir = Path(run_dir)
    with CheckpointStore(_checkpoints_of(run_dir), keep=1) as store:
        saved = store.read_config(step)
        if "sweep" in saved:  # a sweep directory written before run.json existed
            raise PolicyError(
                f"{run_dir} is a sweep directory (its checkpoints hold all its runs stacked); "
                "give a training run directory"
            )
        config = TrainConfig.from_dict(saved["config"])
        if game_only and config.is_gymnax:
            raise PolicyError(f"{run_dir} trained on {config.task.env}; only game policies can play at a table")
        # one device, whatever the run trained on: the parameters are replicated
        config = config.with_overrides({"num_devices": 1})
        network, abstract = policy_network(config)  # only the network: no env steps, no trainer
        step, params, _ = store.restore_subtree("params", step)
    try:
        check_params(abstract, params, f"{run_dir}:{step}")
    except ShapeMismatchError as err:
        raise CheckpointMismatchError(str(err)) from None
    # fresh (uncommitted) arrays, like a new run's and a baseline's: restored ones are committed to a device, and
    # jit would lower each table they sit at as another program (explicit shardings), which misses the cache
    return RunPolicy(f"{run_dir}:{step}", str(run_dir), step, config, network, fresh_arrays(params))


def seat_policies(policy: RunPolicy) -> list[RunPolicy]:
    """An independent-learners run as 8 players, ``RUN_DIR:STEP#seatP`` (seat P's learner, in any seat);
    any other run as itself."""
    if not policy.config.net.independent:
        return [policy]
    return [
        dataclasses.replace(policy, name=f"{policy.name}#seat{p}", network=OneSeat(policy.network.base, p))
        for p in range(policy.network.num_seats)
    ]


#: the observation kinds that can share a table: the game then observes both (``obs="both"``) and each policy reads
#: its own part (``table_networks``)
SHARED_TABLE_OBS = ("vector", "pixels")


def table_observations(policies, learner: str | None = None) -> str:
    """The observation kind of the game ``policies`` sit at (with ``learner``: also a learner's seat of that kind,
    ``agents.interop``): their kind when they share one, ``"both"`` when vector and pixel players sit together
    (each reads its own part, ``table_networks``); ``PolicyError`` for any other mix (an oracle policy sees what
    no other seat's policy is trained on: it sits with oracle policies only). ``"vector"`` for no players."""
    kinds = {p.config.task.obs for p in policies} | ({learner} if learner is not None else set())
    if len(kinds) <= 1:
        return kinds.pop() if kinds else "vector"
    if kinds <= set(SHARED_TABLE_OBS):
        return "both"
    players = [f"{p.name}: {p.config.task.obs}" for p in policies] + ([f"the learner: {learner}"] if learner else [])
    raise PolicyError(
        "policies at one table must use the same observations, or vector and pixel ones together; "
        "got " + ", ".join(players)
    )


def check_same_observations(policies) -> None:
    """Policies whose observations are written as one array (a dataset's field) must share the obs kind."""
    kinds = {p.config.task.obs for p in policies}
    if len(kinds) > 1:
        raise PolicyError(
            "policies at one table must use the same observations; got "
            + ", ".join(f"{p.name}: {p.config.task.obs}" for p in policies)
        )


def require_feed_forward(policy: RunPolicy, what: str) -> None:
    """``PolicyError`` for a recurrent policy (``network="gru"``, ``agents.core.recurrent``) where only feed-forward
    policies play yet (an export, the env views' opponents): ``what`` names where (its players call
    ``network.apply(params, obs)``, with no carry; the tables keep one, ``table_networks``)."""
    if is_recurrent(policy.network):
        raise PolicyError(
            f"{policy.name} is a recurrent policy (network={policy.config.net.network!r}): {what} play feed-forward "
            "policies only for now"
        )


def table_networks(policies, game) -> tuple:
    """The networks of ``policies`` at ``game``'s table: each as it is, or on its own part of the observations when
    the game observes both kinds (``table_observations``: ``"both"``, ``agents.core.networks.observation_part``).
    A recurrent policy plays too: the tables keep its carry (``agents.arena.tables``)."""
    if game.obs_kind != "both":
        return tuple(p.network for p in policies)
    return tuple(observation_part(p.network, p.config.task.obs) for p in policies)


def rule_differences(policies, table_rules: dict | None = None) -> list[str]:
    """Human-readable notes on runs whose game rules differ from the table's: ``table_rules`` (a
    ``TrainConfig.rules()`` dict), by default the first policy's."""
    if table_rules is None:
        if not policies:
            return []
        table_rules, policies = policies[0].config.rules(), policies[1:]
    return [
        f"{p.name} trained with {p.config.rules()}, plays at a table with {table_rules}"
        for p in policies
        if p.config.rules() != table_rules
    ]
