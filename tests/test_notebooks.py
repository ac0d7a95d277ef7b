"""The notebooks run top to bottom (code cells executed in order, in a temp dir).

IPython's display functions are replaced by a recorder when IPython is not
installed, so this runs with the test dependencies alone.
"""

import json
import pathlib
import sys
import types

import pytest

NOTEBOOKS = sorted((pathlib.Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


@pytest.fixture
def fake_ipython(monkeypatch):
    shown = []
    display_module = types.ModuleType("IPython.display")
    display_module.display = shown.append
    display_module.Image = lambda data=None, filename=None: ("image", data, filename)
    ipython = types.ModuleType("IPython")
    ipython.display = display_module
    ipython.version_info = (9, 0)  # matplotlib reads it from any IPython in sys.modules
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", display_module)
    return shown


def _param(path):
    # quickstart plays the games of tests/test_bots.py::test_greedy_beats_random (same rules, bots and
    # sizes): one worker compiles that rollout once for both. training runs the smoke preset through agents.run.loop,
    # the programs of tests/test_train.py's smoke run: one worker compiles them once for both
    groups = {"quickstart.ipynb": "play_games", "training.ipynb": "smoke_run"}
    marks = [pytest.mark.xdist_group(groups[path.name])] if path.name in groups else []
    return pytest.param(path, marks=marks, id=path.name)


@pytest.mark.parametrize("path", [_param(p) for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path, monkeypatch, fake_ipython):
    monkeypatch.chdir(tmp_path)
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    assert cells
    namespace = {}
    for i, cell in enumerate(cells):
        source = "".join(cell["source"])
        exec(compile(source, f"{path.name}[cell {i}]", "exec"), namespace)
    assert fake_ipython, "the notebook displayed nothing"
    assert (tmp_path / "fight.gif").stat().st_size > 0


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_committed_with_its_outputs(path):
    """Each notebook reads without running: every code cell executed, in order, in one session (execution
    counts 1..n), with the pictures (a PNG and the fight GIF) among the outputs."""
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    assert [c["execution_count"] for c in cells] == list(range(1, len(cells) + 1))
    kinds = {kind for c in cells for out in c["outputs"] for kind in out.get("data", {})}
    assert {"image/png", "image/gif"} <= kinds, kinds
    assert not [out for c in cells for out in c["outputs"] if out["output_type"] == "error"]
