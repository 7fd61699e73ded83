"""``info``'s check of storage units: one by one (``check_unit``), or many at once
(``check_batch``: the units a format's batched structure check proves sound, ``Volume.sound_units``,
reported as arrays, ``SoundRun``; the others one by one, in listing order).

A run of a hundred thousand one-chunk files then costs, per file, the system calls that read
its header and index (without the interpreter lock, so threads overlap) and one line of
formatting, instead of a unit object, a chunk table, a description and a dictionary each.  A
sound unit's report is what ``check_unit`` would give for it (the tests compare them, on
sound and on damaged files).  Any thread.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.cli import chunk_list
from viewer.core import inspect
from viewer.format import FileChangedError, FormatError, RemoteError, SoundUnits, Volume, is_url

Vec3 = tuple[int, int, int]
_encode = json.encoder.encode_basestring_ascii  # what json.dumps does with a str


def problem_fields(p: FormatError) -> dict[str, Any]:
    """A problem as JSON; ``not_checked``: its chunks could not be read (a ``RemoteError``:
    unreachable, a 5xx after the retries, a time-out), so they are neither valid nor
    damaged."""
    return {"type": type(p).__name__, "message": str(p), "path": p.path, "block": p.block,
            "offset": p.offset, "chunk": list(p.chunk) if p.chunk is not None else None,
            "not_checked": isinstance(p, (RemoteError, FileChangedError))}


def size_summary(sizes: npt.NDArray[np.int64] | None) -> dict[str, Any]:
    """min / median / max / total of stored sizes (None values when there are none)."""
    if sizes is None or not len(sizes):
        return {"min": None, "median": None, "max": None, "total": None}
    if len(sizes) <= 32:  # the common small unit: numpy's median costs more than the sort
        ordered = sorted(sizes.tolist())
        n = len(ordered)
        mid = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
        return {"min": ordered[0], "median": float(mid), "max": ordered[-1],
                "total": sum(ordered)}
    return {"min": int(sizes.min()), "median": float(np.median(sizes)),
            "max": int(sizes.max()), "total": int(sizes.sum())}


class UnitReport:
    """What checking one storage unit found: its JSON fields, the stored sizes of its chunks
    present (for the array's totals) and, with ``--chunks``, its chunk list."""

    def __init__(self, fields: dict[str, Any], sizes: npt.NDArray[np.int64],
                 present: int, chunks: npt.NDArray[np.void]) -> None:
        self.fields = fields
        self.sizes = sizes
        self.present = present
        self.chunks = chunks

    def name_channels(self, channels: tuple[int, int]) -> None:
        """The unit is one channel group's (channels ``[c0, c1)``): its fields and chunks say
        so."""
        self.fields = _with_channels(self.fields, channels)
        self.chunks["c0"], self.chunks["c1"] = channels


def check_unit(volume: Volume, position: Vec3, facts: inspect.VolumeFacts, decode: bool,
               list_chunks: bool = False) -> UnitReport | None:
    """Check the unit at ``position``: its index and structure (no decoding), then, with
    ``decode``, every chunk decoded (``StorageUnit.problems(decode=True)``).  None for a
    position of the unit grid (a store that cannot list: ``Volume.units_to_check``) whose
    unit is proven absent."""
    path = volume.unit_path(position)
    table, error = inspect.open_table(volume, position)
    if table is None and error is None and not volume.lists_units:
        return None
    if table is None:
        problems = [error or FormatError("absent", path)]
        try:
            size: int | None = os.path.getsize(path) if not is_url(path) else None
        except OSError:
            size = None
        absent: dict[str, Any] = {
            "path": path, "unit": list(position), "block_type": None, "compression": None,
            "file_size": size, "block_sizes": size_summary(None), "ratio": None,
            "chunks": {"count": 0, "present": 0},
            "problems": [problem_fields(p) for p in problems]}
        return UnitReport(absent, np.zeros(0, np.int64), 0, np.zeros(0, chunk_list.RECORD))
    problems = list(table.problems)
    extra = inspect.difference_problem(facts.header, table.description, table.path)
    if extra is not None:
        problems.insert(0, extra)
    if decode and table.source is not None:
        seen = {str(p) for p in problems}
        try:
            found = table.source.problems(decode=True)
        except FormatError as exc:
            found = [exc]
        problems.extend(p for p in found if str(p) not in seen)
        problems.sort(key=lambda p: (p.block if p.block is not None else -1))
    sizes = table.sizes[table.stored_inside]
    present = table.present_inside
    total = int(sizes.sum()) if len(sizes) else 0
    ratio = round(table.chunk_nbytes * len(sizes) / total, 4) if total else None
    desc = table.description
    fields: dict[str, Any] = {
        "path": table.path,
        "unit": list(position),
        "block_type": desc.get("block_type", inspect.compression_of(table, facts.compression)),
        "compression": inspect.compression_of(table, facts.compression),
        "file_size": table.size,
        "block_sizes": size_summary(sizes),
        "ratio": ratio,
        "chunks": {"count": table.count_inside, "present": present},
        "problems": [problem_fields(p) for p in problems],
    }
    chunks = np.zeros(0, chunk_list.RECORD)
    if list_chunks:
        base = np.asarray(position, dtype=np.int64) * np.asarray(volume.unit_shape, np.int64)
        listed = (table.flags & inspect.ABSENT) == 0
        inside = table.inside
        index = np.flatnonzero(listed if inside is None else listed & inside)
        chunks = chunk_list.records(
            table.coords[index] + base, table.sizes[index], position, index,
            table.starts[index], (table.flags[index] & inspect.STORED_CONSTANT) != 0)
    inspect.volume_done_with(volume, table)
    return UnitReport(fields, sizes.astype(np.int64), present, chunks)


class SoundRun:
    """Units next to each other in the listing that the batched check proved sound (no
    problem; every chunk present, stored and inside the extent), as arrays: ``positions``
    ``(K, 3)``, ``paths``, ``file_sizes`` ``(K,)``, ``sizes`` ``(K, num_chunks)`` (stored
    bytes of each chunk), the block type and compression every one has, ``chunk_nbytes``
    (a decoded chunk's bytes, for the ratio) and, with ``--chunks``, their chunk list.  Each
    unit's report is what ``check_unit`` gives for it (``fields`` builds it, for tests;
    ``json_texts`` and ``text_lines`` write it)."""

    def __init__(self, positions: npt.NDArray[np.int64], paths: list[str],
                 file_sizes: npt.NDArray[np.int64], sizes: npt.NDArray[np.int64],
                 block_type: Any, compression: str, chunk_nbytes: int,
                 chunks: npt.NDArray[np.void]) -> None:
        self.positions = positions
        self.paths = paths
        self.file_sizes = file_sizes
        self.sizes = sizes
        self.block_type = block_type
        self.compression = compression
        self.chunk_nbytes = chunk_nbytes
        self.chunks = chunks
        #: The units' reports as written (``render``): JSON elements joined by ", ", or text
        #: lines; None until rendered.
        self.text: str | None = None
        #: The channels ``[c0, c1)`` of the group the units belong to (channels stored apart,
        #: ``Volume.channel_groups``), or None.
        self.channels: tuple[int, int] | None = None

    def name_channels(self, channels: tuple[int, int]) -> None:
        """The units are one channel group's: their reports and chunks say so."""
        self.channels = channels
        self.chunks["c0"], self.chunks["c1"] = channels

    def render(self, as_json: bool, root: str, size_text: Any) -> None:
        """Work out ``text`` now (on the worker that checked the units, not the writer)."""
        self.text = ", ".join(self.json_texts()) if as_json \
            else "".join(self.text_lines(root, size_text))

    def __len__(self) -> int:
        return int(self.file_sizes.shape[0])

    def _columns(self) -> tuple[list[Any], list[Any], list[Any], list[Any], list[Any]]:
        """Per unit: min, median, max, total of its stored sizes, and its ratio."""
        s = self.sizes
        n = s.shape[1]
        if n == 1:
            first = s[:, 0].tolist()
            medians = [float(v) for v in first]
            lows = highs = totals = first
        else:
            ordered = np.sort(s, axis=1)
            lows, highs = ordered[:, 0].tolist(), ordered[:, -1].tolist()
            totals = ordered.sum(axis=1).tolist()
            mid = ordered[:, n // 2] if n % 2 else (ordered[:, n // 2 - 1]
                                                     + ordered[:, n // 2]) / 2
            medians = mid.astype(np.float64).tolist()
        scale = self.chunk_nbytes * n
        ratios = [round(scale / t, 4) if t else None for t in totals]
        return lows, medians, highs, totals, ratios

    def fields(self) -> list[dict[str, Any]]:
        """Each unit's report fields, as ``check_unit`` gives them."""
        n = self.sizes.shape[1]
        out = []
        for k, (lo, med, hi, tot, ratio) in enumerate(zip(*self._columns(), strict=True)):
            fields = {
                "path": self.paths[k], "unit": self.positions[k].tolist(),
                "block_type": self.block_type, "compression": self.compression,
                "file_size": int(self.file_sizes[k]),
                "block_sizes": {"min": lo, "median": med, "max": hi, "total": tot},
                "ratio": ratio, "chunks": {"count": n, "present": n}, "problems": []}
            out.append(fields if self.channels is None
                       else _with_channels(fields, self.channels))
        return out

    def json_texts(self) -> list[str]:
        """Each unit's report as the JSON text ``json.dumps(fields)`` gives."""
        n = self.sizes.shape[1]
        head = f', "block_type": {json.dumps(self.block_type)}, "compression": ' \
               f'{json.dumps(self.compression)}, "file_size": '
        tail = f', "chunks": {{"count": {n}, "present": {n}}}, "problems": []}}'
        pos = self.positions.tolist()
        if self.channels is not None:
            head = f', "channels": [{self.channels[0]}, {self.channels[1]}]{head}'
        out = []
        for k, (lo, med, hi, tot, ratio) in enumerate(zip(*self._columns(), strict=True)):
            x, y, z = pos[k]
            out.append(f'{{"path": {_encode(self.paths[k])}, "unit": [{x}, {y}, {z}]{head}'
                       f'{self.file_sizes[k]}, "block_sizes": {{"min": {lo}, "median": '
                       f'{med!r}, "max": {hi}, "total": {tot}}}, "ratio": '
                       f'{"null" if ratio is None else repr(ratio)}{tail}')
        return out

    def text_lines(self, root: str, size_text: Any) -> list[str]:
        """Each unit's line of the text report (as ``info``'s ``_text_file`` writes it)."""
        prefix = os.path.join(root, "") if root else ""
        compression = self.compression or "?"
        out = []
        for k, (lo, med, hi, tot, ratio) in enumerate(zip(*self._columns(), strict=True)):
            path = self.paths[k]
            if not root or is_url(path):
                rel = path
            elif path.startswith(prefix):
                rel = path[len(prefix):]
            else:
                rel = os.path.relpath(path, root)
            shown = f"ratio {ratio:.2f}" if ratio is not None else "ratio ?"
            out.append(f"  {rel}  {compression}  {size_text(int(self.file_sizes[k]))}  chunks "
                       f"min {lo} / median {med:g} / max {hi} / total {tot} bytes  {shown}  "
                       f"ok\n")
        return out


def check_batch(volume: Volume, positions: Sequence[Vec3], facts: inspect.VolumeFacts,
                decode: bool, list_chunks: bool = False) -> list[UnitReport | SoundRun]:
    """The reports of the units at ``positions``, in order: with ``decode`` False, the units
    ``Volume.sound_units`` proves sound (and that lie inside the extent) as ``SoundRun`` s of
    neighbours, every other unit by ``check_unit`` (units proven absent left out).

    A volume whose channels are stored in groups apart (``Volume.channel_groups``: one
    channel per chunk, a shard per channel) has a unit of each group at a position, each a
    file of its own: each is reported on its own (its path, sizes, ratio and problems, and
    its ``channels``; groups stored in one file, ``stored_groups``, as one), the batch's
    units group by group."""
    groups = volume.channel_groups()
    if len(groups) == 1 or not positions:
        return _check_batch(volume, positions, facts, decode, list_chunks)
    out: list[UnitReport | SoundRun] = []
    for channels, group in stored_groups(groups, positions[0]):
        for report in _check_batch(group, positions, facts, decode, list_chunks):
            report.name_channels(channels)
            out.append(report)
    return out


def stored_groups(groups: Sequence[tuple[tuple[int, int], Volume]], position: Vec3
                  ) -> list[tuple[tuple[int, int], Volume]]:
    """The channel groups by the files they are stored in: neighbouring groups whose units
    are one file (channel chunks of their own in a shard of several channels) as one, with
    their channels together; each group's unit at ``position`` tells (the channel axis is
    cut into shards alike everywhere).  A group's volume checks its whole file."""
    out: list[tuple[tuple[int, int], Volume]] = []
    last = None
    for (c0, c1), group in groups:
        path = group.unit_path(position)
        if out and path == last:
            (first, _), kept = out[-1]
            out[-1] = ((first, c1), kept)
        else:
            out.append(((c0, c1), group))
        last = path
    return out


def _check_batch(volume: Volume, positions: Sequence[Vec3], facts: inspect.VolumeFacts,
                 decode: bool, list_chunks: bool) -> list[UnitReport | SoundRun]:
    n = max(1, int(np.prod(volume.unit_shape)))
    sound_at: dict[int, int] = {}
    sound = SoundUnits.none(n)
    grid = np.asarray(positions, dtype=np.int64).reshape(-1, 3)
    if not decode and positions:
        sound = volume.sound_units(positions)
        inside = inspect.units_inside(volume, grid)
        if len(sound):
            fine = inside[sound.index]
            sound_at = {int(i): k for k, i in enumerate(sound.index.tolist()) if fine[k]}
    out: list[UnitReport | SoundRun] = []
    run: list[int] = []

    def flush() -> None:
        if run:
            out.append(_run_of(volume, sound, [sound_at[i] for i in run], grid[run], n,
                               facts, list_chunks))
            run.clear()

    for i, position in enumerate(positions):
        if i in sound_at:
            run.append(i)
            continue
        flush()
        report = check_unit(volume, position, facts, decode, list_chunks)
        if report is not None:
            out.append(report)
    flush()
    return out


def _run_of(volume: Volume, sound: SoundUnits, rows: list[int], grid: npt.NDArray[np.int64], n: int,
            facts: inspect.VolumeFacts, list_chunks: bool) -> SoundRun:
    desc = sound.description
    compression = desc.get("compression", facts.compression)
    compression = str(compression) if compression is not None else facts.compression
    sizes = sound.nbytes[rows]
    chunks = np.zeros(0, chunk_list.RECORD)
    if list_chunks:
        coords = inspect.chunk_coords(volume, n)
        base = grid * np.asarray(volume.unit_shape, np.int64)
        k = len(rows)
        chunks = chunk_list.records(
            (base[:, None, :] + coords[None, :, :]).reshape(-1, 3), sizes.reshape(-1),
            (0, 0, 0), np.tile(np.arange(n, dtype=np.int64), k),
            sound.offsets[rows].reshape(-1), np.zeros(k * n, np.bool_))
        for axis, name in enumerate(("ui", "uj", "uk")):
            chunks[name] = np.repeat(grid[:, axis], n)
    return SoundRun(grid, [sound.paths[r] for r in rows], sound.sizes[rows], sizes,
                    desc.get("block_type", compression), compression, volume.chunk_nbytes,
                    chunks)


def _with_channels(fields: dict[str, Any], channels: tuple[int, int]) -> dict[str, Any]:
    """``fields`` with ``"channels": [c0, c1]`` after ``"unit"``."""
    out: dict[str, Any] = {}
    for key, value in fields.items():
        out[key] = value
        if key == "unit":
            out["channels"] = list(channels)
    return out


__all__ = ["UnitReport", "SoundRun", "check_unit", "check_batch", "problem_fields",
           "size_summary"]
