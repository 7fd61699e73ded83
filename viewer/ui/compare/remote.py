"""A ``CompareJob`` in a child process, so the window's GIL stays free.

A comparison that finds many differing blocks runs thousands of small numpy operations per
second; on threads of the window's own process they would hold its GIL, and every Python
callback of the GUI thread (a paint, a slot) would wait for it: a window that stutters for
seconds.  ``CompareProcess`` runs the same job in ``python -m viewer.ui.compare.remote A B
[--layer-a NAME] [--mag-a M] [--layer-b NAME] [--mag-b M] [--box X,Y,Z,W,H,D] [--tolerance
T]`` (the child opens the sides by path, layer and mag through the format registry: any
format), which streams length-prefixed pickled messages (progress,
batches of mismatching blocks, findings, then the summary or the error) through its stdout;
a thread of the caller reads them and calls the same callbacks a ``CompareJob`` would.
Cancel writes to the child's stdin (the child cancels its job and still reports the partial
summary); a child that cannot start, or dies without a word, is replaced by the job on the
calling thread.

Qt-free (the child must not load Qt).  Threads: ``run`` on one thread (the caller's job
thread), ``cancel`` from any thread; callbacks come on the thread that calls ``run``.
"""

from __future__ import annotations

import argparse
import pickle
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from typing import IO, Any

from viewer.core.compare import BlockResult, CompareJob, Finding, Summary, VolumeSpec
from viewer.core.compare.model import Box

HEADER = struct.Struct("<Q")


class CompareProcess:
    """Same constructor arguments, ``run``, ``cancel`` and callbacks as ``CompareJob``
    (the sides by path or ``VolumeSpec``, not open volumes)."""

    def __init__(self, a: str | VolumeSpec, b: str | VolumeSpec, box: Box | None = None,
                 tolerance: float = 0.0,
                 on_progress: Callable[[int, int], None] | None = None,
                 on_block: Callable[[BlockResult], None] | None = None,
                 on_finding: Callable[[Finding], None] | None = None) -> None:
        if tolerance < 0:
            raise ValueError(f"tolerance must be non-negative, not {tolerance}")
        if box is not None and (min(box[1]) <= 0 or min(box[0]) < 0):
            raise ValueError(f"box must have a non-negative offset and a positive size: {box}")
        self.a = a if isinstance(a, VolumeSpec) else VolumeSpec(a)
        self.b = b if isinstance(b, VolumeSpec) else VolumeSpec(b)
        self.box, self.tolerance = box, float(tolerance)
        self.on_progress = on_progress
        self.on_block = on_block
        self.on_finding = on_finding
        self._cancel = threading.Event()
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._stdin_closed = False
        #: Whether the last ``run`` used a child process (False: the fallback on this thread).
        self.used_process = False
        self._job: CompareJob | None = None

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "viewer.ui.compare.remote", self.a.path, self.b.path,
               "--tolerance", repr(self.tolerance)]
        for label, spec in (("a", self.a), ("b", self.b)):
            if spec.layer is not None:
                cmd += [f"--layer-{label}", spec.layer]
            if spec.mag is not None:
                cmd += [f"--mag-{label}", "-".join(map(str, spec.mag))]
        if self.box is not None:
            cmd += ["--box", ",".join(str(v) for v in (*self.box[0], *self.box[1]))]
        return cmd

    def cancel(self) -> None:
        """Ask the child to stop; it still reports what it compared."""
        self._cancel.set()
        with self._lock:
            job = self._job
        if job is not None:
            job.cancel()
        self._close_stdin(b"c")

    def _close_stdin(self, message: bytes = b"") -> None:
        with self._lock:
            proc = self._proc
            if proc is None or self._stdin_closed or proc.stdin is None:
                return
            self._stdin_closed = True
            try:
                if message:
                    proc.stdin.write(message)
                    proc.stdin.flush()
                proc.stdin.close()
            except OSError:
                pass

    def run(self) -> Summary:
        """Compare in the child and return its summary; raises what stopped the comparison
        (e.g. a dataset that cannot be opened)."""
        try:
            proc = subprocess.Popen(self.command(), stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        except OSError:
            return self._run_here()
        with self._lock:
            self._proc = proc
        if self._cancel.is_set():
            self._close_stdin(b"c")
        heard = False
        outcome: Summary | BaseException | None = None
        assert proc.stdout is not None
        try:
            for message in _messages(proc.stdout):
                heard = True
                kind = message[0]
                if kind == "progress" and self.on_progress is not None:
                    self.on_progress(message[1], message[2])
                elif kind == "blocks" and self.on_block is not None:
                    for block in message[1]:
                        self.on_block(block)
                elif kind == "finding" and self.on_finding is not None:
                    self.on_finding(message[1])
                elif kind in ("finished", "error"):
                    outcome = message[1]
        finally:
            proc.stdout.close()
            self._close_stdin()
            proc.wait()
            with self._lock:
                self._proc = None
        self.used_process = heard
        if not heard and not self._cancel.is_set():
            return self._run_here()  # the child could not run: compare here instead
        if isinstance(outcome, BaseException):
            raise outcome
        if outcome is None:
            raise RuntimeError(f"the comparison process ended without a result "
                               f"(exit code {proc.returncode})")
        return outcome

    def _run_here(self) -> Summary:
        job = CompareJob(self.a, self.b, self.box, self.tolerance, workers=2,
                         on_progress=self.on_progress, on_block=self.on_block,
                         on_finding=self.on_finding)
        with self._lock:
            self._job = job
        if self._cancel.is_set():
            job.cancel()
        return job.run()


def _messages(stream: IO[bytes]) -> Any:
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
        except Exception:  # noqa: BLE001  (a child of another version: treated as silent)
            return


def main(argv: Sequence[str] | None = None) -> int:
    """The child: run the job, stream its results to stdout; stdin closing (or any byte on
    it) cancels."""
    parser = argparse.ArgumentParser(prog="python -m viewer.ui.compare.remote")
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--box")
    parser.add_argument("--tolerance", type=float, default=0.0)
    for label in ("a", "b"):
        parser.add_argument(f"--layer-{label}")
        parser.add_argument(f"--mag-{label}")
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    box: Box | None = None
    if args.box:
        v = [int(x) for x in args.box.split(",")]
        box = ((v[0], v[1], v[2]), (v[3], v[4], v[5]))
    out = sys.stdout.buffer
    pending: list[BlockResult] = []

    def send(message: tuple[Any, ...]) -> None:
        try:
            payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001  (an unpicklable error: say it in words)
            payload = pickle.dumps((message[0], RuntimeError(str(message[1]))))
        out.write(HEADER.pack(len(payload)))
        out.write(payload)
        out.flush()

    def flush() -> None:
        if pending:
            send(("blocks", list(pending)))
            pending.clear()

    def progress(done: int, total: int) -> None:
        flush()
        send(("progress", done, total))

    def finding(f: Finding) -> None:
        flush()
        send(("finding", f))

    try:
        spec_a = VolumeSpec.of(args.a, args.layer_a, args.mag_a)
        spec_b = VolumeSpec.of(args.b, args.layer_b, args.mag_b)
        job = CompareJob(spec_a, spec_b, box, args.tolerance, workers=2, on_progress=progress,
                         on_block=pending.append, on_finding=finding)
    except ValueError as exc:
        send(("error", exc))
        return 2

    def watch_stdin() -> None:
        sys.stdin.buffer.read(1)  # a byte, or the end: the parent wants us to stop
        job.cancel()

    threading.Thread(target=watch_stdin, name="cancel-watch", daemon=True).start()
    try:
        summary = job.run()
    except BrokenPipeError:
        return 1
    except BaseException as exc:  # noqa: BLE001  (sent to the parent, which shows it)
        try:
            flush()
            send(("error", exc))
        except BrokenPipeError:
            return 1
        return 2
    try:
        flush()
        send(("finished", summary))
    except BrokenPipeError:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
