"""A scan batch sent from the child process arrives with the same rows, its histograms views
of one array (no buffer object kept per row for the window's cycle collector to walk)."""

from __future__ import annotations

import dataclasses
import gc
import pickle

import numpy as np

from viewer.core.inspect import ScanBatch, UnitStats
from viewer.format import FormatError


def _row(k: int, hist: list[int] | None) -> UnitStats:
    return UnitStats(f"/d/x{k}.wkw", (k, 0, 0), "lz4", 100 + k, 1, 3, 3.0, 3, 2.0,
                     (FormatError("bad", f"/d/x{k}.wkw"),) if hist is None else (),
                     np.asarray(hist, np.int64) if hist is not None else None, 3 * k)


def test_a_batch_pickled_keeps_its_rows_and_shares_one_histogram_array() -> None:
    rows = tuple(_row(k, None if k == 3 else [k, 0, 2 * k, 1]) for k in range(6))
    batch = ScanBatch(rows, 6, 10, finished=False, error=None)
    back = pickle.loads(pickle.dumps(batch, protocol=5))
    assert (back.done, back.total, back.finished, back.error) == (6, 10, False, None)
    assert len(back.rows) == 6
    for a, b in zip(rows, back.rows, strict=True):
        assert (a.path, a.position, a.size_on_disk, a.total, str(a.problems)) == \
            (b.path, b.position, b.size_on_disk, b.total, str(b.problems))
        if a.histogram is None:
            assert b.histogram is None
        else:
            assert b.histogram is not None and b.histogram.tolist() == a.histogram.tolist()
            assert b.histogram.dtype == np.int64
    bases = {id(r.histogram.base) for r in back.rows if r.histogram is not None}
    assert len(bases) == 1  # views of one array
    gc.collect()
    tracked = [o for o in gc.get_objects() if type(o).__name__ == "memoryview"
               and any(o is getattr(r.histogram, "base", None) for r in back.rows)]
    assert not tracked
    assert batch.rows[0].histogram is not None  # the sender's rows are untouched


def test_a_batch_without_histograms_pickles_as_is() -> None:
    batch = ScanBatch((_row(1, None),), 1, None, finished=True, error="why")
    back = pickle.loads(pickle.dumps(batch))
    assert back.rows[0].histogram is None and back.error == "why" and back.finished


def test_a_batch_unpickled_knows_its_histograms_added_up() -> None:
    """The reader thread adds up the rows' histograms as it unpickles a batch; a batch made
    here, or one whose rows' histograms differ in kind, does not know the sum."""
    rows = tuple(_row(k, None if k == 3 else [k, 0, 2 * k, 1]) for k in range(6))
    batch = ScanBatch(rows, 6, 10)
    assert batch.histograms_summed is None
    back = pickle.loads(pickle.dumps(batch, protocol=5))
    assert back.histograms_summed is not None
    assert back.histograms_summed.dtype == np.int64
    assert back.histograms_summed.tolist() == [12, 0, 24, 5]
    odd = rows + (dataclasses.replace(_row(9, None), histogram=np.ones(4, np.int32)),)
    assert pickle.loads(pickle.dumps(ScanBatch(odd, 7, 10))).histograms_summed is None
