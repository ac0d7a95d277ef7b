"""The optional Weights & Biases sink (agents.run.wandb_log), with a fake ``wandb`` module that records its calls.

A real offline W&B run is in tests/test_train.py (it reuses the smoke run's compiled programs).
"""

import json
import shutil
import sys

import pytest

from agents.config import TrainConfig
from agents.run import wandb_log
from agents.run.training import train
from agents.storage.metrics import MetricsLog, TensorboardSink
from agents.storage.run_dir import RunError


@pytest.fixture
def tensorboard_calls(monkeypatch):
    calls, add = [], TensorboardSink.add

    def recording(self, step, values):
        calls.append({"env_steps": step, **values})
        add(self, step, values)

    monkeypatch.setattr(TensorboardSink, "add", recording)
    return calls


RECORDS = [
    {
        "update": 1,
        "env_steps": 128,
        "seat_steps": 1024,
        "wall_s": 1.5,
        "train/lr": 0.1,
        "loss/value": float("nan"),
        "perf/sps": 85,
        "eval/placement_vs_greedy_ci95": None,
        "note": "not a scalar",
    },
    {
        "update": 2,
        "env_steps": 256,
        "seat_steps": 2048,
        "wall_s": 3.0,
        "train/lr": 0.05,
        "loss/value": 2.5,
        "eval/placement_vs_greedy": 3.25,
    },
]
# what tensorboard and W&B get: the finite numbers named group/name, at env_steps
SENT = [
    {"env_steps": 128, "train/lr": 0.1, "perf/sps": 85},
    {"env_steps": 256, "train/lr": 0.05, "loss/value": 2.5, "eval/placement_vs_greedy": 3.25},
]


def test_the_sink_gets_tensorboards_scalars_and_a_resume_continues_its_run(tmp_path, fake_wandb, tensorboard_calls):
    config = {"lr": 0.1, "seed": 3}
    log = MetricsLog(tmp_path, {"config": config}, None, [wandb_log.WandbSink(tmp_path, "proj", config)])
    for record in RECORDS:
        log.write(record)
    log.close()
    (run,) = fake_wandb.runs
    run_id = (tmp_path / wandb_log.RUN_ID_FILE).read_text().strip()
    assert len(run_id) == 12 and run_id.isalnum()
    assert run.init == {
        "project": "proj",
        "id": run_id,
        "resume": "allow",
        "dir": str(tmp_path),
        "config": config,
        "name": tmp_path.name,
        "group": None,
        "reinit": "create_new",
    }
    assert run.metrics == [("env_steps", {}), ("*", {"step_metric": "env_steps"})]
    assert run.logged == tensorboard_calls == SENT and run.finished

    # a resume from update 1: the same W&B run continues; the kept record is not sent again (W&B has it)
    tensorboard_calls.clear()
    log = MetricsLog(tmp_path, None, 1, [wandb_log.WandbSink(tmp_path, "proj", config)])
    resumed = fake_wandb.runs[-1]
    assert resumed.init["id"] == run_id and resumed.init["resume"] == "allow" and resumed.logged == []
    assert tensorboard_calls == SENT[:1]  # tensorboard's files are written anew: the kept record again
    log.write(RECORDS[1])
    log.close()
    assert resumed.logged == SENT[1:] and tensorboard_calls == SENT

    # W&B turned on at a resume (no wandb_run_id yet): a new W&B run gets the kept history first
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(tmp_path / "metrics.jsonl", other / "metrics.jsonl")
    MetricsLog(other, None, 2, [wandb_log.WandbSink(other, "proj", config, group="sweep")]).close()
    late = fake_wandb.runs[-1]
    assert late.init["id"] != run_id and late.init["group"] == "sweep" and late.logged == SENT
    lines = (other / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line).get("update") for line in lines] == [None, 1, 2]


def test_no_project_no_wandb(tmp_path, fake_wandb):
    assert wandb_log.sinks(TrainConfig(), tmp_path) == [] and fake_wandb.runs == []
    (sink,) = wandb_log.sinks(TrainConfig.from_fields(wandb_project="p"), tmp_path, group="g")
    assert (
        sink.run.init["project"] == "p"
        and sink.run.init["config"] == TrainConfig.from_fields(wandb_project="p").to_dict()
    )


def test_a_missing_wandb_is_one_line_before_the_run_dir_is_made(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb raises ImportError
    with pytest.raises(RunError, match=r"^wandb_project='p' needs the wandb package: pip install \"jaxgame\[wandb\]\""):
        train(TrainConfig.from_fields(wandb_project="p"), tmp_path / "run")
    assert not (tmp_path / "run").exists()
