"""A timeline of remote reading, for finding what a slow jump waited for.

Off unless started: ``start()`` begins recording, ``stop()`` ends it and returns the events.
While on, the request pool notes every request as it is queued, sent to the wire and done
(bytes, or failed, or cancelled), and the WKW units note when their header and jump table
were asked for and waited on, and when blocks were read and hinted; a caller (the remote
benchmark) adds its own marks (``mark``: a jump began, the views completed).  Off, each hook
costs one test of a module global.

An event is ``(t, thread, what, key, start, end, nbytes, note)``: seconds since ``start()``,
the thread's name, the kind of event, the object's key and byte range when it has one.
``format_events`` prints them as a table; ``requests`` pairs each request's queued, sent and
done times.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Event:
    t: float  #: seconds since ``start()``
    thread: str
    what: str  #: queued, sent, done, failed, cancelled, dropped; unit-open, table-wait, ...
    key: str = ""
    start: int | None = None
    end: int | None = None
    nbytes: int = 0
    note: str = ""
    job: int = 0  #: the request's own number (a request grows while queued: its range too)


class _Recorder:
    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.lock = threading.Lock()
        self.events: list[Event] = []


_active: _Recorder | None = None


def start() -> None:
    """Begin recording (dropping what an earlier recording held)."""
    global _active
    _active = _Recorder()


def stop() -> list[Event]:
    """End recording; the events recorded, in time order."""
    global _active
    rec, _active = _active, None
    if rec is None:
        return []
    with rec.lock:
        return sorted(rec.events, key=lambda e: e.t)


def recording() -> bool:
    return _active is not None


def mark(what: str, key: str = "", start: int | None = None, end: int | None = None,
         nbytes: int = 0, note: str = "", job: object = None) -> None:
    """Note an event now (nothing when not recording); ``job``: the request it is about.
    Any thread."""
    rec = _active
    if rec is None:
        return
    ev = Event(time.perf_counter() - rec.t0, threading.current_thread().name, what, key,
               start, end, nbytes, note, id(job) if job is not None else 0)
    with rec.lock:
        rec.events.append(ev)


@dataclass(frozen=True)
class Request:
    """One request's life: when it was queued, sent and done (None: not reached)."""

    key: str
    start: int
    end: int
    priority: str
    queued: float
    sent: float | None
    done: float | None
    outcome: str  #: done, failed, cancelled, dropped, or "" (still going)
    nbytes: int


def requests(events: list[Event]) -> list[Request]:
    """The requests of ``events`` (matched by their number), in the order queued; a request
    that grew while queued with the range it was sent with."""
    open_: dict[int, list[dict[str, Any]]] = {}
    out: list[dict[str, Any]] = []
    for ev in events:
        ident = ev.job
        if not ident:
            continue
        if ev.what == "grown":
            for row in open_.get(ident, []):
                row["start"], row["end"] = ev.start or 0, ev.end or 0
        elif ev.what == "queued":
            row = {"key": ev.key, "start": ev.start or 0, "end": ev.end or 0,
                   "priority": ev.note, "queued": ev.t, "sent": None, "done": None,
                   "outcome": "", "nbytes": 0}
            open_.setdefault(ident, []).append(row)
            out.append(row)
        elif ev.what == "sent":
            for row in open_.get(ident, []):
                if row["sent"] is None:
                    row["sent"] = ev.t
                    break
        elif ev.what in ("done", "failed", "cancelled", "dropped"):
            rows = open_.get(ident, [])
            for row in rows:
                if row["done"] is None:
                    row["done"], row["outcome"], row["nbytes"] = ev.t, ev.what, ev.nbytes
                    rows.remove(row)
                    break
    return [Request(**row) for row in out]


def format_events(events: list[Event], since: float = 0.0) -> str:
    """The events as a table (times in ms from ``since``)."""
    lines = [f"{'ms':>8} {'thread':<22} {'what':<12} {'key':<16} {'range':<23} "
             f"{'bytes':>8} note"]
    for ev in events:
        rng = "" if ev.start is None else f"{ev.start}-{ev.end if ev.end is not None else ''}"
        lines.append(f"{(ev.t - since) * 1e3:8.1f} {ev.thread[:22]:<22} {ev.what:<12} "
                     f"{ev.key[-16:]:<16} {rng:<23} {ev.nbytes or '':>8} {ev.note}")
    return "\n".join(lines)


__all__ = ["Event", "Request", "start", "stop", "recording", "mark", "requests",
           "format_events"]
