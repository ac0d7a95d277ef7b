"""The package installs as declared: the wheel, built offline from a copy of the sources, holds the code, the
data, the licences and the console scripts, and not the benchmarks (benchmarks/ runs from a checkout); the CLI
layer stays thin; the declared Python and jax floors cover what the code and the installed dependencies need."""

from __future__ import annotations

import importlib
import importlib.metadata
import io
import re
import shutil
import subprocess
import sys
import tokenize
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
#: jax APIs the code uses -> the first jax release that has them (checked against the released wheels:
#: jax 0.5.0-0.5.2 export ``jax.sharding.AxisTypes``, 0.5.3 ``AxisType``)
JAX_API_FLOORS = {"AxisType": (0, 5, 3)}
#: the most logical lines (statements: tokenize's NEWLINE tokens, which no formatting changes) experiments/ (the CLIs,
#: every .py below it) may have. Issue 67 asks for about 2,800 physical lines once the CLIs are thin; the cap was
#: 3,000 physical lines until ruff format (one argument a line) made physical lines a measure of layout: 1,627
#: logical lines were 2,841 physical ones before it, so 1,700 is that cap's equivalent, rounded down. Lower it as
#: the CLIs thin.
EXPERIMENTS_MAX_LOGICAL_LINES = 1700


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.match(r"[0-9]+(?:\.[0-9]+)*", text).group(0).split("."))


def _floor(requirement: str, name: str) -> tuple[int, ...]:
    match = re.search(r">=\s*([0-9.]+)", requirement)
    assert match, f"{name}: no >= floor in {requirement!r}"
    return _version(match.group(1))


def _sources() -> str:
    return "\n".join(p.read_text() for pkg in ("jaxgame", "agents", "experiments") for p in (ROOT / pkg).rglob("*.py"))


def _direct_dependencies(extras=()) -> dict[str, str]:
    """{name: requirement} of the core dependencies and the given extras' (self-references left out)."""
    requirements = list(PYPROJECT["project"]["dependencies"])
    for extra in extras:
        requirements += PYPROJECT["project"]["optional-dependencies"][extra]
    named = {re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower(): r for r in requirements}
    return {name: r for name, r in named.items() if name != "jaxgame"}


def test_python_floor_covers_the_installed_dependencies():
    """requires-python is at least every installed direct dependency's own floor (orbax-checkpoint 0.12 and
    jax need 3.11), and this interpreter meets it."""
    ours = _floor(PYPROJECT["project"]["requires-python"], "requires-python")
    needs = {}
    for name in _direct_dependencies(("train",)):
        try:
            spec = importlib.metadata.metadata(name).get("Requires-Python")
        except importlib.metadata.PackageNotFoundError:
            continue
        if spec and ">=" in spec:
            needs[name] = _floor(spec, name)
    assert needs, "no installed dependency declares a Python floor: the check would not test anything"
    too_low = {n: v for n, v in needs.items() if v > ours}
    assert not too_low, f"requires-python {ours} is below what these dependencies need: {too_low}"
    assert sys.version_info[: len(ours)] >= ours


def test_jax_floor_covers_the_jax_apis_the_code_uses():
    ours = _floor(_direct_dependencies()["jax"], "jax")
    sources = _sources()
    used = {api: floor for api, floor in JAX_API_FLOORS.items() if re.search(rf"\b{api}\b", sources)}
    assert used, "none of the tracked APIs is used: update JAX_API_FLOORS"
    assert all(floor <= ours for floor in used.values()), f"jax>={ours} but the code uses {used}"
    assert _version(importlib.metadata.version("jax")) >= ours


def test_every_direct_dependency_is_imported():
    """No unused dependency of the package or its train extra (chex was one): each is imported somewhere."""
    modules = {"orbax-checkpoint": "orbax", "pillow": "PIL", "tensorboardx": "tensorboardX"}
    used_by_jax = {"flatbuffers"}  # jax.export's serialization imports it (agents.policies.export needs it)
    sources = _sources()
    unused = [
        name
        for name in _direct_dependencies(("train",))
        if name not in used_by_jax
        and not re.search(rf"^\s*(import|from)\s+{re.escape(modules.get(name, name))}\b", sources, re.MULTILINE)
    ]
    assert not unused, f"declared but never imported: {unused}"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built offline (no build isolation, no index) from a copy of the sources."""
    pytest.importorskip("setuptools", minversion="77")
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for pkg in ("jaxgame", "agents", "experiments", "benchmarks"):  # benchmarks: to check it stays out
        shutil.copytree(ROOT / pkg, src / pkg, ignore=ignore)
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "-w",
            str(out),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = out.glob("jaxgame-*.whl")
    return path


def test_wheel_holds_code_data_licences_and_scripts(wheel):
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
        (dist_info,) = {n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info")}
        metadata = whl.read(f"{dist_info}/METADATA").decode()
        entry_points = whl.read(f"{dist_info}/entry_points.txt").decode()
    for required in (
        "jaxgame/env.py",
        "jaxgame/py.typed",
        "agents/py.typed",
        "agents/policies/export.py",
        "agents/policies/exported_loader.py",
        "agents/policies/baseline_policies/ppo_small-v1.json",
        "agents/policies/baseline_policies/ppo_small-v1.msgpack",
        "agents/policies/baseline_policies/ppo_small-v1/act_greedy.jaxexport",
        "agents/policies/baseline_policies/ppo_small-v1/spec.json",
        "agents/policies/baseline_policies/ppo_small-v1.MODEL_CARD.md",
        "experiments/train.py",
        "agents/arena/ladders/ladder-v1.json",
        "agents/policies/onnx_client.cjs",
        "experiments/cli_names.json",
        f"{dist_info}/licenses/LICENSE",
    ):
        assert required in names, f"{required} missing from the wheel"
    assert not any(n.startswith(("tests/", "notebooks/", "docs/", "runs/")) for n in names)
    # the benchmark harness, compare_revisions and the scripts run from a checkout (python -m benchmarks.harness)
    benchmark_files = [
        n
        for n in names
        if n.startswith(("benchmarks/", "experiments/benchmark/"))
        or "/licenses/benchmarks/" in n
        or "PUREJAXRL" in n
        or "compare_revisions" in n
    ]
    assert not benchmark_files, f"benchmark files in the wheel: {benchmark_files}"
    assert re.search(r"^Requires-Python: >=3\.11$", metadata, re.MULTILINE)
    assert re.search(r"^License-Expression: MIT$", metadata, re.MULTILINE)
    requires = re.findall(r"^Requires-Dist: (.*)$", metadata, re.MULTILINE)
    core = [r for r in requires if "extra ==" not in r]
    assert sorted(re.match(r"[a-z]+", r).group(0) for r in core) == ["flax", "jax", "numpy"], core
    assert any(r.startswith("jax>=0.5.3") for r in core)
    assert any(r.startswith("optax") and 'extra == "train"' in r for r in requires)
    assert [r for r in requires if r.startswith("chex")] == ['chex>=0.1.92; extra == "test"']  # the tests' only
    for extra in ("train", "test", "gymnax", "gymnasium", "pettingzoo", "notebook", "wandb", "cuda12", "cuda13"):
        assert re.search(rf"^Provides-Extra: {extra}$", metadata, re.MULTILINE), extra
    scripts = dict(re.findall(r"^(jaxgame-[a-z]+) = ([\w.:]+)$", entry_points, re.MULTILINE))
    assert set(scripts) >= {"jaxgame-train", "jaxgame-evaluate", "jaxgame-export", "jaxgame-sweep"}
    for name, target in scripts.items():
        module, func = target.split(":")
        assert callable(getattr(importlib.import_module(module), func)), name


def _logical_lines(path: Path) -> int:
    """The statements of a Python file: its NEWLINE tokens (a call over ten physical lines is one)."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
    return sum(1 for token in tokens if token.type == tokenize.NEWLINE)


def test_logical_lines_count_statements_not_layout(tmp_path):
    source = tmp_path / "m.py"
    source.write_text('"""doc"""\n\nx = f(\n    1,\n    2,\n)  # one statement\nif x:\n    y = 2\n# a comment\n')
    assert _logical_lines(source) == 4  # the docstring, x = ..., if x:, y = 2


def test_the_cli_layer_is_thin_and_imports_no_benchmark():
    """experiments/ holds the CLIs only (the benchmarks live in benchmarks/, not installed): at most
    ``EXPERIMENTS_MAX_LOGICAL_LINES`` logical lines, and nothing installed imports ``benchmarks``."""
    lines = sum(_logical_lines(p) for p in (ROOT / "experiments").rglob("*.py"))
    assert lines <= EXPERIMENTS_MAX_LOGICAL_LINES, (
        f"experiments/ has {lines} logical lines, more than {EXPERIMENTS_MAX_LOGICAL_LINES}"
    )
    installed = [p for pkg in ("jaxgame", "agents", "experiments") for p in (ROOT / pkg).rglob("*.py")]
    importing = [
        str(p.relative_to(ROOT))
        for p in installed
        if re.search(r"^\s*(import|from)\s+benchmarks\b", p.read_text(encoding="utf-8"), re.MULTILINE)
    ]
    assert not importing, f"installed modules import benchmarks/ (not installed): {importing}"


def test_the_game_alone_needs_no_training_dependency():
    """``pip install jaxgame`` (jax, flax, numpy) runs the game: importing it, making an env and the JaxMARL
    view load none of the train extra's own packages (flax itself may pull in optax and orbax; importing
    ``agents.interop`` registers the Gymnasium id when Gymnasium is installed)."""
    script = (
        "import sys, jaxgame, agents.interop.jaxmarl_env; jaxgame.make('autochess', obs='pixels'); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'tensorboardX', 'matplotlib', 'openskill', 'PIL', 'tqdm', 'pettingzoo'}))"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout
