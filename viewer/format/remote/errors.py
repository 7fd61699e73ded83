"""Errors of remote reading.

``RemoteIOError`` (an ``OSError``) is what a remote ``Store`` raises when a request fails for
good (after its retries): a timeout, a refused or dropped connection, a 5xx or 4xx answer other
than 404 (a 404 is ``FileNotFoundError``, as for a missing local file).  It carries the URL and
the HTTP status when there was one.  Formats turn it into ``RemoteError`` (a ``FormatError``)
for the chunk it was about, so a failed block names its URL, block and byte offset and shows
the status in the status bar.

``RangeNotSupportedError`` names a server that answers a range request with the whole object
(status 200, no ``Content-Range``): reading a dataset through it would download every file
whole, so it is refused.
"""

from __future__ import annotations

import re

from viewer.format.errors import FormatError


class RemoteIOError(OSError):
    """A request that failed for good (see the module docstring)."""

    def __init__(self, message: str, url: str, status: int | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.status = status
        self.strerror = message

    def __str__(self) -> str:
        return f"{self.url}: {self.strerror}"


class RemoteError(FormatError):
    """A chunk or a metadata object that could not be fetched; ``status``: the HTTP status of
    the last answer, None for a timeout or a dropped connection."""

    status: int | None = None

    @classmethod
    def from_io(cls, exc: RemoteIOError, url: str | None = None, block: int | None = None,
                offset: int | None = None) -> RemoteError:
        err = cls(exc.strerror or "request failed", url or exc.url, block=block, offset=offset)
        err.status = exc.status
        return err


class RangeNotSupportedError(RemoteError):
    """The server ignores ``Range`` (answers with the whole object): see the module docstring."""


_STATUS = re.compile(r"(?:status(?: code)?:?\s*)(\d{3})", re.IGNORECASE)
_RETRY_SETTINGS = re.compile(r"retry_timeout:?\s*[\w.]*")


def describe(exc: BaseException) -> tuple[str, int | None]:
    """A short message and the HTTP status (when there is one) of a client library's error:
    its first line, without the library's debug dump."""
    text = str(exc)
    match = _STATUS.search(text)
    status = int(match.group(1)) if match else None
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    if status is not None:
        reason = first.rsplit(f"{status}", 1)[-1].strip(" :") if f"{status}" in first else ""
        head = f"HTTP {status}" + (f" {reason}" if reason else "")
    else:
        # The client's dump names its retry settings ("retry_timeout: 10s") whatever failed:
        # they are no sign of a timeout (a refused connection was named "timed out").
        lower = _RETRY_SETTINGS.sub("", text.lower())
        if "connection refused" in lower or "connectionrefused" in lower:
            head = "connection refused"
        elif "timeout" in lower or "timed out" in lower:
            head = "timed out"
        elif "connect" in lower:
            head = "cannot connect"
        else:
            head = "request failed"
    retries = re.search(r"after (\d+) retries", first)
    if retries:
        head += f" (after {retries.group(1)} retries)"
    return head, status


__all__ = ["RemoteIOError", "RemoteError", "RangeNotSupportedError", "describe"]
