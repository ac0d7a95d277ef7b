"""The design's training pipeline as one resumable run: record -> behaviour cloning -> oracle teacher -> distilled
student -> anchored league (``python -m experiments.pipeline``, docs/training.md "The pipeline").

A ``PipelineSpec`` is a recording (``RecordPhase``) and a chain of training phases (``TrainPhase``), each a
``TrainConfig`` whose fields set to ``"@PHASE"`` link to the earlier phases whose results it reads::

    record  -> DIR/record                 (agents.pipeline.recording.record)
    bc      -> DIR/bc       bc_dataset="@record"
    teacher -> DIR/teacher  init_from="@bc"         (obs="oracle": the widened clone, agents.policies.frozen)
    student -> DIR/student  init_from="@bc", teacher="@teacher", anchor="@bc"
    league  -> DIR/league   init_from="@student", anchor="@student"

A link to the recording is its directory; a link to a training phase is that run's best checkpoint
(``agents.run.preflight.best_checkpoint``: by its ``best_by``; the latest when no checkpoint was ranked), written
``RUN_DIR:STEP`` so that it never moves. Phase ``i``'s seed is the pipeline's seed + ``i`` (the recording's is the
seed itself).

**The pipeline's directory** (``run_pipeline(spec, out_dir)``) is claimed like a run directory
(``agents.storage.run_dir``,
tool "pipeline"); every phase runs in its own subdirectory, and ``pipeline.json`` (rewritten atomically after each
phase) lists the phases with their directories, configs, the results later phases read, their summaries and wall
times. **Resume** (``resume=True``) skips the finished phases, resumes the unfinished training phase from its own
checkpoints (``agents.run.training.train(resume=True)``) and records an unfinished recording again from the start (it
writes to ``record.partial`` and is renamed when finished). Phases are deterministic given their configs and inputs, so
a pipeline stopped at any phase boundary and resumed ends with the numbers of an uninterrupted one (bitwise on the
same backend; tests/test_pipeline.py).

Ctrl-C / SIGTERM during a training phase saves its checkpoint and stops the pipeline (the summary's ``stopped``);
``stop_after=NAME`` stops it after that phase.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from pathlib import Path

from agents.config import TrainConfig, parse_sets, parse_value
from agents.pipeline import recording
from agents.run.build import CHECKPOINT_DIR
from agents.run.preflight import CONFIG_FILE, best_checkpoint
from agents.run.training import train
from agents.storage import run_dir as run_dir_lib
from agents.storage.checkpoints import CheckpointStore
from agents.storage.run_dir import RunError
from agents.utils.progress import NoProgress, Progress

PIPELINE_FILE = "pipeline.json"
RECORD = "record"


@dataclasses.dataclass(frozen=True)
class RecordPhase:
    """The recording that behaviour cloning reads (``agents.pipeline.recording.record``'s arguments)."""

    players: tuple = ("expert",) + ("greedy",) * 7
    """8 players, one per lineup position (bots, ``baseline:NAME`` or ``RUN_DIR[:STEP]``)"""
    games: int = 128
    """game seeds, each played in 8 seat rotations"""
    positions: tuple = (0,)
    """the lineup positions whose steps are recorded (the expert's)"""
    batch_games: int = 32
    """game seeds played at once"""
    rules: tuple = ()
    """(name, value) game-rule overrides; must be the training phases' rules"""

    def __post_init__(self):
        if len(self.players) != 8 or not all(isinstance(p, str) and p for p in self.players):
            raise ValueError(f"RecordPhase.players must be 8 player names, got {self.players!r}")
        for name in ("games", "batch_games"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"RecordPhase.{name} must be an int >= 1, got {value!r}")


#: a config string field whose value starts with this links to the phase it names (``TrainPhase``)
LINK = "@"


@dataclasses.dataclass(frozen=True)
class TrainPhase:
    """One training run of the pipeline."""

    name: str
    """its subdirectory and the name later phases link to"""
    config: TrainConfig
    """its config; a string field set to ``"@PHASE"`` (e.g. ``init_from="@bc"``, ``bc_dataset="@record"``) is
    set to that earlier phase's result (``record``: the dataset directory; a training phase: its best checkpoint,
    ``RUN_DIR:STEP``), and the seed to the pipeline's seed + the phase's number"""

    @property
    def links(self) -> tuple:
        """(field, phase) pairs: the config's ``"@PHASE"`` fields."""
        return tuple(
            (k, v[len(LINK) :])
            for k, v in self.config.to_flat_dict().items()
            if isinstance(v, str) and v.startswith(LINK)
        )


@dataclasses.dataclass(frozen=True)
class PipelineSpec:
    """A recording and the training phases after it, in order."""

    description: str
    record: RecordPhase
    phases: tuple

    def __post_init__(self):
        names = [RECORD]
        for phase in self.phases:
            if phase.name in names or not phase.name.isidentifier():
                raise ValueError(
                    f"PipelineSpec: phase names must be distinct identifiers other than {RECORD!r}, got {phase.name!r}"
                )
            for field, source in phase.links:
                if field not in TrainConfig.field_types():
                    raise ValueError(f"PipelineSpec: phase {phase.name!r} links the unknown field {field!r}")
                if source not in names:
                    raise ValueError(
                        f"PipelineSpec: phase {phase.name!r} links {field} to {source!r}, which is "
                        f"not an earlier phase ({', '.join(names)})"
                    )
                if (source == RECORD) != (field == "bc_dataset"):
                    raise ValueError(
                        f"PipelineSpec: phase {phase.name!r}: only bc_dataset reads the recording, got {field}={source}"
                    )
            names.append(phase.name)

    def with_overrides(self, overrides: dict) -> PipelineSpec:
        """The spec with ``{phase: {field: value}}`` applied to its training phases' configs (``record`` takes
        ``RecordPhase`` fields); a ``ValueError`` names an unknown phase or an invalid value."""
        known = {RECORD, *(p.name for p in self.phases)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(f"unknown phase(s) {unknown}; this pipeline's phases: {', '.join(sorted(known))}")
        record = dataclasses.replace(self.record, **overrides.get(RECORD, {}))
        phases = tuple(
            dataclasses.replace(p, config=p.config.with_overrides(overrides[p.name])) if p.name in overrides else p
            for p in self.phases
        )
        return dataclasses.replace(self, record=record, phases=phases)


def phase_overrides(sets: dict) -> dict:
    """{phase: {field: text}} (the CLIs' ``--set PHASE.FIELD=VALUE``) -> {phase: {field: value}} parsed by the
    field's type (``record``: ``RecordPhase``'s int fields; the others ``TrainConfig``'s, named short or
    GROUP.NAME), as ``PipelineSpec.with_overrides`` takes them; a ``ValueError`` names the field."""
    record_fields = {f.name for f in dataclasses.fields(RecordPhase)}
    out = {}
    for phase, fields in sets.items():
        if phase == RECORD:
            bad = sorted(set(fields) - {"games", "batch_games"})
            if bad:
                raise ValueError(
                    f"--set record.{bad[0]}: only record.games and record.batch_games can be set "
                    f"(RecordPhase fields: {', '.join(sorted(record_fields))})"
                )
            out[phase] = {k: parse_value(k, int, v, owner="RecordPhase") for k, v in fields.items()}
            continue
        out[phase] = {}
        for name, text in fields.items():  # a short (lr) or dotted (hparams.lr) field name, as in experiments.train
            try:
                TrainConfig.field_path(name)
            except ValueError as err:
                raise ValueError(f"--set {phase}.{name}: unknown config field; {err}") from None
            try:
                out[phase].update(parse_sets({name: text}))
            except ValueError as err:
                raise ValueError(f"--set {phase}.{name}: {err}") from None
    return out


def phase_config(phase: TrainPhase, index: int, seed: int, results: dict) -> TrainConfig:
    """The config phase number ``index`` (1-based, after the recording) runs: its links resolved from ``results``
    (phase name -> result) and the seed ``seed + index``."""
    return phase.config.with_overrides({"seed": seed + index, **{f: results[src] for f, src in phase.links}})


def train_result(run_dir: Path) -> str:
    """``RUN_DIR:STEP`` of a finished training phase's best checkpoint (the latest when none was ranked)."""
    step = best_checkpoint(run_dir)
    if step is None:
        step = CheckpointStore(run_dir / CHECKPOINT_DIR, keep=1).latest_step()
    if step is None:
        raise RunError(f"{run_dir} finished without a checkpoint")
    return f"{run_dir}:{step}"


def pipeline_identity(name: str, seed: int, spec: PipelineSpec) -> dict:
    """What fixes a pipeline run (its run directory's identity, and what ``agents.pipeline.over_seeds`` keeps a
    finished one's summary under): its name, seed and spec without the description, which is prose (rewording a
    preset's description does not make its unfinished pipelines unresumable)."""
    return {"pipeline": name, "seed": seed, "spec": repr(dataclasses.replace(spec, description=""))}


def run_pipeline(
    spec: PipelineSpec,
    out_dir,
    name: str = "custom",
    seed: int = 0,
    resume: bool = False,
    progress: Progress | None = None,
    stop_after: str | None = None,
    overrides: dict | None = None,
) -> dict:
    """Run (or with ``resume`` continue) the pipeline ``spec`` with ``overrides`` (``PipelineSpec.with_overrides``)
    in ``out_dir``; returns its summary (also the last state of ``pipeline.json``): ``phases`` (name -> directory,
    config or recording arguments, result, summary, wall_s: a training phase's calls added up, those a signal
    stopped included; the recording's call that finished it), ``final`` (the last finished phase's result),
    ``wall_s`` (the phases' wall times added up), ``stopped``, ``unfinished_wall_s`` (phase -> the seconds of
    its stopped calls, until a call finishes it). A resume needs the same spec,
    name, seed and overrides (``pipeline.json`` holds the name, seed and overrides)."""
    progress = progress or NoProgress()
    out_dir = Path(out_dir)
    overrides = overrides or {}
    spec = spec.with_overrides(overrides)
    known = [RECORD, *(p.name for p in spec.phases)]
    if stop_after is not None and stop_after not in known:
        raise ValueError(f"stop_after must be one of {known}, got {stop_after!r}")
    identity = pipeline_identity(name, seed, spec)
    if resume:  # either takes out_dir's lock: no other process runs this pipeline until it is released
        run_dir_lib.check_owner(out_dir, "pipeline", identity, PIPELINE_FILE)
    else:
        run_dir_lib.claim(out_dir, "pipeline", identity)
    try:
        if resume:
            state = json.loads((out_dir / PIPELINE_FILE).read_text())
        else:
            state = {
                "pipeline": name,
                "description": spec.description,
                "seed": seed,
                "overrides": overrides,
                "phases": {},
                "final": None,
                "wall_s": 0.0,
                "stopped": None,
                "unfinished_wall_s": {},
            }
            run_dir_lib.write_json(out_dir / PIPELINE_FILE, state)

        def finish(phase_name, entry):
            state["phases"][phase_name] = {**entry, "done": True}
            state["wall_s"] = round(sum(p["wall_s"] for p in state["phases"].values()), 2)
            state["final"] = entry["result"]
            run_dir_lib.write_json(out_dir / PIPELINE_FILE, state)

        state["stopped"] = None
        results = {k: v["result"] for k, v in state["phases"].items() if v.get("done")}
        if RECORD not in results:
            progress.status(f"pipeline {name}, phase 1/{len(known)}: record")
            target, partial = out_dir / RECORD, out_dir / (RECORD + ".partial")
            shutil.rmtree(partial, ignore_errors=True)  # an unfinished recording (the pipeline's own) is redone
            args = dataclasses.asdict(spec.record)
            start = time.perf_counter()
            summary = recording.record(
                list(spec.record.players),
                partial,
                spec.record.games,
                spec.record.positions,
                seed,
                None,
                spec.record.batch_games,
                dict(spec.record.rules),
                "vector",
                False,
                progress,
            )
            partial.rename(target)
            summary["out"] = str(target)
            results[RECORD] = str(target)
            finish(
                RECORD,
                {
                    "dir": str(target),
                    "record": args,
                    "result": str(target),
                    "summary": summary,
                    "wall_s": round(time.perf_counter() - start, 2),
                },
            )
        if stop_after == RECORD:
            return {**state, "stopped": f"after {RECORD}"}

        for index, phase in enumerate(spec.phases, start=1):
            if phase.name in results:
                continue
            config = phase_config(phase, index, seed, results)
            phase_dir = out_dir / phase.name
            progress.status(f"pipeline {name}, phase {index + 1}/{len(known)}: {phase.name} in {phase_dir}")
            start = time.perf_counter()
            again = (phase_dir / CONFIG_FILE).exists()  # it started before: continue from its checkpoints
            summary = train(config, phase_dir, resume=again, progress=progress, stop_on_signals=True)
            earlier = state.setdefault("unfinished_wall_s", {})  # the calls of this phase that a signal stopped
            wall = round(earlier.pop(phase.name, 0.0) + time.perf_counter() - start, 2)
            if summary.get("stopped"):
                earlier[phase.name] = wall
                state["stopped"] = f"{summary['stopped']} during {phase.name}"
                run_dir_lib.write_json(out_dir / PIPELINE_FILE, state)
                return state
            results[phase.name] = train_result(phase_dir)
            finish(
                phase.name,
                {
                    "dir": str(phase_dir),
                    "config": config.to_dict(),
                    "result": results[phase.name],
                    "summary": summary,
                    "wall_s": wall,
                },
            )
            if stop_after == phase.name:
                return {**state, "stopped": f"after {phase.name}"}
        return state
    finally:
        run_dir_lib.release(out_dir)


__all__ = [
    "LINK",
    "PIPELINE_FILE",
    "PipelineSpec",
    "RecordPhase",
    "TrainPhase",
    "phase_config",
    "phase_overrides",
    "pipeline_identity",
    "run_pipeline",
    "train_result",
]
