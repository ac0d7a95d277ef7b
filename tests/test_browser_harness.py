"""tests/browser.py on small pages: errors reported, virtual time, query strings on file:// and http://, clicks from
inside and outside the page, screenshots. Skipped where no Chromium is installed (failed under JAXGAME_REQUIRE_BROWSER).

Five browser launches in all (about a second each): one shared browser, and load()/screenshot() once each per kind.
"""

import functools
import http.server
import json
import threading
import time

import pytest
from PIL import Image

from tests import browser as br

pytestmark = pytest.mark.xdist_group("browser")  # one worker, so the module's shared browser starts once

ERRORS_PAGE = """<!doctype html><html><body><script>
console.log("ready"); console.warn("careful"); console.error("bad", 42);
setTimeout(() => { throw new Error("boom"); }, 10);
Promise.reject(new Error("nope"));
</script></body></html>"""

CLEAN_PAGE = """<!doctype html><html><body><p id="p">fine</p><script>console.log("hello");</script></body></html>"""

TIMERS_PAGE = """<!doctype html><html><body><div id="ticks">0</div><script>
let ticks = 0;
setInterval(() => { document.getElementById("ticks").textContent = ++ticks; }, 1000);
</script></body></html>"""

FRAMES_PAGE = """<!doctype html><html><body><script>
window.frames_drawn = 0;
const frame = () => { window.frames_drawn++; requestAnimationFrame(frame); };
requestAnimationFrame(frame);
</script></body></html>"""

# ?autoclick=N: the page's own script clicks its button N times, 20 ms apart, then says "done". With a server, each
# click first fetches /slow.json (answered after a real delay), as the play page will ask its server for a move.
AUTOCLICK_PAGE = """<!doctype html><html><body>
<button id="b">go</button><div id="count">0</div><div id="status">waiting</div><div id="fetched"></div><script>
let count = 0;
document.getElementById("b").addEventListener("click", () => {
  document.getElementById("count").textContent = ++count;
});
const n = Number(new URLSearchParams(location.search).get("autoclick") || 0);
const server = location.protocol.startsWith("http");
async function run() {
  for (let i = 0; i < n; i++) {
    if (server) {
      const reply = await (await fetch("/slow.json?i=" + i)).json();
      document.getElementById("fetched").textContent += reply.i;
    }
    document.getElementById("b").click();
    await new Promise((done) => setTimeout(done, 20));
  }
  document.getElementById("status").textContent = "done";
}
setTimeout(run, 10);
</script></body></html>"""

# A game to count to 10: the legal moves (+1, +2, +3 while they do not pass 10) are the enabled buttons.
COUNT_GAME_PAGE = """<!doctype html><html><body><div id="total">0</div><div id="moves"></div><script>
let total = 0;
function draw() {
  document.getElementById("total").textContent = total;
  const moves = document.getElementById("moves");
  moves.innerHTML = "";
  for (const step of [1, 2, 3]) {
    const b = document.createElement("button");
    b.className = "move"; b.textContent = "+" + step; b.disabled = total + step > 10;
    b.onclick = () => { b.disabled = true; setTimeout(() => { total += step; draw(); }, 100); };
    moves.appendChild(b);
  }
  if (total == 10) document.body.insertAdjacentHTML("beforeend", '<div id="over">game over</div>');
}
draw();
</script></body></html>"""

SLOW_REPLY_S = 0.2  # real seconds the test server takes to answer /slow.json


@pytest.fixture(scope="module")
def browser():
    with br.Browser() as shared:
        yield shared


def write(tmp_path, name, html):
    path = tmp_path / name
    path.write_text(html, encoding="utf-8")
    return path


@pytest.fixture
def server(tmp_path):
    """An http.server on 127.0.0.1 serving tmp_path, with /slow.json answering {"i": i} after SLOW_REPLY_S."""

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            if self.path.startswith("/slow.json"):
                time.sleep(SLOW_REPLY_S)
                i = int(self.path.partition("i=")[2] or 0)
                body = json.dumps({"i": i}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            else:
                super().do_GET()

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(tmp_path)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def text_of(dom, element_id):
    """The text of ``<div id="element_id">`` in a dumped DOM."""
    start = dom.index(f'<div id="{element_id}">') + len(f'<div id="{element_id}">')
    return dom[start : dom.index("</div>", start)]


def test_load_reports_console_errors_and_uncaught_exceptions(tmp_path):
    page = br.load(write(tmp_path, "errors.html", ERRORS_PAGE), budget_ms=100)
    assert page.errors[0] == "error: bad 42"
    assert sorted(e.split(" (")[0] for e in page.errors[1:]) == ["uncaught: Error: boom", "uncaught: Error: nope"]
    assert "errors.html:3)" in next(e for e in page.errors if "boom" in e)  # where it was thrown
    assert page.console[:2] == ["log: ready", "warning: careful"]  # in the console, not errors
    assert len(page.console) == 5 and "<script>" in page.dom


def test_a_clean_page_reports_no_errors_and_goto_starts_afresh(browser, tmp_path):
    browser.goto(write(tmp_path, "errors.html", ERRORS_PAGE), budget_ms=100)
    assert len(browser.errors) == 3
    browser.goto(write(tmp_path, "clean.html", CLEAN_PAGE), budget_ms=100)
    page = browser.page()
    assert page.errors == [] and page.console == ["log: hello"]
    assert '<p id="p">fine</p>' in page.dom


def test_timers_run_under_the_virtual_time_budget(browser, tmp_path):
    path = write(tmp_path, "timers.html", TIMERS_PAGE)
    start = time.monotonic()
    browser.goto(path, budget_ms=600_500)  # ten virtual minutes
    assert time.monotonic() - start < 60  # virtual: not waited for
    assert text_of(browser.dom(), "ticks") == "600"
    browser.advance(2_000)
    assert browser.evaluate("ticks") == 602


def test_animation_frames_run_in_real_time(tmp_path):
    path = write(tmp_path, "frames.html", FRAMES_PAGE)
    with br.Browser(virtual_time=False) as real:
        real.goto(path, budget_ms=500)
        assert real.evaluate("window.frames_drawn") >= 5  # about 30 at 60 Hz; none under virtual time


def test_the_page_clicks_itself_from_a_file_url_query_string(tmp_path):
    page = br.load(str(write(tmp_path, "auto.html", AUTOCLICK_PAGE)) + "?autoclick=7", budget_ms=1000)
    assert (text_of(page.dom, "count"), text_of(page.dom, "status")) == ("7", "done")
    assert page.errors == []


def test_the_page_clicks_itself_over_http_waiting_on_its_server(browser, tmp_path, server):
    write(tmp_path, "auto.html", AUTOCLICK_PAGE)
    start = time.monotonic()
    browser.goto(f"{server}/auto.html?autoclick=4", budget_ms=1000)  # 4 x 20 ms of virtual time; fetches pause it
    assert time.monotonic() - start >= 4 * SLOW_REPLY_S
    dom = browser.dom()
    assert (text_of(dom, "count"), text_of(dom, "fetched"), text_of(dom, "status")) == ("4", "0123", "done")
    assert browser.errors == []  # the browser's own /favicon.ico 404 is not the page's


def test_clicks_from_outside_play_a_game_through_to_its_end(browser, tmp_path):
    browser.goto(write(tmp_path, "count.html", COUNT_GAME_PAGE), budget_ms=100)
    played = []
    while not browser.evaluate("!!document.getElementById('over')"):
        legal = browser.evaluate("[...document.querySelectorAll('button.move')].map((b) => !b.disabled)")
        assert any(legal), f"no legal move at total {browser.evaluate('total')}"
        move = max(i for i, ok in enumerate(legal) if ok)  # the largest legal step
        before = browser.evaluate("total")
        browser.click(f"button.move:nth-child({move + 1})")
        browser.wait_for(f"total != {before}", timeout_ms=1000)  # the move lands 100 ms after the click
        played.append(move + 1)
        assert len(played) <= 10, played
    assert played == [3, 3, 3, 1] and browser.evaluate("total") == 10
    assert browser.errors == []


def test_click_refuses_missing_and_hidden_elements(browser, tmp_path):
    browser.goto(write(tmp_path, "hidden.html", '<button id="h" style="display: none">x</button>'), budget_ms=10)
    with pytest.raises(br.BrowserError, match="no element matches '#nope'"):
        browser.click("#nope")
    with pytest.raises(br.BrowserError, match="no size"):
        browser.click("#h")
    with pytest.raises(br.BrowserError, match="ReferenceError"):
        browser.evaluate("no_such_name")
    with pytest.raises(br.BrowserError, match="still False after 100 ms"):
        browser.wait_for("false", timeout_ms=100)


def test_screenshot_of_a_coloured_page_is_not_blank(tmp_path):
    page = write(
        tmp_path,
        "coloured.html",
        '<body style="margin: 0; background: #fff">'
        '<div style="width: 50px; height: 40px; background: #2a6"></div></body>',
    )
    out = tmp_path / "coloured.png"
    br.screenshot(page, out, size=(320, 200), budget_ms=10)
    with Image.open(out) as image:
        assert image.size == (320, 200)
        assert image.convert("RGB").getpixel((10, 10)) == (0x22, 0xAA, 0x66)
        assert image.convert("RGB").getpixel((100, 100)) == (255, 255, 255)
    assert not br.is_blank(out)


def test_screenshot_of_an_empty_page_is_blank(browser, tmp_path):
    browser.goto(write(tmp_path, "empty.html", "<html><body></body></html>"), budget_ms=10)
    assert br.is_blank(browser.screenshot(tmp_path / "empty.png"))


@pytest.fixture
def unanswered_captures(browser, monkeypatch):
    """Makes the shared browser's next captures hang, as a capture that waits for a frame that never comes: the
    replies to the first ``hang[0]`` Page.captureScreenshot commands are dropped. Returns ``(hang, methods)``:
    set ``hang[0]``; ``methods`` lists the commands sent, in order."""
    hang, methods, captures = [0], [], set()
    post, read = browser._post, browser._read_message

    def logged_post(method, session=None, **params):
        command_id = post(method, session, **params)
        methods.append(method)
        if method == "Page.captureScreenshot" and len(captures) < hang[0]:
            captures.add(command_id)
        return command_id

    def dropping_read(deadline):
        while True:
            message = read(deadline)
            if message is None or message.get("id") not in captures:
                return message

    monkeypatch.setattr(browser, "_post", logged_post)
    monkeypatch.setattr(browser, "_read_message", dropping_read)
    monkeypatch.setattr(br, "SCREENSHOT_TIMEOUT_S", 0.5)
    return hang, methods


TICKING_RED_PAGE = """<html><body style="background:#c00"><script>
let ticks = 0; setInterval(() => ticks++, 50);
</script></body></html>"""


@pytest.mark.parametrize("hung", [0, 1, 2, 3])
def test_a_screenshot_that_does_not_answer_is_asked_again_after_the_page_runs(
    browser, tmp_path, unanswered_captures, hung
):
    hang, methods = unanswered_captures
    browser.goto(write(tmp_path, "red.html", TICKING_RED_PAGE), budget_ms=10)
    hang[0] = hung
    methods.clear()
    shot = browser.screenshot(tmp_path / "red.png")
    image = Image.open(shot).convert("RGB")
    assert image.size == browser.size and image.getpixel((5, 5)) == (204, 0, 0)
    assert [m for m in methods if m in ("Page.captureScreenshot", "Emulation.setVirtualTimePolicy")] == (
        ["Page.captureScreenshot"] + ["Emulation.setVirtualTimePolicy", "Page.captureScreenshot"] * hung
    )
    # each retry ran the page for its wake-up budget first (a 50 ms timer: budget / 50 ticks), and no more
    assert browser.evaluate("ticks") == sum(br.WAKE_UP_BUDGETS_MS[:hung]) // 50


def test_a_screenshot_that_never_answers_is_a_timeout(browser, tmp_path, unanswered_captures, monkeypatch):
    hang, methods = unanswered_captures
    browser.goto(write(tmp_path, "empty.html", "<html><body></body></html>"), budget_ms=10)
    hang[0] = 1 + len(br.WAKE_UP_BUDGETS_MS)
    monkeypatch.setattr(br, "REPLY_TIMEOUT_S", 1.0)
    with pytest.raises(br.BrowserTimeout, match="Page.captureScreenshot"):
        browser.screenshot(tmp_path / "never.png")
    assert methods.count("Page.captureScreenshot") == 1 + len(br.WAKE_UP_BUDGETS_MS)
    monkeypatch.undo()  # the browser answers again
    browser.goto(write(tmp_path, "after.html", "<html><body></body></html>"), budget_ms=10)  # still usable
    assert br.is_blank(browser.screenshot(tmp_path / "after.png"))


def test_is_blank_on_known_images(tmp_path):
    image = Image.new("RGB", (8, 6), (30, 40, 50))
    image.save(tmp_path / "flat.png")
    image.putpixel((7, 5), (30, 40, 51))
    image.save(tmp_path / "one_pixel.png")
    assert br.is_blank(tmp_path / "flat.png") and not br.is_blank(tmp_path / "one_pixel.png")


def test_to_url_keeps_a_paths_query_string(tmp_path):
    assert br.to_url(tmp_path / "a b.html") == (tmp_path / "a b.html").as_uri()
    assert br.to_url(f"{tmp_path}/v.html?autotest=1&seat=2") == (tmp_path / "v.html").as_uri() + "?autotest=1&seat=2"
    assert br.to_url("http://127.0.0.1:8000/?x=1") == "http://127.0.0.1:8000/?x=1"


def test_a_missing_browser_skips_or_fails_as_required(monkeypatch):
    monkeypatch.setenv("JAXGAME_CHROMIUM", "/nonexistent/chromium")
    assert br.find_browser() is None
    monkeypatch.delenv(br.REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="no Chromium"):
        br.require_browser()
    monkeypatch.setenv(br.REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="JAXGAME_REQUIRE_BROWSER is set"):
        br.require_browser()
