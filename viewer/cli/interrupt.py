"""Ctrl+C and SIGTERM for every command: exit status 130 (143 for SIGTERM) and one line on
stderr, within a second, whatever the program is doing.

``install(prog)`` is the first thing the command line does.  A signal then does two things:

- in the main thread, Python's handler raises ``KeyboardInterrupt`` (``Terminated`` for
  SIGTERM, a subclass), so the command unwinds in order: it closes its pools and files and
  ends a ``--json`` document with ``"interrupted": true``, then returns ``status()``;
- a watchdog thread, woken at once through the signal module's wakeup file descriptor (it
  does not wait for the main thread to reach Python code), ends the process with the same
  status and message after ``GRACE`` seconds if the orderly way has not finished by then.

Later signals are ignored: the first one's way out is already under way.  The window sets
``on_signal`` to quit its event loop instead of raising inside a Qt slot.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType

#: Seconds the orderly way out may take before the watchdog ends the process.
GRACE = 0.8

#: Exit status per signal, as a shell reports a process ended by it.
STATUS = {signal.SIGINT: 128 + signal.SIGINT, signal.SIGTERM: 128 + signal.SIGTERM}


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl+C so that the same cleanup runs."""


class _State:
    def __init__(self) -> None:
        self.prog = "wkw-viewer"
        self.signum: int | None = None
        self.said = False
        self.lock = threading.Lock()
        self.on_signal: Callable[[], None] | None = None
        self.installed = False
        #: The first signal came where raising would be lost; it is being delivered again.
        self.deferred = False
        #: Blocks of ``held`` running (main thread); a signal meanwhile waits for their end.
        self.holding = 0
        self.pending: int | None = None


_state = _State()


def install(prog: str = "wkw-viewer") -> None:
    """Handle SIGINT and SIGTERM as this module says (main thread only; once per process)."""
    _state.prog = prog
    if _state.installed or threading.current_thread() is not threading.main_thread():
        return
    _state.installed = True
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    threading.Thread(target=_watch, args=(read_fd,), name="interrupt-watchdog",
                     daemon=True).start()
    for signum in STATUS:
        signal.signal(signum, _handler)


def set_prog(prog: str) -> None:
    """The name the message starts with (``wkw-viewer info``...)."""
    _state.prog = prog


def set_on_signal(callback: Callable[[], None] | None) -> None:
    """Call ``callback`` (main thread) on a signal instead of raising ``KeyboardInterrupt``:
    the window quits its event loop this way."""
    _state.on_signal = callback


@contextlib.contextmanager
def held() -> Iterator[None]:
    """A signal that comes during the block takes effect when it ends (main thread): for
    code that an exception coming up through it would leave broken, as Qt's bindings, which
    abort the process or stay half imported when one comes up through their initialisation.
    The watchdog still ends the process ``GRACE`` seconds after the signal."""
    _state.holding += 1
    try:
        yield
    finally:
        _state.holding -= 1
    if not _state.holding and _state.pending is not None:
        signum, _state.pending = _state.pending, None
        _take_effect(signum)


def interrupted() -> bool:
    return _state.signum is not None


def status() -> int:
    """Say once on stderr that the command was interrupted; the exit status to return."""
    signum = _state.signum if _state.signum is not None else signal.SIGINT
    _say(signum)
    return STATUS.get(signal.Signals(signum), 128 + signum)


def _message(signum: int) -> str:
    why = "terminated" if signum == signal.SIGTERM else "interrupted"
    return f"{_state.prog}: {why}\n"


def _say(signum: int) -> None:
    with _state.lock:
        if _state.said:
            return
        _state.said = True
    with contextlib.suppress(OSError, ValueError, RuntimeError):
        sys.stdout.flush()
    # A progress line on a terminal may be half drawn: start a fresh line.
    lead = "\r\033[K" if _isatty(2) else ""
    with contextlib.suppress(OSError):
        os.write(2, (lead + _message(signum)).encode())


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _handler(signum: int, frame: FrameType | None) -> None:
    if _state.signum is not None and not _state.deferred:
        return  # the first signal's way out is under way
    _state.signum = signum
    if _state.holding:
        _state.pending = signum
        return
    if _state.on_signal is None and _swallowed_in(frame):
        # Raised here it would be printed as "Exception ignored" and lost: the signal is
        # delivered again a moment later, in the code that follows.
        _state.deferred = True
        threading.Thread(target=_deliver_again, args=(signum,), name="interrupt-again",
                         daemon=True).start()
        return
    _state.deferred = False
    _take_effect(signum)


def _take_effect(signum: int) -> None:
    """The window's callback, else the exception that unwinds the command."""
    callback = _state.on_signal
    if callback is not None:
        callback()
        return
    raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _swallowed_in(frame: FrameType | None) -> bool:
    """The main thread was interrupted where Python ignores an exception (prints it and goes
    on): inside a finaliser, a weak reference's callback or the import system's lock
    clean-up, at any depth."""
    while frame is not None:
        code = frame.f_code
        if code.co_name == "__del__" or (
                code.co_name == "cb" and code.co_filename.startswith("<frozen importlib")) \
                or os.path.basename(code.co_filename) in ("weakref.py", "_weakrefset.py"):
            return True
        frame = frame.f_back
    return False


def _deliver_again(signum: int) -> None:
    time.sleep(0.02)
    with contextlib.suppress(OSError, ValueError):
        signal.pthread_kill(threading.main_thread().ident or 0, signum)


def _watch(read_fd: int) -> None:
    """Wait for the first signal's byte on the wakeup pipe, then give the orderly way
    ``GRACE`` seconds before ending the process."""
    while True:
        try:
            data = os.read(read_fd, 16)
        except InterruptedError:
            continue
        except OSError:
            return
        wanted = [b for b in data if b in STATUS]
        if wanted:
            break
    signum = wanted[0]
    time.sleep(GRACE)
    # Not done yet (a pool still finishing a task, a window closing): end here.  The message
    # goes out raw: the main thread may hold the lock of sys.stderr.
    with _state.lock:
        said = _state.said
        _state.said = True
    if not said:
        with contextlib.suppress(OSError):
            os.write(2, _message(signum).encode())
    os._exit(STATUS.get(signal.Signals(signum), 128 + signum))


__all__ = ["GRACE", "Terminated", "held", "install", "interrupted", "set_on_signal",
           "set_prog", "status"]
