"""The experiment CLIs: evaluate end to end on tiny games, the benchmark's choice of sweep."""

from __future__ import annotations

import json

import pytest

from experiments import evaluate
from experiments.benchmark.timing import default_sweep

TINY = ["--games", "2", "--rule", "max_rounds=3", "--rule", "steps_per_round=2"]


#: both run the same tiny evaluation: one worker traces and compiles it once
evaluate_group = pytest.mark.xdist_group("evaluate_cli")


@evaluate_group
def test_evaluate_main_quiet(capsys):
    result = evaluate.main([*TINY, "--quiet"])
    out, err = capsys.readouterr()
    assert json.loads(out.strip().splitlines()[-1]) == result
    assert "compiling" not in err and "games finished" not in err
    assert result["games"] == 2 and len(result["seats"]) == 8
    assert len(result["ranks"]) == 2 and all(sorted(r) == list(range(1, 9)) for r in result["ranks"])
    assert set(result["mean_placement"]) == {"greedy", "random"}
    assert sum(result["mean_placement"].values()) == pytest.approx(9.0)  # 4 seats each: the means average to 4.5
    assert result["steps"] >= 3 * 2 and result["compile_seconds"] > 0 and result["seat_steps_per_s"] > 0


@evaluate_group
def test_evaluate_cli_says_compiling_first(capfd):
    """What ``python -m experiments.evaluate`` prints, in order (its ``main``, run here: the process adds nothing)."""
    capfd.readouterr()
    returned = evaluate.main(TINY)
    out, err = capfd.readouterr()
    assert "compiling the rollout for 2 envs on " in err
    assert "compiled in " in err
    assert "games finished" in err  # the progress bar
    assert err.index("compiling") < err.index("compiled in ") < err.index("games finished")
    result = json.loads(out.strip().splitlines()[-1])
    assert result == returned and result["games"] == 2 and "compile_seconds" in result


def test_benchmark_sweep_quick_on_cpu_full_elsewhere():
    quick = default_sweep("cpu")
    full = default_sweep("gpu")
    assert quick["name"] == "quick" and full["name"] == "full"
    assert quick["num_envs"] == [1, 64]
    assert full["num_envs"] == [1, 64, 1024, 4096]
    assert full["render_batch"] == [1, 64, 256] and full["fights"] == 1024 and full["skip_envs"] == 256
    assert quick["fights"] < full["fights"] and quick["skip_envs"] < full["skip_envs"]
    assert default_sweep("cpu", full=True) == full
    assert default_sweep("tpu") == full
    quick["num_envs"].append(7)  # a fresh copy: callers may change it
    assert default_sweep("cpu")["num_envs"] == [1, 64]


def test_compare_revisions_refuses_bad_input():
    from experiments import compare_revisions

    with pytest.raises(SystemExit, match="no-such-revision"):
        compare_revisions.main(["--baseline", "no-such-revision", "--quiet"])
    with pytest.raises(SystemExit):  # argparse: --num-envs must be positive ints
        compare_revisions.main(["--baseline", "HEAD", "--num-envs", "64,0"])
    with pytest.raises(SystemExit):  # argparse: an unknown workload
        compare_revisions.main(["--baseline", "HEAD", "--workload", "lategame"])
    assert compare_revisions.DEFAULT_ROUNDS == {"opening": 1, "midgame": 4} and compare_revisions.MIDGAME_SKIP == 10


def test_compare_cli_tests_two_bots_on_tiny_games(capsys):
    """``--compare random greedy``: each against 7 random bots on the same 2 game seeds; the table on stderr, the
    JSON (with the per-seed placements it tested) on stdout."""
    result = evaluate.main(["--compare", "random", "greedy", "--vs", "random", "--no-head-to-head", *TINY])
    out, err = capsys.readouterr()
    assert json.loads(out.strip().splitlines()[-1]) == result
    assert "A = random, B = greedy: 2 game seeds x 8 rotations" in err and "vs random" in err
    assert list(result["settings"]) == ["vs random"] and result["games_per_rotation"] == 2
    setting = result["settings"]["vs random"]
    # random in every seat plays one game per seed whatever the rotation: its 8 positions take places 1..8
    assert setting["per_seed_a"] == [4.5, 4.5]
    assert setting["placement"]["mean_b"] == pytest.approx(sum(setting["per_seed_b"]) / 2)
    assert setting["placement"]["mean_b"] < 4.5
    assert setting["placement"]["test"] == "paired t-test" and setting["placement"]["df"] == 1
    assert result["rank_points"] == [90.0, 45.0, 0.0, -135.0] and setting["points"]["mean_a"] == 0.0


@pytest.mark.parametrize("args, message", [
    (["--compare", "random", "greedy", "--games", "1"], "--games >= 2"),
    (["--compare", "random", "greedy", "--rank-points", "3,2,1"], "1, 2, 4 or 8 finite values"),
    (["--compare", "random", "greedy", "--difference", "0"], "--difference must be > 0"),
    (["--compare", "random", "greedy", "--checkpoint", "runs/x"], "not --checkpoint"),
    (["--compare", "random", "no/such/run"], "no/such/run"),
    (["--compare", "baseline:ppo_small-v1", "random", "--rule", "max_rounds=3"], "rules apply to games of bots"),
])
def test_compare_cli_bad_input_is_one_line(args, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        evaluate.main([*args, "--quiet"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and message in err, err
    assert len([line for line in err.strip().splitlines() if not line.startswith("usage:")]) == 1, err
