"""Errors of remote reading: one family, ``RemoteError`` (a ``FormatError``).

Every failure to fetch bytes from a server, after the store's retries, is a ``RemoteError``: a
timeout, a refused, reset or dropped connection, a body cut short, an answer for other bytes
than were asked for (a wrong ``Content-Range``), a 5xx or a 4xx other than 404 (S3's
``AccessDenied`` among them).  A 404 is ``FileNotFoundError``, as for a missing local file:
the object is proven absent.  Each names the URL, the byte range asked for and, once a format
handed it on (``FormatError.at``), the chunk or block it was about; ``status`` is the HTTP
status of the last answer (None: no answer).

``RemoteIOError`` is what a remote ``Store`` raises: a ``RemoteError`` and also an ``OSError``,
so that code written for stores in general (``except OSError``) still sees a failed read,
while every caller of ``open_volume``, ``Volume.read``, ``info`` or ``compare`` sees a
``FormatError``.  A verdict counts a chunk whose read failed with a ``RemoteError`` as *not
checked* (never as damaged, never as valid).

``RangeNotSupportedError`` names a server that answers a range request with the whole object
(status 200, no ``Content-Range``): reading a dataset through it would download every file
whole, so it is refused.
"""

from __future__ import annotations

import re

from viewer.format.errors import FormatError, RemoteError


class RemoteIOError(RemoteError, OSError):
    """What a remote store raises for a request that failed for good (see the module
    docstring): a ``RemoteError`` that ``except OSError`` catches too."""

    def __init__(self, message: str, url: str, status: int | None = None,
                 byte_range: tuple[int, int] | None = None) -> None:
        RemoteError.__init__(self, message, url, status=status, byte_range=byte_range)
        self.strerror = message

    __str__ = FormatError.__str__
    __reduce__ = FormatError.__reduce__


class RangeNotSupportedError(RemoteError):
    """The server ignores ``Range`` (answers with the whole object): see the module docstring."""


_STATUS = re.compile(r"(?:status(?: code)?:?\s*)(\d{3})", re.IGNORECASE)
_SHIFTED = re.compile(r"Requested (\d+\.\.\d+), got (\d+\.\.\d+)")
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
        shifted = _SHIFTED.search(text)
        if shifted is not None:
            head = (f"the server answered with other bytes ({shifted.group(2)}) than asked "
                    f"for ({shifted.group(1)}): wrong Content-Range")
        elif "incompletebody" in lower or "body error" in lower:
            head = "the answer's body was cut short (connection closed before its end)"
        elif "connection reset" in lower or "connectionreset" in lower:
            head = "connection reset"
        elif "connection refused" in lower or "connectionrefused" in lower:
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
