"""Sweeps: many training runs (seeds x a hyperparameter grid) as ONE compiled program.

    spec = SweepSpec.make(seeds=(0, 1), grid={"lr": (1e-4, 3e-4), "ent_coef": (0.0, 0.01)})  # 8 runs
    sweep = Sweep(config, spec)
    runners = sweep.init()                      # a Runner with a leading [R] axis (R = spec.num_runs)
    runners, metrics = sweep.run(runners, 10)   # jitted: 10 updates of every run; metrics float32[R, 10]
    runners, metrics = jax.jit(sweep)()         # or the whole sweep in one call

The trainer's update is ``jax.vmap``-ed over the runs: each run has its own
master key (from its seed) and its own ``HParams`` (traced scalars), so the
grid costs one compilation. Only ``HPARAM_FIELDS`` can be swept; fields that
change shapes or the program (``num_envs``, ``hidden``, ``num_steps``, ...)
cannot (``SweepSpec`` says so, naming the field).

Run ``k`` (``spec.runs[k]``) is the standalone run
``make_train(spec.run_config(config, k), env)(jax.random.key(seed_k))``: same
keys, same data, same updates, up to float rounding of batched math (a test).

The combat stays skipped on steps without fights. A ``lax.cond`` whose
predicate is batched by ``vmap`` becomes a select that runs both branches, so
the per-run "some env fights now" predicate would run the combat on every
step. The sweep's env is built with ``sync_axes=(SWEEP_AXIS,)``: the game's
branch predicates are reduced over the sweep axis (``jaxgame.batching``), so
they stay unbatched and each cond stays a branch that runs when any env of any
run needs it. With fixed-length rounds all runs are phase aligned, so that is
exactly the steps where a single run would fight (``benchmarks.harness
--what sweep`` measures it).
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from agents.algorithms.registry import make_train
from agents.arena.evaluation import make_evaluator
from agents.config import HPARAM_FIELDS, TrainConfig
from agents.envs.make import make_env, make_game
from agents.utils import distributed

#: The vmapped axis of the runs; the game's branch predicates are reduced over it.
SWEEP_AXIS = "sweep"
#: the most runs one sweep may hold (seeds x grid points): every run's state lives in memory at once, so far fewer
#: fit any device; the bound lets a mistyped size fail at once instead of building millions of runs first
MAX_RUNS = 1 << 20


@dataclasses.dataclass(frozen=True)
class SweepRun:
    """Run ``index`` of a sweep: grid point ``point`` with ``values`` (name -> float), seeded ``seed``."""

    index: int
    point: int
    seed: int
    values: dict


@dataclasses.dataclass(frozen=True)
class SweepSpec:
    """Seeds x a grid of hyperparameter values; hashable.

    ``grid`` is a tuple of ``(field, values)`` pairs (fields from
    ``HPARAM_FIELDS``, each with a tuple of floats). Runs are ordered grid point
    major, seed minor: run ``k`` is point ``k // len(seeds)``, seed
    ``seeds[k % len(seeds)]``; grid points are the Cartesian product in the
    given field order, the last field varying fastest.
    """

    seeds: tuple
    grid: tuple = ()

    def __post_init__(self):
        seeds = self.seeds
        runs = len(seeds) * math.prod(len(values) for _, values in self.grid)
        if runs > MAX_RUNS:
            raise ValueError(
                f"a sweep holds at most {MAX_RUNS:,} runs (seeds x grid points), got {runs:,}: every "
                "run's state is in memory at once"
            )
        if not seeds or any(isinstance(s, bool) or not isinstance(s, int) or not 0 <= s < 2**31 for s in seeds):
            raise ValueError(f"SweepSpec.seeds must be a non-empty tuple of ints in [0, 2^31 - 1], got {seeds!r}")
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"SweepSpec.seeds must be distinct, got {seeds!r}")
        names = [name for name, _ in self.grid]
        if len(set(names)) != len(names):
            raise ValueError(f"SweepSpec.grid sweeps a field twice: {names}")
        for name, values in self.grid:
            if name not in HPARAM_FIELDS:
                raise ValueError(unsweepable(name))
            if not values or any(not isinstance(v, float) or not math.isfinite(v) for v in values):
                raise ValueError(f"SweepSpec.grid[{name!r}] must be a non-empty tuple of finite floats, got {values!r}")

    @classmethod
    def make(cls, seeds, grid: dict | None = None) -> SweepSpec:
        """From a sequence of seeds and a dict ``field -> values`` (numbers)."""
        grid = grid or {}
        return cls(tuple(seeds), tuple((name, tuple(float(v) for v in values)) for name, values in grid.items()))

    # ---- derived ----
    @property
    def fields(self) -> tuple:
        return tuple(name for name, _ in self.grid)

    @property
    def points(self) -> list[dict]:
        """The grid points in order: dicts field -> value ([{}] for a seeds-only sweep)."""
        return [dict(zip(self.fields, combo)) for combo in itertools.product(*(v for _, v in self.grid))]

    @property
    def num_points(self) -> int:
        return math.prod(len(values) for _, values in self.grid)

    @property
    def num_runs(self) -> int:
        return self.num_points * len(self.seeds)

    @property
    def runs(self) -> list[SweepRun]:
        seeds = self.seeds
        return [
            SweepRun(p * len(seeds) + s, p, seed, values)
            for p, values in enumerate(self.points)
            for s, seed in enumerate(seeds)
        ]

    def point(self, index: int) -> dict:
        """Grid point ``index``'s values (field -> float), without building the grid: the last field varies
        fastest."""
        values = {}
        for name, options in reversed(self.grid):
            index, i = divmod(index, len(options))
            values[name] = options[i]
        return dict(reversed(values.items()))

    def run(self, index: int) -> SweepRun:
        """Run ``index`` (grid point ``index // len(seeds)``, seed ``seeds[index % len(seeds)]``), in O(grid)."""
        if not 0 <= index < self.num_runs:
            raise IndexError(f"run {index} of a sweep of {self.num_runs} runs")
        point, s = divmod(index, len(self.seeds))
        return SweepRun(index, point, self.seeds[s], self.point(point))

    def run_config(self, config: TrainConfig, index: int) -> TrainConfig:
        """The standalone config of run ``index`` (validated)."""
        run = self.run(index)
        return config.with_overrides({"seed": run.seed, **run.values})

    def to_dict(self) -> dict:
        return {"seeds": list(self.seeds), "grid": {name: list(values) for name, values in self.grid}}

    @classmethod
    def from_dict(cls, data: dict) -> SweepSpec:
        return cls.make(data["seeds"], data.get("grid", {}))


def unsweepable(name: str) -> str:
    return (
        f"TrainConfig.{name} cannot be swept: only the traced hyperparameters {', '.join(HPARAM_FIELDS)} can "
        f"(other fields fix shapes or the compiled program); run separate sweeps for different {name} values"
    )


def stack(trees):
    """A list of pytrees with equal structure -> one pytree with a new leading axis."""
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *trees)


class Sweep:
    """The runs of ``spec`` on ``config``'s shapes, vmapped (see the module docstring).

    ``share_branches=False`` builds the env without the sweep-wide branch
    predicates (every step then runs the combat under ``vmap``): only for
    measuring what that costs.
    """

    def __init__(self, config: TrainConfig, spec: SweepSpec, share_branches: bool = True):
        if config.run.init_from:
            raise ValueError(
                "TrainConfig.init_from: a sweep starts its runs from fresh parameters; start one run "
                "from a saved policy with python -m experiments.train"
            )
        if config.distill.teacher or config.distill.anchor:
            raise ValueError(
                "TrainConfig.teacher / anchor: a sweep does not read frozen policies; distil one run at "
                "a time (python -m experiments.train)"
            )
        if config.bc.bc_dataset:
            raise ValueError(
                "TrainConfig.bc_dataset: a sweep runs generated games; clone a dataset one run at a "
                "time (python -m experiments.train)"
            )
        if config.ppo.shuffle != "global":
            raise ValueError(
                f"TrainConfig.shuffle={config.ppo.shuffle!r}: a sweep shards its runs, not a run's envs, "
                "over the devices; use shuffle='global'"
            )
        #: the run axis sharded over config.num_devices devices (0: as many as divide the runs, at most all of
        #: jax.devices()), or None on one device
        devices = config.run.num_devices or max(d for d in range(1, jax.device_count() + 1) if spec.num_runs % d == 0)
        self.mesh = distributed.make_mesh(
            devices, spec.num_runs, what="a sweep's number of runs (len(seeds) x grid points)"
        )
        config = config.with_overrides({"num_devices": 1})  # each run: the one-device program
        self.config = config
        self.spec = spec
        sync_axes = (SWEEP_AXIS,) if share_branches else ()
        self.env = make_env(config, sync_axes=sync_axes)
        self.trainer = make_train(config, self.env)
        # run k is grid point k // S with seed seeds[k % S]: the hyperparameters depend on the point alone
        num_seeds = len(spec.seeds)
        points = [spec.run_config(config, p * num_seeds).hparams.traced() for p in range(spec.num_points)]
        self.seeds = jnp.asarray(np.tile(np.asarray(spec.seeds, np.uint32), spec.num_points))
        self.hparams = jax.tree_util.tree_map(lambda x: jnp.repeat(x, num_seeds, axis=0), stack(points))
        self.run = jax.jit(self._run, static_argnums=1)
        self.run_upto = jax.jit(self._run_upto, static_argnums=1)
        self._init = jax.jit(
            lambda keys, hp: self.constrain(jax.vmap(self.trainer.init, axis_name=SWEEP_AXIS)(keys, hp))
        )
        self.evaluator = None
        if not config.is_gymnax and config.log.eval_every > 0:
            evaluator = make_evaluator(
                make_game(config), self.trainer.network, config.log.eval_games, sync_axes=sync_axes
            )
            run_all = jax.vmap(evaluator.run, in_axes=(0, 0, None), axis_name=SWEEP_AXIS)
            self.evaluator = jax.jit(
                lambda params, keys, opponent: self.constrain(
                    run_all(self.constrain(params), self.constrain(keys), opponent)
                )
            )

    @property
    def num_runs(self) -> int:
        return self.spec.num_runs

    def master_keys(self) -> jax.Array:
        """Typed keys [R]: ``jax.random.key(seed)`` of every run."""
        return jax.vmap(jax.random.key)(self.seeds)

    def init(self, compiler_options: dict | None = None):
        """The runners of all runs: a ``Runner`` with a leading [R] axis. ``compiler_options``: XLA's options for
        the init program (``SweepProgram``'s ``run.fast_compile``; None: XLA's defaults)."""
        keys = self.master_keys()
        if compiler_options is None:
            return self._init(keys, self.hparams)
        return self._init.lower(keys, self.hparams).compile(compiler_options=compiler_options)(keys, self.hparams)

    # ---- the run axis over the devices (identity on one device) ----
    def constrain(self, tree):
        """Inside jit: every leaf (leading axis [R]) sharded on its run axis."""
        if self.mesh is None:
            return tree
        return jax.lax.with_sharding_constraint(tree, NamedSharding(self.mesh, P(distributed.DATA_AXIS)))

    def place(self, tree):
        """Host side: ``tree`` (e.g. runners restored from a checkpoint) onto the devices as ``constrain`` says."""
        if self.mesh is None:
            return tree
        return jax.device_put(tree, NamedSharding(self.mesh, P(distributed.DATA_AXIS)))

    def _run(self, runners, num_updates: int):
        runners, metrics = jax.vmap(lambda r: self.trainer.run(r, num_updates), axis_name=SWEEP_AXIS)(
            self.constrain(runners)
        )
        return self.constrain(runners), self.constrain(metrics)

    def _run_upto(self, runners, max_updates: int, num_updates):
        """``num_updates`` (int32, traced, 0..``max_updates``) updates of every run in one program for every count
        (the trainer's ``run_upto``, vmapped): metrics float32[R, max_updates], the first ``num_updates`` written."""
        runners, metrics = jax.vmap(lambda r: self.trainer.run_upto(r, max_updates, num_updates), axis_name=SWEEP_AXIS)(
            self.constrain(runners)
        )
        return self.constrain(runners), self.constrain(metrics)

    def __call__(self):
        """The whole sweep: (runners [R], metrics float32[R, num_updates] each)."""
        return self._run(self.init(), self.config.num_updates)


__all__ = ["SWEEP_AXIS", "Sweep", "SweepRun", "SweepSpec"]
