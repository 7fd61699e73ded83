"""The inspector keeps the box of the units found and their summed size histogram as the scan
goes (no refresh walks every unit)."""

from __future__ import annotations

import numpy as np

from viewer.core.inspect import UnitStats
from viewer.ui.inspector.state import InspectorState


def _row(pos: tuple[int, int, int] | None, hist: list[int] | None) -> UnitStats:
    return UnitStats(f"/x/{pos}", pos, "lz4", 10, 1, 1, 1.0, 1, 1.0, (),
                     np.asarray(hist, np.int64) if hist is not None else None)


def test_add_units_keeps_box_and_histogram() -> None:
    st = InspectorState()
    rows = [_row((3, 1, 2), [1, 0, 2]), _row(None, None), _row((0, 5, 1), [0, 4, 0])]
    st.add_units(rows[:2])
    first = st.positions_snapshot()
    st.add_units(rows[2:])
    assert first == (((3, 1, 2),),)  # a snapshot does not change as rows come
    assert st.positions_snapshot() == (((3, 1, 2),), ((0, 5, 1),))
    assert st.unit_box == ((0, 1, 1), (3, 5, 2))
    assert st.size_histogram is not None and st.size_histogram.tolist() == [1, 4, 2]
    assert len(st.units) == 3
    st.clear_units()
    assert (st.units, st.unit_positions, st.unit_box, st.size_histogram) == ([], set(), None,
                                                                             None)
    assert st.positions_snapshot() == ()


def test_a_batch_added_up_before_gives_the_same_histogram() -> None:
    """Rows given with their histograms already added up (a batch unpickled on the reader
    thread) leave the same totals as rows added up here; a sum of another length than the
    histogram kept is not taken."""
    rows = [_row((3, 1, 2), [1, 0, 2]), _row(None, None), _row((0, 5, 1), [0, 4, 0]),
            _row((1, 1, 1), [5, 5, 5])]
    here, given = InspectorState(), InspectorState()
    here.add_units(rows[:2])
    here.add_units(rows[2:])
    given.add_units(rows[:2], np.asarray([1, 0, 2], np.int64))
    given.add_units(rows[2:], np.asarray([5, 9, 5], np.int64))
    assert given.size_histogram is not None and here.size_histogram is not None
    assert given.size_histogram.tolist() == here.size_histogram.tolist() == [6, 9, 7]
    assert given.size_histogram.dtype == np.int64
    assert given.unit_box == here.unit_box and given.units == here.units
    given.add_units([_row((2, 2, 2), [1, 1])], np.asarray([1, 1], np.int64))
    assert given.size_histogram.tolist() == [6, 9, 7]
    assert given.unit_box == ((0, 1, 1), (3, 5, 2))
