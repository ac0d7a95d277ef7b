"""One training run of a config as a ``ChunkProgram`` (``agents.run.chunks``): what ``agents.run.build`` makes of the
config, its first runner (new, from ``init_from`` or a checkpoint), its compiled chunk and evaluation, the records,
evaluation metrics, checkpoint payload and progress line between chunks. Host machinery around the trainer's
compiled programs."""

from __future__ import annotations

import math

import jax
import numpy as np

from agents.algorithms import registry as trainers
from agents.arena import ladder
from agents.arena.evaluation import EVAL_STREAM, OPPONENTS, placement_summary
from agents.config import TrainConfig
from agents.league import pool as league_lib
from agents.league.pool import with_ratings
from agents.policies import frozen as phases
from agents.policies.load import RunPolicy
from agents.run.build import build, fresh_arrays
from agents.run.chunks import ChunkProgram
from agents.run.preflight import best_metric
from agents.run.progress_line import progress_line
from agents.storage import datasets as dataset
from agents.storage.checkpoints import CheckpointStore
from agents.storage.run_dir import RunError


class TrainProgram(ChunkProgram):
    """One run of ``config`` (``build(config)``) as a ``ChunkProgram``: one log, the bot evaluation, and for a
    league the ratings of its snapshots."""

    def __init__(self, config: TrainConfig):
        self.config = config
        built = build(config)
        self.env, self.trainer, self.evaluator, self.rater = built.env, built.trainer, built.evaluator, built.rater
        self.jit_run, self.jit_run_upto = built.run, built.run_upto  # the trainer's chunk, jitted
        self.num_players = self.trainer.facts.players_per_step
        self.inputs = None  # the chunk's data (``trainer.chunk_inputs()``), read when first compiled
        self.initial_params = None  # config.run.init_from's parameters (``start_params``), loaded once
        self.has_eval = self.evaluator is not None
        self.eval_key = jax.random.fold_in(jax.random.key(config.run.seed), EVAL_STREAM)
        # the progress line's training placement is 4.5 by symmetry under pure self-play
        self.self_play = bool(self.trainer.learner.all()) and not config.league.league_size

    @property
    def best_metric(self) -> tuple[str, str]:
        """(metric, "min" or "max") that ranks the run's checkpoints (``best_metric``)."""
        return best_metric(self.config)

    def start_params(self):
        """The parameters ``config.run.init_from`` names, on this run's shapes (``agents.policies.frozen``), loaded
        once; None without ``init_from``. A policy that cannot start the run is a ``RunError``."""
        if self.config.run.init_from and self.initial_params is None:
            try:
                self.initial_params = phases.start_params(self.config, self.run_shapes.params)
            except phases.PhaseError as err:
                raise RunError(str(err)) from None
        return self.initial_params

    def init(self):
        key = jax.random.key(self.config.run.seed)
        runner = jax.jit(self.trainer.init).lower(key).compile(compiler_options=self.compiler_options)(key)
        params = self.start_params()
        if params is None:
            return runner
        # only the parameters carry over: Adam's moments are zeros of the same shapes either way
        runner = runner.replace(params=params)
        if self.config.league.league_size:  # the pool's first snapshot is the policy the run starts from
            runner = runner.replace(
                league=league_lib.pool_init(params, self.config.league.league_size, self.config.run.num_envs)
            )
        return self.trainer.place(runner)  # the new parameters are uncommitted host-made arrays, like a new run's

    def restore(self, store: CheckpointStore):
        """``(step, runner, saved payload)`` of the newest good checkpoint, placed for this run's devices."""
        abstract = self.run_shapes
        shardings = self.trainer.shardings(abstract)
        if shardings is not None:  # read each device's share straight into place (any device count saved it)
            abstract = jax.tree_util.tree_map(
                lambda a, s: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s), abstract, shardings
            )
        step, runner, saved = store.restore(abstract, check=self.step_check)
        self.chunk_inputs()  # reads a dataset's digest, a distillation's frozen policies (once)
        for name, value in self.trainer.input_identity().items():
            if name in saved and saved[name] != value:
                raise RunError(
                    f"this run's inputs are not those its checkpoints trained on ({name}: "
                    f"{saved[name]} then, {value} now; a dataset's digest covers its shards' sha256s): "
                    "a resume would not continue the same run"
                )
        runner = fresh_arrays(runner) if self.trainer.mesh is None else self.trainer.place(runner)
        return step, runner, saved

    def updates_done(self, runner) -> int:
        return int(runner.update)

    def finished_early(self, runner) -> bool:
        return self.trainer.finished_early(runner)

    def chunk_inputs(self) -> tuple:
        """The chunk's arguments after the runner (a dataset run's samples), read once; a dataset that does not
        fit the run is a ``RunError``."""
        if self.inputs is None:
            try:
                self.inputs = phases.trainer_inputs(self.trainer, self.config, self.run_shapes.params)
            except (dataset.DatasetError, phases.PhaseError) as err:
                raise RunError(str(err)) from None
        return self.inputs

    def _eval_params(self, params):
        """The evaluation runs on one device: replicated parameters are fetched to the host first."""
        return params if self.trainer.mesh is None else jax.device_get(params)

    def chunk_args(self) -> tuple:
        return self.chunk_inputs()

    def lower_chunk(self, runner, num_updates: int):
        return self.jit_run.lower(runner, num_updates, *self.chunk_inputs())

    def lower_upto(self, runner, num_updates: int):
        return self.jit_run_upto.lower(runner, num_updates, np.int32(num_updates), *self.chunk_inputs())

    def lower_eval(self, runner):
        return self.evaluator and (
            lambda: self.evaluator.run.lower(self._eval_params(runner.params), self.eval_key, np.int32(0))
        )

    def records(self, base, metrics, num_updates, seconds):
        sps = num_updates * self.config.steps_per_update / seconds
        return [
            {
                **base,
                "sps": sps,
                **trainers.summarize(metrics),
                "perf/sps": sps,
                "perf/seat_sps": sps * self.num_players,
            }
        ]

    def evaluate(self, runner, update):
        """Placements vs each bot (and for a league, ratings); a league's runner comes back with its snapshots'
        new ratings."""
        config = self.config
        key = jax.random.fold_in(self.eval_key, update)
        params = self._eval_params(runner.params)
        out = {}
        for index, name in enumerate(OPPONENTS):
            ranks = np.asarray(self.compiled_eval(params, key, np.int32(index)))
            summary = placement_summary(ranks)
            out[f"eval/placement_vs_{name}"] = summary["mean_placement"]
            out[f"eval/placement_vs_{name}_ci95"] = summary["ci95"]  # half-width over game seeds (None: 1 seed)
            if config.net.independent:  # rotation r puts the policy in seat r: seat r's own learner
                out.update({f"eval/seat_{r}/placement_vs_{name}": float(m) for r, m in enumerate(ranks.mean(0))})
        if config.league.league_size:  # the learner rated against its pool and the bots (fresh ratings each time)
            table = self.rater(
                params, self._eval_params(runner.league), jax.random.fold_in(key, 1), [config.run.seed, update]
            )
            rows = {row["name"]: row for row in table}
            out["eval/rating"] = rows["learner"]["ordinal"]
            out.update({f"eval/rating_{bot}": rows[bot]["ordinal"] for bot in OPPONENTS if bot in rows})
            runner = runner.replace(league=with_ratings(runner.league, {n: r["ordinal"] for n, r in rows.items()}))
        if config.log.eval_ladder:
            out.update(self._ladder_rating(params, update))
        return runner, [out]

    def _ladder_rating(self, params, update: int) -> dict:
        """``eval/ladder_points``, ``eval/ladder_low`` and ``eval/ladder_high`` of the policy at ``update``
        (``agents.arena.ladder.rate_on_ladder`` on ``eval_ladder`` game seeds, the ladder's default seed)."""
        policy = RunPolicy(
            f"learner:{update}",
            "",
            update,
            self.config.with_overrides({"num_devices": 1}),
            self.trainer.network,
            fresh_arrays(params),
        )
        rated = ladder.rate_on_ladder(policy, games=self.config.log.eval_ladder)
        low, high = rated["ci95"]
        return {"eval/ladder_points": rated["rating"], "eval/ladder_low": low, "eval/ladder_high": high}

    def checkpoint_metrics(self, records):
        return {k: v for k, v in records[0].items() if isinstance(v, float) and math.isfinite(v)}

    def checkpoint_payload(self, wall_s: float) -> dict:
        return {**super().checkpoint_payload(wall_s), **self.trainer.input_identity()}

    def progress_text(self, records, evaluation):
        return progress_line(records[0], evaluation[0], self.trainer.facts.sample_unit, self.self_play)


__all__ = ["TrainProgram"]
