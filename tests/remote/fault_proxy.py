"""A loopback HTTP proxy in front of moto that injects faults (see ``FaultProxy``).

Tests read a corpus through it: every request is forwarded, and a test's ``rule(method,
path)`` may answer 503 ``SlowDown`` ("throttle"), 403 ("deny"), cut a range answer short
("short"), flip a byte ("corrupt", "garble"), delay it ("slow") or hold it until the test
sets ``gate`` ("hold").
"""

from __future__ import annotations

import http.client
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

__all__ = ["FaultProxy"]

_SLOWDOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message><RequestId>1</RequestId></Error>"
)
_DENIED = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code>'
    b"<Message>Access Denied</Message><RequestId>1</RequestId></Error>"
)


class FaultProxy:
    """Forwards HTTP requests to ``upstream``; ``rule(method, path)`` picks a fault or None."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.rule: Callable[[str, str], str | None] = lambda method, path: None
        self.log: list[tuple[str, str, str | None]] = []
        self.headers: list[dict[str, str]] = []  # each request's headers (lower-case names)
        self.in_flight = self.most_in_flight = 0
        self.gate = threading.Event()  # what "hold" requests wait for
        self.held = 0  # "hold" requests that arrived
        self.answered: list[str] = []  # paths answered, in order
        self._count = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                proxy.handle(self)

            do_HEAD = do_GET

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def endpoint(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def requests(self, method: str, name: str) -> int:
        """How many ``method`` requests for a path ending with ``name`` came through."""
        return sum(1 for m, p, _ in self.log if m == method and p.split("?")[0].endswith(name))

    def handle(self, h: BaseHTTPRequestHandler) -> None:
        action = self.rule(h.command, h.path)
        self.log.append((h.command, h.path, action))
        self.headers.append({k.lower(): v for k, v in h.headers.items()})
        if action == "hold":  # answered once the test opens the gate
            with self._count:
                self.held += 1
            self.gate.wait(60)
        if action in ("throttle", "deny"):
            body = _SLOWDOWN if action == "throttle" else _DENIED
            self._reply(h, 503 if action == "throttle" else 403, [], body)
            return
        with self._count:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if action == "slow":
                time.sleep(0.3)
            self._forward(h, action)
            self.answered.append(h.path.split("?")[0])
        finally:
            with self._count:
                self.in_flight -= 1

    def _forward(self, h: BaseHTTPRequestHandler, action: str | None) -> None:
        conn = http.client.HTTPConnection(*self.upstream, timeout=30)
        try:
            conn.request(h.command, h.path, headers=dict(h.headers))
            resp = conn.getresponse()
            data = resp.read()
            headers = resp.getheaders()
        finally:
            conn.close()
        if action in ("short", "garble"):  # no checksum header: only the length tells
            headers = [(k, v) for k, v in headers if not k.lower().startswith("x-amz-checksum")]
        if action == "short" and len(data) > 1:
            data = data[: len(data) // 2]
        elif action in ("corrupt", "garble") and data:
            mid = len(data) // 2
            data = data[:mid] + bytes([data[mid] ^ 0xFF]) + data[mid + 1 :]
        self._reply(h, resp.status, headers, data)

    @staticmethod
    def _reply(
        h: BaseHTTPRequestHandler, status: int, headers: list[tuple[str, str]], data: bytes
    ) -> None:
        h.send_response(status)
        skip = {"content-length", "transfer-encoding", "connection", "server", "date"}
        for k, v in headers:
            if k.lower() not in skip:
                h.send_header(k, v)
        if h.command == "HEAD":
            h.send_header("Content-Length", dict(headers).get("Content-Length", "0"))
            h.end_headers()
            return
        h.send_header("Content-Length", str(len(data)))
        if status >= 400:
            h.send_header("Content-Type", "application/xml")
        h.end_headers()
        h.wfile.write(data)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
