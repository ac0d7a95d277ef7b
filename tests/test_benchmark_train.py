"""``python -m benchmarks.harness --what train`` and the PureJaxRL reference it times against.

The fast tests time only the gymnax section (``--presets none``): a game preset's
chunk and env-only rollout take over a minute to compile on a 2-core CPU, so
the end-to-end ``--presets smoke`` run is marked slow (``-m slow``).
"""

from __future__ import annotations

import json
import math
import sys

import jax
import numpy as np
import pytest

pytest.importorskip("gymnax")

from agents.presets import preset_config
from benchmarks.harness import purejaxrl_reference
from benchmarks.harness.__main__ import main as benchmark_main
from benchmarks.harness.timing import default_sweep
from benchmarks.harness.train import train_updates

PRESET_KEYS = {
    "algo",
    "num_envs",
    "steps_per_update",
    "seats",
    "hidden",
    "obs",
    "updates",
    "seat_steps_per_chunk",
    "init_s",
    "compile_s",
    "update_ms",
    "train_seat_steps_per_s",
    "env_steps_timed",
    "env_compile_s",
    "env_seat_steps_per_s",
    "overhead_ratio",
    "rollout_ms",
    "rollout_share",
}
SIDE_KEYS = {"compile_s", "run_s", "sps", "final_return"}
GYMNAX_KEYS = {
    "steps",
    "num_updates",
    "final_return_updates",
    "ours",
    "cli",
    "purejaxrl",
    "ours_over_purejaxrl_sps",
    "cli_over_purejaxrl_sps",
    "cli_chunks_over_purejaxrl_sps",
}
REFERENCE_KEYS = {"metrics", "compile_s", "run_s", "num_updates", "steps", "sps", "final_return"}
METRIC_KEYS = {"returned_episode_returns", "returned_episode_lengths", "returned_episode", "timestep", "discount"}


def _last_json(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


def test_reference_config_is_the_ppo_gymnax_preset():
    cfg, ref = preset_config("ppo_gymnax"), purejaxrl_reference.CONFIG
    assert cfg.task.env == "gymnax:" + ref["ENV_NAME"]
    assert (cfg.run.num_envs, cfg.ppo.num_steps, cfg.run.total_steps) == (
        ref["NUM_ENVS"],
        ref["NUM_STEPS"],
        ref["TOTAL_TIMESTEPS"],
    )
    assert (cfg.ppo.update_epochs, cfg.ppo.num_minibatches) == (ref["UPDATE_EPOCHS"], ref["NUM_MINIBATCHES"])
    assert (cfg.hparams.lr, cfg.optim.lr_schedule == "linear", cfg.net.activation) == (
        ref["LR"],
        ref["ANNEAL_LR"],
        ref["ACTIVATION"],
    )
    assert (
        cfg.net.hidden == (64, 64) and cfg.net.network == "mlp" and not cfg.net.shared_torso
    )  # ActorCritic's two 64x64 MLPs
    for ours, theirs in [
        ("gamma", "GAMMA"),
        ("gae_lambda", "GAE_LAMBDA"),
        ("clip_eps", "CLIP_EPS"),
        ("ent_coef", "ENT_COEF"),
        ("vf_coef", "VF_COEF"),
        ("max_grad_norm", "MAX_GRAD_NORM"),
    ]:
        assert getattr(cfg.hparams, ours) == ref[theirs], ours


def test_default_updates_per_chunk():
    assert default_sweep("cpu")["train_presets"] == ["smoke", "ppo_small"]
    assert default_sweep("gpu")["train_presets"] == ["smoke", "ppo_small", "ppo_large"]
    cpu_steps, gpu_steps = default_sweep("cpu")["train_steps"], default_sweep("gpu")["train_steps"]
    assert train_updates(preset_config("ppo_small"), cpu_steps) == 2
    assert train_updates(preset_config("smoke"), cpu_steps) == 4
    assert train_updates(preset_config("ppo_large"), gpu_steps) == 4
    assert train_updates(preset_config("ppo_small"), cpu_steps, updates=3) == 3


@pytest.mark.parametrize(
    "argv",
    [
        ["--presets", "ppo_gymnax"],  # timed in the gymnax section
        ["--presets", "nope"],
        ["--updates", "0"],
        ["--gymnax-steps", "100"],  # less than one update
        ["--gymnax-envs", "NoSuchEnv-v0"],
        ["--gymnax-reps", "0"],
        ["--set", "nope=1"],
        ["--set", "update_epochs=0"],
        ["--set", "update_epochs"],
    ],
)
def test_train_rejects_bad_arguments(argv):
    with pytest.raises(SystemExit):
        benchmark_main(["--what", "train", *argv, "--quiet"])


def test_train_with_nothing_to_time(capsys):
    result = benchmark_main(["--what", "train", "--presets", "none", "--gymnax-steps", "0", "--quiet"])
    out, err = capsys.readouterr()
    assert _last_json(out) == result and err == ""
    assert result["what"] == "train" and result["train"] == {} and "skipped" in result["gymnax"]
    cache = jax.config.jax_compilation_cache_dir if jax.config.jax_enable_compilation_cache else None
    assert result["compilation_cache"] == (cache or None)  # reported as found (the test session turns it on)
    assert result["overhead_goal"] == 0.8


def test_gymnax_section_and_reference(capsys):
    """One benchmark run of the gymnax section (both trainers compiled once, and our CLI) checks the reference's
    run() too."""
    result = benchmark_main(
        [
            "--what",
            "train",
            "--presets",
            "none",
            "--gymnax-steps",
            "512",
            "--gymnax-envs",
            "CartPole-v1",
            "--gymnax-reps",
            "1",
        ]
    )
    out, err = capsys.readouterr()
    assert _last_json(out) == result
    assert "[gymnax 1/1] CartPole-v1" in err and "the CLI" in err and "done in" in err

    section = result["gymnax"]
    assert set(section) == {"steps", "reps", "envs", "min_ratio"} and list(section["envs"]) == ["CartPole-v1"]
    gym = section["envs"]["CartPole-v1"]
    assert set(gym) == GYMNAX_KEYS
    assert gym["steps"] == 512 and gym["num_updates"] == 1 and gym["final_return_updates"] == 1
    for side in ("ours", "purejaxrl"):
        assert set(gym[side]) == SIDE_KEYS
        assert gym[side]["sps"] > 0 and gym[side]["compile_s"] > 0 and gym[side]["run_s"] > 0
        assert gym[side]["final_return"] >= 1  # random CartPole episodes last ~20 steps: some finished
    assert set(gym["cli"]) == {
        "compile_s",
        "train_s",
        "sps",
        "loop_s",
        "loop_sps",
        "checkpoint_s",
        "log_s",
        "final_return",
    }
    assert gym["cli"]["loop_s"] >= gym["cli"]["train_s"] > 0  # the loop holds the chunks and the work between
    assert gym["cli"]["checkpoint_s"] > 0 and gym["cli"]["log_s"] > 0  # the run's one save (at its end), its log
    assert gym["cli"]["loop_s"] >= gym["cli"]["train_s"] + gym["cli"]["checkpoint_s"] + gym["cli"]["log_s"] - 0.002
    assert gym["cli"]["sps"] >= gym["cli"]["loop_sps"] > 0
    assert gym["cli_over_purejaxrl_sps"] == round(gym["cli"]["loop_sps"] / gym["purejaxrl"]["sps"], 3)
    assert gym["cli"]["final_return"] >= 1
    assert section["min_ratio"] == min(gym["ours_over_purejaxrl_sps"], gym["cli_over_purejaxrl_sps"]) > 0
    ref = purejaxrl_reference.run(seed=0, total_timesteps=512)  # the same compiled program as the section's
    assert set(ref) == REFERENCE_KEYS
    assert ref["num_updates"] == 1 and ref["steps"] == 512 and ref["sps"] > 0
    assert ref["compile_s"] > 0 and ref["run_s"] > 0 and math.isfinite(ref["final_return"])
    assert set(ref["metrics"]) == METRIC_KEYS
    for name, value in ref["metrics"].items():
        assert value.shape == (1, 128, 4), name
        assert np.all(np.isfinite(value.astype(np.float64))), name
    assert ref["metrics"]["returned_episode"].any()
    assert np.array_equal(ref["metrics"]["timestep"][0, :, 0], np.arange(1, 129))


@pytest.mark.slow(reason="~2-3 min")
def test_train_smoke_preset_end_to_end(capsys):
    argv = ["--what", "train", "--presets", "smoke", "--updates", "2", "--gymnax-steps", "2048", "--quiet"]
    result = benchmark_main(argv)
    out, _ = capsys.readouterr()
    assert _last_json(out) == result
    smoke = result["train"]["smoke"]
    assert set(smoke) == PRESET_KEYS
    assert smoke["updates"] == 2 and smoke["seat_steps_per_chunk"] == 2 * 8 * 16 * 8
    assert smoke["env_steps_timed"] == 32  # whole rounds of 4 steps covering 2 updates x 16 steps
    for key in ("train_seat_steps_per_s", "env_seat_steps_per_s", "overhead_ratio", "compile_s"):
        assert smoke[key] > 0, key
    assert smoke["overhead_ratio"] == pytest.approx(
        smoke["train_seat_steps_per_s"] / smoke["env_seat_steps_per_s"], rel=1e-2
    )
    assert 0 < smoke["rollout_share"] < 1.5 and smoke["rollout_ms"] > 0
    assert set(result["gymnax"]) == GYMNAX_KEYS and result["gymnax"]["steps"] == 2048
    assert result["gymnax"]["ours"]["sps"] > 0 and result["gymnax"]["purejaxrl"]["sps"] > 0


def test_learning_benchmark_reads_the_first_evaluation_at_the_target(tmp_path, monkeypatch, capsys):
    """``--what learning`` on a run's records: the first evaluation <= the target, its training time (the
    run's ``wall_s``: chunks only) and env steps; evaluations that did not reach it are in the curve."""
    from benchmarks.harness import learning

    def fake_train(config, run_dir, preset=None, progress=None):
        assert (preset, config.log.eval_games, config.log.eval_every, config.run.seed) == ("ppo_small", 16, 1, 3)
        assert config.ppo.update_epochs == (2 if "epochs" in run_dir.name else 4)
        run_dir.mkdir(parents=True)
        rows = [{"meta": {}}]
        for update, placement, ci in [(20, 6.0, 0.5), (40, 2.6, 0.4), (60, 2.5, 0.3), (80, 1.9, 0.3)]:
            rows.append(
                {
                    "update": update,
                    "env_steps": 2048 * update,
                    "wall_s": 3.0 * update,
                    "eval/placement_vs_greedy": placement,
                    "eval/placement_vs_greedy_ci95": ci,
                }
            )
        rows.insert(2, {"update": 30, "env_steps": 2048 * 30, "wall_s": 90.0})  # a chunk without evaluation
        (run_dir / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
        return {"compile_s": 12.0, "train_s": 240.0}

    monkeypatch.setattr(learning, "train", fake_train)
    result = benchmark_main(["--what", "learning", "--out", str(tmp_path / "run"), "--seed", "3", "--quiet"])
    assert _last_json(capsys.readouterr().out) == result
    assert result["reached"] and result["update_to_target"] == 60 and result["env_steps_to_target"] == 2048 * 60
    assert result["train_s_to_target"] == 180.0 and result["minutes_to_target"] == 3.0
    assert result["games_per_evaluation"] == 128 and result["compile_s"] == 12.0
    assert [point[0] for point in result["curve"]] == [20, 40, 60, 80] and result["curve"][1][4] == 0.4
    result = benchmark_main(
        ["--what", "learning", "--out", str(tmp_path / "run2"), "--seed", "3", "--target", "1.5", "--quiet"]
    )
    assert not result["reached"] and result["minutes_to_target"] is None
    with pytest.raises(SystemExit):
        benchmark_main(["--what", "learning", "--presets", "ppo_small,smoke", "--quiet"])
    # --set changes the config trained, and the JSON says so
    result = benchmark_main(
        ["--what", "learning", "--out", str(tmp_path / "epochs"), "--seed", "3", "--set", "update_epochs=2", "--quiet"]
    )
    assert result["overrides"] == {"update_epochs": "2"} and result["config"]["ppo"]["update_epochs"] == 2
    with pytest.raises(SystemExit):  # --set only where a config is trained or timed
        benchmark_main(["--what", "env", "--set", "update_epochs=2", "--quiet"])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--opponents", "greedy,nope"], "--opponents must be"),
        (["--budget-s", "0"], "--budget-s must be positive"),
        (["--eval-games", "1"], "--eval-games at least 2"),
        (["--sb3-envs", "0"], "--sb3-envs and --sb3-games must be at least 1"),
        (["--sb3-envs", "3", "--sb3-games", "0"], "got 3, 0, 0"),
        (
            ["--sb3-envs", "2", "--torch-threads", "-1"],
            "--torch-threads at least 0 (0: torch's default); got 2, 16, -1",
        ),
        (["--set", "lr=0.1"], "--set applies to"),
    ],
)
def test_sb3_rejects_bad_arguments(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        benchmark_main(["--what", "sb3", *argv, "--quiet"])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_sb3_without_its_extra_is_one_line_naming_it(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "sb3_contrib", None)  # import sb3_contrib raises ImportError
    with pytest.raises(SystemExit) as exit_info:
        benchmark_main(["--what", "sb3", "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == 2 and "sb3-contrib and torch (sb3_contrib is missing)" in err[-1]
    assert 'pip install -e ".[sb3]"' in err[-1]
