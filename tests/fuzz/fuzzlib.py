"""The fuzzing harness: mutate valid files of every format the program reads, read each mutant
in a child process with a timeout, and classify what happened.

Outcomes (``OUTCOMES``): ``named_error`` (a ``FormatError``: what must happen to bad input),
``untyped`` (any other exception), ``signal`` (the child was killed by one: SIGBUS, SIGSEGV,
an abort), ``timeout`` (no answer in ``TIMEOUT`` seconds), ``correct_data`` (read without error
and equal to the valid file's data: the mutation touched nothing that matters, or only bytes
the format does not use), ``other_data`` (read without error, different data: damage the
format cannot see, WKW having no checksums).  ``untyped``, ``signal`` and ``timeout`` must
stay 0.

Formats join through ``TARGETS``: a ``Target`` says how to make a valid sample in a folder
(``make``), which file of it to mutate (``victim``), how to mutate that file's bytes
(``mutate``), and how to read the sample into a comparable result (``read``, run in the child).
N5, Zarr, zfpc and VDS add their entries as they land (``register``).

Mutants run in batches: one child process reads many of them, one after the other, and
reports each on a line; only a crash or a timeout costs a new child.  A mutant that ever
showed an untyped error, a signal or a timeout is kept under ``cases/<target>/`` as a fixed
regression case (``save_case``), run by the suite on every run.

Each child is forked from one server process (``multiprocessing``'s forkserver, started on
first use) that imported numpy, the format layer and this module once: a new child costs a
fork, not an interpreter's start and those imports, and holds nothing of the parent (no
threads, no servers, no open stores).  It reports on a pipe and writes its standard error to a
file; a signal or an exit is its exit code.  This file run as a script
(``python fuzzlib.py TARGET SAMPLE_DIR LIST``) is the same child, reporting on stdout.

(Over 600 lines: the harness, the child and every format's target are one registry that the
suite and ``benchmarks.fuzz`` share; the seam to split along is the targets, by format.)
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
OUTCOMES = ("named_error", "untyped", "signal", "timeout", "correct_data", "other_data")
#: Seconds one mutant may take in the child (reads of these samples take milliseconds).
TIMEOUT = 20.0
#: How many mutants' copies of the sample the child writes before it reads them (``_child``).
AHEAD = 32


@dataclass
class Target:
    """One format's entry: a valid sample, the file to mutate in it, mutations, a reader."""

    name: str
    make: Callable[[Path], None]  #: write a valid sample into an empty folder
    victim: str  #: path, relative to the sample folder, of the file to mutate
    mutate: Callable[[random.Random, bytes], bytes]
    read: Callable[[Path], Any]  #: the sample folder -> a comparable result (child side)


TARGETS: dict[str, Target] = {}


def register(target: Target) -> Target:
    TARGETS[target.name] = target
    return target


# -- mutations ---------------------------------------------------------------------------------
INTERESTING_U64 = [0, 1, 7, 8, 15, 16, 17, 255, 256, 4095, 4096, 65535, 65536, 2**31 - 1,
                   2**31, 2**32 - 1, 2**32, 2**62, 2**63 - 1, 2**63, 2**64 - 2, 2**64 - 1]
INTERESTING_U8 = [0, 1, 2, 3, 4, 7, 8, 9, 10, 11, 15, 16, 0x7F, 0x80, 0xF0, 0xFE, 0xFF]


#: The generic byte mutations (``mutate_bytes``), by name; "in a region" is the bias towards
#: a target's structure bytes, counted as a kind of its own.
BYTE_KINDS = ("flip bits", "interesting byte", "interesting integer", "truncate",
              "append garbage", "delete a range", "duplicate a range", "copy 8 bytes",
              "random bytes")
IN_REGION = "in a region"
#: The structured mutations of JSON documents (``_json_mutate``), by name.
JSON_KINDS = ("json: replace a value", "json: delete a node", "json: duplicate in a list",
              "json: nest deeply", "json: a value as a string")
_seen: set[str] | None = None  # the kinds the mutations made, while ``generate`` records


def _made(kind: str) -> None:
    if _seen is not None:
        _seen.add(kind)


def _span(rng: random.Random, n: int, lo: int, hi: int) -> int:
    hi = max(min(hi, n), lo + 1)
    return rng.randrange(lo, hi) if hi > lo else lo


def mutate_bytes(rng: random.Random, data: bytes, regions: list[tuple[int, int]] | None = None
                 ) -> bytes:
    """One to three generic mutations of ``data``, biased to ``regions`` (byte ranges where
    structure lives: headers, tables) half of the time."""
    out = bytearray(data)
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        n = len(out)
        if n == 0:
            out += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
            continue
        lo, hi = 0, n
        if regions and rng.random() < 0.5:
            lo, hi = rng.choice(regions)
            lo, hi = min(lo, n - 1), min(max(hi, lo + 1), n)
            _made(IN_REGION)
        kind = rng.randrange(9)
        _made(BYTE_KINDS[kind])
        at = _span(rng, n, lo, hi)
        if kind == 0:  # flip bits
            for _ in range(rng.randrange(1, 9)):
                k = _span(rng, n, lo, hi)
                out[k] ^= 1 << rng.randrange(8)
        elif kind == 1:  # an interesting byte
            out[at] = rng.choice(INTERESTING_U8)
        elif kind == 2:  # an interesting little-endian u64 (or u32), 8-aligned or not
            width = rng.choice((8, 8, 4))
            if rng.random() < 0.7:
                at -= at % width
            value = rng.choice(INTERESTING_U64 + [n, n - 1, n + 1, rng.randrange(2**64)])
            out[at:at + width] = (value % 2 ** (8 * width)).to_bytes(width, "little")
            del out[n:]  # no growth from a write at the very end
        elif kind == 3:  # truncate
            del out[_span(rng, n, 0, n):]
        elif kind == 4:  # append garbage
            out += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4096)))
        elif kind == 5:  # delete a range
            del out[at:at + rng.randrange(1, 64)]
        elif kind == 6:  # duplicate a range
            chunk = bytes(out[at:at + rng.randrange(1, 64)])
            out[at:at] = chunk
        elif kind == 7:  # copy 8 bytes from elsewhere (a neighbouring table entry)
            src = rng.randrange(n)
            out[at:at + 8] = out[src:src + 8]
            del out[n:]
        else:  # random bytes over a range
            k = rng.randrange(1, 33)
            out[at:at + k] = bytes(rng.randrange(256) for _ in range(k))
            del out[n:]
    return bytes(out)


# -- comparing results -------------------------------------------------------------------------
def fingerprint(result: Any) -> Any:
    """A JSON-able, exact summary of a read's result (arrays by dtype, shape and a hash)."""
    import hashlib

    if isinstance(result, np.ndarray):
        return ["array", result.dtype.str, list(result.shape),
                hashlib.blake2b(np.ascontiguousarray(result).tobytes(), digest_size=16)
                .hexdigest()]
    if isinstance(result, (list, tuple)):
        return [fingerprint(r) for r in result]
    if isinstance(result, dict):
        return {str(k): fingerprint(v) for k, v in sorted(result.items())}
    return repr(result)


# -- the child ---------------------------------------------------------------------------------
def _child(target_name: str, sample: str, listing: str,
           report: Callable[[str], None] | None = None) -> int:
    """Read every mutant listed in the file ``listing`` (one path a line) as the target's
    victim in a private copy of the sample; one JSON line per mutant to ``report`` (printed
    to stdout without one).

    The copies are laid out ``AHEAD`` mutants at a time before any of them is read: a file
    written less than the racy window ago is waited for by every local read
    (``viewer.format.handles``), so a copy written just before its read would cost that wait
    on every mutant, and a group of them written together costs it once."""
    from viewer.format.errors import FormatError

    target = TARGETS[target_name]
    work = Path(tempfile.mkdtemp(prefix="fuzz-child-"))
    try:
        copy = work / "sample"
        shutil.copytree(sample, copy, symlinks=True)
        expected = fingerprint(target.read(copy))
        if report is None:
            def report(line: str) -> None:
                print(line, flush=True)
        report(json.dumps({"ready": True}))
        listed = [line.split("\t", 1) for line in Path(listing).read_text().splitlines()]
        for start in range(0, len(listed), AHEAD):
            group = listed[start:start + AHEAD]
            for k, path in group:
                shutil.copytree(copy, work / k, symlinks=True)
                (work / k / target.victim).write_bytes(Path(path).read_bytes())
            for k, _ in group:
                try:
                    got = fingerprint(target.read(work / k))
                except FormatError as exc:
                    outcome, detail = "named_error", f"{type(exc).__name__}: {exc}"[:300]
                except BaseException as exc:  # noqa: BLE001 - classifying is the point
                    outcome = "untyped"
                    detail = "".join(traceback.format_exception(exc))[-2000:]
                else:
                    outcome = "correct_data" if got == expected else "other_data"
                    detail = ""
                shutil.rmtree(work / k, ignore_errors=True)
                report(json.dumps({"k": int(k), "outcome": outcome, "detail": detail}))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _forked_child(target_name: str, sample: str, listing: str, conn: Any, err_path: str) -> None:
    """The child as forked from the server: standard error to ``err_path``, reports on
    ``conn`` (the write end of a pipe), exit status 0 when every mutant was read."""
    import faulthandler

    faulthandler.disable()  # a signal ends the child as it would end a plain interpreter
    fd = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 2)
    os.close(fd)
    status = _child(target_name, sample, listing,
                    lambda line: conn.send_bytes(line.encode()))
    conn.close()
    sys.stderr.flush()
    os._exit(status)


_context: Any = None


def _children() -> Any:
    """The forkserver context the children come from (its server started on first use, with
    numpy, the format layer and this module imported)."""
    global _context
    if _context is None:
        import multiprocessing

        if str(HERE) not in sys.path:  # the server imports this module by its name
            sys.path.insert(0, str(HERE))
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(["numpy", "viewer.format", "fuzzlib"])
    return _context


# -- the parent --------------------------------------------------------------------------------
@dataclass
class Result:
    target: str
    index: int
    outcome: str
    detail: str = ""
    mutant: bytes = b""


@dataclass
class Tally:
    counts: dict[str, int] = field(default_factory=lambda: {o: 0 for o in OUTCOMES})
    bad: list[Result] = field(default_factory=list)
    kinds: set[str] = field(default_factory=set)  #: the kinds of mutation made

    def add(self, r: Result) -> None:
        self.counts[r.outcome] += 1
        if r.outcome in ("untyped", "signal", "timeout"):
            self.bad.append(r)

    def table(self) -> dict[str, int]:
        c = self.counts
        return {"mutants": sum(c.values()), "untyped": c["untyped"], "signals": c["signal"],
                "timeouts": c["timeout"], "named_errors": c["named_error"],
                "other_data": c["other_data"], "correct_data": c["correct_data"]}


def make_sample(target: Target, folder: Path) -> Path:
    sample = folder / f"sample-{target.name}"
    if not sample.exists():
        sample.mkdir(parents=True)
        target.make(sample)
    return sample


def run_mutants(target: Target, sample: Path, mutants: list[bytes], folder: Path,
                timeout: float = TIMEOUT) -> list[Result]:
    """Read ``mutants`` of ``target``'s victim in child processes, in batches; one
    ``Result`` each, in order."""
    files = folder / f"mutants-{target.name}"
    files.mkdir(parents=True, exist_ok=True)
    paths = []
    for k, data in enumerate(mutants):
        p = files / f"{k}.bin"
        p.write_bytes(data)
        paths.append(p)
    results: dict[int, Result] = {}
    pending = list(range(len(mutants)))
    context = _children()
    err_path = folder / f"stderr-{target.name}.txt"
    while pending:
        listing = folder / f"list-{target.name}.txt"
        listing.write_text("".join(f"{k}\t{paths[k]}\n" for k in pending))
        reader, writer = context.Pipe(duplex=False)
        child = context.Process(target=_forked_child, args=(
            target.name, str(sample), str(listing), writer, str(err_path)), daemon=True)
        child.start()
        writer.close()  # the child's end: once it is gone, the pipe ends
        done_here: list[int] = []
        ready = False
        timed_out = False
        deadline = time.monotonic() + timeout + 30.0  # the first also pays the start-up
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                if not reader.poll(left):
                    continue
                try:
                    line = reader.recv_bytes()
                except EOFError:
                    break
                rec = json.loads(line)
                if "ready" in rec:
                    ready = True
                    continue
                k = int(rec["k"])
                results[k] = Result(target.name, k, rec["outcome"], rec["detail"], mutants[k])
                done_here.append(k)
                deadline = time.monotonic() + timeout
        finally:
            reader.close()
        if timed_out:
            child.kill()
        child.join(60)
        if child.exitcode is None:
            child.kill()
            child.join()
        returncode = child.exitcode
        err = err_path.read_bytes() if err_path.exists() else b""
        if not ready:  # it could not even read the valid sample: not a mutant's doing
            raise RuntimeError(f"the fuzzing child for {target.name} did not start (exit "
                               f"{returncode}): {err.decode(errors='replace')[-3000:]}")
        finished = set(done_here)
        pending = [k for k in pending if k not in finished]
        if not pending:
            break
        k = pending.pop(0)  # the mutant the child was reading when it stopped
        if timed_out:
            results[k] = Result(target.name, k, "timeout", "", mutants[k])
        elif returncode is not None and returncode < 0:
            results[k] = Result(target.name, k, "signal", f"signal {-returncode}", mutants[k])
        else:
            results[k] = Result(target.name, k, "untyped",
                                f"child exited {returncode}: "
                                f"{err.decode(errors='replace')[-2000:]}", mutants[k])
    shutil.rmtree(files, ignore_errors=True)
    return [results[k] for k in range(len(mutants))]


def generate(target: Target, sample: Path, count: int, seed: int,
             kinds: set[str] | None = None) -> list[bytes]:
    """``count`` mutants of the target's victim (the same for the same seed); the kinds of
    mutation they were made with are added to ``kinds``."""
    global _seen
    rng = random.Random(f"{target.name}:{seed}")
    original = (sample / target.victim).read_bytes()
    _seen = set()
    try:
        return [target.mutate(rng, original) for _ in range(count)]
    finally:
        if kinds is not None:
            kinds |= _seen
        _seen = None


def cases(target: Target) -> list[tuple[str, bytes]]:
    """The fixed regression cases kept for ``target`` (name, victim bytes)."""
    folder = CASES / target.name
    if not folder.is_dir():
        return []
    return [(p.name, p.read_bytes()) for p in sorted(folder.iterdir()) if p.is_file()]


def save_case(r: Result) -> Path:
    import hashlib

    folder = CASES / r.target
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{r.outcome}-{hashlib.blake2b(r.mutant, digest_size=6).hexdigest()}.bin"
    path.write_bytes(r.mutant)
    return path


def fuzz(names: list[str] | None, count: int, seed: int, folder: Path,
         keep_cases: bool = False) -> tuple[Tally, dict[str, Tally]]:
    """``count`` mutants of each target (plus its fixed cases); the overall tally and one per
    target.  ``keep_cases``: save every untyped / signal / timeout mutant as a fixed case."""
    total = Tally()
    per: dict[str, Tally] = {}
    for name in names or [n for n in TARGETS if not n.startswith("_")]:
        target = TARGETS[name]
        sample = make_sample(target, folder)
        tally = Tally()
        mutants = [data for _, data in cases(target)] + generate(target, sample, count, seed,
                                                                 tally.kinds)
        total.kinds |= tally.kinds
        for r in run_mutants(target, sample, mutants, folder):
            tally.add(r)
            total.add(r)
            if keep_cases and r.outcome in ("untyped", "signal", "timeout"):
                save_case(r)
        per[name] = tally
    return total, per


# -- the targets: WKW and webKnossos -----------------------------------------------------------
def _volume(shape: tuple[int, int, int], seed: int) -> np.ndarray:
    """Compressible but varied voxels: smooth ramps plus sparse noise."""
    rng = np.random.default_rng(seed)
    x, y, z = np.indices(shape)
    base = (x * 3 + y * 5 + z * 7) // 4 % 200
    noise = (rng.random(shape) < 0.05) * rng.integers(0, 50, shape)
    return (base + noise).astype(np.uint8)


def _wkw_make(block_type: int, channels: int = 1) -> Callable[[Path], None]:
    def make(folder: Path) -> None:
        from viewer.format import wkw

        header = wkw.Header(np.uint8, num_channels=channels, block_len=8, file_len=2,
                            block_type=block_type)
        data = _volume((16, 16, 16), 5)
        with wkw.Dataset.create(str(folder), header) as ds:
            ds.write((0, 0, 0), np.stack([data] * channels) if channels > 1 else data)
    return make


def _wkw_file_regions(data: bytes) -> list[tuple[int, int]]:
    if len(data) < 16:
        return [(0, len(data))]
    data_offset = int.from_bytes(data[8:16], "little")
    table_end = min(max(data_offset, 16), len(data))
    return [(0, 16), (8, max(table_end, 17)), (table_end - 8 if table_end > 24 else 16,
                                               min(table_end + 64, len(data)))]


def _wkw_mutate(rng: random.Random, data: bytes) -> bytes:
    return mutate_bytes(rng, data, _wkw_file_regions(data))


def _wkw_read_file(folder: Path) -> Any:
    from viewer.format import wkw

    path = folder / "z0" / "y0" / "x0.wkw"
    out: list[Any] = []
    with wkw.File.open(path) as f:
        out.append(f.read((0, 0, 0), (16, 16, 16)))
        out.append(f.read((3, 5, 7), (9, 1, 8)))
        for block in f.read_blocks(range(f.header.num_blocks)):
            out.append(block if isinstance(block, np.ndarray) else type(block).__name__)
        out.append(len(f.validate()))
    return out


def _wkw_read_dataset(folder: Path) -> Any:
    from viewer.format import wkw

    with wkw.Dataset.open(folder) as ds:
        return [ds.read((0, 0, 0), (16, 16, 16)), ds.read((2, 0, 9), (30, 17, 3))]


def _wk_make(folder: Path) -> None:
    from viewer.format import wkw

    header = wkw.Header(np.uint8, block_len=8, file_len=2, block_type=wkw.BLOCK_TYPE_LZ4)
    with wkw.Dataset.create(str(folder / "color" / "1"), header) as ds:
        ds.write((0, 0, 0), _volume((16, 16, 16), 6))
    seg = wkw.Header(np.uint32, block_len=8, file_len=2, block_type=wkw.BLOCK_TYPE_LZ4)
    with wkw.Dataset.create(str(folder / "segmentation" / "1"), seg) as ds:
        ds.write((0, 0, 0), (_volume((16, 16, 16), 7) // 20).astype(np.uint32))
    with wkw.Dataset.create(str(folder / "segmentation" / "2"), seg) as ds:
        ds.write((0, 0, 0), (_volume((8, 8, 8), 8) // 20).astype(np.uint32))
    layers = [
        {"name": "color", "category": "color", "dataFormat": "wkw",
         "boundingBox": {"topLeft": [0, 0, 0], "width": 16, "height": 16, "depth": 16},
         "elementClass": "uint8", "numChannels": 1,
         "mags": [{"mag": [1, 1, 1], "path": "./color/1", "cubeLength": 16}]},
        {"name": "segmentation", "category": "segmentation", "dataFormat": "wkw",
         "boundingBox": {"topLeft": [0, 0, 0], "width": 16, "height": 16, "depth": 16},
         "elementClass": "uint32", "largestSegmentId": 12,
         "wkwResolutions": [{"resolution": 1, "cubeLength": 16},
                            {"resolution": [2, 2, 2], "cubeLength": 16}]},
    ]
    doc = {"id": {"name": "fuzz", "team": ""}, "scale": {"factor": [11.2, 11.2, 28.0],
                                                         "unit": "nanometer"},
           "dataLayers": layers}
    (folder / "datasource-properties.json").write_text(json.dumps(doc, indent=2))


def _json_values(rng: random.Random) -> Any:
    return rng.choice([None, True, 0, -1, 1, 2, 3, 2**31, 2**63, 2**70, -2**63, 1e308, -0.0,
                       float("nan") if rng.random() < 0.1 else 0.5, "", "x", "uint24",
                       "float", "segmentation", "../..", "/etc", "1-1-1", [], {}, [1, 1],
                       [1, 2, 3], [0, 0, 0], [-1, 1, 1], [2**40, 1, 1], ["1", "1", "1"],
                       {"x": 1}, [[[[[]]]]], list(range(50))])


def _json_mutate(rng: random.Random, data: bytes) -> bytes:
    """Structured mutations (replace, delete or duplicate a node, nest deeply) half of the
    time, byte mutations of the text otherwise."""
    if rng.random() < 0.4:
        return mutate_bytes(rng, data)
    try:
        doc = json.loads(data)
    except ValueError:
        return mutate_bytes(rng, data)
    nodes: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key in list(node):
                nodes.append((node, key))
                walk(node[key])
        elif isinstance(node, list):
            for i in range(len(node)):
                nodes.append((node, i))
                walk(node[i])

    walk(doc)
    for _ in range(rng.choice((1, 1, 2, 3))):
        if not nodes:
            break
        parent, key = rng.choice(nodes)
        kind = rng.randrange(5)
        try:
            if kind == 0:
                parent[key] = _json_values(rng)
                _made(JSON_KINDS[0])
            elif kind == 1:
                _made(JSON_KINDS[1])
                if isinstance(parent, dict):
                    del parent[key]
                else:
                    parent.pop(key)
                nodes = []
                walk(doc)
            elif kind == 2 and isinstance(parent, list):
                parent.extend([parent[key]] * rng.choice((1, 2, 200)))
                _made(JSON_KINDS[2])
            elif kind == 3:  # spliced into the text below (json cannot nest that deep)
                parent[key] = f"__deep_{rng.choice((10, 63, 65, 500, 5000))}__"
                _made(JSON_KINDS[3])
            else:
                parent[key] = str(parent[key])
                _made(JSON_KINDS[4])
        except (IndexError, KeyError):
            pass
    text = json.dumps(doc, allow_nan=True)
    for depth in (10, 63, 65, 500, 5000):
        text = text.replace(f'"__deep_{depth}__"', "[" * depth + "]" * depth)
    return text.encode()


def _wk_read(folder: Path) -> Any:
    from viewer.format import open_dataset  # the registry: what the window and CLI use

    ds = open_dataset(folder)
    try:
        out: list[Any] = [len(ds.problems), ds.voxel_size]
        for layer in ds.layers[:4]:
            for mag in layer.mags[:3]:
                out.append([layer.name, mag.name, layer.category, str(layer.dtype),
                            mag.read((0, 0, 0), (8, 8, 8))])
        return out
    finally:
        ds.close()


def _volume_read(folder: Path) -> Any:
    """Through the format-neutral interface: ``open_volume``, a box read, and the chunk level
    the loader uses (each unit's chunk table and chunks)."""
    from viewer.format import open_volume

    volume = open_volume(folder)
    try:
        out: list[Any] = [volume.shape, volume.read((0, 0, 0), (16, 16, 16))]
        for unit_pos in volume.units_to_check():  # over HTTP: the grid, a 404 absent
            unit = volume.open_unit(unit_pos)
            if unit is None:
                continue
            try:
                table = unit.chunk_table()
                out.append(table.present.tolist())
                for chunk in unit.read_chunks(list(range(unit.num_chunks))):
                    out.append(chunk if isinstance(chunk, np.ndarray) else repr(type(chunk)))
            finally:
                volume.done_with(unit)
        return out
    finally:
        volume.close()


def _header_mutate(rng: random.Random, data: bytes) -> bytes:
    return mutate_bytes(rng, data, [(0, 16)])


register(Target("wkw-lz4hc-file", _wkw_make(3), "z0/y0/x0.wkw", _wkw_mutate, _wkw_read_file))
register(Target("wkw-lz4-file", _wkw_make(2, channels=2), "z0/y0/x0.wkw", _wkw_mutate,
                _wkw_read_file))
register(Target("wkw-raw-file", _wkw_make(1), "z0/y0/x0.wkw", _wkw_mutate, _wkw_read_file))
register(Target("wkw-volume", _wkw_make(2), "z0/y0/x0.wkw", _wkw_mutate, _volume_read))
register(Target("wkw-header", _wkw_make(3), "header.wkw", _header_mutate, _wkw_read_dataset))
register(Target("webknossos-properties", _wk_make, "datasource-properties.json",
                _json_mutate, _wk_read))


# -- the other formats: samples written by their own tools -----------------------
def _tensorstore_make(driver: str) -> Callable[[Path], None]:
    """A 24 x 20 x 16 uint16 array written by tensorstore: N5 (gzip, 8^3 blocks, 1/0/0 is a
    chunk file) or zarr3 (16^3 shards of 8^3 chunks, zstd, crc32c on the index)."""

    def make(folder: Path) -> None:
        import tensorstore as ts

        rng = np.random.default_rng(11)
        data = rng.integers(0, 3000, (24, 20, 16)).astype(np.uint16)
        kv = {"driver": "file", "path": str(folder)}
        if driver == "n5":
            meta: dict[str, Any] = {"dimensions": list(data.shape), "blockSize": [8, 8, 8],
                                    "dataType": "uint16", "compression": {"type": "gzip"}}
        else:
            meta = {"shape": list(data.shape[::-1]), "data_type": "uint16",
                    "chunk_grid": {"name": "regular",
                                   "configuration": {"chunk_shape": [16, 16, 16]}},
                    "codecs": [{"name": "sharding_indexed", "configuration": {
                        "chunk_shape": [8, 8, 8],
                        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                   {"name": "zstd", "configuration": {"level": 3}}],
                        "index_codecs": [{"name": "bytes",
                                          "configuration": {"endian": "little"}},
                                         {"name": "crc32c"}]}}],
                    "dimension_names": ["z", "y", "x"]}
            data = np.ascontiguousarray(data.transpose(2, 1, 0))
        arr = ts.open({"driver": driver, "kvstore": kv, "metadata": meta,
                       "create": True}).result()
        arr.write(data).result()

    return make


def _zfpc_make(folder: Path) -> None:
    """A 16 x 12 x 6 x 2 float32 field, correlated in x and y (12 streams), lossless."""
    import zfpc

    rng = np.random.default_rng(12)
    data = rng.standard_normal((16, 12, 6, 2)).astype(np.float32)
    (folder / "field.zfpc").write_bytes(
        bytes(zfpc.compress(data, correlated_dims=[True, True, False, False])))


def _file_volume_read(name: str) -> Callable[[Path], Any]:
    def read(folder: Path) -> Any:
        return _volume_read(folder / name)

    return read


register(Target("n5-chunk", _tensorstore_make("n5"), "1/0/0", mutate_bytes, _volume_read))
register(Target("n5-attributes", _tensorstore_make("n5"), "attributes.json", _json_mutate,
                _volume_read))
register(Target("zarr3-shard", _tensorstore_make("zarr3"), "c/0/0/0", mutate_bytes,
                _volume_read))
register(Target("zarr3-metadata", _tensorstore_make("zarr3"), "zarr.json", _json_mutate,
                _volume_read))
register(Target("zfpc-file", _zfpc_make, "field.zfpc", mutate_bytes,
                _file_volume_read("field.zfpc")))


# -- remote reading and the range cache ----------------------------------------------------------
def _range_server(root: Path, port: int = 0) -> Any:
    sys.path.insert(0, str(HERE.parent / "remote"))
    from range_server import RangeServer

    return RangeServer(str(root), port).start()


def _http_read(folder: Path) -> Any:
    """The sample served over HTTP on 127.0.0.1 (a new server, so a new URL and store, per
    read; no range cache) and read through the format-neutral interface."""
    from viewer.format.remote import configure

    configure(cache_bytes=0, retries=0, timeout_s=5)
    srv = _range_server(folder)
    try:
        return _volume_read(srv.url)  # type: ignore[arg-type]
    finally:
        srv.stop()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cache_make(folder: Path) -> None:
    """A raw WKW dataset (``data/``) read once over HTTP on a port kept in ``port``, so that
    the range cache (``cache/``) holds its header, jump tables and blocks; the largest cached
    range is the victim (``victim.c32``, its place in the cache in ``victim-path``)."""
    from viewer.format import shutdown
    from viewer.format.remote import configure

    _wkw_make(1)(folder / "data")
    port = _free_port()
    (folder / "port").write_text(str(port))
    configure(cache_dir=str(folder / "cache"), cache_bytes=1 << 30)
    srv = _range_server(folder / "data", port)
    try:
        _volume_read(srv.url)  # type: ignore[arg-type]
    finally:
        srv.stop()
        shutdown()  # the cache written out
    ranges = sorted((folder / "cache").rglob("*.c32"), key=lambda p: p.stat().st_size)
    victim = ranges[-1]
    (folder / "victim-path").write_text(str(victim.relative_to(folder / "cache")))
    shutil.copyfile(victim, folder / "victim.c32")


_cache_reads = [0]


def _cache_read(folder: Path) -> Any:
    """The dataset read through the cache holding the (mutated) victim range: a copy of the
    cache per read (so the range is read from disk, not from an earlier read's memory) and
    the same URL as when it was filled.  A bad range must be fetched again: the server's
    voxels, never other data."""
    from viewer.format.remote import configure

    _cache_reads[0] += 1
    cache = folder / f"cache-{os.getpid()}-{_cache_reads[0]}"
    shutil.copytree(folder / "cache", cache)
    shutil.copyfile(folder / "victim.c32", cache / (folder / "victim-path").read_text())
    configure(cache_dir=str(cache), cache_bytes=1 << 30, retries=0, timeout_s=5)
    srv = _range_server(folder / "data", int((folder / "port").read_text()))
    try:
        return _volume_read(srv.url)  # type: ignore[arg-type]
    finally:
        srv.stop()
        shutil.rmtree(cache, ignore_errors=True)


#: Targets read over HTTP (a server per read: slower, so fewer mutants in the suite); the
#: cache's: a damaged cached range is fetched again, so it must end in the server's data.
REMOTE_TARGETS = frozenset({"n5-chunk-http", "zarr3-shard-http", "wkw-file-http",
                            "remote-cache-range"})
CACHE_TARGETS = frozenset({"remote-cache-range"})

register(Target("n5-chunk-http", _tensorstore_make("n5"), "1/0/0", mutate_bytes, _http_read))
register(Target("zarr3-shard-http", _tensorstore_make("zarr3"), "c/0/0/0", mutate_bytes,
                _http_read))
register(Target("wkw-file-http", _wkw_make(3), "z0/y0/x0.wkw", _wkw_mutate, _http_read))
register(Target("remote-cache-range", _cache_make, "victim.c32", mutate_bytes, _cache_read))


def _selftest_make(folder: Path) -> None:
    (folder / "victim").write_bytes(b"fine")


def _selftest_read(folder: Path) -> Any:
    """A reader that misbehaves on command: the harness's own test (no format involved)."""
    import signal

    what = (folder / "victim").read_bytes()
    if what == b"signal":
        os.kill(os.getpid(), signal.SIGSEGV)
    if what == b"hang":
        time.sleep(3600)
    if what == b"untyped":
        raise KeyError("untyped")
    if what == b"named":
        from viewer.format.errors import FormatError

        raise FormatError("named", str(folder / "victim"))
    return what


#: Names starting with "_" are not formats: ``fuzz`` skips them.
register(Target("_selftest", _selftest_make, "victim", mutate_bytes, _selftest_read))


if __name__ == "__main__":
    sys.exit(_child(*sys.argv[1:4]))
