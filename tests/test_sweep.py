"""Vmapped sweeps (agents/run/sweep.py, experiments/sweep.py): the grid spec, the combat conds survive the vmap, and the
CLI's outputs and resume, and run k == the standalone run."""

from __future__ import annotations

import csv
import json

import jax
import jax.extend
import numpy as np
import pytest

from agents.algorithms.registry import make_train
from agents.envs.make import make_env
from agents.presets import preset_config
from agents.run.sweep import Sweep, SweepSpec
from agents.storage.checkpoints import CheckpointStore
from agents.storage.metrics import scalars
from experiments import sweep as sweep_cli
from tests.jaxprs import cond_count

SMOKE = preset_config("smoke")
# 2 grid points x 2 seeds on the smoke preset's shapes, shared by the tests below (one compiled chunk)
SWEEP_SETS = {"lr": "1e-3,2e-4"}
SEEDS = (3, 4)

# ---------------------------------------------------------------- the spec


def test_runs_are_grid_point_major_and_seed_minor():
    base, spec = sweep_cli.spec_from_sets(SMOKE, {"lr": "1e-3,2e-4", "ent_coef": "0,0.05", "gamma": "0.9"}, 3)
    assert base.hparams.gamma == 0.9 and spec.fields == ("lr", "ent_coef") and spec.seeds == (0, 1, 2)
    assert spec.points == [
        {"lr": 1e-3, "ent_coef": 0.0},
        {"lr": 1e-3, "ent_coef": 0.05},
        {"lr": 2e-4, "ent_coef": 0.0},
        {"lr": 2e-4, "ent_coef": 0.05},
    ]
    assert spec.num_runs == 12
    run = spec.runs[7]  # point 2, second seed
    assert (run.index, run.point, run.seed, run.values) == (7, 2, 1, {"lr": 2e-4, "ent_coef": 0.0})
    config = spec.run_config(base, 7)
    assert (config.run.seed, config.hparams.lr, config.hparams.ent_coef, config.hparams.gamma) == (1, 2e-4, 0.0, 0.9)
    assert SweepSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    _, counted = sweep_cli.spec_from_sets(SMOKE.with_overrides({"seed": 10}), {}, 2)
    assert counted.seeds == (0, 1) and counted.points == [{}]  # a count is seeds 0..N-1, as in reproduce
    with pytest.raises(ValueError, match="give the seeds with --seeds"):
        sweep_cli.spec_from_sets(SMOKE, {"seed": "10"}, 2)  # one value too: the seeds are --seeds'
    _, listed = sweep_cli.spec_from_sets(SMOKE, {"hidden": "32,32"}, [5, 9])
    assert listed.seeds == (5, 9) and listed.num_runs == 2  # a list-valued field is one value, not a sweep
    dotted_base, dotted = sweep_cli.spec_from_sets(
        SMOKE, {"hparams.lr": "1e-3,2e-4", "hparams.gamma": "0.9", "net.hidden": "32,32"}, 1
    )
    assert dotted.points == [{"lr": 1e-3}, {"lr": 2e-4}]  # the dotted names sweep the same fields
    assert (dotted_base.hparams.gamma, dotted_base.net.hidden) == (0.9, (32, 32))


@pytest.mark.parametrize(
    "overrides, seeds, message",
    [
        ({"num_envs": "16,32"}, 1, r"TrainConfig\.num_envs cannot be swept: only the traced hyperparameters lr, "),
        ({"num_steps": "8,16"}, 1, r"TrainConfig\.num_steps cannot be swept"),
        ({"lr_schedule": "linear,cosine"}, 1, r"TrainConfig\.lr_schedule cannot be swept"),
        ({"lr": "1e-3,2"}, 1, r"TrainConfig\.hparams\.lr must be a number in \[0\.0, 1\.0\], got 2\.0"),
        ({"lr": "1e-3,fast"}, 1, r"TrainConfig\.lr: cannot parse the swept values"),
        ({"seed": "1,2"}, 1, r"give the seeds with --seeds"),
        ({"optim.lrr": "1,2"}, 1, r"did you mean"),
        ({}, 0, r"number of seeds must be >= 1"),
        ({}, [1, 1], r"seeds must be distinct"),
    ],
)
def test_bad_sweeps_name_the_problem(overrides, seeds, message):
    with pytest.raises(ValueError, match=message):
        sweep_cli.spec_from_sets(SMOKE, overrides, seeds)


def test_cli_rejects_an_unsweepable_field_before_building(tmp_path, capsys):
    with pytest.raises(SystemExit):
        sweep_cli.main(
            ["--preset=smoke", "--set", "hidden=32", "--set", "num_envs=4,8", "--out", str(tmp_path / "s"), "--quiet"]
        )
    assert "TrainConfig.num_envs cannot be swept" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_run_k_is_computed_without_building_the_grid():
    spec = SweepSpec.make((3, 5, 7), {"lr": (1e-3, 2e-4), "ent_coef": (0.0, 0.05, 0.1)})
    assert [spec.run(k) for k in range(spec.num_runs)] == spec.runs and spec.num_points == 6
    assert [spec.point(p) for p in range(spec.num_points)] == spec.points
    with pytest.raises(IndexError):
        spec.run(spec.num_runs)


def test_a_huge_sweep_is_refused_at_once_and_a_large_one_by_its_memory(tmp_path, capsys):
    """--seeds 100000000 used to hang building every run's config; now the run bound refuses it before a seed list
    exists, and 100000 seeds reach the memory check (nothing compiled, nothing written)."""
    with pytest.raises(ValueError, match=r"at most 1,048,576 runs .* got 100,000,000 seeds"):
        sweep_cli.spec_from_sets(SMOKE, {}, 100_000_000)
    with pytest.raises(ValueError, match=r"at most 1,048,576 runs"):
        SweepSpec.make(range(1024), {"lr": tuple(float(i) / 1e4 for i in range(1025))})
    with pytest.raises(SystemExit):
        sweep_cli.main(["--preset=smoke", "--seeds", "100000", "--out", str(tmp_path / "s"), "--quiet"])
    err = capsys.readouterr().err
    assert "100000 runs of num_envs=8" in err and "is available" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "s").exists()


# ---------------------------------------------------------------- the vmapped program


def test_the_fight_and_reset_branches_stay_conds_under_the_sweep_vmap():
    """With sync_axes the sweep's update has as many conds as a single run's (fight, PvE slots, reset);
    without them vmap turns them into selects that run the combat on every step (the trap)."""
    _, spec = sweep_cli.spec_from_sets(SMOKE, SWEEP_SETS, list(SEEDS))
    trainer = make_train(SMOKE, make_env(SMOKE))
    single = cond_count(
        jax.make_jaxpr(lambda r: trainer.run(r, 1))(jax.eval_shape(trainer.init, jax.random.key(0))).jaxpr
    )
    assert single >= 3  # at least: fight or not, PvE slots or not, reset or not
    for share, expected in ((True, single), (False, 0)):
        sw = Sweep(SMOKE, spec, share_branches=share)
        jaxpr = jax.make_jaxpr(lambda r, sw=sw: sw._run(r, 1))(jax.eval_shape(sw.init)).jaxpr
        assert cond_count(jaxpr) == expected, share


# ---------------------------------------------------------------- the CLI


# A tiny CartPole PPO (cheap to compile) for the CLI, resume and run k == standalone; the same on the
# game (with the vmapped evaluation) is opt-in (-m slow).
CARTPOLE = {
    "num_envs": "4",
    "num_steps": "16",
    "hidden": "8",
    "num_minibatches": "2",
    "updates_per_chunk": "2",
    "checkpoint_every": "1",
    "lr_schedule": "constant",
}


def _sweep_and_compare(tmp_path, preset, sets, objective):
    """CLI sweep of 2 updates, resumed to 4; checks the files, then run k (k = 0, 3) against the standalone run."""
    from agents.algorithms.registry import summarize

    run_dir = tmp_path / "sweep"
    set_args = [arg for k, v in {**sets, **SWEEP_SETS}.items() for arg in ("--set", f"{k}={v}")]
    args = [f"--preset={preset}", "--seeds", ",".join(map(str, SEEDS)), *set_args, "--out", str(run_dir), "--quiet"]
    base, spec = sweep_cli.spec_from_sets(preset_config(preset), {**sets, **SWEEP_SETS}, list(SEEDS))
    steps = base.steps_per_update
    first = sweep_cli.main([*args, "--set", f"total_steps={2 * steps}"])  # 2 updates, then stop
    assert first["updates"] == 2 and first["runs"] == 4
    summary = sweep_cli.main(["--out", str(run_dir), "--resume", "--set", f"total_steps={4 * steps}", "--quiet"])
    assert summary["updates"] == 4

    described = json.loads((run_dir / "sweep.json").read_text())
    assert described["seeds"] == list(SEEDS) and described["grid"] == {"lr": [1e-3, 2e-4]}
    assert [(r["seed"], r["values"]) for r in described["runs"]] == [
        (3, {"lr": 1e-3}),
        (4, {"lr": 1e-3}),
        (3, {"lr": 2e-4}),
        (4, {"lr": 2e-4}),
    ]
    for r in described["runs"]:
        lines = (run_dir / "runs" / f"run_{r['index']:03d}" / "metrics.jsonl").read_text().splitlines()
        meta = json.loads(lines[0])["meta"]
        swept = (meta["run"], meta["seed"], meta["config"]["hparams"]["lr"])
        assert swept == (r["index"], r["seed"], r["values"]["lr"])
        records = [json.loads(line) for line in lines[1:]]
        assert [rec["update"] for rec in records] == [2, 4]
        assert all(rec["run"] == r["index"] and rec["values"] == r["values"] for rec in records)
        assert list((run_dir / "runs" / f"run_{r['index']:03d}" / "tb").glob("events.out.tfevents.*"))

    with open(run_dir / "summary.csv") as f:
        rows = list(csv.DictReader(f))
    assert [(row["point"], row["lr"], row["seeds"]) for row in rows] == [("0", "0.001", "2"), ("1", "0.0002", "2")]
    table = json.loads((run_dir / "summary.json").read_text())
    finals = [run[f"{objective}:final"] for run in table["runs"] if run["point"] == 1]
    assert table["points"][1][f"{objective}:final:mean"] == pytest.approx(np.mean(finals))
    assert table["points"][1][f"{objective}:final:std"] == pytest.approx(np.std(finals))
    assert (run_dir / "curves.png").stat().st_size > 0

    # run k (interrupted and resumed) ends where the standalone run with its seed and values does
    sw = Sweep(base, spec)
    with CheckpointStore(run_dir / "checkpoints", keep=3) as store:
        assert store.steps() == [2, 4]
        _, restored, _ = store.restore(jax.eval_shape(sw.init))
    assert restored.update.tolist() == [4] * 4
    for k in (0, 3):  # (lr 1e-3, seed 3) and (lr 2e-4, seed 4)
        config = spec.run_config(base, k)
        trainer = make_train(config, make_env(config))
        run = jax.jit(trainer.run, static_argnums=1)
        alone, first_chunk = run(trainer.init(jax.random.key(config.run.seed)), 2)
        alone, _ = run(alone, 2)
        for mine, theirs in zip(jax.tree_util.tree_leaves(restored.params), jax.tree_util.tree_leaves(alone.params)):
            np.testing.assert_allclose(mine[k], theirs, rtol=1e-4, atol=1e-6)
        record = json.loads((run_dir / "runs" / f"run_{k:03d}" / "metrics.jsonl").read_text().splitlines()[1])
        for name, value in summarize(jax.device_get(first_chunk)).items():
            if np.isnan(value):
                assert record[name] is None, name  # JSON has no NaN
            else:
                assert record[name] == pytest.approx(value, rel=1e-4, abs=1e-6), name
    params = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(restored.params)]
    assert not np.allclose(params[0][0], params[0][1]) and not np.allclose(params[0][0], params[0][2])
    return run_dir


def test_sweep_cli_on_cartpole_logs_summarises_resumes_and_matches_standalone_runs(tmp_path, fake_wandb):
    """... with W&B on (a fake wandb module): one W&B run per member, grouped by the sweep, continued on resume."""
    run_dir = _sweep_and_compare(
        tmp_path, "ppo_gymnax", {**CARTPOLE, "wandb_project": "sweeps"}, "train/episode_return"
    )
    first, resumed = fake_wandb.runs[:4], fake_wandb.runs[4:]
    assert len(resumed) == 4 and all(run.finished for run in fake_wandb.runs)
    for k, (a, b) in enumerate(zip(first, resumed)):
        member = run_dir / "runs" / f"run_{k:03d}"
        assert a.init["name"] == b.init["name"] == member.name and a.init["group"] == b.init["group"] == "sweep"
        assert a.init["id"] == b.init["id"] == (member / "wandb_run_id").read_text().strip()
        assert a.init["project"] == "sweeps" and a.init["config"]["run"]["seed"] == SEEDS[k % 2]
        records = [json.loads(line) for line in (member / "metrics.jsonl").read_text().splitlines()[1:]]
        sent = [{"env_steps": r["env_steps"], **scalars(r)} for r in records]
        assert a.logged + b.logged == sent and len(a.logged) == len(b.logged) == 1
    assert len({run.init["id"] for run in first}) == 4


@pytest.mark.slow(reason="compiles the vmapped game")
def test_sweep_cli_on_the_game_with_evaluation(tmp_path):
    run_dir = _sweep_and_compare(tmp_path, "smoke", {}, "eval/placement_vs_greedy")
    paths = sorted((run_dir / "runs").glob("run_*/metrics.jsonl"))
    assert len(paths) == 4  # 2 seeds x 2 learning rates
    for path in paths:
        records = [json.loads(line) for line in path.read_text().splitlines()[1:]]
        assert records, path
        for rec in records:  # the smoke preset's eval_games=1: the mean of 8 rotated games' integer placements
            total = 8 * rec["eval/placement_vs_greedy"]
            assert total == round(total) and 8 <= total <= 64, rec["eval/placement_vs_greedy"]


def test_a_fast_compile_sweep_compiles_its_init_with_the_fast_options_too(monkeypatch):
    """The smoke preset's run.fast_compile in a sweep: its init program is compiled with
    jaxgame.xla_flags.FAST_COMPILE_OPTIONS, as its chunk and evaluation are (``ChunkProgram.compiler_options``;
    XLA_FLAGS hidden, as in tests/test_train.py, after the backend started with the suite's flags). The compile is
    stopped once it has been asked for: what runs is the suite's program either way."""
    from agents.run.sweep_loop import SweepProgram
    from jaxgame.xla_flags import FAST_COMPILE_OPTIONS

    class Asked(Exception):
        pass

    seen = []

    def compile(self, compiler_options=None):
        seen.append(compiler_options)
        raise Asked

    jax.devices()  # the backend starts with the suite's XLA_FLAGS before they are hidden
    monkeypatch.setattr(jax.stages.Lowered, "compile", compile)
    monkeypatch.setenv("XLA_FLAGS", "")
    base, spec = sweep_cli.spec_from_sets(SMOKE, SWEEP_SETS, list(SEEDS))
    with pytest.raises(Asked):
        SweepProgram(base, spec).init()
    assert seen == [FAST_COMPILE_OPTIONS]


def test_a_shorter_last_chunk_of_a_sweep_runs_in_the_chunks_own_program(tmp_path):
    """3 updates in chunks of 2: the last chunk (1 update) runs in the chunk's program (``Sweep.run_upto``, its
    update count an argument), so nothing more is compiled or announced; every run ends where the same sweep in
    chunks of 1 (``run``'s scan, no shorter chunk) does, to float rounding (programs of other lengths round
    differently), and the shorter chunk logs its own update."""
    from agents.run.sweep_loop import run_sweep

    class Recorder:
        def __init__(self):
            self.events = []

        def status(self, text):
            self.events.append(text)

        def start(self, total, done, unit="upd"):
            pass

        def chunk(self, n, text):
            pass

        def close(self):
            pass

    config = preset_config("ppo_gymnax")
    sets = {k: v for k, v in CARTPOLE.items() if k != "checkpoint_every"}
    base, spec = sweep_cli.spec_from_sets(config, sets, [3, 4])
    base = base.with_overrides({"total_steps": 3 * base.steps_per_update})
    progress = Recorder()
    run_sweep(base, spec, tmp_path / "upto", progress=progress)
    assert not [e for e in progress.events if "compiling the last chunk" in e]
    run_sweep(base.with_overrides({"updates_per_chunk": 1}), spec, tmp_path / "ones")
    sw = Sweep(base, spec)
    finals = []
    for name in ("upto", "ones"):
        with CheckpointStore(tmp_path / name / "checkpoints", keep=3) as store:
            finals.append(store.restore(jax.eval_shape(sw.init))[1])
    assert finals[0].update.tolist() == finals[1].update.tolist() == [3, 3]
    for a, b in zip(jax.tree_util.tree_leaves(finals[0].params), jax.tree_util.tree_leaves(finals[1].params)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    lines = (tmp_path / "upto" / "runs" / "run_000" / "metrics.jsonl").read_text().splitlines()[1:]
    assert [json.loads(line)["update"] for line in lines] == [2, 3]
