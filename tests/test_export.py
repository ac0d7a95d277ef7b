"""Exported policies (agents.policies.export, experiments.export): the serialized act functions run in a process that
imports only jax and numpy, act as the checkpoint does at any batch size, never pick an illegal action, and
bad directories or input are one-line errors."""

import json
import shutil
import subprocess
import sys
import textwrap
import warnings

import jax
import numpy as np
import pytest

from agents.core import distributions
from agents.policies import baselines, card
from agents.policies import exported_loader as loader
from agents.policies.export import FILES, LOADER_FILE, export_policy
from agents.policies.load import PolicyError, load_policy
from experiments import export as export_cli
from jaxgame.observation import OBS_SIZE

BASELINE = "baseline:ppo_small-v1"
BATCHES = (1, 37)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The shipped baseline exported through the CLI for CPU and CUDA: (directory, policy)."""
    out = tmp_path_factory.mktemp("export") / "policy"
    spec = export_cli.main([BASELINE, "--out", str(out)])
    assert spec["platforms"] == ["cpu", "cuda"] and spec["obs"] == "vector"
    return out, load_policy(BASELINE)


def _inputs(obs_size, batch, seed):
    """Observations in [0, 1] and masks with 1..258 legal actions a row (some rows with exactly one)."""
    rng = np.random.default_rng(seed)
    obs = rng.random((batch, obs_size), dtype=np.float32)
    mask = rng.random((batch, 258)) < rng.uniform(0.0, 0.2, (batch, 1))
    mask[np.arange(batch), rng.integers(0, 258, batch)] = True
    mask[0] = False
    mask[0, rng.integers(258)] = True  # row 0: a single legal action
    return obs, mask


def test_exported_policy_runs_with_only_jax_and_numpy_and_acts_as_the_checkpoint(exported, tmp_path):
    out, policy = exported
    obs_size = json.loads((out / "spec.json").read_text())["obs_shape"][0]
    for batch in BATCHES:
        obs, mask = _inputs(obs_size, batch, batch)
        np.savez(tmp_path / f"in{batch}.npz", obs=obs, mask=mask)
    script = textwrap.dedent(f"""
        import json, sys
        import numpy as np
        from policy_loader import ExportedPolicy
        policy = ExportedPolicy(".")
        for batch in {BATCHES!r}:
            data = np.load(r"{tmp_path}/in%d.npz" % batch)
            greedy = [np.asarray(x) for x in policy.act(data["obs"], data["mask"])]
            sampled = [np.asarray(x) for x in policy.act(data["obs"], data["mask"], key=7)]
            np.savez(r"{tmp_path}/out%d.npz" % batch, *greedy, *sampled)
        banned = ("flax", "agents", "jaxgame", "optax", "orbax", "chex", "experiments")
        print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in banned)))
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=out, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [], "the loader imported more than jax and numpy"
    for batch in BATCHES:
        data, got = np.load(tmp_path / f"in{batch}.npz"), np.load(tmp_path / f"out{batch}.npz")
        action, logits, value, sampled, sampled_logits, _ = (got[f"arr_{i}"] for i in range(6))
        want_logits, want_value = jax.jit(policy.network.apply)(policy.params, data["obs"])
        np.testing.assert_allclose(logits, want_logits, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(sampled_logits, want_logits, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(value, want_value, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(action, distributions.greedy(want_logits, data["mask"]))
        np.testing.assert_array_equal(sampled, distributions.sample(jax.random.key(7), want_logits, data["mask"]))
        assert action.shape == sampled.shape == (batch,) and action.dtype == sampled.dtype == np.int32
        for a in (action, sampled):
            assert data["mask"][np.arange(batch), a].all(), "an exported policy picked an illegal action"


def test_loader_refuses_bad_input_and_broken_files(exported, tmp_path):
    out, _ = exported
    sys.path.insert(0, str(out))
    try:
        from policy_loader import ExportedPolicy, ExportedPolicyError
    finally:
        sys.path.remove(str(out))
    policy = ExportedPolicy(out)
    obs, mask = _inputs(policy.obs_shape[0], 3, 0)
    with pytest.raises(ExportedPolicyError, match="obs must be float32"):
        policy.act(obs[:, :-1], mask)
    with pytest.raises(ExportedPolicyError, match="mask must be bool"):
        policy.act(obs, mask.astype(np.int8))
    with pytest.raises(ExportedPolicyError, match="key"):
        policy.act(obs, mask, key=np.zeros(3, np.uint32))
    assert json.loads((out / "spec.json").read_text())["layout_version"] == policy.layout_version == 1
    with pytest.raises(ExportedPolicyError, match="layout version 2 given; .* reads layout version 1"):
        policy.act(obs, mask, layout_version=2)
    assert policy.act(obs, mask, layout_version=1)[0].shape == (3,)
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in (*FILES.values(), LOADER_FILE, "spec.json"):
        (broken / name).write_bytes((out / name).read_bytes())
    (broken / FILES["sample"]).write_bytes((out / FILES["sample"]).read_bytes()[:1000])  # truncated
    with pytest.raises(ExportedPolicyError, match="cannot deserialize") as info:
        ExportedPolicy(broken)
    assert "\n" not in str(info.value)
    assert str(info.value).endswith(
        "re-export it for this jax: python -m experiments.export baseline:ppo_small-v1 "
        "--platforms cpu,cuda --out NEW_DIR"
    )
    (broken / "spec.json").write_text('{"format": "something-else"}')
    with pytest.raises(ExportedPolicyError, match="not a jaxgame-exported-policy"):
        ExportedPolicy(broken)
    with pytest.raises(ExportedPolicyError, match="spec.json"):
        ExportedPolicy(tmp_path / "nothing-here")


def test_export_refuses_a_used_directory_and_bad_platforms(exported, tmp_path, capsys):
    out, policy = exported
    with pytest.raises(PolicyError, match="not an empty directory"):
        export_policy(policy, out)
    with pytest.raises(PolicyError, match="platforms"):
        export_policy(policy, tmp_path / "new", platforms=("gpu",))
    with pytest.raises(PolicyError, match="independent"):
        export_policy(policy, tmp_path / "new", seat=2)
    with pytest.raises(SystemExit):
        export_cli.main(["greedy", "--out", str(tmp_path / "bot")])
    assert "scripted bot" in capsys.readouterr().err
    assert not (tmp_path / "new").exists() and not (tmp_path / "bot").exists()


def test_export_from_a_source_tree_without_an_installed_jaxgame(exported, tmp_path, monkeypatch):
    """Run from a checkout on PYTHONPATH (no ``pip install``, as on a machine without a package index), the export
    and the freeze still write everything, with the missing version recorded as null (it once raised
    PackageNotFoundError after the parameters were written, leaving a baseline without its export)."""
    from importlib import metadata

    from agents.policies.baselines import load_baseline
    from agents.policies.export import freeze_baseline

    installed = metadata.version

    def version(name):
        if name == "jaxgame":
            raise metadata.PackageNotFoundError(name)
        return installed(name)

    monkeypatch.setattr(metadata, "version", version)
    _, policy = exported
    spec = export_policy(policy, tmp_path / "export", platforms=("cpu",))
    assert spec["versions"]["jaxgame"] is None and spec["versions"]["jax"] == jax.__version__
    freeze_baseline(policy, "source_tree-v1", {}, tmp_path / "baselines")
    assert (tmp_path / "baselines" / "source_tree-v1" / FILES["greedy"]).is_file()
    assert (tmp_path / "baselines" / "source_tree-v1.MODEL_CARD.md").is_file()  # the freeze writes the model card
    assert card.stale_cards(tmp_path / "baselines") == []
    assert load_baseline("source_tree-v1", tmp_path / "baselines").step == policy.step


def test_jax_export_window_from_the_recorded_jaxlib():
    """Inside: the same jaxlib, a newer patch, one minor version newer; outside: any older jaxlib (3 weeks of forward
    compatibility, and no release dates to hand), 2+ minor versions or a major version newer (6 months back)."""
    for written_by, running in [
        ("0.10.2", "0.10.2"),
        ("0.10.0", "0.10.2"),
        ("0.9.5", "0.10.2"),
        ("0.4.31.dev20240701", "0.4.35"),
        (None, "0.10.2"),
        ("0.10.2", "unknown"),
    ]:
        assert loader.version_window(written_by, running) is None, (written_by, running)
    assert loader.version_window("0.10.3", "0.10.2") == (
        "jaxlib 0.10.2 is older than jaxlib 0.10.3, which wrote it (jax.export promises 3 weeks of forward "
        "compatibility)"
    )
    for written_by, running in [("0.8.9", "0.10.0"), ("0.12.0", "1.0.0")]:
        assert loader.version_window(written_by, running).startswith(
            f"jaxlib {running} is 2 or more minor versions newer than jaxlib {written_by}, which wrote it"
        ), running
    assert loader.reexport_command({"source": {"run": "runs/mine", "step": 120, "seat": 3}, "platforms": ["cpu"]}) == (
        "python -m experiments.export runs/mine:120 --seat 3 --platforms cpu --out NEW_DIR"
    )


def _shipped_copy(tmp_path, jaxlib):
    """A copy of the shipped ppo_small-v1 export whose spec.json says jaxlib ``jaxlib`` wrote it."""
    out = shutil.copytree(baselines.DIRECTORY / "ppo_small-v1", tmp_path / f"written-by-{jaxlib}")
    spec = json.loads((out / "spec.json").read_text())
    spec["versions"]["jaxlib"] = jaxlib
    (out / "spec.json").write_text(json.dumps(spec))
    return out


def test_loader_warns_outside_the_window_and_accepts_inside(tmp_path):
    again = (
        "re-export it for this jax: python -m experiments.export baseline:ppo_small-v1 --platforms cpu,cuda "
        "--out NEW_DIR"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", loader.ExportedPolicyVersionWarning)  # inside the window: not a word
        policy = loader.ExportedPolicy(_shipped_copy(tmp_path, loader.running_jaxlib()))
    for jaxlib, why in [
        ("0.0.1", "2 or more minor versions newer than jaxlib 0.0.1"),
        ("999.0.0", "older than jaxlib 999.0.0"),
    ]:
        with pytest.warns(loader.ExportedPolicyVersionWarning) as record:
            aged = loader.ExportedPolicy(_shipped_copy(tmp_path, jaxlib))
        (message,) = [str(w.message) for w in record]
        assert why in message and message.endswith(again) and "\n" not in message
        obs, mask = _inputs(policy.obs_shape[0], 2, 0)
        np.testing.assert_array_equal(aged.act(obs, mask)[0], policy.act(obs, mask)[0])  # a warning, not a refusal


def test_loader_refuses_a_calling_convention_this_jax_cannot_call(tmp_path, monkeypatch):
    out = _shipped_copy(tmp_path, loader.running_jaxlib())
    version = jax.export.deserialize(bytearray((out / FILES["greedy"]).read_bytes())).calling_convention_version
    monkeypatch.setattr(jax.export, "minimum_supported_calling_convention_version", version + 1)
    monkeypatch.setattr(jax.export, "maximum_supported_calling_convention_version", version + 2)
    with pytest.raises(loader.ExportedPolicyError) as info:
        loader.ExportedPolicy(out)
    assert str(info.value) == (
        f"{out / FILES['greedy']}: calling convention version {version}, outside {version + 1}..{version + 2} that "
        f"jax {jax.__version__} supports: re-export it for this jax: python -m experiments.export "
        "baseline:ppo_small-v1 --platforms cpu,cuda --out NEW_DIR"
    )


def test_export_never_writes_into_the_shipped_baselines(capsys):
    inside = baselines.DIRECTORY / "ppo_small-v1-again"
    with pytest.raises(SystemExit):
        export_cli.main([BASELINE, "--out", str(inside)])
    assert "inside the shipped baselines" in capsys.readouterr().err and not inside.exists()


# ---------------------------------------------------------------- an export directory is a player


def test_an_export_directory_plays_at_the_tables_as_its_source(exported):
    """``load_policy(EXPORT_DIR)``: the exported program as a table's network gives the source's logits and values
    at any leading shape, and a seat-rotated evaluation of it places exactly as the source's (same seeds)."""
    from agents.arena.tournament import evaluate_checkpoint

    out, policy = exported
    player = load_policy(out)
    assert (player.name, player.step, player.params) == (str(out), None, ())
    assert player.config.task.obs == policy.config.task.obs and player.config.net == policy.config.net
    assert player.config.rules() == policy.config.rules()
    obs = np.random.default_rng(0).random((3, 8, OBS_SIZE), dtype=np.float32)
    for got, want in zip(
        jax.jit(player.network.apply)(player.params, obs), jax.jit(policy.network.apply)(policy.params, obs)
    ):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    lineups = {"greedy": ["greedy"] * 7}
    by_export = evaluate_checkpoint(str(out), None, lineups, games=1, seed=3)
    by_source = evaluate_checkpoint(BASELINE, None, lineups, games=1, seed=3)
    assert by_export["vs_greedy"] == by_source["vs_greedy"] and by_export["update"] is None


def test_an_export_directory_that_cannot_play_is_refused_in_one_line(exported, tmp_path):
    out, _ = exported
    with pytest.raises(PolicyError, match=r"an exported policy has no checkpoint steps"):
        load_policy(out, 3)
    # it plays, but has no parameters to export again or to start a run from
    with pytest.raises(PolicyError, match=r"is an exported policy: it has no parameters to export again; give the"):
        export_policy(load_policy(out), tmp_path / "again")
    from agents.config import TrainConfig
    from agents.policies.frozen import PhaseError, load_saved

    with pytest.raises(PhaseError, match=r"init_from .*: .* has no parameters to read as init_from.*ppo_small-v1"):
        load_saved(TrainConfig.from_fields(init_from=str(out)), "init_from")
    for name, change, message in [
        ("layout", {"layout_version": 99}, r"reads the 'vector' observation of layout version 99; this game writes"),
        ("obs", {"obs": "smell"}, r"reads the 'smell' observation"),
        ("network", {"network": None}, r"names no playable config"),
        ("format", {"format": "other"}, r"not a jaxgame-exported-policy v1 or v2 directory"),
    ]:
        copy = tmp_path / name
        shutil.copytree(out, copy)
        spec = json.loads((copy / "spec.json").read_text())
        (copy / "spec.json").write_text(json.dumps({**spec, **change}))
        with pytest.raises(PolicyError, match=message):
            load_policy(copy)
