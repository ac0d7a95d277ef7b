"""The notebooks run top to bottom (code cells executed in order, in a temp dir), and again (Run All, twice).

IPython's display functions are replaced by a recorder when IPython is not
installed, so this runs with the test dependencies alone.
"""

import functools
import json
import pathlib
import sys
import types

import pytest

from agents.arena import ladder
from agents.replays import viewer
from tests.xla_flags import USER_COMPILER_OPTIONS

NOTEBOOKS = sorted((pathlib.Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))
TRAINING = pathlib.Path(__file__).parent.parent / "notebooks" / "training.ipynb"


@pytest.fixture
def fake_ipython(monkeypatch):
    shown = []
    display_module = types.ModuleType("IPython.display")
    display_module.display = shown.append
    display_module.Image = lambda data=None, filename=None: ("image", data, filename)
    display_module.IFrame = lambda src, width=None, height=None: ("iframe", src)
    ipython = types.ModuleType("IPython")
    ipython.display = display_module
    ipython.version_info = (9, 0)  # matplotlib reads it from any IPython in sys.modules
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", display_module)
    return shown


@pytest.fixture
def ladder_compiled_as_users_do(monkeypatch):
    """The training notebook ends by rating its run on the ladder (``rate_on_ladder``: 16 games, run-bound, that
    -O0 runs several times slower): its table compiles as users compile (``tests.xla_flags``). The notebook's
    code and what it prints are unchanged."""
    rate = functools.partial(ladder.rate_on_ladder, compiler_options=USER_COMPILER_OPTIONS)
    monkeypatch.setattr(ladder, "rate_on_ladder", rate)


def _param(path):
    # quickstart plays the games of tests/test_bots.py::test_greedy_beats_random (same rules, bots and
    # sizes): one worker compiles that rollout once for both. training runs the smoke preset through
    # agents.run.training, the programs of tests/test_train.py's smoke run: one worker compiles them once for both
    groups = {"quickstart.ipynb": "play_games", "training.ipynb": "smoke_run"}
    marks = [pytest.mark.xdist_group(groups[path.name])] if path.name in groups else []
    return pytest.param(path, marks=marks, id=path.name)


def _code_cells(path):
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


def _run_cell(path, cells, i, namespace):
    exec(compile(cells[i], f"{path.name}[cell {i}]", "exec"), namespace)


def _run_all(path, namespace):
    cells = _code_cells(path)
    assert cells
    for i in range(len(cells)):
        _run_cell(path, cells, i, namespace)


@pytest.mark.parametrize("path", [_param(p) for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path, monkeypatch, fake_ipython, ladder_compiled_as_users_do):
    monkeypatch.chdir(tmp_path)
    namespace = {}
    _run_all(path, namespace)
    assert fake_ipython, "the notebook displayed nothing"
    assert (tmp_path / "fight.gif").stat().st_size > 0
    if path.name == "quickstart.ipynb":  # it ends in the replay viewer: a whole game of ppo_small-v1 vs 7 experts
        game = namespace["game"]
        assert game["finished"] and sorted(game["placements"]) == list(range(1, 9))
        assert game["lineup"] == ["baseline:ppo_small-v1"] + ["expert"] * 7 and game["settings"]["seed"] == 0
        assert (tmp_path / "game.html").read_text(encoding="utf-8") == viewer.html(game)  # this game's viewer page
        assert ("iframe", "game.html") in fake_ipython


@pytest.mark.slow(
    reason="~1 min: each notebook's second run; the default suite runs each once and checks the "
    "training notebook's run directories (the next test)"
)
@pytest.mark.parametrize("path", [_param(p) for p in NOTEBOOKS])
def test_notebook_runs_twice(path, tmp_path, monkeypatch, fake_ipython, ladder_compiled_as_users_do):
    """Run All, then Run All again: one namespace (one kernel), one working directory."""
    monkeypatch.chdir(tmp_path)
    namespace = {}
    for _ in range(2):
        _run_all(path, namespace)
    if path == TRAINING:
        assert len(list((tmp_path / "runs").iterdir())) == 2  # one run directory per run


def test_the_training_notebook_trains_in_a_new_run_directory_each_run(tmp_path, monkeypatch, fake_ipython):
    """Run All twice must not reuse the run directory (``train`` refuses one that holds a run): the cell that picks
    it, run twice in one working directory (within the same second), gives two directories that ``claim`` (what
    ``train`` does first) accepts. Nothing is compiled: the first cell builds the trainer, then that cell runs."""
    from agents.storage.run_dir import claim

    monkeypatch.chdir(tmp_path)
    cells = _code_cells(TRAINING)
    (chooser,) = [i for i, source in enumerate(cells) if "run_dir =" in source]
    assert "run_dir" in cells[chooser + 1] and "agents.train(" in cells[chooser + 1]  # the next cell trains there
    namespace = {}
    _run_cell(TRAINING, cells, 0, namespace)  # the imports
    run_dirs = []
    for run in range(2):
        _run_cell(TRAINING, cells, chooser, namespace)
        run_dirs.append(namespace["run_dir"])
        claim(namespace["run_dir"], "train", {"run": run})
    assert run_dirs[0] != run_dirs[1]
    assert all(pathlib.Path(d).parent.resolve() == tmp_path / "runs" for d in run_dirs)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_committed_with_its_outputs(path):
    """Each notebook reads without running: every code cell executed, in order, in one session (execution
    counts 1..n), with the pictures (a PNG and the fight GIF) among the outputs."""
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    assert [c["execution_count"] for c in cells] == list(range(1, len(cells) + 1))
    kinds = {kind for c in cells for out in c["outputs"] for kind in out.get("data", {})}
    assert {"image/png", "image/gif"} <= kinds, kinds
    assert not [out for c in cells for out in c["outputs"] if out["output_type"] == "error"]
