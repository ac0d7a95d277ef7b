"""The local page where a person plays a ``PlaySession`` (``agents.replays.play``): a standard-library HTTP server
bound to 127.0.0.1 only.

    server = PlayServer(PlaySession("baseline:ppo_small-v1"), out="runs/play.json")   # port 0: a free one
    server.start()                  # serves in a thread; server.url is http://127.0.0.1:PORT/
    ...
    server.close()

``GET /``: the page (one HTML file, its script and style inline, nothing fetched from elsewhere). ``GET /state``:
the session's ``view()`` as JSON, plus ``saved`` (the record's path once the game is over and saved), ``viewer``
(its HTML replay, when written) and ``save_error``. ``POST /act`` with ``{"action": ID, "step": STEP, "session":
TOKEN}``: the new view, or ``{"error": ...}`` with 400 (malformed, illegal action), 403 (a wrong token: the page
of this server carries it, another site's page cannot read it), 409 (``step`` is not the current step: a repeated
post, or another tab acted first), 413 (a body over 64 KB), 400 for JSON nested too deeply to parse, 408 for a
body that does not arrive within ``read_timeout`` seconds (a Content-Length larger than what is sent). Every
connection has that read timeout, and at most ``max_connections`` are served at once: one more is answered 503
and closed. Requests for another host name than 127.0.0.1 or localhost are refused (403: DNS rebinding). One lock
serialises the actions: two tabs play the same game, and a closed tab leaves the game waiting. At the game's end
the record is written to ``out`` (``format.write``) before the answer to the action that ended it.
"""

from __future__ import annotations

import hmac
import json
import secrets
import socket
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from agents.replays import format as replay_format
from agents.replays.play import PlaySession, StaleStepError

HOST = "127.0.0.1"
MAX_BODY = 64 * 1024
#: seconds a connection may stay silent (its request line, headers or body) before it is answered or dropped
READ_TIMEOUT_S = 10.0
#: connections served at once; one more is answered 503 and closed
MAX_CONNECTIONS = 16


class PlayServer:
    """Serves ``session`` on 127.0.0.1:``port`` (0: a free port; ``url`` says which) and saves its record to
    ``out`` once the game is over. ``fights``: the record holds every fight tick by tick. ``read_timeout``
    (seconds) and ``max_connections``: the module docstring."""

    def __init__(
        self,
        session: PlaySession,
        out,
        port: int = 0,
        fights: bool = True,
        read_timeout: float = READ_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
    ):
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"port must be an int in [0, 65535] (0: a free one), got {port!r}")
        if not read_timeout > 0:
            raise ValueError(f"read_timeout must be > 0 seconds, got {read_timeout!r}")
        if isinstance(max_connections, bool) or not isinstance(max_connections, int) or max_connections < 1:
            raise ValueError(f"max_connections must be an int >= 1, got {max_connections!r}")
        self.session, self.out, self.fights = session, Path(out), fights
        self.token = secrets.token_urlsafe(16)
        self.saved = self.viewer = self.save_error = None
        self._lock = threading.Lock()
        self._thread = None
        self.httpd = _Server((HOST, port), _handler(self, read_timeout), max_connections)
        self.port = self.httpd.server_address[1]
        self.url = f"http://{HOST}:{self.port}/"

    def start(self) -> None:
        """Serve in a daemon thread."""
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="play-server", daemon=True)
        self._thread.start()

    def serve_forever(self) -> None:
        """Serve in this thread until ``close`` (from another thread) or KeyboardInterrupt."""
        self.httpd.serve_forever()

    def close(self) -> None:
        """Stop serving and release the port."""
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join()
        self.httpd.server_close()

    def state(self) -> dict:
        """The session's view with where its record went."""
        return {**self.session.view(), "saved": self.saved, "viewer": self.viewer, "save_error": self.save_error}

    def act(self, body: dict) -> tuple[int, dict]:
        """(HTTP status, JSON answer) of a ``POST /act`` body (a parsed JSON object)."""
        if not isinstance(body.get("session"), str) or not hmac.compare_digest(body["session"], self.token):
            return HTTPStatus.FORBIDDEN, {"error": "session: not this game's token (reload the page)"}
        if "action" not in body or "step" not in body:
            return HTTPStatus.BAD_REQUEST, {"error": "a move needs 'action' (an action id) and 'step' (the view's)"}
        with self._lock:
            try:
                self.session.act(body["action"], step=body["step"])
            except StaleStepError as err:
                return HTTPStatus.CONFLICT, {"error": str(err), "step": self.session.step}
            except ValueError as err:
                return HTTPStatus.BAD_REQUEST, {"error": str(err)}
            if self.session.done and self.saved is None and self.save_error is None:
                self._save()
            return HTTPStatus.OK, self.state()

    def _save(self) -> None:
        try:
            record = self.session.record(fights=self.fights)
            replay_format.write(record, self.out)
            self.saved = str(self.out)
            self.viewer = _write_viewer(record, self.out)
        except (OSError, ValueError) as err:
            self.save_error = f"{self.out}: {err}"


def _write_viewer(record: dict, out: Path) -> str | None:
    """The replay viewer's HTML of ``record`` beside ``out`` (``.html``), where the viewer module exists."""
    try:
        from agents.replays import viewer
    except ImportError:
        return None
    write_html = getattr(viewer, "write_html", None)
    if write_html is None:
        return None
    path = out.with_suffix(".html")
    try:
        write_html(record, path)
    except (OSError, ValueError, TypeError):
        return None
    return str(path)


_BUSY = json.dumps({"error": "too many connections at once; try again"}).encode()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, handler, max_connections: int):
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(max_connections)

    def process_request(self, request, client_address):
        if not self._slots.acquire(blocking=False):  # every slot is held: answer 503 here, spawn no thread
            try:
                request.sendall(
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                    b"Connection: close\r\nContent-Length: " + str(len(_BUSY)).encode() + b"\r\n\r\n" + _BUSY
                )
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request, client_address):
        pass  # a tab closed mid-answer (a broken pipe): nothing to report, the game waits


def _handler(server: PlayServer, read_timeout: float = READ_TIMEOUT_S):
    class Handler(BaseHTTPRequestHandler):
        server_version = "jaxgame-play"
        timeout = read_timeout  # every read of the connection: a silent client is dropped, its thread freed

        def log_message(self, format, *args):  # noqa: A002 (the base class's name)
            pass

        def _host_ok(self) -> bool:
            host = (self.headers.get("Host") or "").rsplit(":", 1)[0].strip("[]").lower()
            if host in (HOST, "localhost"):
                return True
            self._send_json(HTTPStatus.FORBIDDEN, {"error": f"host {host!r}: this server answers 127.0.0.1 only"})
            return False

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header(
                "Content-Security-Policy",
                "default-src 'none'; script-src 'unsafe-inline'; "
                "style-src 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'",
            )
            self.end_headers()
            self.wfile.write(body)

        def _send_json(self, status: int, payload: dict) -> None:
            self._send(status, json.dumps(payload).encode(), "application/json")

        def do_GET(self):  # noqa: N802 (http.server's name)
            if not self._host_ok():
                return
            path = self.path.split("?", 1)[0]
            if path == "/":
                self._send(HTTPStatus.OK, page(server.token).encode(), "text/html; charset=utf-8")
            elif path == "/state":
                self._send_json(HTTPStatus.OK, server.state())
            else:
                self._send_json(HTTPStatus.NOT_FOUND, {"error": f"{path}: not here (/ the page, /state, /act)"})

        def do_POST(self):  # noqa: N802
            if not self._host_ok():
                return
            if self.path.split("?", 1)[0] != "/act":
                self._send_json(HTTPStatus.NOT_FOUND, {"error": f"{self.path}: POST /act only"})
                return
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            if not 0 <= length <= MAX_BODY:
                self.close_connection = True
                self._send_json(
                    HTTPStatus.REQUEST_ENTITY_TOO_LARGE if length > MAX_BODY else HTTPStatus.BAD_REQUEST,
                    {"error": f"a body of 0..{MAX_BODY} bytes, got Content-Length {length}"},
                )
                return
            try:
                raw = self.rfile.read(length)
            except (TimeoutError, socket.timeout):
                self.close_connection = True
                message = f"the body did not arrive within {read_timeout:g} s (Content-Length {length})"
                self._send_json(HTTPStatus.REQUEST_TIMEOUT, {"error": message})
                return
            if len(raw) < length:  # the client closed the connection mid-body
                self.close_connection = True
                return
            try:
                body = json.loads(raw or b"null")
            except RecursionError:
                self._send_json(HTTPStatus.BAD_REQUEST, {"error": "the body is JSON nested too deeply to read"})
                return
            except (ValueError, UnicodeDecodeError) as err:
                self._send_json(HTTPStatus.BAD_REQUEST, {"error": f"the body is not JSON: {err}"})
                return
            if not isinstance(body, dict):
                self._send_json(HTTPStatus.BAD_REQUEST, {"error": "the body must be a JSON object"})
                return
            self._send_json(*server.act(body))

        def do_PUT(self):  # noqa: N802
            self._send_json(HTTPStatus.METHOD_NOT_ALLOWED, {"error": "GET / or /state, POST /act"})

        do_DELETE = do_PATCH = do_PUT  # noqa: N815

    return Handler


def page(token: str) -> str:
    """The play page with this server's ``token``."""
    return _PAGE.replace("__TOKEN__", json.dumps(token))


_PAGE = r"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>jaxgame: your seat</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; background: #f4f1ea; color: #222; }
header { background: #2d3a4a; color: #fff; padding: 8px 16px; display: flex; gap: 24px; align-items: baseline; }
header h1 { font-size: 18px; margin: 0; }
main { display: grid; grid-template-columns: minmax(420px, 1fr) minmax(320px, 1fr) minmax(300px, 1fr); gap: 16px;
       padding: 12px 16px; }
section { background: #fff; border-radius: 6px; padding: 8px 12px; box-shadow: 0 1px 2px #0002; }
h2, h3 { margin: 6px 0; font-size: 15px; }
table { border-collapse: collapse; }
td, th { border: 1px solid #ccc; padding: 2px 4px; text-align: center; }
#board td, .slots span { width: 64px; height: 30px; font-size: 11px; }
.slots { display: flex; gap: 4px; flex-wrap: wrap; }
.slots span { display: inline-block; border: 1px solid #ccc; border-radius: 4px; padding: 2px; text-align: center; }
.unit { background: #e6f0d8; }
button.action { margin: 2px; padding: 3px 8px; border: 1px solid #567; border-radius: 4px; background: #e8eef5;
                cursor: pointer; font-size: 12px; }
button.action:hover { background: #cfe0f0; }
button.action[data-kind="end"] { background: #ffd98a; font-weight: bold; }
button.action:disabled { opacity: 0.5; cursor: wait; }
#error { background: #fdd; color: #700; padding: 6px 16px; }
#over { background: #fff6d5; margin: 12px 16px; }
.out { color: #999; }
.me { font-weight: bold; }
.small { font-size: 12px; color: #555; }
</style></head>
<body>
<header><h1>jaxgame: your seat</h1><span id="status">loading ...</span></header>
<div id="error" role="alert" hidden></div>
<section id="over" hidden><h2>Game over</h2><p id="result"></p><table id="placements"></table>
  <p id="saved"></p></section>
<main>
<section id="me"><h2>You</h2><div id="stats"></div>
  <h3>Board <span class="small">(row 0 is the front)</span></h3><table id="board"></table>
  <h3>Bench</h3><div id="bench" class="slots"></div>
  <h3>Shop</h3><div id="shop" class="slots"></div>
  <h3>Synergies</h3><div id="synergy" class="small"></div></section>
<section id="actions"><h2>Your move</h2><div id="moves"></div></section>
<section id="others"><h2>The other seats</h2><table id="seats"></table>
  <h3>Last step</h3><ul id="last" class="small"></ul></section>
</main>
<script>
"use strict";
const TOKEN = __TOKEN__;
const RESULTS = ["", "won", "lost", "draw"];
let view = null, busy = false;

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") e.textContent = v; else if (k.startsWith("data-")) e.setAttribute(k, v); else e[k] = v;
  }
  for (const c of children) e.append(c);
  return e;
}
function unitText(u) { return u ? u.name + " " + "\u2605".repeat(u.stars) : ""; }
function unitsText(s) {
  const units = s.board.flat().filter(Boolean).map(unitText);
  return units.length ? units.join(", ") : "(empty board)";
}
function showError(text) { const e = document.getElementById("error"); e.textContent = text; e.hidden = !text; }

async function load() {
  try {
    const r = await fetch("/state", {cache: "no-store"});
    show(await r.json());
  } catch (e) { showError("the game server does not answer (" + e + "); is it still running?"); }
}

async function act(id) {
  if (busy || !view) return;
  busy = true;
  document.querySelectorAll("button.action").forEach(b => { b.disabled = true; });
  try {
    const r = await fetch("/act", {method: "POST", headers: {"Content-Type": "application/json"},
                                   body: JSON.stringify({action: id, step: view.step, session: TOKEN})});
    const body = await r.json();
    busy = false;
    if (r.ok) { showError(""); show(body); } else { showError(body.error || ("HTTP " + r.status)); await load(); }
  } catch (e) {
    busy = false;
    showError("the game server does not answer (" + e + "); is it still running?");
    if (view) show(view);
  }
}

function button(a, text) {
  const b = el("button", {className: "action", text: text || a.label, title: a.label, "data-action": a.id,
                          "data-kind": a.kind});
  b.addEventListener("click", () => act(a.id));
  return b;
}

function showMoves(v) {
  const moves = document.getElementById("moves");
  moves.replaceChildren();
  if (v.done) { moves.append(el("p", {text: "The game is over."})); return; }
  const by = {};
  for (const a of v.legal) (by[a.kind] = by[a.kind] || []).push(a);
  const general = ["end", "reroll", "xp", "lock"].flatMap(k => by[k] || []);
  moves.append(el("div", {}, ...general.map(a => button(a))));
  for (const [kind, title] of [["buy", "Buy"], ["sell", "Sell"], ["recall", "Recall to the bench"]]) {
    if (by[kind]) moves.append(el("h3", {text: title}), el("div", {}, ...by[kind].map(a => button(a))));
  }
  if (by.place) {
    moves.append(el("h3", {text: "Place a bench unit on the board"}));
    const rows = {};
    for (const a of by.place) {
      const bench = Math.floor((a.id - 42) / 24), cell = (a.id - 42) % 24;
      (rows[bench] = rows[bench] || []).push(button(a, "r" + Math.floor(cell / 8) + "c" + (cell % 8)));
    }
    for (const [bench, buttons] of Object.entries(rows)) {
      moves.append(el("div", {}, el("span", {className: "small", text: unitText(v.you.bench[bench]) + " (bench " +
                                                                        bench + ") \u2192 "}), ...buttons));
    }
  }
}

function show(v) {
  view = v;
  document.body.dataset.step = v.step;
  document.body.dataset.done = v.done ? "1" : "0";
  const you = v.you;
  document.getElementById("status").textContent = (v.done
    ? "the game is over after round " + v.round + " (" + v.step + " steps played)"
    : "round " + v.round + "/" + v.max_rounds + ", step " + Math.min(v.step_in_round + 1, v.steps_per_round) + "/" +
      v.steps_per_round + " of the round (" + v.step + " played)") + " \u00b7 seat " + v.seat;
  document.getElementById("stats").textContent = "life " + you.life + " \u00b7 gold " + you.gold + " \u00b7 level " +
    you.level + " (xp " + you.xp + ") \u00b7 streak " + you.streak + (you.turn_ended ? " \u00b7 turn ended" : "") +
    (you.alive ? "" : " \u00b7 out of the game") + (you.shop_locked ? " \u00b7 shop locked" : "");
  const board = document.getElementById("board");
  board.replaceChildren(...you.board.map(row => el("tr", {}, ...row.map(u =>
    el("td", {className: u ? "unit" : "", text: unitText(u)})))));
  document.getElementById("bench").replaceChildren(...you.bench.map(u =>
    el("span", {className: u ? "unit" : "", text: unitText(u)})));
  document.getElementById("shop").replaceChildren(...you.shop.map(o =>
    el("span", {className: o ? "unit" : "", text: o ? o.name + " (" + o.cost + "g)" : "sold"})));
  document.getElementById("synergy").textContent = you.synergy.map((lvl, i) => lvl ? v.types[i] + " " + lvl : "")
    .filter(Boolean).join(", ") || "none active";
  const seats = document.getElementById("seats");
  seats.replaceChildren(el("tr", {}, ...["seat", "player", "life", "level", "gold", "last fight", "board"].map(h =>
    el("th", {text: h}))));
  for (const s of v.others) {
    seats.append(el("tr", {className: s.alive ? "" : "out", "data-seat": s.seat},
      el("td", {text: s.seat}), el("td", {text: s.player}), el("td", {className: "life", text: s.life}),
      el("td", {text: s.level}), el("td", {text: s.gold}),
      el("td", {text: RESULTS[s.last_result] + (s.last_opponent >= 0 ? " vs " + s.last_opponent : "")}),
      el("td", {className: "small", text: s.alive ? unitsText(s) : "out, place " + s.rank})));
  }
  document.getElementById("last").replaceChildren(...(v.last_actions || []).map(a =>
    el("li", {className: a.seat === v.seat ? "me" : "", text: "seat " + a.seat + ": " + a.label})));
  showMoves(v);
  const over = document.getElementById("over");
  over.hidden = !v.done;
  if (v.done) {
    const order = v.placements.map((p, s) => [p, s]).sort((a, b) => a[0] - b[0]);
    const names = {};
    for (const s of v.others) names[s.seat] = s.player;
    names[v.seat] = "you";
    document.getElementById("result").textContent = v.finished ?
      "You placed " + v.placements[v.seat] + " of 8." : "The game reached its step limit unfinished.";
    document.getElementById("placements").replaceChildren(el("tr", {}, el("th", {text: "place"}),
      el("th", {text: "seat"}), el("th", {text: "player"})), ...order.map(([p, s]) =>
      el("tr", {className: s === v.seat ? "me" : "", "data-seat": s}, el("td", {className: "place", text: p}),
         el("td", {text: s}), el("td", {text: names[s]}))));
    document.getElementById("saved").textContent = v.saved ? "The game is saved as a replay: " + v.saved +
      (v.viewer ? " (viewer: " + v.viewer + ")" : "") : (v.save_error ? "Not saved: " + v.save_error : "");
  }
}

window.addEventListener("focus", () => { if (!busy) load(); });
load();
</script>
</body></html>
"""

__all__ = ["HOST", "MAX_BODY", "PlayServer", "page"]
