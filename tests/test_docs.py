"""The docs hold together: relative links resolve, the README's commands exist. Pure text, no JAX."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC_FILES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
#: the most lines README.md may have: it is one screen (what it is, install, one example, results, links)
README_MAX_LINES = 150

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
# [text](target) and ![alt](target), with an optional "title"; <target> allowed
_INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
_REF_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)", re.MULTILINE)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto:, ...


def links(markdown: str) -> list[str]:
    """Link targets of inline links, images and reference definitions, outside code blocks and code spans."""
    text = _CODE_SPAN.sub("", _FENCE.sub("", markdown))
    targets = _INLINE_LINK.findall(text) + _REF_DEF.findall(text)
    return [t[1:-1] if t.startswith("<") else t for t in targets]


def relative_links(markdown: str) -> list[str]:
    """The links that point into the repository: no URL scheme (http(s)://, mailto:) and not a pure #anchor."""
    return [t for t in links(markdown) if not _SCHEME.match(t) and not t.startswith("#")]


def resolve(doc: Path, target: str) -> Path:
    """The path ``target`` (anchor and query dropped) names, relative to ``doc`` (or to the repo for /...)."""
    path = unquote(target.split("#", 1)[0].split("?", 1)[0])
    return (ROOT / path.lstrip("/")) if path.startswith("/") else (doc.parent / path)


def test_link_parser():
    sample = """
See [rules](docs/rules.md), [a section](combat.md#targeting), ![img](img/a.png "title"),
[web](https://example.com/x.md), [mail](mailto:a@b.c), [here](#local), [angle](<my file.md>).
Inline code `x[0](y)` and a fenced block are not links:

```python
ranks[i](j)
```

[ref]: docs/env.md
"""
    assert links(sample) == [
        "docs/rules.md",
        "combat.md#targeting",
        "img/a.png",
        "https://example.com/x.md",
        "mailto:a@b.c",
        "#local",
        "my file.md",
        "docs/env.md",
    ]
    assert relative_links(sample) == ["docs/rules.md", "combat.md#targeting", "img/a.png", "my file.md", "docs/env.md"]
    assert resolve(ROOT / "docs" / "rules.md", "combat.md#targeting") == ROOT / "docs" / "combat.md"
    assert resolve(ROOT / "docs" / "rules.md", "/README.md") == ROOT / "README.md"


def test_readme_has_links():
    """Guards the link test against passing because the parser found nothing."""
    assert len(relative_links((ROOT / "README.md").read_text(encoding="utf-8"))) >= 5


@pytest.mark.parametrize("doc", DOC_FILES, ids=[str(p.relative_to(ROOT)) for p in DOC_FILES])
def test_relative_links_resolve(doc):
    broken = [t for t in relative_links(doc.read_text(encoding="utf-8")) if not resolve(doc, t).exists()]
    assert not broken, f"{doc.relative_to(ROOT)} links to missing files: {broken}"


#: ``python -m PACKAGE.X`` of a CLI: the installed ones (experiments) and those run from a checkout (benchmarks)
_CLI_COMMAND = re.compile(r"python\s+-m\s+((?:experiments|benchmarks)\.\w+)")
#: CLIs that left experiments/ (issue 67), by their old module -> the new one. The records' commands ran as they
#: were run: docs/results.md (generated from the records) and the history logs keep the old path; elsewhere it is
#: a stale name.
MOVED_CLIS = {
    "experiments.benchmark": "benchmarks.harness",
    "experiments.compare_revisions": "benchmarks.compare_revisions",
}
HISTORIC_DOCS = [ROOT / "docs" / "results.md", *(ROOT / "docs").glob("log-*.md")]


def readme_cli_modules() -> list[str]:
    """``PACKAGE.X`` of every ``python -m experiments.X`` / ``benchmarks.X`` in the rows of the README's
    "Command-line tools" table."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"^#+\s*Command-line tools\s*$(.*?)(?=^#+\s|\Z)", readme, re.MULTILINE | re.DOTALL)
    assert match, 'README.md has no "Command-line tools" section'
    rows = [line for line in match.group(1).splitlines() if line.lstrip().startswith("|")]
    return sorted({m for row in rows for m in _CLI_COMMAND.findall(row)})


def _cli_module_exists(module: str) -> bool:
    path = ROOT.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__main__.py").is_file()


def test_readme_cli_modules_exist():
    modules = readme_cli_modules()
    assert any(m.startswith("experiments.") for m in modules), (
        'no "python -m experiments.X" in the README\'s Command-line tools table'
    )
    assert "benchmarks.harness" in modules  # the benchmarks, run from a checkout
    missing = [m for m in modules if not _cli_module_exists(m)]
    assert not missing, f"README's Command-line tools table names missing modules: {missing}"


@pytest.mark.parametrize("doc", DOC_FILES, ids=[str(p.relative_to(ROOT)) for p in DOC_FILES])
def test_doc_cli_modules_exist(doc):
    """Every ``python -m experiments.X`` / ``benchmarks.X`` a doc names (in prose, tables or code blocks, across
    line breaks) exists; a moved CLI's old path only in the historic pages."""
    names = set(_CLI_COMMAND.findall(doc.read_text(encoding="utf-8")))
    if doc in HISTORIC_DOCS:
        names -= set(MOVED_CLIS)
    missing = sorted(f"{n} (now {MOVED_CLIS[n]})" if n in MOVED_CLIS else n for n in names if not _cli_module_exists(n))
    assert not missing, f"{doc.relative_to(ROOT)} names missing CLI modules: {missing}"


def test_the_moved_clis_are_gone_from_experiments():
    """The historic allowance covers only CLIs that really moved: each old module is gone, each new one exists."""
    assert not [old for old in MOVED_CLIS if _cli_module_exists(old)]
    assert all(_cli_module_exists(new) for new in MOVED_CLIS.values())


#: what a README must not hold (the history goes to docs/, the numbers to docs/results.md): a commit hash (7+ hex
#: characters after a space or backtick, with a letter and a digit among them: plain numbers and words such as
#: "defaced" are not hashes), a date, a p-value
_README_FORBIDDEN = {
    "commit hash": re.compile(r"(?<=[ `])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b"),
    "date": re.compile(r"\b\d{4}-\d{2}-\d{2}\b"),
    "p-value": re.compile(r"\bp\s?[=<]\s?\d|\bp\s?[=<]\s?\.\d"),
}


def readme_problems(text: str) -> list[str]:
    """Why ``text`` is not a one-screen README: too many lines, or a commit hash, date or p-value (with its line)."""
    lines = text.splitlines()
    problems = [f"{len(lines)} lines, more than {README_MAX_LINES}"] if len(lines) > README_MAX_LINES else []
    for number, line in enumerate(lines, 1):
        problems += [
            f"line {number}: a {what}: {m.group(0)!r}"
            for what, pattern in _README_FORBIDDEN.items()
            for m in pattern.finditer(line)
        ]
    return problems


def test_readme_checks_catch_what_they_name():
    """Guards the README test against patterns that match nothing (or too much)."""
    assert readme_problems("at 1deb265 on a day") == ["line 1: a commit hash: '1deb265'"]
    assert readme_problems("`0a523de`") == ["line 1: a commit hash: '0a523de'"]
    assert readme_problems("run on 2026-11-27") == ["line 1: a date: '2026-11-27'"]
    assert [p.split(":")[1] for p in readme_problems("(p = 7e-19) and p < 1e-14")] == [" a p-value"] * 2
    assert readme_problems("1,638,400 env steps; 16384 games; --set total_steps=1638400; defaced") == []
    assert readme_problems("x\n" * (README_MAX_LINES + 1))[0] == f"{README_MAX_LINES + 1} lines, more than 150"


def test_readme_is_one_screen():
    assert not readme_problems((ROOT / "README.md").read_text(encoding="utf-8"))


GPU_SCRIPT = ROOT / "docs" / "gpu" / "checklist.sh"


def test_the_gpu_checklist_script_parses_and_names_what_exists():
    """docs/gpu/checklist.sh (run only on a lent GPU, or with SMALL=1 by hand) is valid bash; its presets are
    presets, and every --flag it gives a ``python -m experiments.X`` is one that module declares."""
    import subprocess

    text = GPU_SCRIPT.read_text(encoding="utf-8")
    check = subprocess.run(["bash", "-n", str(GPU_SCRIPT)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    presets_source = (ROOT / "agents" / "presets.py").read_text(encoding="utf-8")
    named = set(re.findall(r"PRESETS:-([\w ]+)\}", text)[0].split()) | set(
        re.findall(r"TRAIN_PRESETS=([\w,]+)", text)[1].split(",")
    )
    assert named >= {"a2c_stream", "ppo_pixels", "ppo_large"}
    missing = [p for p in named if f'"{p}"' not in presets_source]
    assert not missing, f"the GPU script names presets that do not exist: {missing}"
    calls = re.findall(r"-m ((?:experiments|benchmarks)\.\w+)((?:[^\n]|\\\n)*)", text)
    assert {module for module, _ in calls} == {"benchmarks.harness", "experiments.train", "experiments.evaluate"}
    for module, args in calls:
        path = ROOT.joinpath(*module.split("."))
        files = [*path.parent.glob(f"{path.name}.py"), *path.glob("*.py"), ROOT / "experiments" / "common.py"]
        sources = "".join(p.read_text(encoding="utf-8") for p in files)
        unknown = [flag for flag in re.findall(r"\s(--[a-z][\w-]*)", args) if f'"{flag}"' not in sources]
        assert not unknown, f"{module} has no {unknown}"


def test_the_architecture_page_names_every_module():
    """docs/architecture.md is the package map: every module of ``agents`` and ``jaxgame`` by its file name, every
    CLI of ``experiments`` by its name, and what benchmarks/ holds (``benchmarks/harness/`` as the package it
    is)."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    modules = [
        p for package in ("agents", "jaxgame") for p in (ROOT / package).rglob("*.py") if p.name != "__init__.py"
    ]
    missing = [str(p.relative_to(ROOT)) for p in modules if f"`{p.name}`" not in page and f"{p.name}`" not in page]
    clis = [p.stem for p in (ROOT / "experiments").glob("*.py") if p.stem not in ("__init__", "common", "names")]
    missing += [f"experiments/{name}.py" for name in clis if f"`{name}`" not in page]
    missing += [
        str(p.relative_to(ROOT))
        for p in (ROOT / "benchmarks").glob("*.py")
        if p.name != "__init__.py" and f"`{p.name}`" not in page
    ]
    missing += [] if "`benchmarks/harness/`" in page else ["benchmarks/harness/"]
    assert len(modules) > 50 and len(clis) > 10
    assert not missing, f"docs/architecture.md does not name {missing}"


DATED = re.compile(r"\b20\d\d-\d\d-\d\d\b|\b(?:until|since|before) (?:Nov|Dec|Jan)\w* \d")


def test_the_code_carries_no_dated_history():
    """What was measured when belongs in the records (docs/results/records/) and the log, not in the code: no
    source line of the packages or of benchmarks/ names a date."""
    dated = [
        f"{p.relative_to(ROOT)}:{n}"
        for package in ("agents", "jaxgame", "experiments", "benchmarks")
        for p in (ROOT / package).rglob("*.py")
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if DATED.search(line)
    ]
    assert DATED.search("# 3e-4 until 2026-11-27") and not DATED.search("time.strftime('%Y-%m-%d')")
    assert not dated, f"dated history in the code (move it to a record): {dated}"
