"""The machinery every fake HTTP API of the tests shares: a scriptable JSON server on loopback.

A stdlib ``ThreadingHTTPServer`` on 127.0.0.1 (a free port) in a background thread answers POSTs
(scripted) and GETs (a subclass's read-only resources, :meth:`get`).
Replies come from the script first (in arrival order), then from a ``responder`` computed from
the request, then from a default. Every request is recorded, the peak number of requests in
flight is tracked, a reply may be delayed (a hang the client must time out on; stopping the
server releases it), and a subclass says what the API refuses (:meth:`refuse`), how a recorded
request looks (:meth:`record`) and how a reply is rendered (:meth:`render`).

A reply is any object with ``status``, ``headers`` and ``delay_s``; the default :meth:`render`
sends its ``body``.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class ScriptedHTTPServer(ABC):
    """Base of the fakes; see the module docstring.

    Args:
        default: the reply when nothing is scripted and there is no responder.
        responder: computes a reply from the recorded request when the script is empty.
    """

    name = "fake-http"
    content_type = "application/json"
    url_suffix = ""  # appended to the base URL (an API's version prefix)

    def __init__(self, *, default: Any, responder: Callable[[Any], Any] | None = None) -> None:
        self.default = default
        self.responder = responder
        self.requests: list[Any] = []
        self.gets: list[str] = []  # every GET's path and query, in arrival order
        self.max_in_flight = 0
        self._in_flight = 0
        self._queue: deque[Any] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ----- what a subclass says about its API -------------------------------------------------
    @abstractmethod
    def record(self, path: str, headers: Mapping[str, str], raw: bytes, received_at: float) -> Any:
        """The recorded request object of one POST."""

    def refuse(self, request: Any) -> Any | None:
        """The error reply for a request the API refuses (bad key, route, model), else None."""
        return None

    def render(self, reply: Any, request: Any) -> bytes:
        """The response body of ``reply`` to ``request``."""
        return reply.body

    def get(self, path: str, query: str, headers: Mapping[str, str]) -> tuple[int, bytes]:
        """``(status, body)`` of a GET; the default API has no readable resources."""
        return 404, b'{"error": {"code": 404, "message": "not found", "status": "NOT_FOUND"}}'

    # ----- lifecycle --------------------------------------------------------------------------
    def start(self) -> Self:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name=self.name, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # releases delayed handlers
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}{self.url_suffix}"

    # ----- scripting --------------------------------------------------------------------------
    def script(self, *replies: Any) -> None:
        """Queue replies, used one per request in arrival order."""
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        """Scripted replies not yet used."""
        with self._lock:
            return len(self._queue)

    def _next_reply(self, request: Any) -> Any:
        with self._lock:
            self.requests.append(request)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            refusal = self.refuse(request)
            if refusal is not None:
                return refusal
            if self._queue:
                return self._queue.popleft()
        return self.responder(request) if self.responder is not None else self.default

    def _done(self) -> None:
        with self._lock:
            self._in_flight -= 1


def _make_handler(fake: ScriptedHTTPServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the real front ends

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            request = fake.record(
                self.path.split("?", 1)[0],
                {k.lower(): v for k, v in self.headers.items()},
                raw,
                time.monotonic(),
            )
            try:
                reply = fake._next_reply(request)
                if reply.delay_s > 0 and fake._stopping.wait(reply.delay_s):
                    return  # server stopping: drop the delayed request
                body = fake.render(reply, request)
                self.send_response(reply.status)
                self.send_header("Content-Type", fake.content_type)
                self.send_header("Content-Length", str(len(body)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (its timeout), as a real client would
            finally:
                fake._done()

        def do_GET(self) -> None:
            path, _, query = self.path.partition("?")
            with fake._lock:
                fake.gets.append(self.path)
            status, body = fake.get(path, query, {k.lower(): v for k, v in self.headers.items()})
            self.send_response(status)
            self.send_header("Content-Type", fake.content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    return Handler
