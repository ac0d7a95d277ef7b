"""Data parallelism over devices and hosts, inside JAX's own machinery (``jax.sharding``, ``jax.distributed``).

Single node: ``TrainConfig.num_devices`` (0 = all of ``jax.devices()``) picks the devices; with more than
one, the trainers (``agents.algorithms.base.Trainer``) build a 1-D ``Mesh`` with the axis ``"data"`` and

- shard every env-batched leaf of the runner (env states, last observation and mask, episode totals,
  A2C's pending decisions) along its leading env axis: ``NamedSharding(mesh, P("data"))``;
- replicate everything else (parameters, optimizer state, keys, counters, hyperparameters);
- constrain the rollout's carry and PPO's minibatches to stay sharded inside the jitted scans
  (``jax.lax.with_sharding_constraint``), so each device steps its share of the envs and computes
  the gradient of its share of every minibatch; XLA's SPMD partitioner (GSPMD) inserts the
  collectives: all-reduces (gradients, losses, the batch-wide fight/reset predicates of
  ``jaxgame.VecEnv``) and, per PPO update, one all-gather of the rollout for the global shuffle.

The program is the one-device program, partitioned: the same random draws, the same global minibatch
permutation, so a run on D devices equals the run on one device with the same ``num_envs`` up to the
order of float sums. With one device nothing is constrained and the program is exactly the
single-device one.

Several hosts: one process per host runs the same command; ``initialize`` (called by the training CLI
before JAX starts its backend) connects them with ``jax.distributed.initialize``, after which
``jax.devices()`` lists every host's devices and the same mesh spans them all. ``barrier`` lines the
processes up before each jitted chunk; ``is_main_process`` is the one that writes logs.
"""

from __future__ import annotations

import dataclasses
import os

import jax
import numpy as np
from jax._src import distributed as jax_distributed  # the coordination client has no public accessor in jax 0.10
from jax.experimental import multihost_utils
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

DATA_AXIS = "data"

#: Environment variables read by ``initialize`` when the matching argument is not given.
ENV_COORDINATOR = "JAXGAME_COORDINATOR"
ENV_NUM_PROCESSES = "JAXGAME_NUM_PROCESSES"
ENV_PROCESS_ID = "JAXGAME_PROCESS_ID"


def _env_int(name: str) -> int | None:
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"${name} must be an int, got {text!r}") from None


def initialize(
    coordinator: str | None = None, num_processes: int | None = None, process_id: int | None = None, auto: bool = False
) -> bool:
    """Connect this process to the others of a multi-host run (``jax.distributed.initialize``).

    Args (each falls back to an environment variable when None):
      coordinator: ``HOST:PORT`` of process 0's coordinator service (``$JAXGAME_COORDINATOR``,
        else jax's own ``$JAX_COORDINATOR_ADDRESS``).
      num_processes: processes in the run, one per host (``$JAXGAME_NUM_PROCESSES``).
      process_id: this process's index in [0, num_processes) (``$JAXGAME_PROCESS_ID``).
      auto: with none of the above, let JAX detect the cluster (SLURM, Open MPI, Kubernetes, Cloud TPU).

    Returns True when the distributed runtime was started, False for a plain single-process run (nothing
    given, ``auto`` off). Must run before any JAX computation. On CPU the cross-process collectives use gloo.
    """
    coordinator = coordinator or os.environ.get(ENV_COORDINATOR) or None
    num_processes = num_processes if num_processes is not None else _env_int(ENV_NUM_PROCESSES)
    process_id = process_id if process_id is not None else _env_int(ENV_PROCESS_ID)
    explicit = coordinator is not None or num_processes is not None or process_id is not None
    if not explicit and not auto:
        return False
    if jax.distributed.is_initialized():  # e.g. a second run in the same process
        return True
    if explicit:
        coordinator = coordinator or os.environ.get("JAX_COORDINATOR_ADDRESS") or None
        missing = [
            name
            for name, value in (
                ("coordinator", coordinator),
                ("num_processes", num_processes),
                ("process_id", process_id),
            )
            if value is None
        ]
        if missing:
            raise ValueError(
                f"multi-host training needs the coordinator (HOST:PORT), num_processes and process_id together; "
                f"missing {missing} (arguments coordinator/num_processes/process_id or ${ENV_COORDINATOR}/"
                f"${ENV_NUM_PROCESSES}/${ENV_PROCESS_ID})"
            )
        if ":" not in coordinator:
            raise ValueError(f"the coordinator must be HOST:PORT, got {coordinator!r}")
        if not 1 <= num_processes <= 1 << 16:
            raise ValueError(f"num_processes must be in [1, 65536], got {num_processes}")
        if not 0 <= process_id < num_processes:
            raise ValueError(f"process_id must be in [0, num_processes - 1 = {num_processes - 1}], got {process_id}")
    # Cross-process collectives of the CPU backend (the default in jax 0.10, named here for older versions);
    # GPU backends use NCCL whatever this says.
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    try:
        jax.distributed.initialize(coordinator_address=coordinator, num_processes=num_processes, process_id=process_id)
    except ValueError as err:
        if explicit:
            raise
        raise ValueError(
            f"JAX detected no cluster (SLURM, Open MPI, ...) to join ({err}); give the coordinator, num_processes "
            f"and process_id (arguments coordinator/num_processes/process_id or ${ENV_COORDINATOR}/"
            f"${ENV_NUM_PROCESSES}/${ENV_PROCESS_ID})"
        ) from None
    return True


_barriers = [0]


def barrier(name: str, timeout_s: int = 3600) -> None:
    """Wait until every process of a multi-process run gets here; nothing for a single process.

    Uses the coordination service's barrier (the one ``jax.distributed`` started; orbax uses it too), not a
    device collective: on CPU, gloo sets up its connections when a program's first collective runs and gives
    up after 30 s ("Gloo context initialization failed: DEADLINE_EXCEEDED"), which two processes that finish
    compiling a minute apart exceed. This waits up to ``timeout_s``.
    """
    if jax.process_count() == 1:
        return
    _barriers[0] += 1
    client = getattr(jax_distributed.global_state, "client", None)
    if client is None:  # not started by jax.distributed (e.g. a TPU pod slice): a device collective then
        multihost_utils.sync_global_devices(f"jaxgame:{name}:{_barriers[0]}")
        return
    client.wait_at_barrier(f"jaxgame:{name}:{_barriers[0]}", timeout_in_ms=timeout_s * 1000)


def is_main_process() -> bool:
    """Process 0 of a multi-host run (always True for a single process): the one that writes logs."""
    return jax.process_index() == 0


def resolve_devices(num_devices: int) -> list:
    """The devices of ``TrainConfig.num_devices``: 0 = all of ``jax.devices()`` (every host's), else the first n."""
    devices = jax.devices()
    if num_devices == 0:
        return devices
    if num_devices > len(devices):
        raise ValueError(
            f"TrainConfig.num_devices={num_devices} but only {len(devices)} {jax.default_backend()} device(s) "
            f"are available; use a value in [1, {len(devices)}] or 0 for all"
        )
    if jax.process_count() > 1 and num_devices != len(devices):
        raise ValueError(
            f"TrainConfig.num_devices must be 0 or {len(devices)} (every device of every host) in a "
            f"{jax.process_count()}-process run, got {num_devices}"
        )
    return devices[:num_devices]


def make_mesh(num_devices: int, num_envs: int, what: str = "TrainConfig.num_envs") -> Mesh | None:
    """The data-parallel mesh (axis ``"data"``) of a config, or None when it resolves to one device.
    ``num_envs``: the size of the sharded axis (``what`` names it in the error when the devices do not divide it)."""
    devices = resolve_devices(num_devices)
    if len(devices) == 1:
        return None
    if num_envs % len(devices):
        raise ValueError(
            f"{what} must be divisible by the number of devices ({len(devices)}), got {num_envs}; set "
            f"TrainConfig.num_devices to a divisor of it"
        )
    # jax.make_mesh orders the devices for the platform's topology (a ring on TPUs; on CPUs and GPUs the order
    # given); only its device order is taken, so the axis type stays Auto whatever jax's make_mesh defaults to
    order = jax.make_mesh((len(devices),), (DATA_AXIS,), devices=devices).devices
    return Mesh(order, (DATA_AXIS,), axis_types=(AxisType.Auto,))


def batch_spec(shape, num_envs: int) -> P:
    """``P("data")`` for an array whose leading axis is the env axis, else ``P()`` (replicated)."""
    return P(DATA_AXIS) if len(shape) >= 1 and shape[0] == num_envs else P()


def constrain_batch(tree, mesh: Mesh | None, num_envs: int):
    """Inside jit: keep every leaf of ``tree`` with a leading env axis sharded on it; others untouched.
    Identity without a mesh."""
    if mesh is None:
        return tree

    def one(x):
        if np.ndim(x) >= 1 and x.shape[0] == num_envs:
            return jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P(DATA_AXIS)))
        return x

    return jax.tree_util.tree_map(one, tree)


def constrain_axis(tree, mesh: Mesh | None, axis: int):
    """Inside jit: shard every leaf of ``tree`` along ``axis`` when its size divides by the mesh's;
    leaves that do not divide are left to the partitioner. Identity without a mesh."""
    if mesh is None:
        return tree
    size = mesh.devices.size
    spec = P(*([None] * axis + [DATA_AXIS]))

    def one(x):
        if np.ndim(x) > axis and x.shape[axis] % size == 0:
            return jax.lax.with_sharding_constraint(x, NamedSharding(mesh, spec))
        return x

    return jax.tree_util.tree_map(one, tree)


def replicated(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, P())


def field_shardings(tree, mesh: Mesh | None, num_envs: int, batched_fields):
    """A pytree like the flax dataclass ``tree`` (arrays or ``ShapeDtypeStruct``s) of ``NamedSharding``s: the leaves
    of the fields named in ``batched_fields`` sharded on their leading env axis (``batch_spec``), every other leaf
    replicated. None without a mesh."""
    if mesh is None:
        return None

    def field(name, value):
        spec = (lambda x: batch_spec(x.shape, num_envs)) if name in batched_fields else (lambda x: P())
        return jax.tree_util.tree_map(lambda x: NamedSharding(mesh, spec(x)), value)

    return tree.replace(**{f.name: field(f.name, getattr(tree, f.name)) for f in dataclasses.fields(tree)})


def constrain_fields(tree, mesh: Mesh | None, num_envs: int, batched_fields):
    """Inside jit: ``tree`` constrained to ``field_shardings``; identity without a mesh."""
    if mesh is None:
        return tree
    return jax.lax.with_sharding_constraint(tree, field_shardings(tree, mesh, num_envs, batched_fields))


def place_fields(tree, mesh: Mesh | None, num_envs: int, batched_fields):
    """On the host: ``tree`` (e.g. a runner restored from a checkpoint) moved onto the devices as ``field_shardings``
    says; identity without a mesh."""
    if mesh is None:
        return tree
    return jax.device_put(tree, field_shardings(tree, mesh, num_envs, batched_fields))


__all__ = [
    "DATA_AXIS",
    "barrier",
    "batch_spec",
    "constrain_axis",
    "constrain_batch",
    "constrain_fields",
    "field_shardings",
    "initialize",
    "is_main_process",
    "make_mesh",
    "place_fields",
    "replicated",
    "resolve_devices",
]
