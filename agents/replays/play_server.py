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
from agents.replays.play_page import page

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
                "style-src 'unsafe-inline'; img-src data:; connect-src 'self'; frame-ancestors 'none'",
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


__all__ = ["HOST", "MAX_BODY", "PlayServer", "page"]
