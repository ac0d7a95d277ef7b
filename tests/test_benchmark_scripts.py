"""The analysis scripts of benchmarks/ (run from a checkout, not installed): what they compute is checked here on
small inputs, never their timings."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from agents.arena import plackett_luce

ROOT = Path(__file__).resolve().parents[1]


def _script(name: str):
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_model_check_scores_games_by_the_ladders_likelihood():
    check = _script("ladder_model_check")
    rng = np.random.default_rng(0)
    strengths = rng.normal(size=9)
    orders = np.stack([rng.permutation(9)[:8] for _ in range(50)])
    mean = check.per_game(strengths[orders], orders)
    assert mean == pytest.approx(plackett_luce.log_likelihood(strengths, orders) / len(orders), rel=1e-12)
    assert check.per_game(np.zeros(orders.shape), orders) == pytest.approx(-np.log(np.arange(1, 9)).sum())


def test_the_committed_model_check_is_the_scripts_output(capsys):
    check = _script("ladder_model_check")
    check.main(str(ROOT / "docs" / "results" / "ladder_v1_population.games.json"))
    fresh = json.loads(capsys.readouterr().out)
    committed = json.loads((ROOT / "docs" / "results" / "ladder_v1_model_check.json").read_text())
    assert fresh["mean_heldout_log_likelihood_per_game"] == committed["mean_heldout_log_likelihood_per_game"]


def test_the_compile_budget_measures_a_program_and_refuses_unknown_names(capsys):
    budget = _script("compile_budget")
    result = budget.measure(lambda: jax.jit(lambda x: jnp.sin(x) * 2 + 1).lower(jnp.ones(3)))
    assert result["stablehlo_ops"] >= 3 and result["hlo_instructions"] >= 1 and result["compile_s"] >= 0
    assert list(budget.programs()) == [*budget.NAMES, *budget.PARTS]
    assert list(budget.NAMES) == [
        "env.reset",
        "env.step",
        "vmap(env.step) x64",
        "vmap(env.step) x1024",
        "smoke chunk",
        "ppo_small chunk",
        "evaluation table",
    ]
    lowered = budget.programs()["part: legal masks"]()  # a part lowers alone, on one game's state
    assert "stablehlo" in lowered.as_text()
    with pytest.raises(SystemExit):
        budget.main(["--only", "env.stepp"])  # refused before it turns the compilation cache off
    assert "unknown program(s) ['env.stepp']" in capsys.readouterr().err
    assert jax.config.jax_enable_compilation_cache


def test_the_onnx_benchmark_measures_one_network(tmp_path):
    pytest.importorskip("onnxruntime")
    bench = _script("onnx_inference")
    policy = bench._tiles_policy()
    row = bench.measure(policy, repeats=2, threads=1)
    assert row["network"] == "tiles" and row["obs"] == "pixels" and row["onnx_bytes"] > 1000
    for batch in bench.BATCHES:
        assert row[f"onnx_ms_b{batch}"] > 0 and row[f"jax_ms_b{batch}"] > 0
        assert row[f"max_abs_logit_diff_b{batch}"] < 1e-4  # the same network


def test_the_notebook_timer_runs_every_code_cell_in_order(tmp_path, monkeypatch):
    notebook = tmp_path / "tiny.ipynb"
    cells = [
        {"cell_type": "markdown", "source": ["# not run"]},
        {"cell_type": "code", "source": ["order = [1]\n", "from IPython.display import display\n"]},
        {"cell_type": "code", "source": ["order.append(2); display(order)\n", "assert order == [1, 2]"]},
    ]
    notebook.write_text(json.dumps({"cells": cells}))
    monkeypatch.chdir(tmp_path)  # the script changes directory and stubs IPython: both undone after the test
    for name in ("IPython", "IPython.display"):  # recorded, so the stubs the script puts here are removed after
        monkeypatch.setitem(sys.modules, name, sys.modules.get(name))
    result = _script("notebook_seconds").main([str(notebook)])
    assert result["notebook"] == "tiny.ipynb" and len(result["cells_s"]) == 2 and result["total_s"] >= 0
