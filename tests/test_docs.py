"""The docs hold together: relative links resolve, the README's commands exist. Pure text, no JAX."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

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
        "docs/rules.md", "combat.md#targeting", "img/a.png", "https://example.com/x.md", "mailto:a@b.c",
        "#local", "my file.md", "docs/env.md",
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


def readme_cli_modules() -> list[str]:
    """``X`` of every ``python -m experiments.X`` in the rows of the README's "Command-line tools" table."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"^#+\s*Command-line tools\s*$(.*?)(?=^#+\s|\Z)", readme, re.MULTILINE | re.DOTALL)
    assert match, 'README.md has no "Command-line tools" section'
    rows = [line for line in match.group(1).splitlines() if line.lstrip().startswith("|")]
    return sorted({m for row in rows for m in re.findall(r"python -m experiments\.(\w+)", row)})


def test_readme_cli_modules_exist():
    modules = readme_cli_modules()
    assert modules, 'no "python -m experiments.X" in the README\'s Command-line tools table'
    missing = [
        m for m in modules
        if not (ROOT / "experiments" / f"{m}.py").is_file()
        and not (ROOT / "experiments" / m / "__main__.py").is_file()
    ]
    assert not missing, f"README's Command-line tools table names missing modules: {missing}"
