"""Behaviour cloning of a dataset on disk through the run library (``TrainConfig(bc_dataset=DIR)``,
``agents.algorithms.bc.DatasetCloning``): validation logged every chunk, early stopping, the best checkpoint by
validation
cross-entropy, resume equal to the uninterrupted run, a changed dataset refused on resume, a dataset of other rules
refused before anything is written, and ``load_policy`` on the run.

The samples are drawn at random in the game's shapes (what is learned is checked on a synthetic teacher in
tests/test_bc.py; these tests check the run around it), written with ``agents.storage.datasets.write_dataset`` and the
manifest meta ``agents.pipeline.recording.record`` writes.
"""

import dataclasses
import json
import shutil

import jax
import numpy as np
import pytest

from agents.algorithms.registry import built_trainer
from agents.config import TrainConfig
from agents.envs.make import make_game
from agents.policies.load import load_policy
from agents.run.training import train
from agents.storage import datasets as dataset
from agents.storage import recorded_samples
from agents.storage.run_dir import RunError
from jaxgame.observation import OBS_SIZE, ORACLE_SIZE

pytestmark = pytest.mark.xdist_group("bc_dataset")

RULES = dict(max_rounds=6, steps_per_round=4, max_combat_ticks=100)


def config_for(data_dir, **overrides) -> TrainConfig:
    fields = dict(
        algo="bc",
        bc_dataset=str(data_dir),
        bc_batch_size=32,
        bc_val_fraction=0.25,
        total_steps=32 * 20,
        updates_per_chunk=5,
        hidden=(32,),
        lr=3e-3,
        eval_every=0,
        checkpoint_every=1,
        keep_checkpoints=1,
        **RULES,
    )
    return TrainConfig.from_fields(**{**fields, **overrides})


def write_random_dataset(directory, seed: int, games: int = 8, steps: int = 30, obs: str = "vector", **rules):
    """``games`` games of ``steps`` samples each, in the game's observation (kind ``obs``: "vector" or "oracle")
    and mask shapes: random observations, random masks with the recorded action legal, two thirds of the steps
    decisions."""
    game = make_game(config_for(directory, **{**RULES, **rules}), obs)
    _, ts = jax.eval_shape(game.reset, jax.random.key(0))
    obs_size, actions = ts.observation.shape[-1], ts.action_mask.shape[-1]
    rng = np.random.default_rng(seed)
    n = games * steps
    mask = rng.random((n, actions)) < 0.3
    action = rng.integers(0, actions, n)
    mask[np.arange(n), action] = True
    samples = {
        "obs": rng.normal(size=(n, obs_size)).astype(np.float32),
        "mask": mask,
        "action": action.astype(np.int16),
        "outcome": rng.normal(size=n).astype(np.float32),
        "decision": np.arange(n) % 3 != 0,
        "game": np.repeat(np.arange(games, dtype=np.int32), steps),
    }
    meta = {"obs": obs, "rules": json.loads(json.dumps(dataclasses.asdict(game.config)))}
    dataset.write_dataset(directory, [samples], meta)


def records(run_dir):
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [r for r in lines if "meta" not in r]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("bc") / "data"
    write_random_dataset(directory, seed=0)
    return directory


TIMING = ("wall_s", "sps", "perf/sps", "perf/seat_sps")


def without_timing(rows):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


def checkpoint_steps(run_dir):
    return sorted(int(p.name) for p in (run_dir / "checkpoints").iterdir() if p.name.isdigit())


def test_a_dataset_clone_tells_the_run_library_it_reads_a_recording_and_counts_samples(data_dir):
    from agents.algorithms.base import TrainerFacts
    from agents.algorithms.registry import make_train
    from agents.envs.make import make_env

    config = config_for(data_dir)
    facts = make_train(config, make_env(config)).facts
    assert facts == TrainerFacts(players_per_step=1, sample_unit="samples", runs_upto=False, reads_recording=True)


def test_a_dataset_run_validates_every_chunk_and_resumes_as_the_uninterrupted_run(data_dir, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(data_dir, data)
    config = config_for(data, best_by="validation")
    whole = train(config, tmp_path / "whole")
    assert whole["updates"] == 20 and not whole["early_stopped"] and whole["seat_steps"] == 32 * 20
    # the trainer, cached for later runs of the config, does not keep this run's recording alive
    cached = built_trainer(config)[1]
    assert cached.digest is not None and cached._split is None
    logged = records(tmp_path / "whole")
    assert [r["update"] for r in logged] == [5, 10, 15, 20]
    for r in logged:
        assert 0.0 <= r["val/accuracy"] <= 1.0 and np.isfinite(r["val/cross_entropy"])
        assert r["val/best_cross_entropy"] == min(x["val/cross_entropy"] for x in logged if x["update"] <= r["update"])
        assert r["train/decisions"] > 0 and np.isfinite(r["loss/cross_entropy"])
    # keep_checkpoints=1: the last step, and the one of the lowest validation cross-entropy
    best = min(logged, key=lambda r: r["val/cross_entropy"])["update"]
    assert checkpoint_steps(tmp_path / "whole") == sorted({20, best})

    # two chunks, then a resume to four: the same records and parameters, bit for bit
    train(config.with_overrides({"total_steps": 32 * 10}), tmp_path / "split")
    resumed = train(config, tmp_path / "split", resume=True)
    assert resumed["updates"] == 20
    assert without_timing(records(tmp_path / "split")) == without_timing(logged)
    a, b = load_policy(tmp_path / "whole"), load_policy(tmp_path / "split")
    jax.tree_util.tree_map(np.testing.assert_array_equal, a.params, b.params)
    assert a.config.bc.bc_dataset == str(data)

    # a dataset whose samples changed is not the run's any more: a resume refuses it
    other = tmp_path / "other"
    write_random_dataset(other, seed=1)
    for file in other.iterdir():
        (data / file.name).write_bytes(file.read_bytes())
    with pytest.raises(RunError, match=r"not those its checkpoints trained on \(bc_dataset_digest"):
        train(config.with_overrides({"total_steps": 32 * 25}), tmp_path / "split", resume=True)


def test_early_stopping_ends_the_run_and_keeps_the_best_checkpoint(data_dir, tmp_path, capsys):
    """With a learning rate of 0 every validation equals the first, the best: two more without a lower
    cross-entropy end the run (bc_patience=2) after 3 of its 4 chunks, with a checkpoint.
    The CLI says so on stderr; a resume trains nothing more."""
    from experiments import train as train_cli

    run_dir = tmp_path / "stop"
    sets = dict(
        bc_dataset=data_dir,
        bc_batch_size=32,
        bc_val_fraction=0.25,
        total_steps=32 * 20,
        updates_per_chunk=5,
        hidden=32,
        lr=0.0,
        warmup_updates=0,
        bc_patience=2,
        eval_every=0,
        keep_checkpoints=1,
        **RULES,
    )
    summary = train_cli.main(
        [
            "--preset",
            "bc_data",
            "--out",
            str(run_dir),
            "--quiet",
            "--no-cache",
            *[f"--set={k}={v}" for k, v in sets.items()],
        ]
    )
    assert summary["early_stopped"] and summary["updates"] == 15
    assert "early stopping after update 15" in capsys.readouterr().err
    logged = records(run_dir)
    assert [r["update"] for r in logged] == [5, 10, 15]
    assert (
        len({r["val/cross_entropy"] for r in logged}) == 1
        and logged[-1]["val/best_cross_entropy"] == logged[0]["val/cross_entropy"]
    )
    steps = checkpoint_steps(run_dir)
    assert steps[-1] == 15 and len(steps) <= 2, steps  # the last, and a best of equal ones (it may be the last)
    again = train(TrainConfig.from_dict(json.loads((run_dir / "config.json").read_text())), run_dir, resume=True)
    assert again["updates"] == 15 and again["early_stopped"]
    assert [r["update"] for r in records(run_dir)] == [5, 10, 15]


@pytest.mark.parametrize(
    "change, games, message",
    [
        ({"max_rounds": 7}, None, "recorded with other rules: max_rounds=6"),
        ({"obs": "pixels", "network": "tiles"}, None, "holds 'vector' observations"),
        ({"obs": "oracle"}, None, "holds 'vector' observations; the run has obs='oracle'"),
        ({}, 1, "leaves none to train on"),  # one game, held out
    ],
)
def test_a_dataset_that_does_not_fit_the_run_is_refused_before_anything_is_written(
    data_dir, tmp_path, change, games, message
):
    if games is not None:
        data_dir = tmp_path / "data"
        write_random_dataset(data_dir, seed=0, games=games)
    with pytest.raises(RunError, match=message):
        train(config_for(data_dir, **change), tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_an_oracle_dataset_clones_into_an_oracle_policy_that_plays_greedy_bots(tmp_path):
    """A dataset of oracle observations (``experiments.record --obs oracle``) trains a run of obs="oracle" (a
    network reading the vector and the hidden information), whose checkpoint the evaluator seats with the oracle
    observation against 7 greedy bots; a run of obs="vector" refuses it, naming both kinds."""
    from experiments import evaluate

    data = tmp_path / "oracle"
    write_random_dataset(data, seed=0, obs="oracle")
    with pytest.raises(RunError, match="holds 'oracle' observations; the run has obs='vector'"):
        train(config_for(data), tmp_path / "vector")
    run_dir = tmp_path / "run"
    summary = train(config_for(data, obs="oracle", total_steps=32 * 10), run_dir)
    assert summary["updates"] == 10 and [r["update"] for r in records(run_dir)] == [5, 10]
    policy = load_policy(run_dir)
    assert policy.config.task.obs == "oracle"
    inputs = {
        kernel.shape[0]
        for name, torso in policy.params["params"].items()
        if name.endswith("torso")
        for kernel in [torso["Dense_0"]["kernel"]]
    }
    assert inputs == {OBS_SIZE + ORACLE_SIZE}
    result = evaluate.main([str(run_dir), "--vs", "greedy", "--games", "1", "--deterministic", "--quiet"])
    assert result["update"] == 10 and result["greedy_policy"]
    assert result["vs_greedy"]["games"] == 8 and 1 <= result["vs_greedy"]["mean_placement"] <= 8


def test_a_missing_dataset_and_bad_dataset_configs_are_one_line_errors(tmp_path):
    with pytest.raises(RunError, match="manifest"):
        train(config_for(tmp_path / "none"), tmp_path / "run")
    assert not (tmp_path / "run").exists()
    for fields, message in [
        (dict(algo="ppo", bc_dataset="d"), "bc_dataset is behaviour cloning's"),
        (dict(algo="bc", bc_dataset="d", num_devices=2, num_envs=16), "one device"),
        (dict(algo="bc", bc_patience=3), "bc_patience"),
        (dict(algo="bc", best_by="validation"), "best_by='validation'"),
        (dict(algo="bc", bc_dataset="d", bc_val_fraction=0.95), "bc_val_fraction"),
        (dict(algo="bc", bc_dataset="d", bc_batch_size=64, total_steps=32), "bc_batch_size"),
    ]:
        with pytest.raises(ValueError, match=message):
            TrainConfig.from_fields(**fields)


def test_several_datasets_are_cloned_as_one_with_each_recordings_games_kept_apart(data_dir, tmp_path):
    """bc_dataset="A,B" (DAgger: the teacher's games, then labelled games of the clone): the samples of A then B,
    B's games numbered after A's, so the split holds out whole games of either; the digest covers both in order;
    a second dataset that does not fit the run is refused naming its directory."""
    from agents.algorithms import bc

    other = tmp_path / "other"
    write_random_dataset(other, seed=1, games=4)
    config = config_for(f"{data_dir},{other}")
    assert config.bc.dataset_dirs == (str(data_dir), str(other))
    game = make_game(config)
    _, ts = jax.eval_shape(game.reset, jax.random.key(0))
    observation = jax.ShapeDtypeStruct(ts.observation.shape[1:], ts.observation.dtype)  # one seat's
    first, second = dataset.open_dataset(data_dir), dataset.open_dataset(other)
    samples, digest = recorded_samples.joined([first, second])
    a, b = first.load(), second.load()
    assert set(samples) == set(recorded_samples.FIELDS)
    for name in recorded_samples.FIELDS:
        expected = np.concatenate([a[name], b[name] + (8 if name == "game" else 0)])
        np.testing.assert_array_equal(samples[name], expected, err_msg=name)
    assert digest != recorded_samples.digest(first)
    assert recorded_samples.joined([first])[1] == recorded_samples.digest(first)
    assert recorded_samples.joined([second, first])[1] != digest

    read, got_digest = recorded_samples.read(config, observation, game.num_actions)
    assert got_digest == digest
    train_set, val_set = bc.split_samples(config, read)
    assert train_set["action"].shape[0] + val_set["action"].shape[0] == first.num_samples + second.num_samples
    assert val_set["action"].shape[0] == 3 * 30  # 0.25 of 12 games, whole games
    summary = train(config, tmp_path / "run")
    assert summary["updates"] == 20

    bad = tmp_path / "bad"
    write_random_dataset(bad, seed=2, max_rounds=7)
    with pytest.raises(RunError, match=f"{bad} was recorded with other rules"):
        train(config_for(f"{data_dir},{bad}"), tmp_path / "run_bad")
    assert not (tmp_path / "run_bad").exists()


@pytest.mark.parametrize("value", ["a,,b", "a, a", "a,"])
def test_a_dataset_list_with_an_empty_or_repeated_directory_is_refused(value):
    with pytest.raises(ValueError, match="TrainConfig.bc.bc_dataset.*distinct comma-separated"):
        TrainConfig.from_fields(algo="bc", bc_dataset=value)
