"""Faults injected into runs, each with its defined outcome (docs/training.md, "What survives what").

CartPole runs with tiny networks: each compiles in seconds."""

from __future__ import annotations

import importlib.util
import io
import json
import shutil
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import multihost_utils

from agents.config import TrainConfig
from agents.run import chunks, preflight, signals, train_program, training
from agents.storage import run_dir as run_dir_lib
from agents.storage.checkpoints import CheckpointStore
from agents.storage.run_dir import RunError
from agents.utils import health
from agents.utils.progress import ConsoleProgress, NoProgress
from experiments import train as train_cli
from tests.tb_events import tb_steps

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("gymnax") is None, reason="pip install -e '.[gymnax]'"),
    pytest.mark.xdist_group("faults"),  # one worker compiles the tiny CartPole run once for every test here
]

TINY = TrainConfig.from_fields(
    env="gymnax:CartPole-v1",
    num_envs=4,
    num_steps=8,
    total_steps=4 * 8 * 4,
    hidden=(8,),
    update_epochs=1,
    num_minibatches=1,
    updates_per_chunk=1,
    eval_every=0,
    checkpoint_every=1,
    keep_checkpoints=5,
)


@pytest.fixture(scope="session")  # session: xdist interleaves modules, which would rebuild a module fixture
def tiny_run(tmp_path_factory):
    """A finished TINY run (4 updates, a checkpoint after each); tests copy it (``_copy``), never change it."""
    run_dir = tmp_path_factory.mktemp("tiny") / "run"
    training.train(TINY, run_dir)
    return run_dir


def _copy(source, target):
    shutil.copytree(source, target)
    return target


def _records(run_dir):
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()[1:]
    timing = ("wall_s", "sps", "perf/sps", "perf/seat_sps")
    return [{k: v for k, v in json.loads(line).items() if k not in timing} for line in lines]


def _tiny_cli_args(out) -> list[str]:
    """``experiments.train``'s arguments for TINY's run in ``out``: the gymnax preset with every field set."""
    args = ["--preset=ppo_gymnax", "--out", str(out), "--quiet"]
    for key, value in TINY.to_flat_dict().items():
        if key not in ("env", "hidden"):
            args += ["--set", f"{key}={value}"]
    return [*args, "--set", f"hidden={','.join(map(str, TINY.net.hidden))}"]


def _cli_exit(args, capsys) -> tuple[int, str]:
    """(exit status, stderr) of ``experiments.train`` with ``args``, which must end the CLI (SystemExit)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        train_cli.main(args)
    return exit_info.value.code, capsys.readouterr().err


def _steps(run_dir):
    with CheckpointStore(run_dir / "checkpoints", keep=1) as store:
        return store.steps()


# ---------------------------------------------------------------- non-finite training


def test_check_chunk_names_the_first_bad_update_and_metric():
    ok = {"loss/value": np.ones(3, np.float32), health.FINITE: np.ones(3, np.float32)}
    assert set(health.check_chunk(ok, 10)) == {"loss/value"}  # the flag is dropped
    bad = {
        "loss/value": np.array([1.0, np.nan, np.inf], np.float32),
        "loss/policy": np.array([0.0, 0.0, np.nan]),
        health.FINITE: np.array([1.0, 0.0, 0.0], np.float32),
    }
    with pytest.raises(health.NonFiniteError, match=r"^update 12: loss/value is not finite") as err:
        health.check_chunk(bad, 10)
    assert (err.value.update, err.value.metric) == (12, "loss/value")
    params_only = {"loss/value": np.ones(2, np.float32), health.FINITE: np.array([1.0, 0.0], np.float32)}
    with pytest.raises(health.NonFiniteError, match=r"update 2: parameters is not finite"):
        health.check_chunk(params_only, 0)
    sweep = {"loss/value": np.array([[1.0, 1.0], [1.0, np.nan]]), health.FINITE: np.array([[1.0, 1.0], [1.0, 0.0]])}
    with pytest.raises(health.NonFiniteError, match=r"^run 1, update 6: loss/value"):
        health.check_chunk(sweep, 4)


def test_finite_flag_sees_parameters_and_metrics():
    params = {"w": jnp.ones(3), "count": jnp.int32(1)}
    assert float(health.finite_flag(params, {"loss": jnp.float32(1.0)})) == 1.0
    assert float(health.finite_flag({"w": jnp.array([1.0, jnp.nan])}, {})) == 0.0
    assert float(health.finite_flag(params, {"loss": jnp.float32(jnp.inf)})) == 0.0


def _poison_chunk(monkeypatch, at_call: int):
    """The compiled chunk gets NaN parameters on its ``at_call``-th call (0-based)."""
    real = train_program.TrainProgram.compile_all

    def compile_all(self, runner):
        compiled = real(self, runner)
        calls = []

        def chunk(runner):
            calls.append(1)
            if len(calls) - 1 == at_call:
                runner = runner.replace(params=jax.tree_util.tree_map(lambda x: x * jnp.nan, runner.params))
            return compiled(runner)

        return chunk

    monkeypatch.setattr(train_program.TrainProgram, "compile_all", compile_all)


def _slow_saves(monkeypatch, seconds: float, events: list | None = None, fail_at: int | None = None):
    """``CheckpointStore.save`` sleeps ``seconds`` first (and raises at step ``fail_at``); ``events`` gets
    ("save start", step), ("save end", step) in order."""
    real = CheckpointStore.save

    def save(self, step, *args, **kwargs):
        if events is not None:
            events.append(("save start", step))
        time.sleep(seconds)
        if step == fail_at:
            raise OSError(f"disk full at step {step}")
        real(self, step, *args, **kwargs)
        if events is not None:
            events.append(("save end", step))

    monkeypatch.setattr(CheckpointStore, "save", save)


def test_nan_stops_the_run_before_it_logs_or_saves_and_resume_goes_on_from_the_last_good_update(
    tiny_run, tmp_path, monkeypatch
):
    _poison_chunk(monkeypatch, at_call=2)  # the third chunk: update 3
    _slow_saves(monkeypatch, 0.5)  # update 2's save is still in flight when update 3 turns out bad
    with pytest.raises(health.NonFiniteError, match=r"^update 3: (loss|train|sums)/\S+ is not finite") as err:
        training.train(TINY, tmp_path / "nan")
    assert err.value.update == 3
    assert [r["update"] for r in _records(tmp_path / "nan")] == [1, 2]  # nothing of the bad chunk
    assert _steps(tmp_path / "nan") == [1, 2]  # the latest checkpoint is the last good one
    monkeypatch.undo()

    resumed = training.train(TINY, tmp_path / "nan", resume=True)
    assert resumed["updates"] == 4
    assert _records(tmp_path / "nan") == _records(tiny_run)


def test_a_checkpoint_is_written_while_the_next_chunk_trains_and_the_run_returns_only_once_it_is_on_disk(
    tiny_run, tmp_path, monkeypatch
):
    events = []
    _slow_saves(monkeypatch, 0.3, events)
    real_run = chunks.ChunkLoop._chunk

    def chunk(self, result, *args):
        events.append(("chunk", result.updates + 1))
        return real_run(self, result, *args)

    monkeypatch.setattr(chunks.ChunkLoop, "_chunk", chunk)
    summary = training.train(TINY, tmp_path / "overlap")
    assert summary["updates"] == 4 and summary["loop_s"] >= summary["train_s"] > 0
    # update 1's save starts, update 2's chunk starts before it ends; the last save is waited for
    assert events.index(("chunk", 2)) < events.index(("save end", 1))
    assert events[-1] == ("save end", 4)
    assert _steps(tmp_path / "overlap") == [1, 2, 3, 4]
    assert _records(tmp_path / "overlap") == _records(tiny_run)


def test_the_summary_says_how_long_the_loop_spent_on_checkpoints_and_logs(tmp_path, monkeypatch):
    """Four saves of >= 0.5 s and chunks of milliseconds: each background save is still running when the next
    chunk ends, so the loop's thread waits for saves 1-3 and writes the last one: about 2 s, not in ``train_s``."""
    _slow_saves(monkeypatch, 0.5)
    summary = training.train(TINY, tmp_path / "parts")
    assert summary["updates"] == 4 and summary["checkpoint_s"] >= 1.5 > summary["train_s"]
    assert summary["eval_s"] == 0 and summary["log_s"] > 0  # a gymnax run has no evaluations
    parts = summary["train_s"] + summary["checkpoint_s"] + summary["eval_s"] + summary["log_s"]
    # the rest (records, progress) takes milliseconds: a wait or save left uncounted would be >= 0.5 s
    assert parts - 0.002 <= summary["loop_s"] <= parts + 0.3


def test_a_failed_background_save_stops_the_run_with_its_error(tmp_path, monkeypatch):
    _slow_saves(monkeypatch, 0.0, fail_at=2)
    with pytest.raises(OSError, match="disk full at step 2"):
        training.train(TINY, tmp_path / "full")
    assert _steps(tmp_path / "full") == [1]  # the error surfaced at the next save: step 3 was never written
    monkeypatch.undo()
    assert training.train(TINY, tmp_path / "full", resume=True)["updates"] == 4


def test_the_cli_exits_non_zero_with_one_line_naming_the_update(tmp_path, monkeypatch, capsys):
    _poison_chunk(monkeypatch, at_call=0)
    code, err = _cli_exit(_tiny_cli_args(tmp_path / "r"), capsys)
    assert code == 1 and len(err.strip().splitlines()) == 1  # a non-zero exit with one line
    assert err.startswith("python -m experiments.train: error: update 1: ") and "not finite" in err
    assert _steps(tmp_path / "r") == []


def test_a_full_disk_ends_the_cli_in_one_line_and_the_next_resume_continues(tiny_run, tmp_path, monkeypatch, capsys):
    """ENOSPC in a checkpoint save (written in the background): the CLI ends with exit 1 and one line naming the
    error and how to continue; the complete checkpoints and the metrics up to them stay, and a resume finishes the
    run with the uninterrupted run's records."""
    import errno

    real = CheckpointStore.save

    def save(self, step, *args, **kwargs):
        if step == 2:
            raise OSError(errno.ENOSPC, "No space left on device (injected)")
        real(self, step, *args, **kwargs)

    monkeypatch.setattr(CheckpointStore, "save", save)
    args = _tiny_cli_args(tmp_path / "r")
    code, err = _cli_exit(args, capsys)
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert "No space left on device" in err and f"--out {tmp_path / 'r'} --resume" in err
    assert _steps(tmp_path / "r") == [1]
    monkeypatch.undo()
    resumed = train_cli.main([*args, "--auto-resume"])  # the same command, requeued
    assert resumed["updates"] == 4 and _steps(tmp_path / "r")[-1] == 4
    assert _records(tmp_path / "r") == _records(tiny_run)  # the same config as TINY


REPO = __import__("pathlib").Path(__file__).resolve().parents[1]
TMPFS_SCRIPT = r"""
set -u
mount -t tmpfs -o size=4m tmpfs "$DISK" || exit 77  # no mount namespace here: the test skips
run() { "$PYTHON" -m experiments.train "$@" --out "$DISK/r" --auto-resume; }
run "${ARGS[@]}" --set total_steps=32 >/dev/null || exit 3             # update 1, checkpoint 1
dd if=/dev/zero of="$DISK/ballast" bs=4k 2>/dev/null                  # fill the disk ...
truncate -s -"$FREE" "$DISK/ballast"                                   # ... but for $FREE bytes
run "${ARGS[@]}" >"$OUT/full.out" 2>"$OUT/full.err"; echo $? >"$OUT/full.rc"
cp -r "$DISK/r" "$OUT/after_full"
rm "$DISK/ballast"                                                     # space is freed: the job is requeued
run "${ARGS[@]}" >"$OUT/resumed.out" 2>"$OUT/resumed.err"; echo $? >"$OUT/resumed.rc"
cp -r "$DISK/r" "$OUT/resumed"
"""


@pytest.mark.parametrize("free_kib", [0, 48])  # 0: the first write fails; 48: metrics fit, a checkpoint does not
def test_a_real_full_disk_ends_the_run_in_one_line_and_the_next_resume_continues(tiny_run, tmp_path, free_kib):
    """A real ENOSPC, not an injected one: the run directory on a 4 MiB tmpfs (in a private mount namespace,
    ``unshare -rm``; skipped where the machine does not allow one) filled after the first checkpoint. The CLI
    ends with exit 1 and one line; checkpoint 1 still verifies (``sha256sum -c``), every metrics line is whole,
    and once space is freed the same command finishes the run with the uninterrupted run's records."""
    import os
    import subprocess
    import sys

    if shutil.which("unshare") is None:
        pytest.skip("needs util-linux unshare")
    out = tmp_path / "out"
    out.mkdir()
    disk = tmp_path / "disk"
    disk.mkdir()
    args = [a for a in _tiny_cli_args("unused") if a not in ("--out", "unused")]
    script = f"ARGS=({' '.join(map(repr, args))})\n" + TMPFS_SCRIPT
    env = {**os.environ, "DISK": str(disk), "OUT": str(out), "PYTHON": sys.executable, "FREE": str(free_kib * 1024)}
    proc = subprocess.run(
        ["unshare", "-rm", "bash", "-c", script], env=env, cwd=str(REPO), capture_output=True, text=True, timeout=300
    )
    if proc.returncode == 77 or "unshare:" in proc.stderr:
        pytest.skip(f"no private tmpfs on this machine: {proc.stderr.strip()[:200]}")
    assert proc.returncode == 0, proc.stderr

    err = (out / "full.err").read_text()
    assert (out / "full.rc").read_text().strip() == "1" and len(err.strip().splitlines()) == 1, err
    assert "No space left on device" in err and "--resume" in err and "Traceback" not in err
    after = out / "after_full"
    assert _steps(after) == [1]
    sums = subprocess.run(
        ["sha256sum", "-c", "--quiet", "SHA256SUMS"], cwd=after / "checkpoints" / "1", capture_output=True, text=True
    )
    assert sums.returncode == 0, sums.stdout + sums.stderr
    lines = (after / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line).get("update") for line in lines[1:]][:1] == [1]  # whole lines only (json.loads)

    assert (out / "resumed.rc").read_text().strip() == "0", (out / "resumed.err").read_text()
    resumed = out / "resumed"
    assert _steps(resumed)[-1] == 4
    assert _records(resumed) == _records(tiny_run)


# ---------------------------------------------------------------- checkpoints saved again, garbled files


def _tree(value: float):
    return {"w": jnp.full((3,), value, jnp.float32), "key": jax.random.key(int(value))}


def _abstract():
    return jax.eval_shape(lambda: _tree(0.0))


def test_saving_a_step_again_keeps_the_old_copy_until_the_new_one_is_complete(tmp_path, monkeypatch):
    with CheckpointStore(tmp_path, keep=3) as store:
        store.save(1, _tree(1.0), {"c": 1})
        store.save(2, _tree(2.0), {"c": 2})

        def fail(*args, **kwargs):
            raise OSError("disk full (simulated)")

        monkeypatch.setattr(store._mgr, "save", fail)
        with pytest.raises(OSError, match="disk full"):
            store.save(2, _tree(20.0), {"c": 20})
        monkeypatch.undo()
        assert store.steps() == [1, 2]
        step, tree, config = store.restore(_abstract())
        assert (step, float(tree["w"][0]), config) == (2, 2.0, {"c": 2})  # the old copy, whole
        store.save(2, _tree(20.0), {"c": 20})
        assert float(store.restore(_abstract())[1]["w"][0]) == 20.0
    assert not list(tmp_path.glob(".replaced-*"))


def test_a_kill_while_saving_a_step_again_leaves_the_old_copy_restorable(tmp_path):
    with CheckpointStore(tmp_path, keep=3) as store:
        store.save(1, _tree(1.0), {"c": 1})
        store.save(2, _tree(2.0), {"c": 2})
    (tmp_path / "2").rename(tmp_path / ".replaced-2")  # killed after setting it aside, before the new copy
    with CheckpointStore(tmp_path, keep=3) as store:
        assert store.steps() == [1, 2]
        assert float(store.restore(_abstract())[1]["w"][0]) == 2.0


# ---------------------------------------------------------------- run directories belong to one run of one tool


def test_a_run_directory_belongs_to_one_run_of_one_tool(tiny_run, tmp_path):
    from agents.run.sweep import SweepSpec
    from agents.run.sweep_loop import run_sweep

    trained = _copy(tiny_run, tmp_path / "trained")
    before = sorted(p.name for p in trained.iterdir())
    steps = _steps(trained)
    owner = json.loads((trained / "run.json").read_text())
    assert owner["tool"] == "train" and owner["identity"] == run_dir_lib.identity_hash(preflight.run_identity(TINY))

    with pytest.raises(RunError, match=r"holds a train run \(run id \w+\), not a sweep run"):
        run_sweep(TINY, SweepSpec.make([0]), trained)
    with pytest.raises(RunError, match=r"holds a train run .*continue it with agents\.train\(\.\.\., resume"):
        training.train(TINY, trained)
    assert sorted(p.name for p in trained.iterdir()) == before and _steps(trained) == steps  # nothing touched

    swept = tmp_path / "swept"
    swept.mkdir()
    (swept / "run.json").write_text(json.dumps({"tool": "sweep", "run_id": "abc"}))
    for resume in (False, True):
        with pytest.raises(RunError, match=r"holds a sweep run .*sweep_loop\.run_sweep\(\.\.\., resume=True\)"):
            training.train(TINY, swept, resume=resume)

    old = tmp_path / "old_checkpoints"  # an older run's checkpoints, no metrics.jsonl
    (old / "checkpoints" / "4").mkdir(parents=True)
    with pytest.raises(RunError, match=r"is not empty \(checkpoints, \.\.\.\) and is not a run directory"):
        training.train(TINY, old)
    with pytest.raises(RunError, match="config.json not found"):
        training.train(TINY, old, resume=True)

    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    with pytest.raises(RunError, match="is a file, not a directory"):
        training.train(TINY, a_file)


def test_resume_checks_the_config_against_the_directory_and_the_checkpoints(tiny_run, tmp_path):
    run_dir = _copy(tiny_run, tmp_path / "r")
    config = json.loads((run_dir / "config.json").read_text())
    (run_dir / "config.json").write_text(json.dumps({**config, "lr": 0.1}))
    with pytest.raises(RunError, match="is not the config .*run.json was created with"):
        training.train(preflight.load_config(run_dir), run_dir, resume=True)
    (run_dir / "run.json").unlink()  # a directory of an older version (no .lock either): adopted with a warning,
    (run_dir / ".lock").unlink()  # then its checkpoints disagree
    with (
        pytest.warns(RuntimeWarning, match="adopting it as a train run written by an older version"),
        pytest.raises(
            RunError,
            match=r"config.json and its checkpoints disagree: cannot resume with changed "
            r"field\(s\) \['lr'\]",
        ),
    ):
        training.train(preflight.load_config(run_dir), run_dir, resume=True)


# ---------------------------------------------------------------- restartable from any point


def test_a_run_stopped_during_its_first_compile_resumes_from_update_0(tiny_run, tmp_path, monkeypatch):

    def interrupted(self, runner):
        raise KeyboardInterrupt  # Ctrl-C while compiling: nothing trained, no checkpoint

    monkeypatch.setattr(train_program.TrainProgram, "compile_all", interrupted)
    stopped = tmp_path / "stopped"
    with pytest.raises(KeyboardInterrupt):
        training.train(TINY, stopped)
    monkeypatch.undo()
    assert _steps(stopped) == []
    with pytest.raises(RunError, match="holds a train run .*resume=True"):
        training.train(TINY, stopped)
    summary = training.train(preflight.load_config(stopped), stopped, resume=True)
    assert summary["updates"] == 4
    assert _records(stopped) == _records(tiny_run)


def test_a_checkpoint_that_is_another_steps_or_another_runs_is_not_resumed(tiny_run, tmp_path):
    """checkpoints/4 replaced by a complete copy of checkpoints/3 (its SHA256SUMS included), or by step 4 of another
    run of the same config (the same numbers, another run.json id): each is damage, so the resume falls back to
    update 3 with one warning and trains update 4 again, to the uninterrupted run's records."""
    copied = _copy(tiny_run, tmp_path / "copied")
    shutil.rmtree(copied / "checkpoints" / "4")
    shutil.copytree(copied / "checkpoints" / "3", copied / "checkpoints" / "4")
    other = tmp_path / "other"
    training.train(TINY, other)
    foreign = _copy(tiny_run, tmp_path / "foreign")
    shutil.rmtree(foreign / "checkpoints" / "4")
    shutil.copytree(other / "checkpoints" / "4", foreign / "checkpoints" / "4")
    for run_dir, reason in ((copied, "names step 3, not 4"), (foreign, "names run ")):
        progress = ConsoleProgress(file=io.StringIO())
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            summary = training.train(preflight.load_config(run_dir), run_dir, resume=True, progress=progress)
        messages = [str(w.message) for w in record if "could not be restored" in str(w.message)]
        assert len(messages) == 1 and "checkpoint step 4" in messages[0] and reason in messages[0], messages
        assert "resuming from update 3" in progress.file.getvalue()
        assert summary["updates"] == 4 and _records(run_dir) == _records(tiny_run)
        assert _steps(run_dir)[-1] == 4


def test_after_a_resume_tensorboard_shows_each_step_once(tiny_run, tmp_path):
    run_dir = _copy(tiny_run, tmp_path / "r")  # updates 1..4, checkpoints 1..4
    for step in (3, 4):  # as if the run died after logging updates 3 and 4 but before their checkpoints
        shutil.rmtree(run_dir / "checkpoints" / str(step))
    training.train(preflight.load_config(run_dir), run_dir, resume=True)
    steps = tb_steps(run_dir, "loss/value")
    assert steps == sorted(set(steps)) and len(steps) == 4  # 1..4 once each (in env steps)
    assert [r["update"] for r in _records(run_dir)] == [1, 2, 3, 4]


# ---------------------------------------------------------------- signals


def _cli_args(config: TrainConfig, run_dir) -> list[str]:
    args = ["-m", "experiments.train", "--preset=ppo_gymnax", "--out", str(run_dir), "--auto-resume"]
    for key, value in config.to_flat_dict().items():
        args += ["--set", f"{key}={','.join(map(str, value)) if key == 'hidden' else value}"]
    return args


def test_sigterm_saves_at_the_chunk_boundary_exits_0_and_auto_resume_finishes_the_same_run(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    # 300 updates, a checkpoint only at the end (and where a signal stops it). With 30, a fast machine finished the
    # 27 chunks of a few ms each left after the third record before the signal arrived
    long = TrainConfig.from_fields(
        **{**TINY.to_dict(), "hidden": TINY.net.hidden, "total_steps": 4 * 8 * 300, "checkpoint_every": 0}
    )
    training.train(long, tmp_path / "clean")
    run_dir = tmp_path / "signalled"
    err_path = tmp_path / "stderr.txt"
    with open(err_path, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, *_cli_args(long, run_dir)], stdout=subprocess.PIPE, stderr=err, text=True
        )
        deadline = time.time() + 240
        while time.time() < deadline and not (run_dir / "metrics.jsonl").exists() or len(_lines(run_dir)) < 3:
            time.sleep(0.05)
            assert proc.poll() is None, err_path.read_text()[-2000:]
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, err_path.read_text()[-2000:]
    summary = json.loads(out.strip().splitlines()[-1])
    stopped_at = summary["updates"]
    assert summary["stopped"] == "SIGTERM" and 2 <= stopped_at < 300
    assert _steps(run_dir)[-1] == stopped_at  # checkpointed at the boundary where it stopped
    assert [r["update"] for r in _records(run_dir)] == list(range(1, stopped_at + 1))
    assert "stopped by SIGTERM" in err_path.read_text()

    finished = train_cli.main([*_cli_args(long, run_dir)[2:], "--quiet"])  # the same command, in-process
    assert finished["updates"] == 300 and finished["stopped"] is None
    assert _records(run_dir) == _records(tmp_path / "clean")  # bitwise: the uninterrupted run's records


SECOND_SIGNAL = """
import os, signal, sys, time
from agents.run.signals import StopSignals
which = getattr(signal, sys.argv[1])
with StopSignals() as stop:
    os.kill(os.getpid(), which)          # the first: remembered, the process goes on
    time.sleep(0.2)
    assert stop.requested() == which.name, stop.requested()
    assert signal.getsignal(signal.SIGINT) is signal.SIG_DFL and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    print("first signal kept", flush=True)
    os.kill(os.getpid(), which)          # the second: the default action, i.e. the process ends here
    time.sleep(5)
    print("still running", flush=True)
"""


class _CompileOnlyProgram:
    """A stand-in chunk program whose compile receives a signal (as Ctrl-C during XLA's compile would); its chunk
    must never run."""

    class config:  # noqa: N801 (stands in for a TrainConfig)
        class run:  # noqa: N801 (its group)
            updates_per_chunk = 2

        num_updates, last_update = 4, 4

    has_eval = False

    def __init__(self, signum):
        self.signum = signum

    def compile_all(self, runner):
        import os

        os.kill(os.getpid(), self.signum)
        return lambda runner: pytest.fail("a chunk ran after the stop")

    def updates_done(self, runner):
        return 0

    def finished_early(self, runner):
        return False


class _Closable:
    closed = False

    def close(self):
        self.closed = True


@pytest.mark.parametrize("name", ["SIGTERM", "SIGINT"])
def test_a_signal_during_the_compile_stops_the_run_before_its_first_chunk(name):
    """Ctrl-C or SIGTERM while the chunk compiles: no KeyboardInterrupt traceback and no exit by the signal; the
    run stops before its first chunk (nothing trained, so nothing to save), closes its logs and store, and puts the
    signal handlers back."""
    import signal
    import threading

    assert threading.current_thread() is threading.main_thread()  # where signal handlers are installed
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    store, log = _Closable(), _Closable()
    started = chunks.Started(store, runner=None, wall_before=0.0, restored=False, compile_start=time.perf_counter())
    with signals.stop_signals(True, NoProgress()) as stop:
        result, _ = chunks.compile_and_loop(
            _CompileOnlyProgram(getattr(signal, name)), started, [log], NoProgress(), "the training chunk", stop
        )
    assert result.stopped == name and result.updates == 0 and result.records == []
    assert store.closed and log.closed
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


@pytest.mark.parametrize("name", ["SIGTERM", "SIGINT"])
def test_a_signal_while_the_run_is_built_stops_it_without_compiling_and_it_resumes(
    name, tiny_run, tmp_path, monkeypatch
):
    """Ctrl-C or SIGTERM while a new run makes its first runner (its init is compiled and run: a KeyboardInterrupt
    raised inside XLA's compile was lost or crashed the process): the handlers are already the run's, so the run
    stops without compiling its chunk, exits normally with ``"stopped"`` set and nothing saved, and a resume gives
    the uninterrupted run's records."""
    import os
    import signal

    init = train_program.TrainProgram.init

    def init_then_signal(self):
        runner = init(self)
        os.kill(os.getpid(), getattr(signal, name))  # delivered while the run is built
        return runner

    monkeypatch.setattr(train_program.TrainProgram, "init", init_then_signal)
    monkeypatch.setattr(
        train_program.TrainProgram, "compile_all", lambda self, runner: pytest.fail("compiled after the stop")
    )
    stopped = tmp_path / "stopped"
    summary = training.train(TINY, stopped, stop_on_signals=True)
    assert summary["stopped"] == name and summary["updates"] == 0 and _steps(stopped) == []
    monkeypatch.undo()
    assert training.train(preflight.load_config(stopped), stopped, resume=True)["updates"] == 4
    assert _records(stopped) == _records(tiny_run)


def test_a_signal_during_a_background_save_stops_at_the_next_chunk_with_every_checkpoint(
    tiny_run, tmp_path, monkeypatch
):
    """SIGTERM while update 1's checkpoint is being written (in the saver thread): the save completes, the run
    stops at the next chunk boundary (update 1 or 2, as the threads race) with a checkpoint there, and a resume
    gives the uninterrupted run's records."""
    import os
    import signal

    real = CheckpointStore.save

    def save(self, step, *args, **kwargs):
        if step == 1:
            os.kill(os.getpid(), signal.SIGTERM)  # delivered to the main thread while this save runs
        real(self, step, *args, **kwargs)

    monkeypatch.setattr(CheckpointStore, "save", save)
    summary = training.train(TINY, tmp_path / "sig", stop_on_signals=True)
    assert summary["stopped"] == "SIGTERM" and summary["updates"] in (1, 2)
    assert _steps(tmp_path / "sig") == list(range(1, summary["updates"] + 1))
    monkeypatch.undo()
    assert training.train(TINY, tmp_path / "sig", resume=True)["updates"] == 4
    assert _records(tmp_path / "sig") == _records(tiny_run)


def test_ctrl_c_outside_the_chunks_ends_the_cli_in_one_line(tmp_path, monkeypatch, capsys):
    """A KeyboardInterrupt where no stop handler is installed (here: while the summary is made) is one line and
    exit 130, not a traceback."""

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(training, "_train_summary", interrupted)
    code, err = _cli_exit(_tiny_cli_args(tmp_path / "r"), capsys)
    assert code == 130 and len(err.strip().splitlines()) == 1 and "interrupted" in err
    assert f"--out {tmp_path / 'r'} --resume" in err


@pytest.mark.parametrize(
    "error, code, text",
    [(KeyboardInterrupt(), 130, "interrupted"), (OSError(28, "No space left on device"), 1, "No space left")],
)
@pytest.mark.parametrize("cli, library", [("sweep", "run_sweep"), ("pipeline", "run_pipeline")])
def test_sweep_and_pipeline_clis_end_an_interrupt_or_a_full_disk_in_one_line(
    cli, library, error, code, text, tmp_path, monkeypatch, capsys
):
    import importlib

    module = importlib.import_module(f"experiments.{cli}")

    def fails(*args, **kwargs):
        raise error

    monkeypatch.setattr(module, library, fails)
    preset = "smoke" if cli == "sweep" else "pipeline_smoke"
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        module.main([f"--preset={preset}", "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert exit_info.value.code == code and len(err.strip().splitlines()) == 1 and text in err, err
    assert "--resume" in err and "Traceback" not in err


@pytest.mark.parametrize("name", ["SIGTERM", "SIGINT"])
def test_a_second_signal_ends_the_process_at_once(name):
    import signal
    import subprocess
    import sys
    import time

    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", SECOND_SIGNAL, name], capture_output=True, text=True, timeout=120)
    assert "first signal kept" in proc.stdout, proc.stderr[-2000:]
    assert "still running" not in proc.stdout
    assert proc.returncode == -getattr(signal, name)  # killed by the signal itself, not an exit after cleanup
    assert time.perf_counter() - t0 < 60


def test_stop_signals_agree_over_the_processes(monkeypatch):
    """In a multi-process run every process asks the same question after each chunk: a signal in any of
    them stops all at that chunk (the 2-process end-to-end run is the opt-in test in test_multidevice.py)."""
    from agents.run.signals import StopSignals

    gathered = []

    def allgather(code, others):
        gathered.append(int(code))
        return np.asarray([int(code), *others], np.int32)

    monkeypatch.setattr(jax, "process_count", lambda: 2)
    for mine, theirs, expected in [
        (None, 0, None),
        (None, 2, "SIGTERM"),
        ("SIGINT", 0, "SIGINT"),
        ("SIGTERM", 1, "SIGTERM"),
        (None, 1, "SIGINT"),
    ]:
        monkeypatch.setattr(multihost_utils, "process_allgather", lambda code, t=theirs: allgather(code, [t]))
        stop = StopSignals()
        stop.received = mine
        assert stop.requested() == expected, (mine, theirs)
    assert gathered == [0, 0, 1, 2, 0]  # this process's own code: 0 none, 1 SIGINT, 2 SIGTERM


def test_stop_signals_restores_the_handlers_it_replaced():
    import signal

    from agents.run.signals import StopSignals

    before = {s: signal.getsignal(s) for s in StopSignals.SIGNALS}
    with StopSignals() as stop:
        assert all(signal.getsignal(s) == stop._handle for s in StopSignals.SIGNALS)
        assert stop.requested() is None
    assert {s: signal.getsignal(s) for s in StopSignals.SIGNALS} == before


def _lines(run_dir):
    try:
        return (run_dir / "metrics.jsonl").read_text().splitlines()
    except FileNotFoundError:
        return []


# ---------------------------------------------------------------- every bad input is one line


def _bad_input_cases(tiny_run, tmp_path):
    """(name, argv after `python`, text the one line must contain, the path that must not appear)."""
    trained = _copy(tiny_run, tmp_path / "trained")  # a finished CartPole run with 4 checkpoints
    corrupt = _copy(tiny_run, tmp_path / "corrupt")
    for step_dir in (corrupt / "checkpoints").iterdir():
        for f in (step_dir / "state").rglob("*"):
            if f.is_file() and "metadata" not in f.name:
                f.write_bytes(b"garbage")
    empty = tmp_path / "empty_run"
    (empty / "checkpoints").mkdir(parents=True)
    sweep_dir = tmp_path / "a_sweep"
    (sweep_dir / "checkpoints").mkdir(parents=True)
    (sweep_dir / "run.json").write_text(json.dumps({"tool": "sweep", "run_id": "x"}))
    a_file = tmp_path / "a_file"
    a_file.write_text("not a directory")
    fresh = tmp_path / "never_created"
    train = ["-m", "experiments.train", "--quiet"]
    evaluate = ["-m", "experiments.evaluate", "--quiet"]
    rate = ["-m", "experiments.rate", "--quiet"]
    no_gymnax = [
        "-c",
        "import sys; sys.modules['gymnax'] = None; from experiments.train import main; "
        f"main(['--preset=ppo_gymnax', '--out', {str(fresh)!r}, '--quiet'])",
    ]
    return [
        ("run dir is a file", [*train, "--preset=smoke", "--out", str(a_file)], "is a file", None),
        ("run dir cannot be made", [*train, "--preset=smoke", "--out", "/dev/null/run"], "/dev/null/run", None),
        (
            "unknown gymnax env",
            [*train, "--preset=ppo_gymnax", "--env", "gymnax:Nope-v0", "--out", str(fresh)],
            "unknown gymnax env 'Nope-v0'",
            fresh,
        ),
        ("gymnax not installed", no_gymnax, "needs gymnax", fresh),
        ("all checkpoints corrupt", [*train, "--out", str(corrupt), "--resume"], "could be restored", None),
        ("resume with a preset", [*train, "--preset=smoke", "--out", str(trained), "--resume"], "--preset", None),
        ("evaluate a missing step", [*evaluate, f"{trained}:99"], "step 99", None),
        ("evaluate empty checkpoints", [*evaluate, str(empty)], "no checkpoints", None),
        ("evaluate a sweep", [*evaluate, str(sweep_dir)], "sweep directory", None),
        ("unknown rule", [*evaluate, "--set", "nope=3"], "nope", None),
        ("rule out of range", [*evaluate, "--set", "max_rounds=1000"], "max_rounds", None),
        ("a removed flag", [*evaluate, "--step", "2"], "--step was removed: use the positional player", None),
        ("--vs without a player", [*evaluate, "--vs", "greedy"], "--vs needs a PLAYER", None),
        ("more games than memory", [*evaluate, "--games", "100000000"], "--games 100000000 needs about", None),
        (
            "more envs than memory",
            [*train, "--preset=smoke", "--set", "num_envs=1048576", "--set", "total_steps=1e9", "--out", str(fresh)],
            "num_envs=1048576",
            fresh,
        ),
        ("rate a missing step", [*rate, f"{trained}:99", "--out", str(fresh)], "step 99", fresh),
        (
            "rate a typo",
            [*rate, str(tmp_path / "typo"), "--all-checkpoints", "--out", str(fresh)],
            "typo",
            tmp_path / "typo",
        ),
        ("render into a file", ["-m", "experiments.render", "--out", str(a_file), "--quiet"], "a_file", None),
        *_more_bad_input_cases(trained, tmp_path, a_file, fresh),
    ]


def _more_bad_input_cases(trained, tmp_path, a_file, fresh):
    """Issue 42's bad-input tail and a few of every CLI's refusals: each fails at argument parsing or the input
    checks, before anything is loaded, compiled or played (an unwritable output among them)."""
    train, sweep, pipeline = (["-m", f"experiments.{m}", "--quiet"] for m in ("train", "sweep", "pipeline"))
    evaluate, rate, record = (["-m", f"experiments.{m}", "--quiet"] for m in ("evaluate", "rate", "record"))
    plot, render, export = (["-m", f"experiments.{m}"] for m in ("plot", "render", "export"))
    baseline, bench = ["-m", "experiments.baseline"], ["-m", "benchmarks.harness.__main__", "--quiet"]
    reproduce = ["-m", "experiments.reproduce", "--quiet"]
    replay = ["-m", "experiments.replay", "--quiet"]
    play = ["-m", "experiments.play", "--quiet", "--no-browser"]
    png = fresh / "a.png"
    return [
        ("train: unknown preset", [*train, "--preset", "smok"], "unknown preset 'smok'; did you mean smoke?", None),
        ("train: unknown option", [*train, "--preset=smoke", "--bogus"], "unrecognized arguments: --bogus", None),
        ("train: unknown field", [*train, "--preset=smoke", "--set", "lrr=3", "--out", str(fresh)], "lrr", fresh),
        ("train: --resume without --out", [*train, "--resume"], "--resume needs --out", None),
        ("train: out in /proc", [*train, "--preset=smoke", "--out", "/proc/x/run"], "/proc/x/run", None),
        ("sweep: no preset", sweep, "give --preset", None),
        ("sweep: bad seeds", [*sweep, "--preset=smoke", "--seeds", "a,b"], "--seeds 'a,b'", None),
        ("sweep: out is a file", [*sweep, "--preset=smoke", "--out", str(a_file)], "is a file", None),
        ("sweep: out in /proc", [*sweep, "--preset=smoke", "--out", "/proc/x"], "/proc/x", None),
        ("sweep: bad value", [*sweep, "--preset=smoke", "--set", "lr=abc", "--out", str(fresh)], "lr", fresh),
        ("pipeline: unknown preset", [*pipeline, "--preset", "nope", "--out", str(fresh)], "nope", fresh),
        ("pipeline: --resume without --out", [*pipeline, "--resume"], "--resume needs --out", None),
        ("pipeline: bad --set", [*pipeline, "--set", "lr=3", "--out", str(fresh)], "PHASE.FIELD=VALUE", fresh),
        ("pipeline: out in /proc", [*pipeline, "--out", "/proc/x"], "/proc/x", None),
        ("evaluate: unknown opponent", [*evaluate, "--vs", "nosuchbot"], "unknown player 'nosuchbot'", None),
        (
            "evaluate: unknown opponent of a player",
            [*evaluate, str(trained), "--vs", "greedy,grredy"],
            "did you mean greedy",
            None,
        ),
        ("evaluate: unknown player", [*evaluate, "grredy"], "did you mean greedy", None),
        ("evaluate: bad step", [*evaluate, f"{trained}:abc"], "STEP must be an int", None),
        ("evaluate: unknown baseline", [*evaluate, "baseline:ppo_smal-v1"], "did you mean ppo_small-v1", None),
        ("evaluate: compare an unknown player", [*evaluate, "--compare", "greedy", "nosuch"], "'nosuch'", None),
        ("evaluate: bad seats", [*evaluate, "greedy", "--vs", "greedy,random"], "7 comma-separated", None),
        ("evaluate: removed --seats", [*evaluate, "--seats", "greedy,random"], "use BOT --vs BOTS", None),
        ("evaluate: unknown option", [*evaluate, "--bogus"], "unrecognized arguments", None),
        ("rate: unknown bot as a run", [*rate, "nosuch", "--out", str(fresh)], "unknown player 'nosuch'", fresh),
        ("rate: bad step", [*rate, f"{trained}:abc", "--out", str(fresh)], "STEP must be an int", fresh),
        ("rate: out in /proc", [*rate, str(trained), "--out", "/proc/x"], "/proc/x", None),
        ("rate: out is a file", [*rate, str(trained), "--out", str(a_file)], "is a file", None),
        ("rate: unknown --bots", [*rate, str(trained), "--bots", "nope", "--out", str(fresh)], "unknown bot", fresh),
        ("rate: no games", [*rate, str(trained), "--games", "0", "--out", str(fresh)], "--games must be", fresh),
        (
            "record: unknown player",
            [*record, "nosuch", "--vs", "greedy", "--out", str(fresh)],
            "unknown player 'nosuch'",
            fresh,
        ),
        (
            "record: bad step",
            [*record, f"{trained}:abc", "--vs", "greedy", "--out", str(fresh)],
            "STEP must be an int",
            fresh,
        ),
        ("record: out in /proc", [*record, "greedy", "--vs", "greedy", "--out", "/proc/x"], "/proc/x", None),
        ("record: 2 players", [*record, "greedy", "--vs", "greedy,random", "--out", str(fresh)], "1 or 7", fresh),
        ("record: removed --players", [*record, "--players", "greedy", "--out", str(fresh)], "use PLAYER --vs", fresh),
        (
            "record: bad positions",
            [*record, "greedy", "--vs", "greedy", "--positions", "a", "--out", str(fresh)],
            "--positions",
            fresh,
        ),
        ("record: no --out", [*record, "greedy", "--vs", "greedy"], "required: --out", None),
        ("plot: out in /proc", [*plot, str(trained), "--out", "/proc/x/a.png"], "/proc/x/a.png", None),
        ("plot: out is a directory", [*plot, str(trained), "--out", str(tmp_path)], "is a directory", None),
        ("plot: no metrics", [*plot, str(tmp_path / "nothing"), "--out", str(png)], "no metrics.jsonl", fresh),
        (
            "plot: unknown metric",
            [*plot, str(trained), "--out", str(png), "--metrics", "loss/entropi"],
            "did you mean loss/entropy",
            fresh,
        ),
        ("plot: bad --x", [*plot, str(trained), "--out", str(png), "--x", "nope"], "invalid choice", fresh),
        ("render: out in /proc", [*render, "--out", "/proc/x", "--quiet"], "/proc/x", None),
        ("render: bad seat", [*render, "--out", str(fresh), "--seat", "9", "--quiet"], "--seat", fresh),
        ("export: unknown policy", [*export, "nosuch", "--out", str(fresh)], "unknown player 'nosuch'", fresh),
        ("export: a bot", [*export, "greedy", "--out", str(fresh)], "scripted bot", fresh),
        ("export: out in /proc", [*export, str(trained), "--out", "/proc/x"], "/proc/x", None),
        (
            "baseline: unknown run",
            [*baseline, "freeze", "nosuch", "--name", "x-v1", "--out", str(fresh)],
            "unknown player 'nosuch'",
            fresh,
        ),
        (
            "baseline: out in /proc",
            [*baseline, "freeze", str(trained), "--name", "x-v1", "--out", "/proc/x"],
            "/proc/x",
            None,
        ),
        ("baseline: unknown command", [*baseline, "thaw"], "invalid choice: 'thaw'", None),
        ("benchmark: bad --what", [*bench, "--what", "nope"], "invalid choice", None),
        ("benchmark: bad sizes", [*bench, "--what", "env", "--num-envs", "1,x"], "comma-separated ints", None),
        ("reproduce: unknown preset", [*reproduce, "ppo_smal", "--out", str(fresh)], "did you mean ppo_small", fresh),
        ("reproduce: bad seeds", [*reproduce, "smoke", "--seeds", "a", "--out", str(fresh)], "--seeds", fresh),
        (
            "reproduce: evaluation seed trained on",
            [*reproduce, "smoke", "--seeds", "3", "--eval-seed", "1", "--out", str(fresh)],
            "eval_seed 1 is a training seed",
            fresh,
        ),
        ("reproduce: unknown field", [*reproduce, "smoke", "--set", "lrr=3", "--out", str(fresh)], "lrr", fresh),
        ("reproduce: out in /proc", [*reproduce, "smoke", "--out", "/proc/x"], "/proc/x", None),
        ("reproduce: bad record id", [*reproduce, "smoke", "--record", "A B", "--out", str(fresh)], "--record", fresh),
        (
            "reproduce: a pipeline's best checkpoint",
            [*reproduce, "pipeline_smoke", "--checkpoint", "best", "--out", str(fresh)],
            "only --checkpoint final applies",
            fresh,
        ),
        (
            "reproduce: a pipeline's unknown phase",
            [*reproduce, "pipeline_smoke", "--set", "leage.lr=1", "--out", str(fresh)],
            "unknown phase(s) ['leage']",
            fresh,
        ),
        (
            "reproduce: a pipeline's field without its phase",
            [*reproduce, "pipeline_smoke", "--set", "lr=1", "--out", str(fresh)],
            "expected PHASE.FIELD=VALUE",
            fresh,
        ),
        (
            "reproduce: a pipeline's evaluation seed trained on",
            [*reproduce, "pipeline_smoke", "--seeds", "1", "--eval-seed", "4", "--out", str(fresh)],
            "eval_seed 4 is a training seed",
            fresh,
        ),
        (
            "replay: unknown player",
            [*replay, "nosuch", "--vs", "greedy", "--out", str(fresh / "g.json")],
            "unknown player 'nosuch'",
            fresh,
        ),
        (
            "replay: out in /proc",
            [*replay, "greedy", "--vs", "greedy", "--out", "/proc/x/g.json"],
            "/proc/x/g.json",
            None,
        ),
        (
            "replay: 3 players",
            [*replay, "greedy", "--vs", "random,expert", "--out", str(fresh / "g.json")],
            "--vs needs 1 or 7",
            fresh,
        ),
        (
            "play: unknown player",
            [*play, "--vs", "greedy,grredy,greedy,greedy,greedy,greedy,greedy", "--out", str(fresh / "g.json")],
            "did you mean greedy",
            fresh,
        ),
        (
            "play: 2 players",
            [*play, "--vs", "greedy,random", "--out", str(fresh / "g.json")],
            "--vs needs 1 or 7",
            fresh,
        ),
        ("play: bad seat", [*play, "--vs", "greedy", "--seat", "8", "--out", str(fresh / "g.json")], "--seat", fresh),
        ("play: out in /proc", [*play, "--vs", "greedy", "--out", "/proc/x/g.json"], "/proc/x/g.json", None),
    ]


#: the cases also run as real processes (``python -m ...``: the exit status and stderr a user sees); the others
#: call the same module's ``main(argv)`` in this process, which is what ``python -m`` runs, without paying a
#: Python + JAX start-up each
IN_SUBPROCESS = ("gymnax not installed", "run dir cannot be made", "more games than memory")


def _in_process(argv, capfd):
    """(exit status, stderr) of ``python -m MODULE ARGS`` run as ``MODULE.main(ARGS)`` here: a SystemExit's
    code (0 when main returns), stderr with the warnings written as Python writes them, and "Traceback" for
    any other exception (what the process would print)."""
    import importlib
    import traceback
    import warnings

    assert argv[0] == "-m", argv
    capfd.readouterr()
    code, printed = 0, ""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        try:
            importlib.import_module(argv[1]).main(argv[2:])
        except SystemExit as exit_:
            code = exit_.code
        except Exception:  # noqa: BLE001  (what the process would print and exit 1 with)
            code, printed = 1, traceback.format_exc()
    err = capfd.readouterr().err + printed
    err += "".join(warnings.formatwarning(w.message, w.category, w.filename, w.lineno) for w in caught)
    return code, err


def test_every_bad_input_is_one_line_with_no_traceback_and_leaves_nothing_behind(
    tiny_run, tmp_path, capfd, monkeypatch
):
    import subprocess
    import sys

    cases = _bad_input_cases(tiny_run, tmp_path)
    assert {name for name, *_ in cases} >= set(IN_SUBPROCESS)
    assert len(cases) >= 40 and len({name for name, *_ in cases}) == len(cases)
    monkeypatch.chdir(tmp_path)  # the working directory: a default output (runs/...) would show below
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    procs = {
        name: subprocess.Popen(
            [sys.executable, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path
        )
        for name, argv, _, _ in cases
        if name in IN_SUBPROCESS
    }
    results = {name: _in_process(argv, capfd) for name, argv, _, _ in cases if name not in IN_SUBPROCESS}
    for name, proc in procs.items():
        _, err = proc.communicate(timeout=300)
        results[name] = proc.returncode, err
    problems = []
    for name, _, needle, not_created in cases:
        code, err = results[name]
        lines = err.strip().splitlines()
        if code in (0, None) or "Traceback" in err or not 1 <= len(lines) <= 3 or needle not in err:
            problems.append(f"{name}: exit {code}, {len(lines)} lines: {err.strip()[-600:]}")
        if not_created is not None and not_created.exists():
            problems.append(f"{name}: created {not_created}")
    assert not problems, "\n".join(problems)
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before  # no file or directory created or removed


def test_a_player_spec_names_the_unknown_player_or_the_bad_step(tiny_run, tmp_path):
    from agents.policies.load import PolicyError, parse_spec

    assert parse_spec("greedy") == "greedy" and parse_spec("baseline:ppo_small-v1") == ("baseline:ppo_small-v1", None)
    assert parse_spec(str(tiny_run)) == (str(tiny_run), None) and parse_spec(f"{tiny_run}:2") == (str(tiny_run), 2)
    odd = tmp_path / "odd:name"  # a directory whose name has a colon is itself
    odd.mkdir()
    assert parse_spec(str(odd)) == (str(odd), None)
    for spec, message in [
        ("grredy", r"unknown player 'grredy'.*did you mean greedy\?"),
        ("nosuch", r"unknown player 'nosuch'.*bots: random, greedy, expert"),
        (f"{tiny_run}:abc", r":abc'?: STEP must be an int"),
        (str(tiny_run.parent / "rnu"), r"did you mean .*/run\?"),
        (str(tmp_path / "gone:3"), "unknown player"),
        (
            "baseline:ppo_smal-v1",
            r"no baseline 'ppo_smal-v1'; did you mean ppo_small-v1 or ppo_small-v3 or "
            r"ppo_small-v2\? \(shipped: pipeline_entity-v1, ppo_large-v1, ppo_small-v1, "
            r"ppo_small-v2, ppo_small-v3, ppo_small_entity-v1\)",
        ),
    ]:
        with pytest.raises(PolicyError, match=message):
            parse_spec(spec)
    assert not (tmp_path / "gone").exists()


def test_outputs_are_checked_for_writability_before_any_work(tiny_run, tmp_path, monkeypatch):
    from agents.arena import tournament
    from agents.run.plotting import plot_runs
    from agents.storage.outputs import UnwritableOutputError, check_writable

    check_writable(tmp_path / "new" / "dir")
    check_writable(tmp_path / "new" / "a.png", kind="file")
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    for path, kind, message in [
        ("/proc/x", "dir", "cannot write in /proc"),
        ("/proc/x/a.png", "file", "/proc"),
        (a_file, "dir", "is a file"),
        (a_file / "sub", "dir", "is not a directory"),
        (tmp_path, "file", "is a directory"),
        ("/dev/null/run", "dir", "not a directory"),
    ]:
        with pytest.raises(UnwritableOutputError, match=message):
            check_writable(path, kind)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]  # nothing created

    def no_work(*args, **kwargs):
        raise AssertionError("loaded players before checking the output")

    monkeypatch.setattr(tournament, "load_players", no_work)
    with pytest.raises(UnwritableOutputError, match="/proc/x"):
        tournament.rate_checkpoints([str(tiny_run)], "/proc/x", bots=["greedy"])
    monkeypatch.setattr("agents.run.plotting.load_metrics", no_work)
    with pytest.raises(UnwritableOutputError, match="/proc/x/a.png"):
        plot_runs([str(tiny_run)], "/proc/x/a.png")


def test_a_cut_metrics_record_at_the_resume_point_is_dropped_with_one_warning(tmp_path):
    from agents.storage.metrics import MetricsLog

    def log(lines, keep):
        (tmp_path / "metrics.jsonl").write_text("".join(f"{line}\n" for line in lines))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            MetricsLog(tmp_path, None, keep_until_update=keep).close()
        return [str(w.message) for w in caught], (tmp_path / "metrics.jsonl").read_text().splitlines()

    records = [json.dumps({"meta": {}})] + [json.dumps({"update": u, "env_steps": 8 * u}) for u in (1, 2, 3)]
    cut = records[:3] + ['{"update": 3, "env_st']  # the record of update 3, the checkpoint, cut by a kill
    caught, kept = log(cut, keep=3)
    assert caught == ["metrics.jsonl: dropped a cut record after update 2"] and kept == records[:3]
    caught, kept = log([*records, '{"update": 4, "env'], keep=3)  # a cut record after the checkpoint: rewritten
    assert caught == [] and kept == records


def test_a_key_of_the_wrong_shape_is_the_projects_type_error():
    import jaxgame

    env = jaxgame.make("autochess")
    for bad in (jnp.zeros(3, jnp.uint32), jnp.zeros((2, 2), jnp.uint32), jax.random.split(jax.random.key(0), 2)):
        with pytest.raises(TypeError, match=r"AutoChessEnv.reset key must be one PRNG key .* shape"):
            env.reset(bad)


def test_an_annealed_or_cosine_run_refuses_a_new_length_on_resume_and_its_lr_never_goes_negative(tiny_run):
    from agents.algorithms.base import lr_schedule

    annealed = TrainConfig.from_fields(**{**TINY.to_dict(), "hidden": TINY.net.hidden, "lr_schedule": "linear"})
    longer = TrainConfig.from_fields(
        **{**annealed.to_dict(), "hidden": TINY.net.hidden, "total_steps": 2 * TINY.run.total_steps}
    )
    with pytest.raises(RunError, match=r"total_steps=256 \(was 128\): with lr_schedule=linear"):
        preflight.check_resumable(annealed, longer)
    cosine = TrainConfig.from_fields(**{**annealed.to_dict(), "hidden": TINY.net.hidden, "lr_schedule": "cosine"})
    with pytest.raises(RunError, match=r"total_steps=256 \(was 128\): with lr_schedule=cosine"):
        preflight.check_resumable(cosine, cosine.with_overrides({"total_steps": 256}))
    fine = TrainConfig.from_fields(**{**TINY.to_dict(), "hidden": TINY.net.hidden, "total_steps": 256})
    preflight.check_resumable(TINY, fine)
    hp = annealed.hparams.traced()
    lrs = [float(lr_schedule(annealed, hp)(jnp.int32(u))) for u in (0, 2, 4, 6)]
    assert lrs == pytest.approx([annealed.hparams.lr, annealed.hparams.lr / 2, 0.0, 0.0])


def test_an_unfinished_game_never_counts_as_a_placement():
    from agents.arena.evaluation import placement_summary

    finished = np.array([[1, 8, 3, 4, 5, 6, 7, 2], [2, 1, 3, 4, 5, 6, 7, 8]])
    assert placement_summary(finished)["mean_placement"] == 4.5
    unfinished = finished.copy()
    unfinished[0, 3] = 0
    with pytest.raises(ValueError, match="1 of them unfinished"):
        placement_summary(unfinished)


def test_orbax_write_failures_become_the_os_errors_they_stand_for():
    """tensorstore reports a full disk as a ValueError carrying the errno; a save turns it into that OSError (which
    the CLIs end in one line), and leaves every other error alone."""
    import errno

    from agents.storage.checkpoints import disk_error

    full = ValueError(
        'RESOURCE_EXHAUSTED: Error writing local file "x/manifest.ocdbt": Failed to write 281 bytes '
        "to file 17: No space left on device [os_error_code='28']"
    )
    err = disk_error(full, "checkpoint step 2 in /runs/r/checkpoints")
    assert isinstance(err, OSError) and err.errno == errno.ENOSPC
    assert str(err) == "[Errno 28] No space left on device while writing checkpoint step 2 in /runs/r/checkpoints"
    assert disk_error(ValueError("shape mismatch"), "x") is None
    assert disk_error(OSError(errno.ENOSPC, "already an OSError"), "x") is None


def test_the_cli_drops_only_the_background_echoes_of_an_error_it_reports():
    from experiments import common

    seen = []
    hook = common._drop_echoes(seen.append, lambda args: args)
    assert common._drop_echoes(hook, lambda args: args) is hook  # quiet_logs twice: wrapped once
    for message in ("Event loop is closed", "RESOURCE_EXHAUSTED: ... [os_error_code='28']", "a real bug"):
        hook(RuntimeError(message))
    assert [str(e) for e in seen] == ["a real bug"]


# ---------------------------------------------------------------- Ctrl-C in the CLIs (agents.run.signals.CtrlC)

CTRL_C_TWICE = """
import os, signal, sys, time
from agents.run.signals import CtrlC
signal.signal(signal.SIGINT, CtrlC("prog", unsafe=lambda frame: "compile"))  # always inside a compile
os.kill(os.getpid(), signal.SIGINT)      # the first: deferred until the compile returns (never, here)
time.sleep(0.3)
print("first deferred", flush=True)
os.kill(os.getpid(), signal.SIGINT)      # the second: the process ends here, killed by the signal
time.sleep(5)
print("still running", flush=True)
"""


def test_ctrl_c_during_a_compile_waits_for_it_and_a_second_one_stops_at_once():
    """In-process: a Ctrl-C while the main thread is 'in a compile' (the predicate injected) is not raised there;
    it becomes a KeyboardInterrupt once the compile returns. In a child: a second Ctrl-C kills the process."""
    import os
    import signal
    import subprocess
    import sys

    from agents.run.signals import CtrlC

    compiling = {"now": True}
    ctrl_c = CtrlC("prog", unsafe=lambda frame: "compile" if compiling["now"] else None)
    previous = signal.signal(signal.SIGINT, ctrl_c)
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.3)  # Python steps run here: inside the 'compile', nothing is raised
        assert ctrl_c.pressed == 1 and not ctrl_c.deferred
        with pytest.raises(KeyboardInterrupt):
            compiling["now"] = False
            for _ in range(100):  # the watcher sees the compile return and interrupts the main thread
                time.sleep(0.05)
        assert not ctrl_c.deferred
    finally:
        signal.signal(signal.SIGINT, previous)

    proc = subprocess.run([sys.executable, "-c", CTRL_C_TWICE], capture_output=True, text=True, timeout=120)
    assert "first deferred" in proc.stdout and "interrupted during a compile" in proc.stderr, proc.stderr[-2000:]
    assert "still running" not in proc.stdout and proc.returncode == -signal.SIGINT


def test_a_ctrl_c_deferred_past_a_compile_reaches_the_run_that_started_meanwhile():
    """A Ctrl-C during a compile before the run's stop handlers are installed (``train`` builds, then claims its
    directory): re-delivered after the compile, it reaches the run's ``StopSignals`` (a stop at the next chunk
    boundary), not a handler that is no longer there. Once the CLI has ended, nothing is re-delivered."""
    import os
    import signal

    from agents.run.signals import CtrlC

    compiling = {"now": True}
    ctrl_c = CtrlC("prog", unsafe=lambda frame: "compile" if compiling["now"] else None)
    previous = signal.signal(signal.SIGINT, ctrl_c)
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)
        with signals.StopSignals() as stop:
            compiling["now"] = False
            for _ in range(100):
                if stop.requested():
                    break
                time.sleep(0.05)
            assert stop.requested() == "SIGINT"
        ended = CtrlC("prog", unsafe=lambda frame: "compile" if compiling["now"] else None)
        signal.signal(signal.SIGINT, ended)
        compiling["now"] = True
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)
        ended.closed = True  # as handles_ctrl_c does when the CLI returns
        signal.signal(signal.SIGINT, previous)
        compiling["now"] = False
        time.sleep(0.3)  # the watcher sees the compile end and the CLI gone: no KeyboardInterrupt here
        assert not ended.deferred
    finally:
        signal.signal(signal.SIGINT, previous)


def test_ctrl_c_inside_a_callback_whose_exceptions_python_drops_is_raised_after_it():
    """A Ctrl-C handled inside a finalizer (as inside JAX's garbage-collection callback, where CI saw one dropped:
    "Exception ignored in _xla_gc_callback") is not raised there but in the main thread once the finalizer
    returns."""
    import gc
    import os
    import signal
    import sys

    from agents.run.signals import CtrlC, unsafe_frame

    class SignalledWhileFinalized:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)  # the handler runs here, inside __del__

    def _xla_gc_callback():
        return unsafe_frame(sys._getframe())

    assert _xla_gc_callback() == "callback" and unsafe_frame(sys._getframe()) is None
    # a WeakKeyDictionary's remove callback (where a Ctrl-C once landed in this test instead of __del__)
    namespace = {"unsafe_frame": unsafe_frame, "sys": sys}
    exec(
        compile("def remove():\n    return unsafe_frame(sys._getframe())\n", "/usr/lib/python3/weakref.py", "exec"),
        namespace,
    )
    assert namespace["remove"]() == "callback"
    ctrl_c = CtrlC("prog")
    previous = signal.signal(signal.SIGINT, ctrl_c)
    try:
        with pytest.raises(KeyboardInterrupt):
            SignalledWhileFinalized()  # finalized at once: the signal arrives inside __del__
            gc.collect()
            for _ in range(100):
                time.sleep(0.05)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert ctrl_c.pressed == 1


def test_a_cli_ends_a_keyboard_interrupt_in_one_line_and_puts_the_handler_back(capsys):
    import signal

    from agents.run.signals import CtrlC
    from experiments.common import handles_ctrl_c

    before = signal.getsignal(signal.SIGINT)

    def main():
        assert isinstance(signal.getsignal(signal.SIGINT), CtrlC)
        raise KeyboardInterrupt

    main.__module__ = "experiments.evaluate"  # the CLI it stands for
    with pytest.raises(SystemExit) as exit_info:
        handles_ctrl_c(main)()
    assert exit_info.value.code == 130
    assert capsys.readouterr().err == "python -m experiments.evaluate: error: interrupted\n"
    assert signal.getsignal(signal.SIGINT) is before


def test_ctrl_c_during_a_real_xla_compile_ends_evaluate_in_one_line_not_a_crash():
    """The real thing: SIGINT while ``evaluate`` compiles its table (no compilation cache). JAX drops a Ctrl-C
    inside XLA's compile, or crashes at exit when a KeyboardInterrupt leaves the compile running; the CLI waits for
    the compile, then ends with exit 130 and one error line (no traceback, no segfault)."""
    import signal
    import subprocess
    import sys

    cmd = [
        sys.executable,
        "-m",
        "experiments.evaluate",
        "expert",
        "--vs",
        "greedy",
        "--games",
        "1",
        "--no-cache",
        "--set",
        "max_rounds=4",
        "--set",
        "steps_per_round=2",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    for line in proc.stderr:  # the CLI says when it starts compiling
        if "compiling" in line:
            break
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, (proc.returncode, err[-2000:])
    assert err.strip().splitlines()[-1].endswith("error: interrupted") and "Traceback" not in err, err[-2000:]
