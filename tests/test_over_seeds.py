"""A preset's result over training seeds (agents.run.over_seeds, experiments.reproduce): the aggregate's math on
known values, the record it becomes, and a two-seed run of the smoke preset that a repeated call neither retrains
nor re-evaluates."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
from scipy import stats

from agents import preset
from agents.run import over_seeds
from agents.storage import results
from agents.storage.metrics import load_metrics

T_975_2 = stats.t.ppf(0.975, 2)  # 4.303: 3 seeds


def _entry(seed, greedy, minutes, train_s=600.0):
    return {
        "seed": seed,
        "eval": {"vs_greedy": {"mean_placement": greedy, "ci95": 0.2}},
        "minutes_to_target": minutes,
        "summary": {"updates": 10, "env_steps": 1000, "train_s": train_s, "compile_s": 5.0},
    }


def test_the_aggregate_is_a_t_interval_over_training_seeds_and_a_median_time():
    per_seed = [_entry(0, 2.0, 4.0), _entry(1, 3.0, 6.0), _entry(2, 4.0, None)]
    out = over_seeds.aggregate(per_seed, ("greedy",))
    greedy = out["vs_greedy"]
    assert greedy["mean_placement"] == pytest.approx(3.0)
    assert greedy["ci95"] == pytest.approx(T_975_2 * 1.0 / math.sqrt(3))  # std 1 over 3 seeds: 2.48, not 1.13
    assert greedy["per_seed"] == [2.0, 3.0, 4.0] and greedy["per_seed_ci95"] == [0.2, 0.2, 0.2]
    # a seed that never reached the target counts as slowest: the median of (4, 6, inf) is 6
    assert out["minutes_to_target"] == {"target": 2.5, "per_seed": [4.0, 6.0, None], "median": 6.0, "reached": 2}
    assert over_seeds.aggregate(per_seed[2:], ("greedy",))["vs_greedy"]["ci95"] is None  # one seed: no interval
    two_never = [_entry(0, 2.0, 4.0), _entry(1, 3.0, None), _entry(2, 4.0, None)]
    assert over_seeds.aggregate(two_never, ("greedy",))["minutes_to_target"]["median"] is None  # not reached


def _result(n=3):
    per_seed = [_entry(s, 2.0 + s, 4.0 + s, train_s=600.0 + s) for s in range(n)]
    return {
        "preset": "ppo_small",
        "seeds": list(range(n)),
        "eval_seed": 4242,
        "games_per_lineup": 256,
        **over_seeds.aggregate(per_seed, ("greedy",)),
    }


def test_the_record_of_a_result_over_seeds_is_sound_and_checked_against_its_evidence(tmp_path):
    result = _result()
    (tmp_path / "x.seeds.json").write_text(json.dumps(result))
    record = results.record_from_seeds(
        result,
        "x",
        command=["python -m experiments.reproduce ppo_small"],
        machine="2-core CPU",
        environment="cpu; jax",
        date="2026-11-27",
        commit="abcdef1",
        files=["x.seeds.json"],
        evaluation="x.seeds.json",
    )
    assert results.validate(record, tmp_path) == [] and results.check_evidence(record, tmp_path) == []
    numbers = record["numbers"]
    assert numbers["vs_greedy"]["value"] == 3.0 and numbers["vs_greedy"]["ci95"] == round(T_975_2 / math.sqrt(3), 2)
    assert "note" not in numbers["vs_greedy"] and "3 training seeds, 95% t interval" in record["notes"]
    assert numbers["train_minutes_to_2_5_vs_greedy"]["value"] == 5.0 and numbers["train_s"]["value"] == 601
    assert not record["single_seed"] and record["seeds"]["training"] == [0, 1, 2]
    # the evidence decides: a placement that is not the aggregate's is caught
    (tmp_path / "x.seeds.json").write_text(
        json.dumps({**result, "vs_greedy": {**result["vs_greedy"], "mean_placement": 3.5}})
    )
    assert any("numbers.vs_greedy" in p for p in results.check_evidence(record, tmp_path))
    single = results.record_from_seeds(
        _result(1),
        "y",
        command=["c"],
        machine="m",
        environment="e",
        date="2026-11-27",
        commit="abcdef1",
        files=[],
        evaluation="x.seeds.json",
    )
    assert single["single_seed"] and "ci95" not in single["numbers"]["vs_greedy"]
    assert record["title"] == "ppo_small: 10 updates over 3 training seeds"
    stopped = results.record_from_seeds(
        {**result, "schedule_updates": 976},
        "z",
        command=["c"],
        machine="m",
        environment="e",
        date="2026-11-27",
        commit="abcdef1",
        files=[],
        evaluation="x.seeds.json",
    )
    assert stopped["title"] == "ppo_small: the first 10 of its 976 updates (stop_at_update) over 3 training seeds"


def _rated(rating, low, high):
    return {"ladder": "ladder-v1", "games": 64, "seed": 9002, "rating": rating, "ci95": [low, high]}


def test_ladder_ratings_and_the_previous_version_over_seeds_become_the_records_strength_columns(tmp_path):
    per_seed = [_entry(s, 2.0 + s, 4.0) for s in range(3)]
    for entry, rating in zip(per_seed, (1000.0, 1030.0, 1060.0)):
        entry["ladder"] = _rated(rating, rating - 20, rating + 20)
        entry["eval"]["vs_baseline:ppo_small-v3"] = {"mean_placement": 4.0 + entry["seed"] / 10, "ci95": 0.3}
    vs = over_seeds.with_previous(("greedy",), "baseline:ppo_small-v3")
    assert vs == ("greedy", "baseline:ppo_small-v3") and over_seeds.with_previous(vs, vs[1]) == vs
    out = over_seeds.aggregate(per_seed, vs)
    ladder = out["ladder"]
    assert ladder["rating"] == 1030.0 and ladder["per_seed"] == [1000.0, 1030.0, 1060.0]
    assert ladder["ci95"] == pytest.approx(round(T_975_2 * 30.0 / math.sqrt(3), 1))  # std 30 over 3 seeds
    assert ladder["per_seed_ci95"][0] == [980.0, 1020.0] and ladder["version"] == "ladder-v1"
    assert "ladder" not in over_seeds.aggregate([_entry(0, 2.0, 4.0)], ("greedy",))  # not rated: no column
    result = {
        "preset": "ppo_small",
        "seeds": [0, 1, 2],
        "eval_seed": 4242,
        "games_per_lineup": 256,
        "previous": "baseline:ppo_small-v3",
        **out,
    }
    (tmp_path / "x.seeds.json").write_text(json.dumps(result))
    record = results.record_from_seeds(
        result,
        "x",
        command=["c"],
        machine="2-core CPU",
        environment="e",
        date="2026-12-02",
        commit="abcdef1",
        files=["x.seeds.json"],
        evaluation="x.seeds.json",
    )
    assert results.validate(record, tmp_path) == [] and results.check_evidence(record, tmp_path) == []
    assert record["previous"] == "baseline:ppo_small-v3"
    assert record["numbers"]["vs_previous"] == {"value": 4.1, "ci95": round(T_975_2 * 0.1 / math.sqrt(3), 2)}
    assert record["numbers"]["ladder_rating"]["value"] == 1030.0 and "ladder-v1" in record["notes"]
    row = results.render_readme_table([{**record, "readme_row": 1}], {"since": "2026-12-01", "change": "c"})
    assert row.splitlines()[2].split(" | ")[3:6] == [
        f"1030 +- {ladder['ci95']:.0f}",
        "-",
        "4.10 +- 0.25 vs `ppo_small-v3`",
    ]
    # the evidence decides: a ladder mean that is not the aggregate's, a previous version's placement either
    moved = {**result, "ladder": {**ladder, "rating": 1031.0}}
    (tmp_path / "x.seeds.json").write_text(json.dumps(moved))
    assert any("numbers.ladder_rating" in p for p in results.check_evidence(record, tmp_path))
    moved = {**result, "vs_baseline:ppo_small-v3": {**result["vs_baseline:ppo_small-v3"], "mean_placement": 5.0}}
    (tmp_path / "x.seeds.json").write_text(json.dumps(moved))
    assert any("numbers.vs_previous" in p for p in results.check_evidence(record, tmp_path))
    unnamed = {k: v for k, v in record.items() if k != "previous"}
    assert any("names no previous version" in p for p in results.check_evidence(unnamed, tmp_path))
    one = results.record_from_seeds(
        {**result, "seeds": [0], "ladder": {**ladder, "ci95": None}},
        "y",
        command=["c"],
        machine="m",
        environment="e",
        date="2026-12-02",
        commit="abcdef1",
        files=[],
        evaluation="x.seeds.json",
    )
    assert one["numbers"]["ladder_rating"]["note"] == "980 .. 1020 over game seeds"


def test_a_ladder_rating_is_kept_and_not_played_again_and_its_seed_is_never_a_training_seed(tmp_path, monkeypatch):
    calls = []

    def fake_rate(player, games, deterministic, progress):
        calls.append((player, games, deterministic))
        return _rated(900.0 + games, 880.0, 920.0)

    monkeypatch.setattr(over_seeds.ladder_rating, "rate_on_ladder", fake_rate)
    path = tmp_path / "seed_0.ladder.json"
    first = over_seeds.ladder_rated("runs/x", 10, path, "x", 16)
    assert over_seeds.ladder_rated("runs/x", 10, path, "x", 16) == first and len(calls) == 1
    assert over_seeds.ladder_rated("runs/x", 20, path, "x", 16)["rating"] == 916.0 and len(calls) == 2  # new step
    with pytest.raises(ValueError, match="ladder's seed 9002 is a training seed"):
        over_seeds.check_arguments([9002], 4242, 4, ladder_games=8)
    with pytest.raises(ValueError, match="ladder_games must be an int >= 2"):
        over_seeds.check_arguments([0], 4242, 4, ladder_games=1)


def test_reproduce_refuses_an_evaluation_seed_it_trained_on_and_repeated_seeds(tmp_path):
    with pytest.raises(ValueError, match="eval_seed 1 is a training seed"):
        over_seeds.reproduce(preset("smoke"), "smoke", [0, 1], tmp_path / "r", eval_seed=1)
    with pytest.raises(ValueError, match="distinct"):
        over_seeds.reproduce(preset("smoke"), "smoke", [0, 0], tmp_path / "r")
    assert not (tmp_path / "r").exists()


def test_a_runs_training_time_counts_every_call_of_a_resumed_run(tmp_path):
    """train's summary counts the chunks of the call that finished the run; a run stopped after 600 s and resumed
    for 400 more trained 1000 s, which its metrics' last wall_s says (the checkpoint carries it across)."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    lines = [{"meta": {}}, {"update": 20, "wall_s": 600.0}, {"update": 40, "wall_s": 1000.0, "train/loss": 1.0}]
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert over_seeds.run_train_s(run_dir, {"train_s": 400.0}) == 1000.0
    assert over_seeds.run_train_s(tmp_path / "no_metrics", {"train_s": 400.0}) == 400.0


def test_two_seeds_of_the_smoke_preset_and_a_repeated_call_that_trains_and_plays_nothing(tmp_path, monkeypatch):
    config = preset("smoke").with_overrides({"eval_every": 0, "total_steps": 8 * 16 * 2})
    first = over_seeds.reproduce(config, "smoke", [0, 1], tmp_path, vs=("greedy",), games=1, eval_seed=7)
    per_seed = first["vs_greedy"]["per_seed"]
    assert len(per_seed) == 2 and all(1.0 <= p <= 8.0 for p in per_seed)
    assert first["schedule_updates"] == config.num_updates == 2
    mean, half = first["vs_greedy"]["mean_placement"], first["vs_greedy"]["ci95"]
    assert mean == pytest.approx(sum(per_seed) / 2)
    assert half == pytest.approx(stats.t.ppf(0.975, 1) * abs(per_seed[0] - per_seed[1]) / 2)  # std/sqrt(2)
    assert first["updates"] == [2, 2] and first["minutes_to_target"]["per_seed"] == [None, None]
    ends = [[r for r in load_metrics(str(tmp_path / f"seed_{seed}"))[1] if "update" in r][-1] for seed in (0, 1)]
    assert first["train_s"] == [round(r["wall_s"], 3) for r in ends]
    for seed in (0, 1):
        saved = json.loads((tmp_path / f"seed_{seed}" / "config.json").read_text())
        assert json.dumps(saved).count(f'"seed": {seed}') == 1
        evaluated = json.loads((tmp_path / f"seed_{seed}.eval.json").read_text())
        assert evaluated["wanted"] == {"vs": ["greedy"], "games": 1, "eval_seed": 7, "update": 2}

    def nothing(*args, **kwargs):
        raise AssertionError("a finished seed was trained or evaluated again")

    monkeypatch.setattr(over_seeds, "train", nothing)
    monkeypatch.setattr(over_seeds, "evaluate", nothing)
    again = over_seeds.reproduce(config, "smoke", [0, 1], tmp_path, vs=("greedy",), games=1, eval_seed=7)
    assert again == first
    assert json.loads((tmp_path / "reproduce.json").read_text()) == json.loads(json.dumps(first))

    # the best checkpoint, playing its most likely actions: each seed is evaluated again (nothing is retrained), at
    # the step best_checkpoint ranks first, and the aggregate and the record say which policy played and how
    monkeypatch.undo()
    monkeypatch.setattr(over_seeds, "train", nothing)
    calls = []

    def spy(player, **kwargs):
        calls.append((player, kwargs["deterministic"]))
        return evaluate(player, **kwargs)

    evaluate = over_seeds.evaluate
    monkeypatch.setattr(over_seeds, "evaluate", spy)
    best = over_seeds.reproduce(
        config, "smoke", [0, 1], tmp_path, vs=("greedy",), games=1, eval_seed=7, checkpoint="best", deterministic=True
    )
    steps = [over_seeds.best_checkpoint(tmp_path / f"seed_{seed}") for seed in (0, 1)]
    assert all(step is not None for step in steps)
    assert calls == [(f"{tmp_path / f'seed_{seed}'}:{step}", True) for seed, step in zip((0, 1), steps)]
    assert [run["evaluated_update"] for run in best["runs"]] == steps
    assert (best["checkpoint"], best["deterministic"]) == ("best", True)
    assert (first["checkpoint"], first["deterministic"]) == ("final", False)
    record = results.record_from_seeds(
        best,
        "smoke_best",
        command=["c"],
        machine="m",
        environment="e",
        date="2026-11-28",
        commit="0" * 40,
        files=[],
        evaluation="e.json",
    )
    assert "best checkpoint" in record["notes"] and "most likely legal action" in record["notes"]
    with pytest.raises(ValueError, match="checkpoint must be one of"):
        over_seeds.reproduce(config, "smoke", [0, 1], tmp_path, checkpoint="last")


def test_a_pipeline_over_seeds_evaluates_each_final_policy_and_its_record_says_so(tmp_path, monkeypatch):
    """The pipeline counterpart (agents.pipeline.over_seeds) with stand-in pipelines and evaluations (each is tested
    for real in tests/test_pipeline.py and the arena's tests): each seed's pipeline runs once in its own directory
    with its seed, its final result is the player evaluated, a repeated call runs and plays nothing, the seeds its
    phases train with are refused as the evaluation seed, and the record carries the pipeline's wall time."""
    from agents.pipeline import over_seeds as pipe_seeds
    from agents.presets import PIPELINES

    spec = PIPELINES["pipeline_smoke"]
    ran, played = [], []

    def fake_pipeline(spec_, out_dir, name, seed, resume, progress):
        ran.append((name, seed, resume, str(out_dir)))
        (out_dir / "league").mkdir(parents=True, exist_ok=True)  # the final result's run directory, as a real one
        phases = {"record": {"dir": "r", "record": {}, "result": "r", "summary": {}, "wall_s": 10.0}}
        for i, phase in enumerate(spec_.phases, start=1):
            phases[phase.name] = {
                "dir": f"{out_dir}/{phase.name}",
                "config": {},
                "result": f"{out_dir}:{i}",
                "wall_s": 20.0 + seed,
                "summary": {"updates": i, "env_steps": 100 * i, "train_s": 1.5, "compile_s": 2.0},
            }
        return {"phases": phases, "final": f"{out_dir}/league:{3 + seed}", "wall_s": 90.0 + seed, "stopped": None}

    def fake_evaluate(player, vs, games, seed, deterministic, progress):
        played.append((player, seed, deterministic))
        return {f"vs_{v}": {"mean_placement": 2.0 + int(player[-1]), "ci95": 0.1} for v in vs}

    monkeypatch.setattr(pipe_seeds, "run_pipeline", fake_pipeline)
    monkeypatch.setattr(over_seeds, "evaluate", fake_evaluate)
    with pytest.raises(ValueError, match="eval_seed 6 is a training seed"):  # seed 2's 4th phase trains with 6
        pipe_seeds.reproduce_pipeline(spec, "pipeline_smoke", [0, 2], tmp_path, eval_seed=6)
    assert ran == [] and len(spec.phases) == 4
    first = pipe_seeds.reproduce_pipeline(
        spec, "pipeline_smoke", [0, 1], tmp_path, vs=("greedy",), games=2, eval_seed=7, deterministic=True
    )
    assert ran == [("pipeline_smoke", s, False, str(tmp_path / f"seed_{s}")) for s in (0, 1)]
    assert played == [(f"{tmp_path / f'seed_{s}'}/league:{3 + s}", 7, True) for s in (0, 1)]
    assert first["vs_greedy"]["per_seed"] == [5.0, 6.0] and first["vs_greedy"]["mean_placement"] == 5.5
    assert first["pipeline_wall_s"] == [90.0, 91.0] and first["train_s"] == [6.0, 6.0]
    assert first["updates"] == [4, 4] and first["env_steps"] == [1000, 1000]
    assert [r["evaluated_update"] for r in first["runs"]] == [3, 4]
    assert first["runs"][1]["phases_wall_s"] == {
        "record": 10.0,
        "bc": 21.0,
        "teacher": 21.0,
        "student": 21.0,
        "league": 21.0,
    }
    assert list(first["config"]["phases"]) == ["bc", "teacher", "student", "league"]
    again = pipe_seeds.reproduce_pipeline(
        spec, "pipeline_smoke", [0, 1], tmp_path, vs=("greedy",), games=2, eval_seed=7, deterministic=True
    )
    assert again == first and len(ran) == 2 and len(played) == 2
    reworded = dataclasses.replace(spec, description="reworded")  # prose, not a change of pipeline
    assert (
        pipe_seeds.reproduce_pipeline(
            reworded, "pipeline_smoke", [0, 1], tmp_path, vs=("greedy",), games=2, eval_seed=7, deterministic=True
        )["vs_greedy"]
        == first["vs_greedy"]
    )
    assert len(ran) == 2 and len(played) == 2
    changed = spec.with_overrides({"league": {"lr": 1e-4}})  # another spec: its pipelines run again (resumed)
    pipe_seeds.reproduce_pipeline(changed, "pipeline_smoke", [0], tmp_path / "b", vs=("greedy",), games=2, eval_seed=7)
    assert ran[-1] == ("pipeline_smoke", 0, False, str(tmp_path / "b" / "seed_0"))

    record = results.record_from_seeds(
        json.loads(json.dumps(first)),
        "pipe",
        command=["c"],
        machine="m",
        environment="e",
        date="2026-11-28",
        commit="0" * 40,
        files=["pipe.json"],
        evaluation="pipe.json",
    )
    (tmp_path / "pipe.json").write_text(json.dumps(first))
    assert results.validate(record, tmp_path) == [] and results.check_evidence(record, tmp_path) == []
    assert record["numbers"]["wall_s"]["value"] == 90.5 and "train_s" not in record["numbers"]
    assert record["title"] == (
        "pipeline_smoke: the pipeline (record, bc, teacher, student, league) over 2 pipeline seeds"
    )
    assert "last phase's result" in record["notes"] and "pipeline seeds" in record["seeds"]["note"]
    table = results.render_readme_table([{**record, "readme_row": 1}], {"since": "2026-11-28", "change": "x"})
    assert table.count("| 1.5 (wall) |") == 1  # 90.5 s
