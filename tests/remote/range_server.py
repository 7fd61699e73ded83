"""A small range-capable HTTP server for the remote tests and benchmarks, on 127.0.0.1 only.

It serves the files below ``root`` (GET and HEAD; ``Range: bytes=a-b``, ``bytes=a-`` and
``bytes=-n``, one range per request) and counts requests and bytes sent.  Faults, for tests:
``fail_next`` answers that many requests with 500 before serving again; ``hang`` makes every
request wait (until ``release()`` or ``hang_seconds``) before it answers; ``cut_next`` answers
that many GETs with the right head but half the body, then closes the connection;
``reset_next`` resets that many connections (TCP RST) before answering; ``shift_next``
answers that many range requests with other bytes than asked for (a ``Content-Range`` one byte
later); ``corrupt_next`` flips one byte in the body of that many answers (a server that serves
damage: only a format's checksum can tell).  All of these only for paths holding
``fault_match`` when it is set.  ``ignore_range`` answers every GET with the whole file and
200, as a server without range support does.  Answers carry an ``ETag`` made of the file's
inode, modification time and size (``etags``; off: a server that names no versions);
with ``last_modified`` also a ``Last-Modified`` (whole seconds), as nginx and Apache send.
"""

from __future__ import annotations

import email.utils
import os
import re
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


class RangeServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    #: Connections waiting to be accepted (the default 5 drops bursts of new connections, and
    #: the client then waits a second to retry).
    request_queue_size = 256

    def __init__(self, root: str, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.root = os.path.abspath(root)
        self.lock = threading.Lock()
        self.requests = 0
        self.bytes_sent = 0
        self.log: list[tuple[str, str, str | None]] = []  # (method, path, range header)
        self.fail_next = 0
        self.fail_status = 500
        self.cut_next = 0
        self.reset_next = 0
        self.shift_next = 0
        self.corrupt_next = 0
        self.ignore_range = False
        #: Answers name the file's version in an ``ETag`` header.
        self.etags = True
        #: Answers carry the file's ``Last-Modified`` (off by default: the tests write
        #: files and read them at once, which a client would not trust yet).
        self.last_modified = False
        self.hang = False
        self.hang_seconds = 30.0
        #: Only requests whose path holds this hang / fail (None: every request).
        self.fault_match: str | None = None
        #: Only requests for bytes from this offset on hang / fail (a file's data, not its
        #: header: 0, every request).
        self.fault_from = 0
        #: Requests waiting in a hang right now.
        self.hanging = 0
        #: Seconds every request waits before it answers (latency).
        self.delay = 0.0
        self._released = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> RangeServer:
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True, name="range-server")
        self._thread.start()
        return self

    def release(self) -> None:
        """Let hanging requests go (and stop hanging new ones)."""
        self.hang = False
        self._released.set()

    def stop(self) -> None:
        self.release()
        self.shutdown()
        self.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def reset_counts(self) -> None:
        with self.lock:
            self.requests = 0
            self.bytes_sent = 0
            self.log.clear()

    def __enter__(self) -> RangeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    server: RangeServer
    protocol_version = "HTTP/1.1"
    #: TCP_NODELAY: an answer is written as its head, then its body.  With Nagle's algorithm
    #: on, the body of every answer but a connection's first waited for the client's delayed
    #: ACK of the head: ~40 ms per request on Linux, more than the latency the remote
    #: benchmark adds.  Servers in the field (nginx, S3) do not wait so.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass

    def do_HEAD(self) -> None:  # noqa: N802
        self._serve(body=False)

    def do_GET(self) -> None:  # noqa: N802
        self._serve(body=True)

    def _serve(self, body: bool) -> None:
        srv = self.server
        rng = self.headers.get("Range")
        with srv.lock:
            srv.requests += 1
            srv.log.append((self.command, self.path, rng))
            asked = _RANGE.match((rng or "").strip())
            first = int(asked.group(1)) if asked is not None and asked.group(1) else 0
            targeted = (srv.fault_match is None or srv.fault_match in self.path) \
                and first >= srv.fault_from
            fail = srv.fail_next > 0 and targeted
            if fail:
                srv.fail_next -= 1
            hang = srv.hang and targeted
            if hang:
                srv.hanging += 1
            faults = {}
            for name in ("cut_next", "reset_next", "shift_next", "corrupt_next"):
                faults[name] = getattr(srv, name) > 0 and targeted and not fail and \
                    (body or name == "reset_next")
                if faults[name]:
                    setattr(srv, name, getattr(srv, name) - 1)
        if srv.delay:
            time.sleep(srv.delay)
        if hang:
            srv._released.wait(srv.hang_seconds)
            with srv.lock:
                srv.hanging -= 1
        if fail:
            self._empty(srv.fail_status)
            return
        if faults["reset_next"]:
            # SO_LINGER with a zero timeout: close() sends RST, not FIN
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return
        rel = self.path.split("?", 1)[0].lstrip("/")
        path = os.path.normpath(os.path.join(srv.root, *rel.split("/")))
        if not path.startswith(srv.root) or not os.path.isfile(path):
            self._empty(404)
            return
        st = os.stat(path)
        size = st.st_size
        start, end, status = 0, size, 200
        if rng and not srv.ignore_range:
            m = _RANGE.match(rng.strip())
            if m is None or (not m.group(1) and not m.group(2)):
                self._empty(416)
                return
            if m.group(1):
                start = int(m.group(1))
                end = min(int(m.group(2)) + 1, size) if m.group(2) else size
            else:
                start = max(size - int(m.group(2)), 0)
            if start >= size:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status = 206
        if faults["shift_next"] and status == 206:
            start, end = min(start + 1, size - 1), min(end + 1, size)
        self.send_response(status)
        self.send_header("Content-Length", str(end - start))
        self.send_header("Accept-Ranges", "none" if srv.ignore_range else "bytes")
        if srv.etags:  # the file's version, as web servers make it (nginx: mtime and size)
            self.send_header("ETag", f'"{st.st_ino:x}-{st.st_mtime_ns:x}-{size:x}"')
        if srv.last_modified:
            self.send_header("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
        self.end_headers()
        if not body:
            return
        with open(path, "rb") as fh:
            fh.seek(start)
            data = fh.read(end - start)
        if faults["corrupt_next"] and data:
            mid = len(data) // 2
            data = data[:mid] + bytes([data[mid] ^ 0xFF]) + data[mid + 1:]
        if faults["cut_next"]:
            data = data[:len(data) // 2]
            self.close_connection = True
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            return
        with srv.lock:
            srv.bytes_sent += len(data)

    def _empty(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()


def main() -> None:
    """``python range_server.py ROOT [DELAY_S]``: serve ROOT until killed; prints the URL."""
    import sys

    srv = RangeServer(sys.argv[1])
    if len(sys.argv) > 2:
        srv.delay = float(sys.argv[2])
    print(srv.url, flush=True)
    srv.serve_forever(poll_interval=0.2)


if __name__ == "__main__":
    main()
