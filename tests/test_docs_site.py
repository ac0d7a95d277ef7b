"""The documentation site (mkdocs.yml): it builds in strict mode (a link to a missing page, file or anchor fails the
build, which the injected broken link shows), every page of docs/ is in its navigation, and in headless Chromium
(tests/browser.py) the home page and the embedded replay render with no console errors and nothing fetched from
outside the machine, the replay's viewer stepping through its game inside the site."""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from tests import browser as br

ROOT = Path(__file__).resolve().parent.parent
#: mkdocs-material prints a banner about its successor on every build; it is not a warning of this site
QUIET_ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}

pytestmark = pytest.mark.xdist_group("docs_site")  # one worker builds the site once for the module


def _build(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "--site-dir", str(site)],
        cwd=config.parent,
        env=QUIET_ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    built = _build(ROOT / "mkdocs.yml", out)
    assert built.returncode == 0, built.stderr
    assert "WARNING" not in built.stderr, built.stderr
    return out


def _config() -> dict:
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text())


def _nav_pages(nav) -> list[str]:
    pages = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages += _nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_every_page_of_the_docs_is_in_the_navigation():
    config = _config()
    pages = _nav_pages(config["nav"])
    docs = ROOT / config["docs_dir"]
    on_disk = sorted(str(p.relative_to(docs)) for p in docs.rglob("*.md"))
    assert sorted(pages) == on_disk
    assert config["strict"] is True and config["use_directory_urls"] is False


def test_a_broken_link_or_anchor_fails_the_strict_build(tmp_path):
    config = _config()
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\n[the rules](rules.md#no-such-heading)\n")
    (docs / "rules.md").write_text("# Rules\n\n[gone](missing.md)\n")
    config.update(docs_dir="docs", nav=[{"Home": "index.md"}, {"Rules": "rules.md"}])
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    built = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert built.returncode != 0
    assert "missing.md" in built.stderr and "no-such-heading" in built.stderr, built.stderr


def test_the_built_site_holds_every_page_and_the_replay(site):
    for page in map(Path, _nav_pages(_config()["nav"])):  # a folder's README.md is its index
        html = page.with_name("index.html") if page.name == "README.md" else page.with_suffix(".html")
        assert (site / html).is_file(), page
    assert (site / "demo" / "game.html").stat().st_size == (ROOT / "docs" / "demo" / "game.html").stat().st_size
    assert (site / "game.gif").is_file()


@pytest.fixture(scope="module")
def served(site):
    """The built site over http on 127.0.0.1 (as a static host serves it: the search index loads in a worker)."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # noqa: D102 (no request log on the test's stderr)
        pass


@pytest.fixture(scope="module")
def chromium():
    with br.Browser(size=(1280, 800)) as browser:
        yield browser


def _fetched_outside(b, base: str) -> list[str]:
    names = b.evaluate("performance.getEntriesByType('resource').map((e) => e.name)")
    return [n for n in names if not n.startswith((base, "data:"))]


def test_the_home_page_renders_without_errors(chromium, served, tmp_path):
    b = chromium
    b.goto(f"{served}/index.html", budget_ms=1500)
    assert b.errors == [], b.errors
    assert b.evaluate("document.title").startswith("jaxgame")
    assert b.evaluate("document.querySelector('h1').textContent.trim()").startswith("jaxgame")
    links = b.evaluate("[...document.querySelectorAll('nav a')].map((a) => a.getAttribute('href'))")
    assert {"rules.html", "training.html", "demo.html", "results.html"} <= set(links)
    assert b.evaluate("document.querySelector('img[src=\"game.gif\"]').naturalWidth") > 0
    assert _fetched_outside(b, served) == []
    assert not br.is_blank(b.screenshot(tmp_path / "home.png"))


def test_the_embedded_replay_plays_inside_the_site(chromium, served, tmp_path):
    b = chromium
    b.goto(f"{served}/demo.html", budget_ms=1500)
    assert b.errors == [], b.errors
    frame = "document.querySelector('iframe').contentWindow"
    steps = b.wait_for(f"{frame}.viewer && {frame}.viewer.steps", timeout_ms=10000)
    assert steps > 10
    assert b.evaluate(f"{frame}.viewer.play()") is True
    b.advance(3000)
    assert b.evaluate(f"{frame}.viewer.step") >= 2
    assert b.errors == [], b.errors
    assert _fetched_outside(b, served) == []
    assert not br.is_blank(b.screenshot(tmp_path / "demo.png"))
