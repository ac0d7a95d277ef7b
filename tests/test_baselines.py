"""The shipped baseline policies (agents/policies/baseline_policies/, ``agents.policies.baselines``): each loads, builds
its network
from its own config and plays legal actions on the game; a damaged one is a one-line error. (Freezing a run
and playing the baseline at a table: tests/test_train.py, on the smoke run.)"""

from __future__ import annotations

import json
import shutil
import subprocess
import warnings

import jax
import numpy as np
import pytest

import jaxgame
from agents.core import distributions
from agents.policies import baselines, card
from agents.policies.load import PolicyError, load_policy
from experiments import baseline as baseline_cli


def test_ppo_small_v1_is_shipped():
    assert "ppo_small-v1" in baselines.available()


@pytest.mark.parametrize("name", baselines.available())
def test_every_shipped_baseline_loads_and_plays_legally(name):
    meta = baselines.describe(name)
    assert meta["name"] == name and meta["source"]["step"] > 0
    assert meta["results"]["evaluate"]["vs_greedy"]["games"] >= 256  # what it measured, with the protocol's size
    policy = load_policy(f"{baselines.PREFIX}{name}")
    assert policy.name == f"baseline:{name}" and policy.config.run.num_devices == 1
    env = jaxgame.make("autochess", obs=policy.config.task.obs, **policy.config.rules())
    _, ts = env.reset(jax.random.key(0))
    logits, value = jax.jit(policy.network.apply)(policy.params, ts.observation[None])
    assert logits.shape == (1, 8, env.num_actions) and value.shape == (1, 8)
    assert np.isfinite(np.asarray(value)).all()
    actions = distributions.sample(jax.random.key(1), logits, ts.action_mask[None])
    assert np.take_along_axis(np.asarray(ts.action_mask), np.asarray(actions)[0][:, None], -1).all()


@pytest.mark.parametrize("name", baselines.available())
def test_every_shipped_baseline_ships_its_standalone_export_acting_as_it(name):
    """NAME/ beside NAME.msgpack is the same policy in the export format (agents.policies.export; how it runs with only
    jax and numpy, in a subprocess: tests/test_export.py): same logits, values and greedy actions."""
    from agents.policies.exported_loader import ExportedPolicy

    exported = ExportedPolicy(baselines.DIRECTORY / name)
    policy = load_policy(f"{baselines.PREFIX}{name}")
    spec = exported.spec
    assert spec["name"] == f"baseline:{name}" and spec["source"]["step"] == baselines.describe(name)["source"]["step"]
    assert spec["platforms"] == ["cpu", "cuda"] and spec["rules"] == policy.config.rules()
    env = jaxgame.make("autochess", obs=policy.config.task.obs, **policy.config.rules())
    states, ts = jax.vmap(env.reset)(jax.random.split(jax.random.key(2), 3))
    obs = np.asarray(ts.observation).reshape(24, *spec["obs_shape"])  # 3 games x 8 seats
    mask = np.asarray(ts.action_mask).reshape(24, -1)
    action, logits, value = exported.act(obs, mask)
    want_logits, want_value = jax.jit(policy.network.apply)(policy.params, obs)
    np.testing.assert_allclose(logits, want_logits, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(value, want_value, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(action, distributions.greedy(want_logits, mask))


def test_a_damaged_baseline_is_a_one_line_error(tmp_path, monkeypatch):
    shipped = tmp_path / "shipped"
    shutil.copytree(baselines.DIRECTORY, shipped)
    monkeypatch.setattr(baselines, "DIRECTORY", shipped)
    meta = json.loads((shipped / "ppo_small-v1.json").read_text())
    meta["config"]["hidden"] = [8]  # a network its parameters do not fit
    (shipped / "ppo_small-v1.json").write_text(json.dumps(meta))
    baselines.write_digest("ppo_small-v1", shipped)  # as if frozen so: the digest matches, the network does not
    with pytest.raises(PolicyError, match="do not fit its network"):
        load_policy("baseline:ppo_small-v1")
    shipped = "pipeline_entity-v1, ppo_large-v1, ppo_small-v1, ppo_small-v2, ppo_small-v3, ppo_small_entity-v1"
    with pytest.raises(PolicyError, match=f"no baseline 'nope-v1'; shipped: {shipped}$"):
        load_policy("baseline:nope-v1")
    with pytest.raises(PolicyError, match="no checkpoint steps"):
        load_policy("baseline:ppo_small-v1", 3)


@pytest.mark.parametrize("name", baselines.available())
def test_every_shipped_baseline_carries_a_digest_that_sha256sum_accepts(name):
    digest = baselines.digest_path(name)
    listed = sorted(line.split("  ", 1)[1] for line in digest.read_text().splitlines())
    export = sorted(f"{name}/{f.name}" for f in (baselines.DIRECTORY / name).iterdir() if f.is_file())
    assert listed == sorted([f"{name}.json", f"{name}.msgpack", *export])
    if shutil.which("sha256sum"):
        proc = subprocess.run(
            ["sha256sum", "-c", "--strict", digest.name],
            cwd=baselines.DIRECTORY,
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert baselines.verify(name)


@pytest.mark.parametrize("damaged", ["ppo_small-v1.msgpack", "ppo_small-v1.json", "ppo_small-v1/act_greedy.jaxexport"])
def test_a_flipped_byte_in_a_baseline_is_a_one_line_error(tmp_path, damaged):
    shipped = shutil.copytree(baselines.DIRECTORY, tmp_path / "shipped")
    data = bytearray((shipped / damaged).read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit: same size, still parses
    (shipped / damaged).write_bytes(bytes(data))
    with pytest.raises(baselines.BaselineError) as info:
        baselines.load_baseline("ppo_small-v1", directory=shipped)
    assert str(info.value) == (
        f"baseline 'ppo_small-v1' in {shipped} is damaged: {damaged} does not match its SHA-256 in ppo_small-v1.sha256"
    )
    (shipped / "ppo_small-v1.sha256").unlink()  # frozen before digests: loads, with one warning
    if damaged == "ppo_small-v1.msgpack":
        with pytest.warns(RuntimeWarning, match="has no ppo_small-v1.sha256 .*unverified") as record:
            assert baselines.load_baseline("ppo_small-v1", directory=shipped).step > 0
        assert len(record) == 1


def test_freezing_writes_the_digest(tmp_path):
    policy = load_policy("baseline:ppo_small-v1")
    baselines.freeze(policy, "copy-v1", directory=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy-v1.json", "copy-v1.msgpack", "copy-v1.sha256"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert baselines.load_baseline("copy-v1", directory=tmp_path).step == policy.step
    (tmp_path / "copy-v1").mkdir()  # what freeze_baseline adds (the export), then digests again
    (tmp_path / "copy-v1" / "spec.json").write_text("{}")
    baselines.write_digest("copy-v1", tmp_path)
    assert "copy-v1/spec.json" in baselines.digest_path("copy-v1", tmp_path).read_text()
    assert baselines.verify("copy-v1", tmp_path)


@pytest.mark.parametrize("name", baselines.available())
def test_every_shipped_baseline_has_its_model_card_as_generated(name):
    """NAME.MODEL_CARD.md equals what agents.policies.card writes from NAME.json (regenerate: python -m
    experiments.baseline card); it lies outside the digest (the digest test above lists exactly what NAME.sha256
    covers)."""
    path = card.card_path(name)
    assert path.is_file(), f"{path.name} missing: python -m experiments.baseline card {name}"
    stale = f"{path.name} is stale: python -m experiments.baseline card {name}"
    assert path.read_text() == card.model_card(name), stale
    assert path.name not in baselines.digest_path(name).read_text()


MADE_UP = {
    "name": "made_up-v1",
    "config": {
        "obs": "vector",
        "hidden": [32, 16],
        "seed": 5,
        "num_envs": 8,
        "total_steps": 4096,
        "max_rounds": 10,
        "steps_per_round": 6,
    },
    "source": {"run": "runs/made_up", "step": 16, "frozen": "2026-01-02"},
    "results": {
        "training": {
            "command": "python -m experiments.train --preset smoke --out RUN",
            "seed": 5,
            "env_steps": 4096,
            "updates": 16,
            "wall_s": 90.0,
            "train_s": 60.5,
            "compile_s": 20.25,
            "machine": "a test box",
        },
        "evaluate": {
            "command": "python -m experiments.evaluate RUN --vs random --vs greedy --vs expert",
            "machine": "a test box",
            "date": "2026-01-03",
            "vs_random": {"mean_placement": 1.5, "ci95": 0.25, "top1": 0.5, "top4": 1.0, "games": 64},
            "vs_greedy": {"mean_placement": 4.4, "ci95": 0.2, "top1": 0.125, "top4": 0.5, "games": 64},
            "vs_expert": {"mean_placement": 5.25, "ci95": 0.5, "top1": 0.03125, "top4": 0.25, "games": 64},
        },
    },
}


def _made_up(directory, meta):
    (directory / f"{meta['name']}.json").write_text(json.dumps(meta))
    (directory / f"{meta['name']}.msgpack").write_bytes(b"")  # a version is a .json with its .msgpack
    return meta["name"]


def test_model_card_says_what_its_json_records(tmp_path):
    lines = card.model_card("made_up-v1", MADE_UP).splitlines()
    for line in (
        "`baseline:made_up-v1`: a PPO policy (mlp 32x16, tanh) trained on autochess with opponents `self`; frozen at "
        "update 16 of runs/made_up on 2026-01-02. Parameters `made_up-v1.msgpack`, the standalone export "
        "`made_up-v1/` (`agents.policies.exported_loader`), both checked by `made_up-v1.sha256`.",
        "- command: `python -m experiments.train --preset smoke --out RUN`",
        "- seed: 5",
        "- env steps: 4,096 in 16 updates, 8 envs (configured total_steps: 4,096)",
        "- wall time: 90.0 s (1.5 min); training 60.5 s, compiling 20.25 s",
        "- hardware: a test box",
        "| random | 1.50 ± 0.25 | 50.0% | 100.0% | 64 |",
        "| expert | 5.25 ± 0.50 | 3.1% | 25.0% | 64 |",
        "- loses to (95% interval worse than 4.5): expert",
        "- level with (95% interval contains 4.5): greedy",
        "- worst measured lineup: expert, mean placement 5.25 ± 0.50, first in 3.1% of games (an even share: 12.5%), "
        "top-4 in 25.0% (an even share: 50.0%)",
        "- kind: vector",
        "- shape and dtype, per seat: float32[582]",
        "- rules: max_rounds=10, steps_per_round=6, max_combat_ticks=400, reward_win=0.0, reward_life=0.0",
    ):
        assert line in lines, line
    unmeasured = card.model_card("made_up-v1", {**MADE_UP, "results": {}}).splitlines()
    assert "Not measured: made_up-v1.json records no evaluation." in unmeasured
    assert "- hardware: not recorded" in unmeasured and "- seed: 5" in unmeasured  # the config's seed
    pixels = card.model_card(
        "made_up-v1", {**MADE_UP, "config": {**MADE_UP["config"], "obs": "pixels", "network": "cnn"}}
    )
    assert "- shape and dtype, per seat: uint8[72, 20]" in pixels.splitlines()


def test_card_command_writes_and_checks_the_cards(tmp_path, capsys):
    name = _made_up(tmp_path, MADE_UP)
    with pytest.raises(SystemExit) as info:
        baseline_cli.main(["card", "--check", "--dir", str(tmp_path)])
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"out of date in {tmp_path}: {name} (write them: " in err
    baseline_cli.main(["card", "--dir", str(tmp_path)])
    assert card.card_path(name, tmp_path).read_text() == card.model_card(name, MADE_UP)
    assert card.stale_cards(tmp_path) == []
    assert baseline_cli.main(["card", name, "--check", "--dir", str(tmp_path)]) == {
        name: str(card.card_path(name, tmp_path))
    }
    changed = {**MADE_UP, "source": {**MADE_UP["source"], "step": 17}}
    (tmp_path / f"{name}.json").write_text(json.dumps(changed))
    assert card.stale_cards(tmp_path) == [name]
    with pytest.raises(SystemExit):
        baseline_cli.main(["card", "nope-v1", "--dir", str(tmp_path)])
    assert "no baseline 'nope-v1'" in capsys.readouterr().err


def test_list_says_whether_todays_code_loads_each_version_and_its_ladder_points(tmp_path, monkeypatch, capsys):
    from agents.arena import ladder

    listed = baseline_cli.main(["list"])
    points = {m["spec"]: m["points"] for m in ladder.load_ladder()["members"]}
    assert sorted(listed) == baselines.available()
    for name, row in listed.items():
        assert row["loads"] is True and row["obs"] == "vector", (name, row)
        assert row["layout_version"] == 1 and row["layout_current"] is True, (name, row)
        assert row["ladder"]["version"] == "ladder-v1" and row["ladder"]["points"] == points[f"baseline:{name}"]
    shipped = tmp_path / "shipped"
    shutil.copytree(baselines.DIRECTORY, shipped)
    monkeypatch.setattr(baselines, "DIRECTORY", shipped)
    data = shipped / "ppo_small-v2.msgpack"
    data.write_bytes(data.read_bytes()[:-1] + bytes([data.read_bytes()[-1] ^ 0xFF]))
    capsys.readouterr()
    damaged = baseline_cli.main(["list"])["ppo_small-v2"]
    assert damaged["loads"] is False and "ppo_small-v2.msgpack" in damaged["load_error"]
    assert "\n" not in damaged["load_error"] and baseline_cli.main(["list"])["ppo_small-v1"]["loads"] is True
