"""One process per run directory (issue 42): the flock on ``<run_dir>/.lock`` (``agents.storage.run_dir``).

A child process takes the lock through the library and says so on its stdout (no sleeps: the test reads that line),
then holds it until its stdin closes or it is killed."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from agents.storage import run_dir as run_dir_lib
from agents.storage.run_dir import RunError

ROOT = Path(__file__).resolve().parent.parent
IDENTITY = {"run": "locked"}

HOLDER = """
import sys
from agents.storage import run_dir
run_dir.lock(sys.argv[1])
print("held", flush=True)
sys.stdin.read()  # hold the lock until the test closes this pipe (or kills this process)
"""


@contextlib.contextmanager
def held_by_child(directory: Path):
    """A child process that holds ``directory``'s lock for the ``with`` block; yields its ``Popen``."""
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(directory)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        line = child.stdout.readline()  # blocks until the child holds the lock (or died)
        assert line == "held\n", child.stderr.read()
        yield child
    finally:
        child.stdin.close()  # the child's read returns: it exits, and its lock goes with it
        child.wait(timeout=60)
        child.stdout.close()
        child.stderr.close()


def _new_run(directory: Path) -> Path:
    """A run directory of this version (``run.json``, ``config.json``, ``.lock``), not held by anyone."""
    run_dir_lib.claim(directory, "train", IDENTITY)
    run_dir_lib.write_json(directory / "config.json", {"lr": 1.0})
    run_dir_lib.release(directory)
    return directory


def _contents(directory: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def _in_use(pid: int) -> str:
    return rf"^run directory .* is in use by pid {pid} on host {socket.gethostname()} since \d{{4}}-\d\d-\d\dT[\d:]+;"


def test_a_second_process_is_refused_in_one_line_naming_the_holder(tmp_path):
    run = _new_run(tmp_path / "run")
    empty = tmp_path / "empty"
    empty.mkdir()
    with held_by_child(run) as child, held_by_child(empty) as other:
        before = _contents(run)
        with pytest.raises(RunError, match=_in_use(child.pid)) as err:
            run_dir_lib.check_owner(run, "train", IDENTITY, "config.json")  # a resume
        assert "\n" not in str(err.value)
        with pytest.raises(RunError, match=_in_use(child.pid)):
            run_dir_lib.claim(run, "train", IDENTITY)  # a new run: "in use", before "holds a train run"
        with pytest.raises(RunError, match=_in_use(other.pid)):
            run_dir_lib.claim(empty, "train", IDENTITY)  # the holder has not written run.json yet
        assert _contents(run) == before  # the holder's lock line and the run's files untouched
        assert json.loads((run / ".lock").read_text())["pid"] == child.pid
        assert sorted(p.name for p in empty.iterdir()) == [".lock"]
    run_dir_lib.check_owner(run, "train", IDENTITY, "config.json")  # the holder ended: free again
    run_dir_lib.release(run)


def test_a_lock_left_by_a_killed_process_is_not_stale(tmp_path):
    run = _new_run(tmp_path / "run")
    with held_by_child(run) as child:
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=60) == -signal.SIGKILL
    assert json.loads((run / ".lock").read_text())["pid"] == child.pid  # the file stays; its flock died with it
    owner = run_dir_lib.check_owner(run, "train", IDENTITY, "config.json")
    assert owner["tool"] == "train"
    assert json.loads((run / ".lock").read_text())["pid"] == os.getpid()
    run_dir_lib.release(run)


def test_the_lock_is_held_for_the_whole_run_and_released_on_exceptions(tmp_path):
    from agents.run.preflight import claim_run_dir

    run = tmp_path / "run"
    with pytest.raises(KeyError):
        with claim_run_dir(run, "train", IDENTITY, "config.json", resume=False):
            with pytest.raises(RunError, match=_in_use(os.getpid())):  # a second claim in this very process
                run_dir_lib.check_owner(run, "train", IDENTITY, "run.json")
            raise KeyError("the run failed")
    with claim_run_dir(run, "train", IDENTITY, "run.json", resume=True):  # released by the exception
        pass
    other = tmp_path / "not_process_0"
    with claim_run_dir(other, "train", IDENTITY, "run.json", resume=False, take=False):
        assert not other.exists()  # a multi-process run's other processes take nothing


def test_the_lock_file_is_not_content(tmp_path):
    """A directory holding only a lock file (its claimer was killed before writing run.json) is empty."""
    run = tmp_path / "run"
    run.mkdir()
    (run / ".lock").write_text('{"pid": 1, "host": "gone", "since": "then"}\n')
    run_dir_lib.claim(run, "train", IDENTITY)
    run_dir_lib.release(run)
    assert sorted(p.name for p in run.iterdir()) == [".lock", "run.json"]


def test_a_deleted_run_json_is_not_re_adopted(tmp_path):
    run = _new_run(tmp_path / "run")
    (run / "run.json").unlink()  # this version wrote the directory (.lock is there): refused, one line
    with pytest.raises(RunError, match=r"run.json is missing, but .* was written by a version that writes it"):
        run_dir_lib.check_owner(run, "train", IDENTITY, "config.json")
    assert not (run / "run.json").exists()

    old = tmp_path / "old"  # written before run.json existed: adopted, with one warning line
    old.mkdir()
    (old / "config.json").write_text("{}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        owner = run_dir_lib.check_owner(old, "train", IDENTITY, "config.json")
    run_dir_lib.release(old)
    assert owner["adopted"] and json.loads((old / "run.json").read_text()) == owner
    (warning,) = caught
    assert warning.category is RuntimeWarning and "\n" not in str(warning.message)
    assert "adopting it as a train run written by an older version" in str(warning.message)


def test_train_sweep_and_pipeline_take_the_lock(tmp_path):
    """The library entry points are refused before they compile or write anything."""
    import agents
    from agents.pipeline.runner import run_pipeline
    from agents.presets import pipeline_spec
    from agents.run.sweep import SweepSpec
    from agents.run.sweep_loop import run_sweep

    config = agents.preset("smoke")
    for name in ("train", "sweep", "pipeline"):
        (tmp_path / name).mkdir()
    with (
        held_by_child(tmp_path / "train") as a,
        held_by_child(tmp_path / "sweep") as b,
        held_by_child(tmp_path / "pipeline") as c,
    ):
        with pytest.raises(RunError, match=_in_use(a.pid)):
            agents.train(config, tmp_path / "train")
        with pytest.raises(RunError, match=_in_use(b.pid)):
            run_sweep(config, SweepSpec.make([0]), tmp_path / "sweep")
        with pytest.raises(RunError, match=_in_use(c.pid)):
            run_pipeline(pipeline_spec("pipeline_smoke"), tmp_path / "pipeline")
        for name in ("train", "sweep", "pipeline"):
            assert sorted(p.name for p in (tmp_path / name).iterdir()) == [".lock"]


def test_two_auto_resumes_at_once_the_second_is_refused(tmp_path):
    """The issue's repro: a requeued ``--auto-resume`` while the first is alive. The first is stood in for by a
    process holding the lock of a smoke run's directory; the second exits 2 in one line naming it, before compiling."""
    from agents.presets import preset_config
    from agents.run.preflight import run_identity

    config = preset_config("smoke")
    run = tmp_path / "run"
    run_dir_lib.claim(run, "train", run_identity(config))
    run_dir_lib.write_json(run / "config.json", config.to_dict())
    run_dir_lib.release(run)
    with held_by_child(run) as child:
        before = _contents(run)
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "experiments.train",
                "--preset=smoke",
                "--out",
                str(run),
                "--auto-resume",
                "--quiet",
                "--no-cache",
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=300,
        )
        assert _contents(run) == before
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) <= 3, out.stderr
    assert f"is in use by pid {child.pid} on host {socket.gethostname()}" in out.stderr
    assert "Traceback" not in out.stderr
