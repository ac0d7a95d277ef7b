"""ONNX export (agents.policies.onnx_export, onnx_graph, onnx_client; experiments.export --format onnx): the file gives
the JAX network's logits to 1e-5 for every network kind, never picks an illegal action, runs in processes without JAX
(Python with onnxruntime; Node with onnxruntime-node), serves a whole game with the JAX policy's own argmax choices,
and refuses damaged files, foreign layouts and bad input in one line."""

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tiny_games import TINY

from agents.config import TrainConfig
from agents.core import distributions
from agents.core.networks import actor_critic
from agents.policies import onnx_client
from agents.policies.load import PolicyError, RunPolicy, load_policy
from agents.policies.onnx_export import export_onnx
from agents.policies.onnx_graph import OnnxExportError
from experiments import export as export_cli
from jaxgame import layout

onnxruntime = pytest.importorskip("onnxruntime")

ROOT = Path(__file__).resolve().parents[1]
#: the layout versions and the fingerprints they were pinned with: a layout that changes needs a new version
PINNED_LAYOUTS = {
    ("vector", 1): "a84697f147f9b288f2a17fc735d165b96cf6c9566f21e6afa3050c6bac467d93",
    ("pixels", 1): "d61a758441f9092b0c6453a0b7d92b0531f9174118dd91a39ccc95ffebc941c2",
    ("oracle", 1): "3ab61c0b4fe26b4566cf820f631d32d4325dc8a114359c06cdf4c369aa7e0529",
}
MLP, ENTITY = "baseline:ppo_small-v3", "baseline:pipeline_entity-v1"
TOLERANCE = dict(rtol=1e-5, atol=1e-5)
interop_group = pytest.mark.xdist_group("interop")  # the served game shares test_interop's TINY greedy programs


def _jax_policy(policy):
    network, params = policy.network, policy.params

    @jax.jit
    def act(obs, mask):
        logits, value = network.apply(params, obs)
        return distributions.mask_logits(logits, mask), value

    return act


def _random_inputs(shape, dtype, batch, seed):
    rng = np.random.default_rng(seed)
    obs = (
        rng.integers(0, 256, (batch, *shape), dtype=np.uint8)
        if dtype == np.uint8
        else rng.random((batch, *shape), dtype=np.float32)
    )
    mask = rng.random((batch, 258)) < rng.uniform(0.0, 0.2, (batch, 1))
    mask[np.arange(batch), rng.integers(0, 258, batch)] = True
    mask[0] = False  # row 0: no legal action at all (action 0 is then the one, as in distributions.legal)
    return obs, mask


def _pixel_policy(network: str) -> RunPolicy:
    config = TrainConfig.from_fields(obs="pixels", network=network, hidden=(64,), activation="relu", shared_torso=True)
    net = actor_critic(network, 258, (64,), "relu", True)
    params = net.init(jax.random.key(3), jnp.zeros((1, 72, 20), jnp.uint8))
    return RunPolicy(name=f"fresh:{network}", run_dir="fresh", step=0, config=config, network=net, params=params)


def _assert_same_as_jax(directory, policy, obs, mask):
    client = onnx_client.OnnxPolicy(directory)
    action, logits, value = client.act(obs, mask)
    want_logits, want_value = (np.asarray(x) for x in _jax_policy(policy)(obs, mask))
    np.testing.assert_allclose(logits, want_logits, **TOLERANCE)
    np.testing.assert_allclose(value, want_value, **TOLERANCE)
    legal = np.asarray(distributions.legal(mask))
    assert legal[np.arange(len(action)), action].all(), "an illegal action was picked"
    np.testing.assert_array_equal(action, np.asarray(distributions.greedy(want_logits, mask)))


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The MLP and entity baselines exported through the CLI: {spec: directory}."""
    out = {}
    for spec in (MLP, ENTITY):
        directory = tmp_path_factory.mktemp("onnx") / spec.split(":")[1]
        written = export_cli.main([spec, "--format", "onnx", "--out", str(directory)])
        assert written["observation"]["layout_version"] == layout.LAYOUT_VERSIONS["vector"]
        out[spec] = directory
    return out


@pytest.fixture(scope="module")
def served_game(exported):
    """Three whole TINY games, the MLP baseline at seat 0 served by ``policy_client.py --serve`` in a process where
    ``import jax`` fails, 7 greedy bots around it; the JAX policy's greedy choice computed beside every served one."""
    from agents.interop.gymnasium_env import AutoChessSingleSeatEnv

    directory = exported[MLP]
    blocker = directory.parent / "no_jax"
    (blocker / "jax").mkdir(parents=True)
    (blocker / "jax" / "__init__.py").write_text("raise ImportError('the served policy must not import jax')\n")
    env_vars = {**os.environ, "PYTHONPATH": str(blocker)}
    server = subprocess.Popen(
        [sys.executable, "-s", "policy_client.py", ".", "--serve"],
        cwd=directory,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env_vars,
    )
    hello = json.loads(server.stdout.readline())
    jax_act = _jax_policy(load_policy(MLP))
    env = AutoChessSingleSeatEnv("greedy", seat=0, rules=TINY)
    record = {"obs": [], "mask": [], "served": [], "jax": [], "value": [], "ranks": []}
    for seed in (11, 12, 13):
        obs, info = env.reset(seed=seed)
        done = False
        while not done:
            obs, done, info = _served_step(server, jax_act, env, obs, info, record)
        record["ranks"].append(info["rank"])
    server.stdin.close()
    assert server.wait(timeout=30) == 0
    return hello, record


def _served_step(server, jax_act, env, obs, info, record):
    server.stdin.write(
        json.dumps({"obs": obs.tolist(), "mask": info["action_mask"].tolist(), "layout_version": 1}) + "\n"
    )
    server.stdin.flush()
    answer = json.loads(server.stdout.readline())
    logits, _ = jax_act(obs[None], info["action_mask"][None])
    record["obs"].append(obs)
    record["mask"].append(info["action_mask"])
    record["served"].append(answer["action"])
    record["value"].append(answer["value"])
    record["jax"].append(int(distributions.greedy(logits, info["action_mask"][None])[0]))
    obs, _, done, _, info = env.step(answer["action"])
    return obs, done, info


@interop_group
def test_a_served_policy_plays_a_whole_game_with_the_jax_policys_choices(served_game):
    hello, record = served_game
    assert hello == {
        "ready": True,
        "name": MLP,
        "layout_version": 1,
        "obs_shape": [582],
        "obs_dtype": "float32",
        "num_actions": 258,
    }
    assert len(record["served"]) >= 15 and all(1 <= rank <= 8 for rank in record["ranks"])
    assert record["served"] == record["jax"]
    assert len(set(record["served"])) > 1  # it did not just end every turn


@interop_group
def test_onnx_logits_match_jax_on_recorded_observations_for_the_vector_networks(exported, served_game):
    _, record = served_game
    obs, mask = np.stack(record["obs"]), np.stack(record["mask"])
    for spec, directory in exported.items():
        _assert_same_as_jax(directory, load_policy(spec), obs, mask)  # the whole game as one batch
        _assert_same_as_jax(directory, load_policy(spec), obs[:1], mask[:1])  # and a batch of one


@functools.cache
def _game_frames():
    """Pixel observations of real games: every seat's view (``render_all``, what obs="pixels" observes: its shop,
    gold, life and the round) at the start of 4 TINY games, with their action masks: uint8[32, 72, 20],
    bool[32, 258]."""
    import jaxgame
    from jaxgame import render

    game = jaxgame.make("autochess", **TINY)
    states, ts = jax.jit(jax.vmap(game.reset))(jax.random.split(jax.random.key(5), 4))
    frames = jax.jit(jax.vmap(render.render_all))(states)
    return np.asarray(frames).reshape(-1, 72, 20), np.asarray(ts.action_mask).reshape(-1, 258)


@pytest.mark.parametrize("network", ["tiles", "cnn"])
def test_onnx_logits_match_jax_for_the_pixel_networks(network, tmp_path):
    policy = _pixel_policy(network)
    spec = export_onnx(policy, tmp_path / "out")
    assert spec["observation"] | {"layout_fingerprint": None} == {
        "kind": "pixels",
        "shape": [72, 20],
        "dtype": "uint8",
        "layout_version": 1,
        "layout_fingerprint": None,
    }
    frames, masks = _game_frames()
    assert len(np.unique(frames.reshape(len(frames), -1), axis=0)) > 8  # the seats' views differ
    _assert_same_as_jax(tmp_path / "out", policy, frames, masks)  # the games' frames
    for batch in (1, 9):
        obs, mask = _random_inputs((72, 20), np.uint8, batch, seed=batch)
        _assert_same_as_jax(tmp_path / "out", policy, obs, mask)  # and any bytes


def test_a_network_the_translator_cannot_write_is_refused_naming_the_primitive(tmp_path):
    with pytest.raises(OnnxExportError, match="'scan'"):  # tile_ids' binary search into the atlas
        export_onnx(_pixel_policy("tile_ids"), tmp_path / "out")
    assert not (tmp_path / "out" / "policy.onnx").exists()


def test_random_inputs_single_observations_and_the_spec(exported):
    directory = exported[ENTITY]
    spec = json.loads((directory / "onnx.json").read_text())
    assert spec["source"]["digest_file"] == "pipeline_entity-v1.sha256" and len(spec["source"]["digest_sha256"]) == 64
    assert spec["opset"] == 18 and spec["num_actions"] == 258
    assert [a["name"] for a in spec["actions"]] == [
        "end_turn",
        "buy",
        "reroll",
        "buy_xp",
        "lock",
        "sell",
        "place",
        "recall",
    ]
    assert spec["actions"][-1]["last"] == 257 and spec["actions"][6] | {"argument": None} == {
        "first": 42,
        "last": 233,
        "name": "place",
        "argument": None,
    }
    obs, mask = _random_inputs((582,), np.float32, 23, seed=5)
    _assert_same_as_jax(directory, load_policy(ENTITY), obs, mask)
    client = onnx_client.OnnxPolicy(directory)
    action, logits, value = client.act(obs[3], mask[3])  # one observation, no batch dimension
    assert np.ndim(action) == 0 and logits.shape == (258,) and np.ndim(value) == 0
    assert action == client.act(obs, mask)[0][3]


def test_the_client_refuses_foreign_layouts_bad_input_and_damaged_files(exported, tmp_path):
    directory = tmp_path / "copy"
    shutil.copytree(exported[MLP], directory)
    client = onnx_client.OnnxPolicy(directory)
    obs, mask = _random_inputs((582,), np.float32, 2, seed=1)
    with pytest.raises(onnx_client.OnnxPolicyError, match="layout version 2 given; .* reads layout version 1"):
        client.act(obs, mask, layout_version=2)
    with pytest.raises(onnx_client.OnnxPolicyError, match=r"obs of shape \(2, 581\)"):
        client.act(obs[:, :581], mask)
    with pytest.raises(onnx_client.OnnxPolicyError, match=r"mask of shape"):
        client.act(obs, mask[:1])
    answers = [
        onnx_client._answer(client, line)
        for line in ("[" * 100_000, "{}", json.dumps({"obs": obs[0].tolist(), "mask": [1] * 3}), "not json")
    ]
    assert all(set(a) == {"error"} and "\n" not in a["error"] for a in answers)
    model = directory / "policy.onnx"
    data = bytearray(model.read_bytes())
    data[len(data) // 2] ^= 0xFF
    model.write_bytes(bytes(data))
    with pytest.raises(onnx_client.OnnxPolicyError, match="does not match the sha256"):
        onnx_client.OnnxPolicy(directory)
    (directory / "onnx.json").write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(onnx_client.OnnxPolicyError, match="not a jaxgame ONNX export"):
        onnx_client.OnnxPolicy(directory)
    with pytest.raises(onnx_client.OnnxPolicyError, match="holds no onnx.json"):
        onnx_client.OnnxPolicy(tmp_path)


def test_export_cli_refuses_bots_platforms_and_used_directories(exported, tmp_path, capsys):
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "x").write_text("x")
    for argv in (
        ["greedy", "--format", "onnx", "--out", str(tmp_path / "a")],
        [MLP, "--format", "onnx", "--platforms", "cpu", "--out", str(tmp_path / "b")],
        [MLP, "--format", "onnx", "--out", str(tmp_path / "used")],
    ):
        with pytest.raises(SystemExit) as exit_info:
            export_cli.main(argv)
        assert exit_info.value.code == 2
    errors = capsys.readouterr().err
    assert "scripted bot" in errors and "--platforms applies to --format jax" in errors
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    with pytest.raises(PolicyError, match="not an empty directory"):
        export_onnx(load_policy(MLP), tmp_path / "used")


def _node_module_dir():
    for candidate in (os.environ.get("JAXGAME_NODE_MODULES"), ROOT / "tests" / "node" / "node_modules"):
        if candidate and (Path(candidate) / "onnxruntime-node").is_dir():
            return Path(candidate)
    return None


@interop_group
def test_node_client_picks_the_same_actions_with_onnxruntime_node(exported, served_game, tmp_path):
    modules = _node_module_dir()
    if shutil.which("node") is None or modules is None:
        reason = "node or onnxruntime-node is not installed (.ci/run installs them: npm ci --prefix tests/node)"
        if os.environ.get("JAXGAME_REQUIRE_NODE") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    _, record = served_game
    requests = [
        json.dumps({"obs": o.tolist(), "mask": m.tolist(), "layout_version": 1})
        for o, m in zip(record["obs"], record["mask"])
    ]
    first = {"obs": record["obs"][0].tolist(), "mask": record["mask"][0].tolist()}
    batch = json.dumps(
        {"obs": [o.tolist() for o in record["obs"][:4]], "mask": [m.tolist() for m in record["mask"][:4]]}
    )
    foreign = json.dumps({**first, "layout_version": 7})
    for spec, directory in exported.items():
        out = subprocess.run(
            ["node", str(directory / "policy_client.cjs"), str(directory)],
            input="\n".join([*requests, batch, "not json", foreign]) + "\n",
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "NODE_PATH": str(modules)},
        )
        assert out.returncode == 0, out.stderr
        lines = [json.loads(line) for line in out.stdout.splitlines()]
        assert lines[0]["ready"] and lines[0]["layout_version"] == 1
        want = onnx_client.OnnxPolicy(directory).act(np.stack(record["obs"]), np.stack(record["mask"]))
        assert [a["action"] for a in lines[1 : 1 + len(requests)]] == want[0].tolist()
        np.testing.assert_allclose([a["value"] for a in lines[1 : 1 + len(requests)]], want[2], **TOLERANCE)
        assert lines[1 + len(requests)]["action"] == want[0][:4].tolist()
        assert "not JSON" in lines[-2]["error"] and "layout version 7 given" in lines[-1]["error"]
        if spec == MLP:
            assert want[0].tolist() == record["served"]


def test_layout_versions_are_pinned_to_their_fingerprints():
    for (kind, version), fingerprint in PINNED_LAYOUTS.items():
        assert layout.LAYOUT_VERSIONS[kind] == version, f"{kind}: bump PINNED_LAYOUTS with its new fingerprint"
        assert layout.layout_fingerprint(kind) == fingerprint, (
            f"the {kind} observation layout changed: raise jaxgame.layout.LAYOUT_VERSIONS[{kind!r}] and pin the new "
            "fingerprint here (exported policies of the old layout must refuse the new observations)"
        )
    assert len({layout.layout_fingerprint(k) for k in layout.LAYOUT_VERSIONS}) == len(layout.LAYOUT_VERSIONS)
