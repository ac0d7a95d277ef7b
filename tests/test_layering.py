"""The project's layers, read from the source (no JAX work): ``jaxgame`` (the game) imports nothing above it,
``agents`` (the library) nothing from ``experiments`` (the CLIs), each of ``agents``' sub-packages only the ones
below it (``AGENTS_LAYERS``, docs/architecture.md), the compiled core (``agents.core``, ``agents.algorithms``) no
host machinery, a CLI nothing from another CLI, no import cycles, and
importing the packages starts no JAX computation (a multi-host run initialises JAX first)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("jaxgame", "agents", "experiments")
#: experiments modules every CLI may import (shared helpers, not commands)
CLI_SHARED = ("experiments.common", "experiments.names")  # the modules every CLI may share
#: ``agents``' sub-packages and root modules, lowest first: each may import only itself and the ones before it
AGENTS_LAYERS = (
    "core",
    "config_names",
    "config",
    "utils",
    "storage",
    "league",
    "envs",
    "algorithms",
    "policies",
    "arena",
    "replays",
    "run",
    "pipeline",
    "presets",
    "interop",
    "",
)  # "": agents/__init__.py, the public API on top
#: at most this many modules at the ``agents`` root (the rest live in sub-packages)
MAX_ROOT_MODULES = 6


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _project_imports(path: Path, name: str | None = None) -> set[str]:
    """The project modules ``path`` imports anywhere in its body (module level or inside functions):
    ``from pkg import mod`` counts as ``pkg.mod`` when that is a module, else as ``pkg``. ``name``: the module's
    dotted name (default: from its place in the tree)."""
    modules = _modules()
    tree = ast.parse(path.read_text(), str(path))
    name = name or _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, up level - 1
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        found.update(n for n in names if n.split(".")[0] in PACKAGES)
    return found


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _resolve(name: str, modules: dict) -> str | None:
    """The project module ``name`` refers to (``pkg.mod.attr`` -> ``pkg.mod``), or None."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {
        name: {m for m in (_resolve(i, modules) for i in _project_imports(path)) if m and m != name}
        for name, path in modules.items()
    }


def test_each_layer_imports_only_below_it():
    problems = []
    for module, imports in _graph().items():
        top = module.split(".")[0]
        for imported in imports:
            if top == "jaxgame" and not imported.startswith("jaxgame"):
                problems.append(f"{module} (the game) imports {imported}")
            if top == "agents" and imported.startswith("experiments"):
                problems.append(f"{module} (the library) imports the CLI module {imported}")
            if top == "experiments" and imported.startswith("experiments") and imported not in CLI_SHARED:
                own_package = module.rsplit(".", 1)[0]  # a CLI split into a package may import its own parts
                if not (own_package != "experiments" and imported.startswith(own_package)):
                    problems.append(f"{module} imports another CLI module, {imported}")
    assert not problems, "\n".join(sorted(problems))


def _agents_layer(module: str) -> int:
    parts = module.split(".")
    return AGENTS_LAYERS.index(parts[1] if len(parts) > 1 else "")


def test_agents_subpackages_import_only_layers_below():
    assert {_agents_layer(m) >= 0 for m in _modules() if m.startswith("agents")}  # every module has a layer
    problems = []
    for module, imports in _graph().items():
        if not module.startswith("agents"):
            continue
        for imported in imports:
            if imported.startswith("agents") and _agents_layer(imported) > _agents_layer(module):
                problems.append(f"{module} imports {imported}, a layer above it")
    assert not problems, "\n".join(sorted(problems))


def test_few_modules_at_the_agents_root():
    root = sorted(p.name for p in (ROOT / "agents").glob("*.py"))
    assert len(root) <= MAX_ROOT_MODULES, root
    subpackages = {p.parent.name for p in (ROOT / "agents").glob("*/__init__.py")}
    assert subpackages | {p[:-3] for p in root} | {""} >= set(AGENTS_LAYERS) - {""}, "a layer with no code"


def test_no_import_cycles():
    graph = _graph()
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    cycles = []

    def visit(node, stack):
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(stack[stack.index(nxt) :] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not cycles, "\n".join(cycles)


def test_the_layering_check_sees_violations(tmp_path):
    """The checker itself: relative, function-local and from-package imports are all found (the probe module
    lives in a temporary directory, read as if it were ``agents/core/_probe.py``), and its layer is core's."""
    path = tmp_path / "_probe.py"
    source = (
        "from .. import run\nfrom . import gae\nfrom jaxgame import constants as C\n\n"
        "def f():\n    from experiments import train\n"
    )
    path.write_text(source)
    found = _project_imports(path, "agents.core._probe")
    assert found == {"agents.run", "agents.core.gae", "jaxgame.constants", "experiments.train"}
    assert _agents_layer("agents.run.training") > _agents_layer("agents.core._probe")


#: the packages of compiled math (issue 67): their modules build jitted programs and import no host machinery
COMPILED_PACKAGES = ("agents/core", "agents/algorithms")
#: what host machinery is: printing, files, processes, command lines, clocks, threads, progress bars
HOST_MODULES = frozenset(
    {
        "argparse",
        "concurrent",
        "csv",
        "glob",
        "hashlib",
        "http",
        "io",
        "json",
        "logging",
        "os",
        "pathlib",
        "pickle",
        "shutil",
        "signal",
        "socket",
        "subprocess",
        "sys",
        "tempfile",
        "threading",
        "time",
        "tqdm",
        "urllib",
    }
)
HOST_CALLS = frozenset({"print", "open", "input"})
#: the project's host-side modules (files, consoles, runs), whose import is a host concern too
HOST_PROJECT = (
    "agents.storage",
    "agents.run",
    "agents.arena",
    "agents.replays",
    "agents.pipeline",
    "agents.interop",
    "agents.utils.progress",
    "agents.utils.compile_cache",
    "agents.utils.versions",
    "experiments",
)


def _host_concerns(path: Path, name: str | None = None) -> list[str]:
    """What of host machinery the module at ``path`` imports (``HOST_MODULES``, ``HOST_PROJECT``) or calls
    (``HOST_CALLS``), anywhere in its body."""
    tree = ast.parse(path.read_text(), str(path))
    found = [f"imports {m}" for m in sorted(_project_imports(path, name)) if m.startswith(HOST_PROJECT)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"imports {a.name}" for a in node.names if a.name.split(".")[0] in HOST_MODULES]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module.split(".")[0] in HOST_MODULES:
            found.append(f"imports {node.module}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in HOST_CALLS:
            found.append(f"calls {node.func.id}() (line {node.lineno})")
    return found


def test_the_compiled_core_imports_no_host_machinery():
    problems = [
        f"{path.relative_to(ROOT)} {what}"
        for package in COMPILED_PACKAGES
        for path in sorted((ROOT / package).glob("*.py"))
        for what in _host_concerns(path)
    ]
    assert not problems, "\n".join(problems)


def test_the_host_machinery_check_sees_violations(tmp_path):
    path = tmp_path / "_probe.py"
    path.write_text(
        "import json\nfrom pathlib import Path\nfrom agents.storage import metrics\n\n"
        "def f(x):\n    import tqdm\n    print(x)\n    return open(x)\n"
    )
    assert _host_concerns(path, "agents.core._probe") == [
        "imports agents.storage.metrics",
        "imports json",
        "imports pathlib",
        "imports tqdm",
        "calls print() (line 7)",
        "calls open() (line 8)",
    ]


def test_importing_starts_no_jax_computation():
    """Every module of the three packages imported in a fresh interpreter: JAX's backend is still not
    initialised (the first module that starts it is named)."""
    names = sorted(n for n in _modules() if not n.endswith("__main__"))
    code = (
        "import importlib, sys\n"
        "import jax._src.xla_bridge as xb\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "    assert not xb.backends_are_initialized(), f'importing {name} started JAX'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
