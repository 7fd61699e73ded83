"""A fault-injecting HTTP proxy in front of an S3 server (moto) for the conformance matrix, on
127.0.0.1 only: every request is passed to the server as it came (signed for the proxy's
address; moto does not check signatures) and its answer passed back, unless a fault is due.

Faults, for requests whose path holds ``fault_match`` and whose range starts at or after
``fault_from`` (as ``tests/remote/range_server.py`` aims them): ``fail_next`` answers that many
with ``fail_status`` and S3's error document (``fail_code``: ``InternalError`` for 500,
``SlowDown`` for 503, as S3 throttles); ``cut_next`` sends the right head but half the body,
then closes the connection; ``reset_next`` resets the connection (TCP RST) before answering;
``etag_next`` answers with the object's bytes under an ETag of another version each time (a
server whose replicas disagree)."""

from __future__ import annotations

import http.client
import itertools
import re
import socket
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")
#: Headers that belong to one connection, not to the answer.
_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te", "trailer",
        "upgrade"}


class FaultProxy(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, upstream: tuple[str, int]) -> None:
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
        conn = http.client.HTTPConnection(*srv.upstream, timeout=30)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
            conn.request(self.command, self.path, headers=headers)
            answer = conn.getresponse()
            data = answer.read()
            head = [(k, v) for k, v in answer.getheaders()
                    if k.lower() not in _HOP and k.lower() != "content-length"]
            status = answer.status
        finally:
            conn.close()
        self.send_response(status)
        for k, v in head:
            if k.lower() == "etag" and faults["etag_next"]:
                v = srv.other_etag()
            self.send_header(k, v)
        length = int(answer.getheader("Content-Length") or len(data)) \
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
