"""The contract every format's ``Volume`` passes (like zarr-python's store test suite).

Subclass ``VolumeContract`` in a format's tests and provide three fixtures:

- ``contract_volume``: an open ``Volume`` of real data with at least one absent chunk when the
  format can be sparse;
- ``contract_truth``: the ``(C, X, Y, Z)`` array it must read as, over ``[0, shape)`` (absent
  chunks hold the fill value);
- ``contract_damaged``: ``(volume, chunk)`` — a volume with one chunk's stored bytes damaged,
  and that chunk's global grid position.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

from viewer.format import FormatError, StorageUnit, Volume
from viewer.format.batchread import UNKNOWN, Unknown


class VolumeContract:
    def test_description(self, contract_volume: Volume, contract_truth: Any) -> None:
        v = contract_volume
        assert v.format
        assert v.dtype == contract_truth.dtype
        assert v.num_channels == contract_truth.shape[0]
        assert len(v.chunk_shape) == 3 and min(v.chunk_shape) >= 1
        assert len(v.unit_shape) == 3 and min(v.unit_shape) >= 1
        lo, hi = v.bounds
        assert tuple(h - lo_ for lo_, h in zip(lo, hi, strict=True)) == tuple(v.shape)
        assert all(h <= s for h, s in zip(hi, contract_truth.shape[1:], strict=True))
        info = v.info()
        assert info.format == v.format

    def test_read_everything(self, contract_volume: Volume, contract_truth: Any) -> None:
        got = contract_volume.read((0, 0, 0), contract_truth.shape[1:])
        assert got.shape == contract_truth.shape
        assert got.dtype == contract_truth.dtype
        np.testing.assert_array_equal(got, contract_truth)

    def test_reads_across_chunk_and_unit_edges(self, contract_volume: Volume,
                                               contract_truth: Any) -> None:
        v = contract_volume
        full = contract_truth.shape[1:]
        rng = np.random.default_rng(7)
        edges = [max(1, c * u) for c, u in zip(v.chunk_shape, v.unit_shape, strict=True)]
        for _ in range(12):
            lo = [int(rng.integers(0, max(1, f - 1))) for f in full]
            size = [int(rng.integers(1, min(f - a, 2 * e) + 1))
                    for a, f, e in zip(lo, full, edges, strict=True)]
            got = v.read(lo, size)
            want = contract_truth[:, lo[0]:lo[0] + size[0], lo[1]:lo[1] + size[1],
                                  lo[2]:lo[2] + size[2]]
            np.testing.assert_array_equal(got, want)
        # Straddling the first chunk corner on every axis at once.
        c = v.chunk_shape
        lo = [max(0, min(k - 1, f - 2)) for k, f in zip(c, full, strict=True)]
        got = v.read(lo, (2, 2, 2))
        np.testing.assert_array_equal(got, contract_truth[:, lo[0]:lo[0] + 2, lo[1]:lo[1] + 2,
                                                          lo[2]:lo[2] + 2])

    def test_outside_reads_fill(self, contract_volume: Volume, contract_truth: Any) -> None:
        v = contract_volume
        far = [s + 5 * c for s, c in zip(contract_truth.shape[1:], v.chunk_shape, strict=True)]
        got = v.read(far, (3, 3, 3))
        assert (got == v.fill_value).all()

    def test_chunk_level(self, contract_volume: Volume, contract_truth: Any) -> None:
        v = contract_volume
        units = sorted(set(v.iter_units()))
        assert units, "no storage unit listed"
        cs = np.asarray(v.chunk_shape)
        us = np.asarray(v.unit_shape)
        seen = 0
        for unit in units[:4]:
            su = v.open_unit(unit)
            assert su is not None
            table = su.chunk_table()
            assert len(table) == su.num_chunks == int(np.prod(us))
            indices = np.flatnonzero(table.present)[:6].tolist()
            local = v.chunk_local(np.asarray(indices, dtype=np.int64))
            assert (v.chunk_index(local) == np.asarray(indices)).all()
            results = su.read_chunks(indices)
            for _idx, loc, result in zip(indices, local, results, strict=True):
                if result is None:
                    continue
                assert not isinstance(result, FormatError), result
                g = (np.asarray(unit) * us + loc) * cs
                if (g >= np.asarray(contract_truth.shape[1:])).any():
                    continue
                assert result.shape == (v.num_channels, *v.chunk_shape)
                part = contract_truth[:, g[0]:g[0] + cs[0], g[1]:g[1] + cs[1], g[2]:g[2] + cs[2]]
                np.testing.assert_array_equal(result[:, :part.shape[1], :part.shape[2],
                                                     :part.shape[3]], part)
                seen += 1
            v.done_with(su)
        assert seen, "no chunk read"

    def test_units_read_at_once_agree(self, contract_volume: Volume) -> None:
        """``open_and_read`` and ``read_units`` (the loader's ways in) give what
        ``open_unit`` + ``read_chunks`` give, an absent unit included."""
        v = contract_volume
        units, jobs, expected = _first_units_read(v)
        for (unit, indices), want in zip(jobs, expected, strict=True):
            opened, got = v.open_and_read(unit, indices)
            assert opened is not None
            _assert_same_chunks(got, want)
            v.done_with(opened)
        far = tuple(max(u[k] for u in units) + 50 for k in range(3))
        absent = v.open_unit(far)  # None, or (a remote store) a unit of absent chunks
        far_chunks = None if absent is None else absent.read_chunks([0])
        opened, got = v.open_and_read(far, [0])
        assert (opened is None) == (absent is None)
        assert got == ([] if absent is None else far_chunks)
        got_units = v.read_units([*jobs, (far, [0])])
        assert len(got_units) == len(jobs) + 1
        assert got_units[-1] == far_chunks
        for got, want in zip(got_units, expected, strict=False):
            assert isinstance(got, list)
            _assert_same_chunks(got, want)

    def test_read_batch_agrees(self, contract_volume: Volume) -> None:
        """``read_batch`` (the loader's one way in) gives what ``read_chunks`` gives, an
        absent unit included, and keeps the units open in the reader's table unless the
        volume's units are small (``small_units``); a second read finds them there."""
        v = contract_volume
        units, jobs, expected = _first_units_read(v)
        far = tuple(max(u[k] for u in units) + 50 for k in range(3))
        absent = v.open_unit(far)  # None, or (a remote store) a unit of absent chunks
        far_read = None if absent is None else absent.read_chunks([0])
        table = _Table()
        try:
            for hint in (False, True):  # the second time: the units known, hinted first
                got = v.read_batch([*jobs, (far, [0])], table, hint)
                assert got is not None and len(got) == len(jobs) + 1
                assert got[-1] == far_read
                for found, want in zip(got, expected, strict=False):
                    assert isinstance(found, list)
                    _assert_same_chunks(found, want)
                kept = [table.state(unit) for unit in units]
                if v.small_units:
                    assert all(k is UNKNOWN for k in kept)
                else:
                    assert all(isinstance(k, StorageUnit) for k in kept)
        finally:
            table.close(v)

    def test_damaged_chunk_is_its_error(self, contract_damaged: Any) -> None:
        v, chunk = contract_damaged
        units, indices = v.locate(np.asarray([chunk], dtype=np.int64))
        unit = v.open_unit(tuple(int(x) for x in units[0]))
        assert unit is not None
        [result] = unit.read_chunks([int(indices[0])])
        assert isinstance(result, FormatError)
        assert result.path
        [got] = v.read_units([(tuple(int(x) for x in units[0]), [int(indices[0])])])
        assert isinstance(got, list) and isinstance(got[0], FormatError)
        assert got[0].path
        lo = [int(c) * k for c, k in zip(chunk, v.chunk_shape, strict=True)]
        with pytest.raises(FormatError):
            v.read(lo, v.chunk_shape)

    def test_concurrent_reads(self, contract_volume: Volume, contract_truth: Any) -> None:
        full = contract_truth.shape[1:]
        errors: list[BaseException] = []

        def work(seed: int) -> None:
            rng = np.random.default_rng(seed)
            try:
                for _ in range(10):
                    lo = [int(rng.integers(0, f)) for f in full]
                    size = [int(rng.integers(1, f - a + 1)) for a, f in zip(lo, full, strict=True)]
                    got = contract_volume.read(lo, size)
                    want = contract_truth[:, lo[0]:lo[0] + size[0], lo[1]:lo[1] + size[1],
                                          lo[2]:lo[2] + size[2]]
                    if not np.array_equal(got, want):
                        raise AssertionError(f"concurrent read of {lo} {size} differs")
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(s,)) for s in (1, 2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors, errors


def _first_units_read(v: Volume) -> tuple[list[Any], list[tuple[Any, list[int]]],
                                         list[list[Any]]]:
    """The volume's first four units present, a job of up to five chunks present in each,
    and those chunks as ``open_unit`` and ``read_chunks`` give them."""
    units = sorted(set(v.iter_units()))[:4]
    jobs: list[tuple[Any, list[int]]] = []
    expected: list[list[Any]] = []
    for unit in units:
        su = v.open_unit(unit)
        assert su is not None
        indices = np.flatnonzero(su.chunk_table().present)[:5].tolist()
        expected.append(su.read_chunks(indices))
        v.done_with(su)
        jobs.append((unit, indices))
    return units, jobs, expected


def _assert_same_chunks(got: list[Any], want: list[Any]) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        if b is None or isinstance(b, FormatError):
            assert type(a) is type(b)
        else:
            assert isinstance(a, np.ndarray)
            np.testing.assert_array_equal(a, b)


class _Table:
    """The least table of open units a reader keeps (``batchread.UnitTable``), as the
    loader's ``ChunkReader`` is one."""

    stopping = False

    def __init__(self) -> None:
        self.states: dict[Any, StorageUnit | FormatError | None] = {}

    def state(self, unit: Any) -> StorageUnit | FormatError | None | Unknown:
        return self.states.get(unit, UNKNOWN)

    def remember(self, unit: Any, state: StorageUnit | FormatError | None
                 ) -> StorageUnit | FormatError | None:
        self.states[unit] = state
        return state

    def forget(self, unit: Any, old: StorageUnit) -> None:
        if self.states.get(unit) is old:
            del self.states[unit]

    def close(self, volume: Volume) -> None:
        for state in self.states.values():
            if isinstance(state, StorageUnit):
                volume.done_with(state)
