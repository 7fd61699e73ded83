"""A small asyncio HTTP proxy that adds a fixed latency to every request (the remote benchmark's
stand-in for a far server): ``python -m benchmarks.latency_proxy UPSTREAM_URL [--delay-ms 20]``
prints its own URL and forwards until killed.

Each client connection gets its own upstream connection (HTTP/1.1 keep-alive both ways); every
request waits ``delay`` before it is forwarded, so N requests in flight on N connections cost
one delay, N requests one after another N delays — as latency does.  Only what the benchmark
sends is handled: GET and HEAD without a body, responses with ``Content-Length``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from urllib.parse import urlsplit


async def _read_head(reader: asyncio.StreamReader) -> bytes | None:
    try:
        return await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    return 0


async def _serve(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter, host: str,
                 port: int, delay: float) -> None:
    up_r, up_w = await asyncio.open_connection(host, port)
    try:
        while True:
            head = await _read_head(client_r)
            if head is None:
                return
            await asyncio.sleep(delay)
            up_w.write(head)
            await up_w.drain()
            reply = await _read_head(up_r)
            if reply is None:
                return
            client_w.write(reply)
            if not head.startswith(b"HEAD "):
                n = _content_length(reply)
                while n > 0:
                    chunk = await up_r.read(min(n, 1 << 20))
                    if not chunk:
                        return
                    client_w.write(chunk)
                    n -= len(chunk)
            await client_w.drain()
    except ConnectionError:
        return
    finally:
        up_w.close()
        client_w.close()


async def run(upstream: str, delay: float, port: int = 0) -> None:
    parts = urlsplit(upstream)
    host, up_port = parts.hostname or "127.0.0.1", parts.port or 80

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await _serve(r, w, host, up_port, delay)

    server = await asyncio.start_server(handle, "127.0.0.1", port)
    bound = server.sockets[0].getsockname()
    print(f"http://{bound[0]}:{bound[1]}", flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.latency_proxy")
    p.add_argument("upstream")
    p.add_argument("--delay-ms", type=float, default=20.0)
    args = p.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run(args.upstream, args.delay_ms / 1000.0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
