"""A fault-injecting HTTP server in front of an S3 server (moto) for the conformance matrix, on
127.0.0.1 only: every request is passed to moto's S3 application as it came (signed for the
proxy's address; moto does not check signatures) and its answer passed back, unless a fault is
due.  The application is called in this process (``upstream``: a WSGI application, moto's S3
one, whose buckets are those of every moto server of the process), not through a second HTTP
connection to a moto server: the answers are the same, each request costs one HTTP exchange
instead of two and skips moto's choice of a service by the request's host.

Faults, for requests whose path holds ``fault_match`` and whose range starts at or after
``fault_from`` (as ``tests/remote/range_server.py`` aims them): ``fail_next`` answers that many
with ``fail_status`` and S3's error document (``fail_code``: ``InternalError`` for 500,
``SlowDown`` for 503, as S3 throttles); ``cut_next`` sends the right head but half the body,
then closes the connection; ``reset_next`` resets the connection (TCP RST) before answering;
``etag_next`` answers with the object's bytes under an ETag of another version each time (a
server whose replicas disagree)."""

from __future__ import annotations

import itertools
import re
import socket
import struct
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from werkzeug.test import EnvironBuilder, run_wsgi_app

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")
#: Headers that belong to one connection, not to the answer.
_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te", "trailer",
        "upgrade"}


class FaultProxy(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, upstream: Callable[..., Any]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.upstream = upstream
        self.lock = threading.Lock()
        self.requests = 0
        self.fail_next = 0
        self.fail_status = 500
        self.fail_code = "InternalError"
        self.cut_next = 0
        self.reset_next = 0
        self.etag_next = 0
        self.fault_match: str | None = None
        self.fault_from = 0
        self._versions = itertools.count(1)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FaultProxy:
        self._thread = threading.Thread(target=self.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True,
                                        name="fault-proxy")
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def other_etag(self) -> str:
        return f'"other-version-{next(self._versions)}"'


class _Handler(BaseHTTPRequestHandler):
    server: FaultProxy
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass

    def do_GET(self) -> None:  # noqa: N802
        self._pass()

    def do_HEAD(self) -> None:  # noqa: N802
        self._pass()

    def _faults(self) -> dict[str, bool]:
        srv = self.server
        asked = _RANGE.match((self.headers.get("Range") or "").strip())
        first = int(asked.group(1)) if asked is not None and asked.group(1) else 0
        targeted = (srv.fault_match is None or srv.fault_match in self.path) \
            and first >= srv.fault_from
        body = self.command == "GET"
        out = {}
        with srv.lock:
            srv.requests += 1
            for name in ("fail_next", "reset_next", "cut_next", "etag_next"):
                due = getattr(srv, name) > 0 and targeted and not any(out.values()) and \
                    (body or name in ("fail_next", "reset_next"))
                if due:
                    setattr(srv, name, getattr(srv, name) - 1)
                out[name] = due
        return out

    def _pass(self) -> None:
        srv = self.server
        faults = self._faults()
        if faults["reset_next"]:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return
        if faults["fail_next"]:
            doc = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{srv.fail_code}</Code>'
                   f"<Message>injected</Message></Error>").encode()
            self.send_response(srv.fail_status)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(doc) if self.command == "GET" else 0))
            self.end_headers()
            if self.command == "GET":
                self.wfile.write(doc)
            return
        headers = [(k, v) for k, v in self.headers.items() if k.lower() not in _HOP]
        environ = EnvironBuilder(path=self.path, method=self.command, headers=headers,
                                 environ_overrides={"REMOTE_ADDR": self.client_address[0]}
                                 ).get_environ()
        body, status_line, answer = run_wsgi_app(srv.upstream, environ, buffered=True)
        try:
            data = b"".join(body)
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()
        self.send_response(int(status_line.split(" ", 1)[0]))
        for k, v in answer.items():
            if k.lower() in _HOP or k.lower() == "content-length":
                continue
            if k.lower() == "etag" and faults["etag_next"]:
                v = srv.other_etag()
            self.send_header(k, v)
        length = int(answer.get("Content-Length") or len(data)) \
            if self.command == "HEAD" else len(data)
        self.send_header("Content-Length", str(length))
        self.end_headers()
        if self.command != "GET":
            return
        if faults["cut_next"]:
            data = data[:len(data) // 2]
            self.close_connection = True
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            return
