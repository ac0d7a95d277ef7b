"""The pipeline (agents.pipeline.runner, experiments.pipeline): links between phases, seeds, pipeline.json, stopping and
resuming at every phase boundary, a stopped phase resumed from its checkpoints, an unfinished recording redone,
and refusals. The default suite runs the orchestration with stand-in phases (each real phase has its own tests:
tests/test_bc_dataset.py, tests/test_train.py's distillation run, tests/test_league.py); the opt-in test
(``-m slow``, about 5 minutes on 2 cores) runs ``pipeline_smoke`` for real, uninterrupted and stopped
and resumed at every boundary, and checks the final policies are equal bit for bit."""

from __future__ import annotations

import dataclasses
import json

import jax
import numpy as np
import pytest

from agents.pipeline import runner as pipeline
from agents.presets import PIPELINES
from agents.storage.run_dir import RunError
from experiments import pipeline as pipeline_cli

SPEC = PIPELINES["pipeline_smoke"]
PHASES = ["record", "bc", "teacher", "student", "league"]


class StandIns:
    """``recording.record``, ``train`` and ``train_result`` replaced: every call is logged; a training phase
    "finishes" by writing config.json (as a real run does at its start) and its result is ``DIR:<seed>``."""

    def __init__(self, monkeypatch):
        self.calls = []
        self.stop_in = None  # a phase whose training is interrupted by a signal (once)
        monkeypatch.setattr(pipeline.recording, "record", self.record)
        monkeypatch.setattr(pipeline, "train", self.train)
        monkeypatch.setattr(pipeline, "train_result", lambda run_dir: f"{run_dir}:{self.seeds[str(run_dir)]}")
        self.seeds = {}

    def record(self, players, out_dir, games, positions, seed, rotations, batch_games, rules, obs, greedy, progress):
        out_dir.mkdir(parents=True)
        (out_dir / "manifest.json").write_text("{}")
        self.calls.append(("record", str(out_dir), seed, games))
        return {"out": str(out_dir), "seconds": 1.0}

    def train(self, config, run_dir, resume, progress, stop_on_signals):
        assert stop_on_signals
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "config.json").write_text(json.dumps(config.to_dict()))
        name = run_dir.name
        self.calls.append((name, config, resume))
        self.seeds[str(run_dir)] = config.run.seed
        if self.stop_in == name:
            self.stop_in = None
            return {"stopped": "SIGTERM"}
        return {"wall_s": 2.0, "stopped": None}


def test_phases_read_the_results_they_link_and_train_with_their_seeds(monkeypatch, tmp_path):
    fake = StandIns(monkeypatch)
    state = pipeline.run_pipeline(SPEC, tmp_path / "p", "pipeline_smoke", seed=7)
    d = tmp_path / "p"
    assert [c[0] for c in fake.calls] == PHASES
    assert fake.calls[0] == ("record", str(d / "record.partial"), 7, 2)
    configs = {c[0]: c[1] for c in fake.calls[1:]}
    assert [configs[p].run.seed for p in PHASES[1:]] == [8, 9, 10, 11]
    assert configs["bc"].bc.bc_dataset == str(d / "record")
    assert configs["teacher"].run.init_from == f"{d / 'bc'}:8" and configs["teacher"].task.obs == "oracle"
    student = configs["student"]
    assert (student.run.init_from, student.distill.teacher, student.distill.anchor) == (
        f"{d / 'bc'}:8",
        f"{d / 'teacher'}:9",
        f"{d / 'bc'}:8",
    )
    assert (configs["league"].run.init_from, configs["league"].distill.anchor) == (f"{d / 'student'}:10",) * 2
    assert all(c[2] is False for c in fake.calls[1:])  # nothing resumed
    saved = json.loads((d / "pipeline.json").read_text())
    assert saved == json.loads(json.dumps(state))
    assert list(saved["phases"]) == PHASES and saved["final"] == f"{d / 'league'}:11"
    assert saved["phases"]["student"]["config"] == json.loads(json.dumps(student.to_dict()))
    assert saved["wall_s"] == pytest.approx(sum(p["wall_s"] for p in saved["phases"].values()), abs=0.02)
    assert (d / "record" / "manifest.json").exists() and not (d / "record.partial").exists()
    with pytest.raises(RunError, match="holds a pipeline run .*resume=True"):
        pipeline.run_pipeline(SPEC, d, "pipeline_smoke", seed=7)


def test_stopping_at_every_boundary_and_resuming_runs_each_phase_once_with_the_same_config(monkeypatch, tmp_path):
    whole = StandIns(monkeypatch)
    pipeline.run_pipeline(SPEC, tmp_path / "same", "pipeline_smoke", seed=3)
    split = StandIns(monkeypatch)
    split.stop_in = "student"  # a signal during the student: its run is resumed from its checkpoints
    d = tmp_path / "same2"
    state = pipeline.run_pipeline(SPEC, d, "pipeline_smoke", seed=3, stop_after="record")
    assert state["stopped"] == "after record" and list(state["phases"]) == ["record"]
    for phase in PHASES[1:]:
        state = pipeline.run_pipeline(SPEC, d, "pipeline_smoke", seed=3, resume=True, stop_after=phase)
        if phase == "student":
            assert state["stopped"] == "SIGTERM during student" and "student" not in state["phases"]
            state = pipeline.run_pipeline(SPEC, d, "pipeline_smoke", seed=3, resume=True, stop_after=phase)
        assert list(state["phases"])[-1] == phase
    assert [c[0] for c in split.calls] == PHASES[:4] + ["student", "league"]

    def same(config):  # the directories differ (same vs same2), nothing else
        return json.loads(json.dumps(config.to_dict()).replace(str(d), str(tmp_path / "same")))

    by_phase = {}
    for call in split.calls[1:]:
        by_phase.setdefault(call[0], []).append(call)
    for call in whole.calls[1:]:
        for again in by_phase[call[0]]:
            assert same(again[1]) == json.loads(json.dumps(call[1].to_dict()))
    assert [c[2] for c in by_phase["student"]] == [False, True]  # started, then resumed from its checkpoints
    # a finished pipeline resumed does nothing more
    again = pipeline.run_pipeline(SPEC, d, "pipeline_smoke", seed=3, resume=True)
    assert len(split.calls) == 6 and again["final"] == state["final"]


def test_a_phase_stopped_by_a_signal_counts_the_wall_time_of_every_call(monkeypatch, tmp_path):
    fake = StandIns(monkeypatch)
    clock = {"now": 0.0}
    monkeypatch.setattr(pipeline.time, "perf_counter", lambda: clock["now"])
    train = fake.train

    def slow_train(config, run_dir, resume, progress, stop_on_signals):
        clock["now"] += 5.0 if not resume else 3.0  # a phase's first call takes 5 s, a resumed one 3 s
        return train(config, run_dir, resume, progress, stop_on_signals)

    monkeypatch.setattr(pipeline, "train", slow_train)
    fake.stop_in = "student"
    d = tmp_path / "p"
    state = pipeline.run_pipeline(SPEC, d, "pipeline_smoke", seed=1)
    assert state["stopped"] == "SIGTERM during student" and state["unfinished_wall_s"] == {"student": 5.0}
    assert json.loads((d / "pipeline.json").read_text())["unfinished_wall_s"] == {"student": 5.0}
    state = pipeline.run_pipeline(SPEC, d, "pipeline_smoke", seed=1, resume=True)
    walls = {name: phase["wall_s"] for name, phase in state["phases"].items()}
    assert walls == {"record": 0.0, "bc": 5.0, "teacher": 5.0, "student": 8.0, "league": 5.0}
    assert state["unfinished_wall_s"] == {} and state["wall_s"] == 23.0


def test_an_unfinished_recording_is_recorded_again(monkeypatch, tmp_path):
    fake = StandIns(monkeypatch)
    d = tmp_path / "p"
    real_record = fake.record

    def dies(*args):
        real_record(*args)
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline.recording, "record", dies)
    with pytest.raises(KeyboardInterrupt):
        pipeline.run_pipeline(SPEC, d, "pipeline_smoke")
    assert (d / "record.partial").exists() and not (d / "record").exists()
    monkeypatch.setattr(pipeline.recording, "record", real_record)
    state = pipeline.run_pipeline(SPEC, d, "pipeline_smoke", resume=True, stop_after="record")
    assert state["phases"]["record"]["result"] == str(d / "record") and not (d / "record.partial").exists()


def test_a_resume_needs_the_same_pipeline(monkeypatch, tmp_path):
    StandIns(monkeypatch)
    d = tmp_path / "p"
    pipeline.run_pipeline(SPEC, d, "pipeline_smoke", seed=1, stop_after="bc")
    for change in (dict(seed=2), dict(overrides={"bc": {"lr": 0.01}})):
        with pytest.raises(RunError, match="is not the config"):
            pipeline.run_pipeline(SPEC, d, "pipeline_smoke", **{"seed": 1, **change}, resume=True)
    with pytest.raises(ValueError, match="stop_after must be one of"):
        pipeline.run_pipeline(SPEC, d, "pipeline_smoke", seed=1, resume=True, stop_after="nope")
    reworded = dataclasses.replace(SPEC, description="the same phases, described in other words")
    state = pipeline.run_pipeline(reworded, d, "pipeline_smoke", seed=1, resume=True)  # prose fixes no run
    assert list(state["phases"]) == PHASES


def test_bad_specs_and_overrides_are_one_line_errors():
    bc, teacher = SPEC.phases[0], SPEC.phases[1]
    cases = [
        ((bc, dataclasses.replace(bc)), "phase names must be distinct"),
        (
            (dataclasses.replace(teacher, config=teacher.config.with_overrides({"init_from": "@student"})),),
            r"links init_from to 'student', which is not an earlier phase \(record\)",
        ),
        (
            (dataclasses.replace(teacher, config=teacher.config.with_overrides({"init_from": "@record"})),),
            "only bc_dataset reads the recording",
        ),
    ]
    for phases, message in cases:
        with pytest.raises(ValueError, match=message):
            pipeline.PipelineSpec("x", SPEC.record, phases)
    with pytest.raises(ValueError, match=r"unknown phase\(s\) \['nope'\]"):
        SPEC.with_overrides({"nope": {"lr": 0.1}})
    with pytest.raises(ValueError, match=r"TrainConfig\.hparams\.lr must be a number"):
        SPEC.with_overrides({"bc": {"lr": 5.0}})
    with pytest.raises(ValueError, match="RecordPhase.games must be an int >= 1"):
        SPEC.with_overrides({"record": {"games": 0}})
    assert pipeline.phase_overrides({"student": {"total_steps": "1e3"}, "record": {"games": "4"}}) == {
        "student": {"total_steps": 1000},
        "record": {"games": 4},
    }
    with pytest.raises(ValueError, match=r"--set student\.nope: unknown config field"):
        pipeline.phase_overrides({"student": {"nope": "1"}})


def test_the_cli_lists_its_presets_and_refuses_bad_flags(capsys, tmp_path):
    pipeline_cli.main(["--list-presets"])
    out = capsys.readouterr().out
    assert "pipeline_small:" in out and "student: ppo, 150 updates (init_from=@bc, teacher=@teacher, anchor=@bc)" in out
    for argv, message in [
        (["--set", "lr=1"], "expected PHASE.FIELD=VALUE"),
        (["--resume"], "--resume needs --out"),
        (["--out", str(tmp_path), "--resume"], "pipeline.json cannot be read"),
        (["--preset", "nope", "--out", str(tmp_path / "x")], "unknown pipeline preset 'nope'"),
    ]:
        with pytest.raises(SystemExit):
            pipeline_cli.main(argv)
        assert message in capsys.readouterr().err


@pytest.mark.slow(
    reason="about 5 min on 2 cores: every phase compiled; the default suite checks the orchestration "
    "with stand-in phases above"
)
def test_pipeline_smoke_stopped_at_every_boundary_equals_the_uninterrupted_pipeline(tmp_path):
    from agents.policies.load import load_policy, parse_spec

    whole = pipeline.run_pipeline(SPEC, tmp_path / "whole", "pipeline_smoke")
    d = tmp_path / "split"
    pipeline.run_pipeline(SPEC, d, "pipeline_smoke", stop_after="record")
    for phase in PHASES[1:]:
        state = pipeline.run_pipeline(SPEC, d, "pipeline_smoke", resume=True, stop_after=phase)
    for phase in PHASES[1:]:
        a = whole["phases"][phase]["result"].replace(str(tmp_path / "whole"), str(d))
        assert state["phases"][phase]["result"] == a
        mine, theirs = (
            load_policy(*parse_spec(r)) for r in (state["phases"][phase]["result"], whole["phases"][phase]["result"])
        )
        jax.tree_util.tree_map(np.testing.assert_array_equal, mine.params, theirs.params)
