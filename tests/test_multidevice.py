"""Data-parallel training over devices and hosts (``agents.utils.distributed``), on CPU.

Forced host devices (``--xla_force_host_platform_device_count``) must be set before JAX starts, so
the runs happen in subprocesses, all through the training CLI on a tiny CartPole PPO config: a
2-process run (2 CPU devices each, a coordinator on localhost, gloo collectives), then one process
with 4 devices that trains on 1 and on 4 devices and resumes checkpoints across device counts
(4 -> 1, 1 -> all 4, and the 2-process run's -> 1). The tests compare the logged metrics: a run on D
devices equals the 1-device run with the same total envs up to float rounding. Streaming A2C and the
game itself are in the opt-in slow test at the end (the game's programs take minutes to compile).
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from agents.config import TrainConfig
from jaxgame.xla_flags import with_host_devices

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("gymnax") is None, reason="pip install -e '.[gymnax]'"),
    pytest.mark.xdist_group("multidevice"),  # one worker runs the subprocesses once for every test here
]

STEPS = 8 * 8  # env steps per update: num_envs x num_steps
CLI_ARGS = [
    "--env",
    "gymnax:CartPole-v1",
    "--preset",
    "ppo_gymnax",
    "--quiet",
    "--set",
    "num_envs=8",
    "--set",
    "num_steps=8",
    "--set",
    "hidden=8",
    "--set",
    "lr_schedule=constant",
    "--set",
    "update_epochs=2",
    "--set",
    "num_minibatches=2",
    "--set",
    "updates_per_chunk=1",
    "--set",
    "checkpoint_every=2",
]
TIMING = ("wall_s", "sps", "perf/sps", "perf/seat_sps")

# The single-process driver (4 CPU devices); argv: output dir, the 2-process run dir, CLI args, steps per update.
DRIVER = textwrap.dedent(
    """
    import json, os, shutil, sys, time
    import jax
    from experiments import train as cli
    out, multi, args, steps = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
    assert jax.device_count() == 4, jax.devices()
    total = f"total_steps={4 * steps}"
    summaries = {}

    def resume(name, *more):
        summaries[name] = cli.main(["--out", f"{out}/{name}", "--resume", "--quiet", *more])

    def from_update_2(source, name):  # a copy of a finished run that stopped after its checkpoint 2
        shutil.copytree(f"{out}/{source}", f"{out}/{name}")
        shutil.rmtree(f"{out}/{name}/checkpoints/4")

    for name, devices in (("ref", 1), ("four", 4)):
        summaries[name] = cli.main([*args, "--out", f"{out}/{name}", "--set", total,
                                    "--set", f"num_devices={devices}"])
    from_update_2("four", "four_on_one")
    resume("four_on_one", "--set", "num_devices=1")
    from_update_2("ref", "one_on_all")
    resume("one_on_all", "--set", "num_devices=0")
    for _ in range(4000):  # the 2-process run, started beside this one
        if os.path.exists(f"{out}/multi.done"):
            break
        time.sleep(0.1)
    assert open(f"{out}/multi.done").read() == "ok"
    shutil.copytree(multi, f"{out}/multi_on_one")
    resume("multi_on_one", "--set", "num_devices=1", "--set", total)

    from agents.algorithms import registry as trainers
    from agents.config import TrainConfig
    from agents.envs.make import make_env
    config = TrainConfig.from_fields(env="gymnax:CartPole-v1", num_envs=8)
    try:
        trainers.make_train(config.with_overrides({"num_devices": 8}), make_env(config))
        too_many = None
    except ValueError as err:
        too_many = str(err)
    json.dump({"summaries": summaries, "too_many": too_many}, open(f"{out}/driver.json", "w"))
    """
)


def _env(devices: int) -> dict:
    return {
        **os.environ,
        "JAX_PLATFORMS": "cpu",
        "PYTHONUNBUFFERED": "1",
        "XLA_FLAGS": with_host_devices(os.environ.get("XLA_FLAGS", ""), devices),
    }


def _run_on_four_devices(driver: str, *args, timeout: int) -> subprocess.CompletedProcess:
    """``driver`` run in a fresh interpreter with 4 CPU devices (``_env(4)``); asserts that it exits 0."""
    proc = subprocess.run(
        [sys.executable, "-c", driver, *map(str, args)],
        cwd=ROOT,
        env=_env(4),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _records(run_dir: Path) -> list[dict]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    assert "meta" in json.loads(lines[0])
    return [{k: v for k, v in json.loads(line).items() if k not in TIMING} for line in lines[1:]]


def _assert_close(records, reference):
    assert [r["update"] for r in records] == [r["update"] for r in reference]
    for got, want in zip(records, reference):
        assert set(got) == set(want)
        for name, value in want.items():
            if value is None or got[name] is None:
                assert got[name] == value, (got["update"], name)
            else:
                np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=1e-6, err_msg=f"{got['update']} {name}")


def _wait(proc, timeout):
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")  # session: xdist interleaves modules, which would rebuild a module fixture
def runs(tmp_path_factory):
    """The 2-process run and the 4-device driver, started together (the driver resumes the 2-process run's
    checkpoint last, once ``multi.done`` says it finished); outputs go to files (a full pipe would block
    one process and with it the other's collectives)."""
    out = tmp_path_factory.mktemp("multidevice")
    multi = out / "multi"
    cmd = [
        sys.executable,
        "-m",
        "experiments.train",
        *CLI_ARGS,
        "--out",
        str(multi),
        "--set",
        f"total_steps={2 * STEPS}",
        "--coordinator",
        f"localhost:{_free_port()}",
        "--num-processes",
        "2",
    ]

    def start(args, devices, name):
        with open(out / f"{name}.out", "w") as stdout, open(out / f"{name}.err", "w") as stderr:
            return subprocess.Popen(args, cwd=ROOT, env=_env(devices), stdout=stdout, stderr=stderr, text=True)

    procs = [start([*cmd, "--process-id", str(i)], 2, f"process{i}") for i in range(2)]
    driver = start([sys.executable, "-c", DRIVER, str(out), str(multi), json.dumps(CLI_ARGS), str(STEPS)], 4, "driver")
    try:
        for p in procs:
            _wait(p, 400)
        (out / "multi.done").write_text("ok" if all(p.returncode == 0 for p in procs) else "failed")
        _wait(driver, 500)
    finally:
        for p in (*procs, driver):
            if p.poll() is None:
                p.kill()
    outputs = [((out / f"process{i}.out").read_text(), (out / f"process{i}.err").read_text()) for i in range(2)]
    for p, (_, err) in zip(procs, outputs):
        assert p.returncode == 0, err[-3000:]
    assert driver.returncode == 0, (out / "driver.err").read_text()[-3000:]
    return out, outputs, json.loads((out / "driver.json").read_text())


def test_four_devices_equal_one_device(runs):
    out, _, result = runs
    summaries = result["summaries"]
    reference = _records(out / "ref")
    assert [r["update"] for r in reference] == [1, 2, 3, 4]
    assert summaries["ref"]["devices"] == 1 and summaries["four"]["devices"] == 4
    _assert_close(_records(out / "four"), reference)
    meta = json.loads((out / "four" / "metrics.jsonl").read_text().splitlines()[0])["meta"]
    assert meta["config"]["run"]["num_devices"] == 4 and len(meta["devices"]) == 4
    assert "num_devices=8" in result["too_many"] and "only 4" in result["too_many"]


def test_checkpoints_resume_across_device_counts(runs):
    """Checkpoint 2 of the 4-device run resumed on 1 device, and of the 1-device run on all 4: the
    uninterrupted 1-device run's numbers."""
    out, _, result = runs
    summaries = result["summaries"]
    reference = _records(out / "ref")
    assert summaries["four_on_one"]["devices"] == 1 and summaries["four_on_one"]["updates"] == 4
    assert summaries["one_on_all"]["devices"] == 4 and summaries["one_on_all"]["updates"] == 4
    _assert_close(_records(out / "four_on_one"), reference)
    _assert_close(_records(out / "one_on_all"), reference)


def test_two_processes_equal_one_process(runs):
    """2 processes x 2 CPU devices (jax.distributed, gloo): the 1-device run's metrics; only process 0
    logs; the checkpoint they wrote together resumes in one process on one device."""
    out, outputs, result = runs
    (out0, _), (out1, err1) = outputs
    summary = json.loads(out0.strip().splitlines()[-1])
    assert summary["devices"] == 4 and summary["processes"] == 2 and summary["updates"] == 2
    assert '"run_dir"' not in out1 and "run dir" not in err1  # process 1 prints no status and no summary
    meta = json.loads((out / "multi" / "metrics.jsonl").read_text().splitlines()[0])["meta"]
    assert meta["processes"] == 2 and len(meta["devices"]) == 4
    reference = _records(out / "ref")
    _assert_close(_records(out / "multi"), reference[:2])
    assert result["summaries"]["multi_on_one"]["devices"] == 1
    _assert_close(_records(out / "multi_on_one"), reference)  # updates 1-2 by 2 processes, 3-4 resumed


def test_num_devices_is_validated():
    assert TrainConfig().run.num_devices == 0  # all devices
    with pytest.raises(ValueError, match=r"TrainConfig\.run\.num_devices must divide num_envs=6"):
        TrainConfig.from_fields(num_envs=6, num_devices=4)
    with pytest.raises(ValueError, match=r"TrainConfig\.run\.num_devices must be an int in \[0, 65536\]"):
        TrainConfig.from_fields(num_devices=-1)
    assert TrainConfig.from_fields(num_envs=6, num_devices=3).run.num_devices == 3


# ------------------------------------------- shuffle="local": each device minibatches its own envs

LOCAL_DRIVER = textwrap.dedent(
    """
    import json, sys
    import jax, numpy as np
    from agents.utils import memory
    from agents.algorithms import registry as trainers
    from agents.config import TrainConfig
    from agents.envs.make import make_env
    assert jax.device_count() == 4, jax.devices()
    out = {}

    def make(**fields):
        config = TrainConfig.from_fields(env="gymnax:CartPole-v1", **fields)
        return trainers.make_train(config, make_env(config))

    # one minibatch (all samples) and no advantage normalisation: the mean of the devices' gradients is the
    # gradient of the whole batch, so the local shuffle must equal the global one and one device
    full = dict(num_envs=16, num_steps=8, hidden=(8,), update_epochs=2, num_minibatches=1, lr_schedule="constant",
                normalize_advantages=False, total_steps=16 * 8 * 3)
    for name, fields in {"one": dict(num_devices=1), "global": dict(num_devices=4),
                         "local": dict(num_devices=4, shuffle="local")}.items():
        trainer = make(**full, **fields)
        runner, metrics = jax.jit(trainer.run, static_argnums=1)(trainer.init(jax.random.key(0)), 3)
        out[name] = {"metrics": {k: np.asarray(v).tolist() for k, v in metrics.items()},
                     "params": [np.asarray(x).ravel().tolist() for x in jax.tree_util.tree_leaves(runner.params)]}
    try:
        make(**dict(full, num_minibatches=64), num_devices=4, shuffle="local")
        out["indivisible"] = None
    except ValueError as err:
        out["indivisible"] = str(err)

    # the update's compiled program at 64 envs per device on 2 and 4 devices
    for shuffle in ("global", "local"):
        for devices in (2, 4):
            trainer = make(num_envs=64 * devices, num_steps=128, hidden=(64, 64), num_minibatches=4,
                           num_devices=devices, shuffle=shuffle, total_steps=64 * devices * 128)
            compiled = jax.jit(trainer.run, static_argnums=1).lower(trainer.init(jax.random.key(0)), 1).compile()
            out[f"{shuffle}/{devices}"] = {"bytes": memory.compiled_bytes(compiled),
                                          "gathers": memory.all_gathers(compiled)}

    # a sweep of 4 runs, sharded over the 4 devices through the CLI (2 updates, resumed to 4), and on one device
    from agents.storage.checkpoints import CheckpointStore
    from agents.run.sweep import Sweep, SweepSpec
    from experiments import sweep as sweep_cli
    sets = ["--set", "num_envs=8", "--set", "num_steps=8", "--set", "hidden=8", "--set", "num_minibatches=2",
            "--set", "update_epochs=2", "--set", "lr=1e-3,3e-4", "--set", "updates_per_chunk=2",
            "--set", "lr_schedule=constant"]
    args = ["--env", "gymnax:CartPole-v1", "--preset", "ppo_gymnax", "--seeds", "0,1", *sets, "--quiet",
            "--out", f"{sys.argv[1]}/sweep"]
    out["sweep_first"] = sweep_cli.main([*args, "--set", "total_steps=128"])
    out["sweep"] = sweep_cli.main(["--out", f"{sys.argv[1]}/sweep", "--resume", "--quiet",
                                   "--set", "total_steps=256"])
    from agents.presets import preset_config
    base, spec = sweep_cli.spec_from_sets(preset_config("ppo_gymnax").with_overrides(dict(
        num_envs=8, num_steps=8, hidden=(8,), num_minibatches=2, update_epochs=2, updates_per_chunk=2,
        lr_schedule="constant", total_steps=256)), {"lr": "1e-3,3e-4"}, [0, 1])
    sharded = Sweep(base, spec)
    out["sweep_devices"] = len(sharded.init().obs.sharding.device_set)
    with CheckpointStore(f"{sys.argv[1]}/sweep/checkpoints", keep=3) as store:
        _, restored, _ = store.restore(jax.eval_shape(sharded.init))
    one = Sweep(base.with_overrides({"num_devices": 1}), spec)
    alone, _ = one.run(one.init(), 4)
    out["sweep_params"] = [[np.asarray(x).ravel().tolist() for x in jax.tree_util.tree_leaves(r.params)]
                           for r in (restored, alone)]
    try:
        Sweep(base.with_overrides({"num_devices": 4}), SweepSpec.make((0, 1, 2), {}))
        out["sweep_indivisible"] = None
    except ValueError as err:
        out["sweep_indivisible"] = str(err)
    out["sweep_three"] = Sweep(base, SweepSpec.make((0, 1, 2), {})).mesh.devices.size
    print(json.dumps(out))
    """
)


@pytest.fixture(scope="session")
def local_shuffle(tmp_path_factory):
    out = tmp_path_factory.mktemp("local_shuffle")
    proc = _run_on_four_devices(LOCAL_DRIVER, str(out), timeout=900)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_local_shuffle_averages_the_devices_gradients(local_shuffle):
    """With one minibatch of all samples, the devices' averaged gradients are the whole batch's: the local
    shuffle on 4 devices reaches the parameters and metrics of the global shuffle and of one device (a sum
    instead of a mean, or a device left out, would not)."""
    one = local_shuffle["one"]
    for name in ("global", "local"):
        for got, want in zip(local_shuffle[name]["params"], one["params"]):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)
        for metric, values in one["metrics"].items():
            np.testing.assert_allclose(
                local_shuffle[name]["metrics"][metric], values, rtol=1e-4, atol=1e-6, err_msg=f"{name} {metric}"
            )
    assert "each device's share" in local_shuffle["indivisible"] and "= 32), got 64" in local_shuffle["indivisible"]


def test_local_shuffle_keeps_per_device_memory_flat(local_shuffle):
    """64 envs per device, 2 then 4 devices: the global shuffle all-gathers the rollout (each device receives
    the others' shares, so its peak grows with the devices); the local shuffle gathers nothing of rollout size
    and its per-device peak stays the same."""
    share = 64 * 128 * (4 + 2 + 1) * 4  # one device's obs, mask, action, log-prob, value, reward, weight (float32)
    gl2, gl4, lo2, lo4 = (local_shuffle[k] for k in ("global/2", "global/4", "local/2", "local/4"))
    assert gl4["gathers"][0] >= 3 * 64 * 128 * 4 * 4  # the other 3 devices' observations
    assert gl4["bytes"]["peak"] - gl2["bytes"]["peak"] >= share
    for local in (lo2, lo4):
        assert not local["gathers"] or local["gathers"][0] < 64 * 128 * 4, local["gathers"][:3]
    assert abs(lo4["bytes"]["peak"] - lo2["bytes"]["peak"]) <= 0.02 * lo2["bytes"]["peak"]
    assert lo4["bytes"]["peak"] < gl4["bytes"]["peak"] - share


def test_a_sweep_shards_its_runs_over_the_devices(local_shuffle):
    """4 runs on 4 devices (num_devices=0: as many devices as divide the runs): the CLI sweep, stopped after 2
    updates and resumed to 4, ends with the parameters of the same sweep on one device; 3 runs on 4 devices:
    an error naming the runs with num_devices=4, 3 of the devices with num_devices=0."""
    assert local_shuffle["sweep_first"]["devices"] == 4 and local_shuffle["sweep"]["updates"] == 4
    assert local_shuffle["sweep_devices"] == 4
    for got, want in zip(*local_shuffle["sweep_params"]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    assert (
        "a sweep's number of runs" in local_shuffle["sweep_indivisible"]
        and "got 3" in local_shuffle["sweep_indivisible"]
    )
    assert local_shuffle["sweep_three"] == 3


# ------------------------------------------- streaming A2C and the game (opt-in: minutes of compiling)

SLOW_DRIVER = textwrap.dedent(
    """
    import json
    import jax, numpy as np
    from agents.algorithms import registry as trainers
    from agents.config import TrainConfig
    from agents.envs.make import make_env
    game = dict(num_envs=4, num_steps=4, update_every=2, total_steps=32, hidden=(16,), num_minibatches=2,
                update_epochs=2, max_rounds=4, steps_per_round=3, max_combat_ticks=60)
    cases = {
        "a2c_cartpole": dict(algo="a2c", env="gymnax:CartPole-v1", num_envs=8, update_every=4, total_steps=96,
                             hidden=(8,)),
        "ppo_game": dict(game),
        "a2c_game": dict(game, algo="a2c"),
    }
    out = {}
    for name, fields in cases.items():
        for n in (4, 1):
            config = TrainConfig.from_fields(**fields, num_devices=n)
            trainer = trainers.make_train(config, make_env(config))
            runner, metrics = jax.jit(trainer)(jax.random.key(0))
            out[f"{name}/{n}"] = {k: np.asarray(v).tolist() for k, v in metrics.items()}
            if n == 4:
                out[f"{name}/obs_devices"] = len(runner.obs.sharding.device_set)
                out[f"{name}/obs_spec"] = str(runner.obs.sharding.spec)
    print(json.dumps(out))
    """
)


@pytest.mark.slow(reason="~5 min")
def test_a2c_and_the_game_on_four_devices_equal_one_device():
    """Streaming A2C (its pending decisions are sharded too) and the game, whose batch-wide fight and
    reset branches (``jaxgame.VecEnv``) then take an all-reduced predicate: PPO and A2C."""
    proc = _run_on_four_devices(SLOW_DRIVER, timeout=1500)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    for name in ("a2c_cartpole", "ppo_game", "a2c_game"):
        assert out[f"{name}/obs_devices"] == 4 and out[f"{name}/obs_spec"] in ("P('data',)", "PartitionSpec('data',)")
        assert out[f"{name}/4"]["sums/episodes"] == out[f"{name}/1"]["sums/episodes"]
        for metric, value in out[f"{name}/1"].items():
            assert all(math.isfinite(v) for v in value)
            np.testing.assert_allclose(
                out[f"{name}/4"][metric], value, rtol=1e-4, atol=1e-6, err_msg=f"{name} {metric}"
            )


LEARN_DRIVER = textwrap.dedent(
    """
    import json
    import jax
    from agents.algorithms import registry as trainers
    from agents.presets import preset_config
    from agents.envs.make import make_env
    config = preset_config("ppo_gymnax").with_overrides({"num_devices": 4, "shuffle": "local"})
    trainer = trainers.make_train(config, make_env(config))
    _, metrics = jax.jit(trainer)(jax.random.key(0))
    last = slice(-config.num_updates // 10, None)
    print(json.dumps(float(metrics["sums/return_sum"][last].sum() / metrics["sums/episodes"][last].sum())))
    """
)


@pytest.mark.slow(reason="~1 min")
def test_local_shuffle_learns_cartpole_on_four_devices():
    """PureJaxRL's CartPole settings (``ppo_gymnax``, 1 env per device), the local shuffle on 4 devices: the
    bar of the one-device test (``test_train.test_ppo_gymnax_learns_cartpole``), mean return >= 475 over the
    last 10% of 5e5 env steps. (The default suite's check of the same update: the gradient averaging above.)"""
    proc = _run_on_four_devices(LEARN_DRIVER, timeout=900)
    assert json.loads(proc.stdout.strip().splitlines()[-1]) >= 475


# ------------------------------------------- signals in a 2-process run

SIGNAL_UPDATES = 60


@pytest.fixture(scope="session")
def signalled(tmp_path_factory):
    """A 2-process run of SIGNAL_UPDATES updates (checkpoints only at the end or where a signal stops it):
    uninterrupted ("clean"), and the same command SIGTERMed in both processes after its second update, then
    run again with ``--auto-resume`` (a requeued job). Returns (out, the signalled processes' (rc, stdout,
    stderr), the checkpoint steps after the stop, the resumed processes' (rc, stdout, stderr))."""
    import signal
    import time

    out = tmp_path_factory.mktemp("signals")

    def command(name, port):
        return [
            sys.executable,
            "-m",
            "experiments.train",
            *CLI_ARGS,
            "--out",
            str(out / name),
            "--auto-resume",
            "--set",
            f"total_steps={SIGNAL_UPDATES * STEPS}",
            "--set",
            "checkpoint_every=0",
            "--coordinator",
            f"localhost:{port}",
            "--num-processes",
            "2",
        ]

    def start(name, port, tag):
        procs = []
        for i in range(2):
            with open(out / f"{tag}{i}.out", "w") as stdout, open(out / f"{tag}{i}.err", "w") as stderr:
                procs.append(
                    subprocess.Popen(
                        [*command(name, port), "--process-id", str(i)],
                        cwd=ROOT,
                        env=_env(2),
                        stdout=stdout,
                        stderr=stderr,
                        text=True,
                    )
                )
        return procs

    def finish(procs, tag, timeout=400):
        for p in procs:
            _wait(p, timeout)
        return [
            (p.returncode, (out / f"{tag}{i}.out").read_text(), (out / f"{tag}{i}.err").read_text())
            for i, p in enumerate(procs)
        ]

    clean = start("clean", _free_port(), "clean")
    stopped = start("signalled", _free_port(), "stop")
    try:
        metrics = out / "signalled" / "metrics.jsonl"
        deadline = time.time() + 300
        while time.time() < deadline and (not metrics.exists() or len(metrics.read_text().splitlines()) < 3):
            assert all(p.poll() is None for p in stopped), (out / "stop0.err").read_text()[-3000:]
            time.sleep(0.05)
        for p in stopped:
            p.send_signal(signal.SIGTERM)
        stopped_outputs = finish(stopped, "stop")
        saved = sorted(int(p.name) for p in (out / "signalled" / "checkpoints").iterdir() if p.name.isdigit())
        for rc, _, err in finish(clean, "clean"):
            assert rc == 0, err[-3000:]
        resumed = finish(start("signalled", _free_port(), "resume"), "resume")
    finally:
        for p in (*clean, *stopped):
            if p.poll() is None:
                p.kill()
    return out, stopped_outputs, saved, resumed


@pytest.mark.slow(
    reason="~2 min: three 2-process runs; the default suite checks the agreement (tests/test_faults.py) and one process"
)
def test_sigterm_stops_both_processes_at_one_step_and_auto_resume_equals_the_uninterrupted_run(signalled):
    out, stopped, saved, resumed = signalled
    for rc, _, err in stopped:
        assert rc == 0, err[-3000:]
    summary = json.loads(stopped[0][1].strip().splitlines()[-1])
    at = summary["updates"]
    assert summary["stopped"] == "SIGTERM" and 2 <= at < SIGNAL_UPDATES, summary
    assert "stopped by SIGTERM" in stopped[0][1] + stopped[0][2]
    assert saved == [at]  # one checkpoint, written by both processes together where they stopped
    for rc, _, err in resumed:
        assert rc == 0, err[-3000:]
    resumed_summary = json.loads(resumed[0][1].strip().splitlines()[-1])
    assert resumed_summary["updates"] == SIGNAL_UPDATES and resumed_summary["stopped"] is None
    records = _records(out / "signalled")
    assert [r["update"] for r in records] == list(range(1, SIGNAL_UPDATES + 1))
    assert records == _records(out / "clean")  # bitwise: the uninterrupted 2-process run's records
