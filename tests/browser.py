"""Headless Chromium for the tests: load a page, read its DOM and console, click, take a screenshot.

Standard library only. The browser is driven over the DevTools protocol on ``--remote-debugging-pipe`` (JSON messages,
each ended by a NUL byte, written to the browser's fd 3 and read from its fd 4): the command-line switches alone
(``--dump-dom``, ``--enable-logging``) log ``console.log`` and ``console.error`` alike, so they cannot tell a page's
errors from its chatter. Pages run under virtual time by default (``Emulation.setVirtualTimePolicy``, what the
``--virtual-time-budget`` switch does): the timers of ``budget_ms`` virtual milliseconds run at once, paused while a
network fetch is pending, so a page that waits on a local server still gets its whole budget. ``requestAnimationFrame``
callbacks do not run under virtual time (headless Chromium draws no frames then): a page animated by them needs
``virtual_time=False``, where ``budget_ms`` is spent in real time.

    page = load("replay.html?autotest=1", budget_ms=2000)   # Page(dom, console, errors); a fresh browser
    with Browser() as b:                                     # a page driven from outside
        b.goto("http://127.0.0.1:8000/?seat=0")
        b.click("button.end-turn")
        b.wait_for("document.querySelector('#phase').textContent == 'combat'")

:class:`Browser` (and so :func:`load` and :func:`screenshot`) calls :func:`require_browser`: it skips the test, naming
why, where no Chromium is installed, and fails it instead when ``JAXGAME_REQUIRE_BROWSER=1`` (``.ci/run`` sets it),
so CI never skips these tests silently.
"""

import base64
import json
import os
import pathlib
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from dataclasses import dataclass, field

import pytest
from PIL import Image  # pillow comes with the [test] extra (through [train])

# Tried in this order after $JAXGAME_CHROMIUM: Debian's package, Ubuntu's and others' names, Google's build.
BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
REQUIRE_ENV = "JAXGAME_REQUIRE_BROWSER"
DEFAULT_SIZE = (1200, 800)  # the viewport, CSS pixels (width, height)
REPLY_TIMEOUT_S = 30.0  # real seconds for any one protocol reply: a cold start on a loaded 2-core machine
SCREENSHOT_TIMEOUT_S = 5.0  # real seconds before a screenshot is retried (a healthy one takes well under 1 s)
WAKE_UP_BUDGETS_MS = (1000, 4000, 16000)  # the page's time run before each retry of an unanswered screenshot
ERROR_CONSOLE_TYPES = ("error", "assert")  # console API calls that count as errors

# Moves the pipe's two ends onto fds 3 and 4 in the child, then runs the browser: a preexec_fn would do the same
# between fork and exec, which is unsafe in a process with threads (JAX's, an http.server's).
_PIPE_LAUNCHER = (
    "import os, sys\n"
    "r, w = int(sys.argv[1]), int(sys.argv[2])\n"
    "os.dup2(r, 3); os.dup2(w, 4)\n"
    "[os.close(fd) for fd in (r, w) if fd not in (3, 4)]\n"
    "os.execv(sys.argv[3], sys.argv[3:])\n"
)


def find_browser():
    """The Chromium executable, or None: ``$JAXGAME_CHROMIUM`` if set (a name or a path), else the first of
    BROWSER_NAMES on PATH."""
    override = os.environ.get("JAXGAME_CHROMIUM")
    if override:
        return shutil.which(override) or (override if os.access(override, os.X_OK) else None)
    for name in BROWSER_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def require_browser():
    """The browser's path; skips the calling test (fails it when ``$JAXGAME_REQUIRE_BROWSER`` is set) if none."""
    path = find_browser()
    if path is None:
        override = os.environ.get("JAXGAME_CHROMIUM")
        where = (
            f"$JAXGAME_CHROMIUM={override!r} is no executable"
            if override
            else f"none of {', '.join(BROWSER_NAMES)} on PATH and $JAXGAME_CHROMIUM unset"
        )
        reason = f"no Chromium: {where} (Debian: apt-get install chromium; .ci/run installs it)"
        if os.environ.get("JAXGAME_BROWSER_UNAVAILABLE"):
            reason += f"; {os.environ['JAXGAME_BROWSER_UNAVAILABLE']}"
        if os.environ.get(REQUIRE_ENV, "") not in ("", "0"):
            pytest.fail(f"{reason}; ${REQUIRE_ENV} is set, so the browser tests must run", pytrace=False)
        pytest.skip(reason)
    return path


def to_url(url_or_path):
    """A URL for a page: ``http(s)://``, ``file://`` and ``about:`` URLs as given, a filesystem path as a file URL.

    A path may carry a query string (``page.html?autoclick=3``): the part after the first ``?`` is kept as the URL's.
    """
    text = str(url_or_path)
    if text.startswith(("http://", "https://", "file://", "about:", "data:")):
        return text
    path, sep, query = text.partition("?")
    return pathlib.Path(path).resolve().as_uri() + sep + query


@dataclass
class Page:
    """What a loaded page left: ``dom``, its final HTML (``document.documentElement.outerHTML``); ``console``, every
    console message and browser log entry as ``"level: text"`` in order; ``errors``, those that are errors
    (``console.error``/``console.assert`` failures, uncaught exceptions and unhandled rejections, and the browser's
    error-level log entries such as a resource that failed to load)."""

    dom: str
    console: list = field(default_factory=list)
    errors: list = field(default_factory=list)


class BrowserError(RuntimeError):
    """The browser did not start, did not answer in time, or answered a protocol command with an error."""


class BrowserTimeout(BrowserError):
    """The browser did not answer a command in time."""


def _remote_text(obj):
    """A console argument (a DevTools RemoteObject) as the text the console would show."""
    if "value" in obj:
        value = obj["value"]
        return value if isinstance(value, str) else json.dumps(value)
    return obj.get("description") or obj.get("unserializableValue") or obj.get("type", "?")


def _exception_text(details):
    """An uncaught exception (DevTools ExceptionDetails) as one line: the message, then where it was thrown."""
    exc = details.get("exception") or {}
    text = exc.get("description") or details.get("text", "exception")
    where = f"{details.get('url', '')}:{details.get('lineNumber', 0) + 1}"
    return f"{text.splitlines()[0] if text else 'exception'} ({where})"


def _is_favicon(url):
    """Whether a URL is a server's /favicon.ico: the browser asks for it by itself, so its 404 is not the page's."""
    return urllib.parse.urlsplit(url).path == "/favicon.ico"


class Browser:
    """One headless Chromium with one page, driven over the DevTools pipe. A context manager; ``close()`` ends it.

    ``size``: the viewport (width, height) in CSS pixels. ``virtual_time``: whether ``goto``/``advance`` budgets are
    virtual milliseconds (timers run at once; no animation frames) or real ones. ``console`` and ``errors`` hold the
    current page's messages (the text of :class:`Page`'s); ``goto`` starts them afresh.
    """

    def __init__(self, size=DEFAULT_SIZE, virtual_time=True, executable=None):
        self.executable = executable or require_browser()
        self.size = (int(size[0]), int(size[1]))
        if min(self.size) <= 0:
            raise ValueError(f"size must be (width, height) with both > 0, got {size}")
        self.virtual_time = virtual_time
        self.console, self.errors = [], []
        self._events, self._buffer, self._next_id = [], b"", 0
        self._late_replies = {}  # command id -> its reply, arrived while another command was awaited
        self._profile = tempfile.mkdtemp(prefix="jaxgame-chromium-")
        try:
            self._proc = self._launch()
            self._session = self._send("Target.attachToTarget", targetId=self._page_target(), flatten=True)["sessionId"]
            self._call("Page.bringToFront")  # headless Chromium draws no frames for a background tab
            for domain in ("Page", "Runtime", "Log"):
                self._call(f"{domain}.enable")
            self._call(
                "Emulation.setDeviceMetricsOverride",
                width=self.size[0],
                height=self.size[1],
                deviceScaleFactor=1,
                mobile=False,
            )
        except BaseException:
            self.close()
            raise

    def flags(self):
        """The command-line switches the browser runs with (besides ``--remote-debugging-pipe``)."""
        flags = [
            "--headless=new",
            "--disable-gpu",
            f"--user-data-dir={self._profile}",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-dev-shm-usage",
            "--allow-file-access-from-files",
            "--hide-scrollbars",
            "--mute-audio",
            f"--window-size={self.size[0]},{self.size[1]}",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            flags.append("--no-sandbox")  # Chromium refuses to start its sandbox as root
        return flags

    def _page_target(self):
        """The id of the tab the browser opened at start (a second tab would race it for the foreground)."""
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        while time.monotonic() < deadline:
            pages = [t for t in self._send("Target.getTargets")["targetInfos"] if t["type"] == "page"]
            if pages:
                return pages[0]["targetId"]
            time.sleep(0.02)
        raise BrowserError(f"the browser opened no tab within {REPLY_TIMEOUT_S:.0f} s")

    def _launch(self):
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        argv = [
            sys.executable,
            "-I",
            "-S",
            "-c",
            _PIPE_LAUNCHER,
            str(to_browser_r),
            str(from_browser_w),
            self.executable,
            *self.flags(),
            "--remote-debugging-pipe",
            "about:blank",
        ]
        try:  # a session of its own, so close() can end the browser's helper processes with it
            return subprocess.Popen(
                argv,
                pass_fds=(to_browser_r, from_browser_w),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            os.close(to_browser_r)
            os.close(from_browser_w)

    # --- the protocol --------------------------------------------------------------------------------------------

    def _read_message(self, deadline):
        """The next message from the browser (a dict), or None once ``deadline`` (time.monotonic()) has passed."""
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_browser], [], [], left)[0]:
                return None
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise BrowserError(f"the browser closed its pipe (exit status {self._proc.poll()})")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def _post(self, method, session=None, **params):
        """Sends one command without waiting; returns its id (``_await`` reads its reply)."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        return self._next_id

    def _await(self, method, ids, timeout_s):
        """The result of the first reply to any of the commands ``ids`` (late replies to earlier commands that
        were given up on included), recording the events that arrive meanwhile; BrowserTimeout after
        ``timeout_s``."""
        for command_id in ids:  # a reply that arrived while something else was awaited
            if command_id in self._late_replies:
                return self._result(method, self._late_replies.pop(command_id))
        ids = set(ids)
        deadline = time.monotonic() + timeout_s
        while True:
            reply = self._read_message(deadline)
            if reply is None:
                raise BrowserTimeout(f"{method}: no answer from the browser within {timeout_s:.0f} s")
            if reply.get("id") in ids:
                return self._result(method, reply)
            self._record(reply)

    @staticmethod
    def _result(method, reply):
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error'].get('message', reply['error'])}")
        return reply.get("result", {})

    def _send(self, method, session=None, timeout_s=REPLY_TIMEOUT_S, **params):
        """Sends one command and returns its result, recording the events that arrive meanwhile."""
        return self._await(method, [self._post(method, session, **params)], timeout_s)

    def _call(self, method, timeout_s=REPLY_TIMEOUT_S, **params):
        """A command to the page's session."""
        return self._send(method, session=self._session, timeout_s=timeout_s, **params)

    def _record(self, event):
        """Files a console message, exception or log entry in console/errors, and keeps the event for _wait_event
        (a reply to a command no longer awaited is kept for ``_await``)."""
        if "id" in event:
            self._late_replies[event["id"]] = event
            return
        method, params = event.get("method"), event.get("params", {})
        line, is_error = None, False
        if method == "Runtime.consoleAPICalled":
            line = f"{params['type']}: " + " ".join(_remote_text(a) for a in params.get("args", []))
            is_error = params["type"] in ERROR_CONSOLE_TYPES
        elif method == "Runtime.exceptionThrown":
            line, is_error = "uncaught: " + _exception_text(params["exceptionDetails"]), True
        elif method == "Log.entryAdded" and not _is_favicon(params["entry"].get("url", "")):
            entry = params["entry"]
            line = f"{entry['level']}: {entry['text']}" + (f" ({entry['url']})" if entry.get("url") else "")
            is_error = entry["level"] == "error"
        if line is not None:
            self.console.append(line)
            if is_error:
                self.errors.append(line)
        self._events.append(event)

    def _wait_event(self, method, timeout_s):
        """Waits (real time) for the next event named ``method`` not yet consumed, and returns its params."""
        deadline = time.monotonic() + timeout_s
        while True:
            for i, event in enumerate(self._events):
                if event.get("method") == method:
                    del self._events[: i + 1]
                    return event.get("params", {})
            self._events.clear()
            message = self._read_message(deadline)
            if message is None:
                raise BrowserError(f"no {method} from the browser within {timeout_s:.0f} s")
            self._record(message)

    def _pump(self, seconds):
        """Records the browser's events for ``seconds`` of real time (the page runs meanwhile)."""
        deadline = time.monotonic() + seconds
        while (message := self._read_message(deadline)) is not None:
            self._record(message)

    # --- the page ------------------------------------------------------------------------------------------------

    def goto(self, url_or_path, budget_ms=1000):
        """Loads a page (a URL, or a file path; either with a query string) and runs ``budget_ms`` of its time.

        Under virtual time the clock stands still from the navigation on, then the page's scripts and timers run
        until ``budget_ms`` virtual milliseconds have passed. In real time, it waits for the load event, then
        ``budget_ms`` more. ``console`` and ``errors`` start afresh.
        """
        url = to_url(url_or_path)
        if self.virtual_time:
            self._call("Emulation.setVirtualTimePolicy", policy="pause")
        self.console, self.errors, self._events = [], [], []
        reply = self._call("Page.navigate", url=url)
        if reply.get("errorText"):
            raise BrowserError(f"cannot load {url}: {reply['errorText']}")
        if not self.virtual_time:
            self._wait_event("Page.loadEventFired", REPLY_TIMEOUT_S)
        self.advance(budget_ms)

    def advance(self, budget_ms):
        """Lets the page run for ``budget_ms`` milliseconds: virtual ones (at once; paused while fetches are pending)
        or real ones, as the browser's ``virtual_time`` says."""
        if budget_ms < 0:
            raise ValueError(f"budget_ms must be >= 0, got {budget_ms}")
        if not self.virtual_time:
            self._pump(budget_ms / 1000)
            return
        self._events.clear()
        self._call("Emulation.setVirtualTimePolicy", policy="pauseIfNetworkFetchesPending", budget=budget_ms)
        self._wait_event("Emulation.virtualTimeBudgetExpired", REPLY_TIMEOUT_S + budget_ms / 1000)

    def evaluate(self, js):
        """The value of a JavaScript expression in the page (a promise is awaited), as JSON-decoded Python.

        A thrown error raises BrowserError with its message (it is not also counted in ``errors``). Under virtual
        time the clock stands still during the call: a promise that waits on a timer never settles (use wait_for).
        """
        reply = self._call("Runtime.evaluate", expression=js, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in reply:
            raise BrowserError(f"evaluate({js!r}): {_exception_text(reply['exceptionDetails'])}")
        return reply["result"].get("value")

    def wait_for(self, js, timeout_ms=5000, step_ms=50):
        """Advances the page ``step_ms`` at a time until the expression ``js`` is truthy, and returns its value;
        raises BrowserError after ``timeout_ms`` (page milliseconds: virtual or real, as ``advance``)."""
        waited = 0
        while not (value := self.evaluate(js)):
            if waited >= timeout_ms:
                raise BrowserError(f"wait_for({js!r}): still {value!r} after {timeout_ms} ms")
            self.advance(step_ms)
            waited += step_ms
        return value

    def _centre(self, selector, what):
        """(x, y) of the centre of the first element matching ``selector``, scrolled into view; BrowserError if
        nothing matches or it has no size."""
        rect = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
            " e.scrollIntoView({block: 'center', inline: 'center'}); const r = e.getBoundingClientRect();"
            " return [r.left + r.width / 2, r.top + r.height / 2, r.width * r.height]; })()"
        )
        if rect is None:
            raise BrowserError(f"{what}: no element matches {selector!r}")
        x, y, area = rect
        if area <= 0:
            raise BrowserError(f"{what}: {selector!r} has no size (hidden?)")
        return x, y

    def click(self, selector, budget_ms=0):
        """Clicks the first element matching a CSS selector as a user would: the mouse pressed and released at its
        centre (after scrolling it into view), so it must be visible and on top; then ``advance(budget_ms)``.
        Raises BrowserError if nothing matches or the element has no size (``display: none``)."""
        x, y = self._centre(selector, "click")
        for kind in ("mousePressed", "mouseReleased"):
            self._call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)
        if budget_ms:
            self.advance(budget_ms)

    def drag(self, source, target, steps=6, budget_ms=0):
        """Drags with the mouse from the centre of the first element matching ``source`` to that of ``target`` (CSS
        selectors): pressed, moved there in ``steps`` steps, released; the page sees pointer and mouse events as
        from a person. Then ``advance(budget_ms)``. BrowserError as for :meth:`click`."""
        x0, y0 = self._centre(source, "drag")
        x1, y1 = self._centre(target, "drag")
        self._call("Input.dispatchMouseEvent", type="mousePressed", x=x0, y=y0, button="left", clickCount=1)
        for i in range(1, steps + 1):
            x, y = x0 + (x1 - x0) * i / steps, y0 + (y1 - y0) * i / steps
            self._call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y, button="left", buttons=1)
        self._call("Input.dispatchMouseEvent", type="mouseReleased", x=x1, y=y1, button="left", clickCount=1)
        if budget_ms:
            self.advance(budget_ms)

    def press(self, key, budget_ms=0):
        """Presses and releases one key (``"e"``, ``"Enter"``, ``"Escape"``, ``"1"``) as a keyboard would; then
        ``advance(budget_ms)``."""
        text = key if len(key) == 1 else ("\r" if key == "Enter" else "")
        for kind in ("keyDown", "keyUp"):
            params = {"type": kind if text or kind == "keyUp" else "rawKeyDown", "key": key}
            if text and kind == "keyDown":
                params["text"] = text
            self._call("Input.dispatchKeyEvent", **params)
        if budget_ms:
            self.advance(budget_ms)

    def dom(self):
        """The page's current HTML (``document.documentElement.outerHTML``)."""
        return self.evaluate("document.documentElement.outerHTML")

    def page(self):
        """A :class:`Page` of the current DOM and the page's console messages and errors so far."""
        return Page(dom=self.dom(), console=list(self.console), errors=list(self.errors))

    def screenshot(self, out_png):
        """Saves the viewport as a PNG at ``out_png`` (``size`` pixels); returns its path.

        A capture waits for a compositor frame, and under paused virtual time headless Chromium sometimes holds that
        frame back until the page's clock moves (about once in 40-70 runs of the harness tests' page sequence on a
        loaded 2-core machine, just after a navigation: 16 or 250 ms of page time did not release it, 366 and 1250 ms
        did, a screencast or a resize did not). So a capture not answered within SCREENSHOT_TIMEOUT_S real seconds
        is asked again after the page runs WAKE_UP_BUDGETS_MS milliseconds of its time (``advance``), each in turn,
        and the first answer to any of the captures is taken: a screenshot that had to wait shows the page up to 21
        s (page time) later than when it was asked for. BrowserTimeout if none answers.
        """
        captures = []
        for attempt, budget_ms in enumerate((None, *WAKE_UP_BUDGETS_MS)):
            if budget_ms is not None:
                self.advance(budget_ms)
            captures.append(self._post("Page.captureScreenshot", session=self._session, format="png"))
            last = attempt == len(WAKE_UP_BUDGETS_MS)
            try:
                data = self._await(
                    "Page.captureScreenshot", captures, REPLY_TIMEOUT_S if last else SCREENSHOT_TIMEOUT_S
                )["data"]
                break
            except BrowserTimeout:
                if last:
                    raise
        out = pathlib.Path(out_png)
        out.write_bytes(base64.b64decode(data))
        return out

    def close(self):
        """Ends the browser (asks it to close; kills its process group if it does not) and removes its profile."""
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.poll() is None:
            try:
                self._send("Browser.close", timeout_s=5)
            except (BrowserError, OSError):
                pass
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        for name in ("_to_browser", "_from_browser"):
            if getattr(self, name, None) is not None:
                os.close(getattr(self, name))
                setattr(self, name, None)
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def load(url_or_path, budget_ms=1000, size=DEFAULT_SIZE, virtual_time=True):
    """Loads a page in a fresh headless browser, runs ``budget_ms`` of its (virtual) time, returns its :class:`Page`."""
    with Browser(size=size, virtual_time=virtual_time) as browser:
        browser.goto(url_or_path, budget_ms=budget_ms)
        return browser.page()


def screenshot(url_or_path, out_png, size=DEFAULT_SIZE, budget_ms=1000, virtual_time=True):
    """Loads a page as :func:`load` does and saves a ``size`` (width, height) PNG of it at ``out_png``; its Page."""
    with Browser(size=size, virtual_time=virtual_time) as browser:
        browser.goto(url_or_path, budget_ms=budget_ms)
        browser.screenshot(out_png)
        return browser.page()


def is_blank(png):
    """Whether every pixel of a PNG file has one colour (an empty page, a canvas that drew nothing)."""
    with Image.open(png) as image:
        return image.convert("RGBA").getcolors(maxcolors=1) is not None
