"""One runner for background jobs in a child process: submit a work, stream its messages,
cancel it.

A *work* is a picklable callable ``work(emit, cancelled) -> result`` (a frozen dataclass with
``__call__``, defined in an importable module of the Qt-free layers): it calls ``emit(message)``
for each thing worth showing as it goes (a batch of rows, a progress count, a finding), checks
the ``threading.Event`` ``cancelled`` between steps, and returns its result (a summary) or
raises.  ``Job(work, on_message).run()`` runs it in ``python -m viewer.core.jobs`` and calls
``on_message`` with each message on the thread that called ``run``, then returns the result or
raises the work's error.  A job in a child process keeps this process's GIL free: a window's
paints and slots do not wait for thousands of small numpy calls of a scan or a comparison.

When the child cannot run the work (it cannot start, as in a frozen program; it cannot load
the work, as a child of another version; or the work raises ``NotHere``, e.g. a volume of a
format registered only in this process), the work runs on the calling thread instead (or the
``local`` work given for that), with the same messages and the same cancel; ``used_process``
says which ran.

The pipe carries length-prefixed pickles: parent to child the settings of reading (the job's
``ReadConfig``: the child never takes them from its environment) with the parent's import
path, the work, then one byte (or
the end of the pipe) for cancel; child to parent ``("message", m)`` frames, then ``("result", r)``
or ``("error", exc)`` or ``("not_here", why)``.  Only what the work emits travels (summaries,
rows), never a volume.

The Dask-backed jobs (``viewer.core.cluster.ClusterRunner``) have the same three verbs for a
work split into tasks: ``map`` submits them, results stream back as they finish, ``cancel``.

Threads: ``run`` on one thread (a job thread of the caller); ``cancel`` and ``kill`` from any
thread; ``on_message`` is called on the thread that runs ``run`` (a GUI hops to its own thread
with a queued signal before touching widgets).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from typing import IO, Any, Generic, Protocol, TypeVar

from viewer.format import config as read_config
from viewer.format.config import ReadConfig

R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)

#: A frame's length, before its pickle.
HEADER = struct.Struct("<Q")

Emit = Callable[[Any], None]


class Work(Protocol[R_co]):
    """What a job runs: picklable, ``work(emit, cancelled) -> result``."""

    def __call__(self, emit: Emit, cancelled: threading.Event) -> R_co: ...


class NotHere(Exception):  # noqa: N818 - a signal, not a failure
    """Raised by a work in the child to have it run in the parent instead (say why)."""


class JobCancelled(Exception):  # noqa: N818 - an outcome, not a failure
    """``run`` of a job that was killed before it returned a result."""


def processes_available() -> bool:
    """Whether this program can start ``python -m viewer.core.jobs`` (not a frozen bundle)."""
    return not getattr(sys, "frozen", False)


def write_frame(stream: IO[bytes], obj: Any) -> None:
    """One length-prefixed pickle."""
    payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(HEADER.pack(len(payload)))
    stream.write(payload)
    stream.flush()


def read_frames(stream: IO[bytes]) -> Iterator[Any]:
    """The frames of ``stream`` until it ends (or a frame that does not unpickle: a peer of
    another version, taken as silent from there on)."""
    while True:
        head = stream.read(HEADER.size)
        if len(head) < HEADER.size:
            return
        (size,) = HEADER.unpack(head)
        payload = stream.read(size)
        if len(payload) < size:
            return
        try:
            yield pickle.loads(payload)
        except Exception:  # noqa: BLE001
            return


class Job(Generic[R]):
    """Run ``work`` in a child process (``use_process``, where possible) or on the calling
    thread, handing each message it emits to ``on_message``."""

    def __init__(self, work: Work[R], on_message: Callable[[Any], None] | None = None,
                 use_process: bool = True, name: str = "wkw-job",
                 local: Work[R] | None = None, config: ReadConfig | None = None) -> None:
        self.work = work
        #: How the child reads data (handed to it with the work; default: this process's).
        self.config: ReadConfig = config if config is not None else read_config.default()
        #: What runs on the calling thread when the child cannot (default: ``work``; e.g. a
        #: scan of the volume this process has open, where the child would reopen it).
        self.local: Work[R] = local if local is not None else work
        self.on_message = on_message
        self.use_process = use_process and processes_available()
        self.name = name
        #: Whether the last ``run`` ran the work in a child process.
        self.used_process = False
        self._cancel = threading.Event()
        self._killed = False
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._stdin_open = False

    # -- control (any thread) ---------------------------------------------------------------------
    def cancel(self) -> None:
        """Ask the work to stop (its ``cancelled`` is set); it still returns its result."""
        self._cancel.set()
        self._close_stdin(b"c")

    def kill(self) -> None:
        """Stop now: the child is killed (a work on a thread is cancelled); ``run`` raises
        ``JobCancelled`` unless the result was already in."""
        with self._lock:
            self._killed = True
            proc = self._proc
        self.cancel()
        if proc is not None and proc.poll() is None:
            proc.kill()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    # -- running (one thread) ---------------------------------------------------------------------
    def run(self) -> R:
        """The work's result; raises its error, or ``JobCancelled`` after ``kill``."""
        self.used_process = False
        if self.use_process:
            try:
                return self._run_child()
            except NotHere:
                self.used_process = False
        if self._killed:
            raise JobCancelled(self.name)
        return self.local(self._emit, self._cancel)

    def _emit(self, message: Any) -> None:
        if self.on_message is not None and not self._killed:
            self.on_message(message)

    def _run_child(self) -> R:
        """Run in the child; ``NotHere`` when the child did not run the work."""
        try:
            proc = subprocess.Popen([sys.executable, "-m", "viewer.core.jobs"],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL)
        except OSError as exc:
            raise NotHere(f"cannot start a child process: {exc}") from None
        assert proc.stdin is not None and proc.stdout is not None
        with self._lock:
            self._proc = proc
            self._stdin_open = True
            killed = self._killed
        if killed:
            proc.kill()
        try:
            # A child that died at once says nothing: handled below.
            with contextlib.suppress(OSError, ValueError):
                write_frame(proc.stdin, (self.config, list(sys.path)))
                write_frame(proc.stdin, self.work)
            if self._cancel.is_set():
                self._close_stdin(b"c")
            outcome: tuple[str, Any] | None = None
            heard = False
            for frame in read_frames(proc.stdout):
                heard = True
                kind = frame[0]
                if kind == "message":
                    self._emit(frame[1])
                else:
                    outcome = (kind, frame[1])
                    break
        finally:
            proc.stdout.close()
            self._close_stdin()
            proc.wait()
            with self._lock:
                self._proc = None
        if outcome is None:
            if self._killed:
                raise JobCancelled(self.name)
            if not heard:
                raise NotHere(f"the child process said nothing (exit code {proc.returncode})")
            raise RuntimeError(f"{self.name}: the child process ended without a result "
                               f"(exit code {proc.returncode})")
        kind, value = outcome
        self.used_process = kind != "not_here"
        if kind == "not_here":
            raise NotHere(str(value))
        if kind == "error":
            raise value
        result: R = value
        return result

    def _close_stdin(self, message: bytes = b"") -> None:
        with self._lock:
            proc = self._proc
            if proc is None or not self._stdin_open or proc.stdin is None:
                return
            self._stdin_open = False
            try:
                if message:
                    proc.stdin.write(message)
                    proc.stdin.flush()
                proc.stdin.close()
            except (OSError, ValueError):
                pass


def run_child(stdin: IO[bytes], stdout: IO[bytes]) -> int:
    """The child's side: read the work, run it, stream its messages and its outcome.  A byte
    on ``stdin`` (or its end) after the work cancels.  Exit code 0 when the outcome was sent,
    1 when the parent went away, 3 when the work could not be loaded."""
    frames = read_frames(stdin)
    try:
        config, path = next(frames)
        # The parent's import path (its working folder for its empty entry): the work's
        # module and a format plugin import here as there.
        sys.path.extend(p for p in (q or os.getcwd() for q in path) if p not in sys.path)
        work = next(frames)
    except (StopIteration, TypeError, ValueError):
        return 3
    if isinstance(config, ReadConfig):  # the parent's settings of reading, passed explicitly
        read_config.set_default(config)
    cancelled = threading.Event()

    def watch() -> None:
        stdin.read(1)  # a byte, or the end: the parent wants us to stop
        cancelled.set()

    threading.Thread(target=watch, name="cancel-watch", daemon=True).start()

    def emit(message: Any) -> None:
        write_frame(stdout, ("message", message))

    try:
        try:
            outcome: tuple[str, Any] = ("result", work(emit, cancelled))
        except NotHere as exc:
            outcome = ("not_here", str(exc))
        except BrokenPipeError:
            return 1
        except Exception as exc:  # noqa: BLE001 - handed to the parent, which raises it
            outcome = ("error", exc)
        try:
            write_frame(stdout, outcome)
        except (pickle.PicklingError, TypeError, AttributeError):
            write_frame(stdout, ("error", RuntimeError(str(outcome[1]))))
    except BrokenPipeError:
        return 1
    return 0


def main() -> int:
    return run_child(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    code = main()
    # Leave without the interpreter's shutdown: the cancel watcher may still be blocked in a
    # read of stdin, holding its lock, and closing stdin at shutdown then aborts the process
    # ("could not acquire lock ... at interpreter shutdown"; SIGABRT and a core file, seen
    # when the child sent its outcome before the parent closed its stdin).  Every frame is
    # flushed as written.
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


__all__ = ["Job", "Work", "Emit", "NotHere", "JobCancelled", "processes_available",
           "read_frames", "write_frame", "run_child"]
