"""The loader's scheduling without threads: priority order, batches per storage unit, stale
work dropped on a new wish list, blocks in flight never handed out twice, absent or damaged
units not queued, prefetch held behind the screen."""

from __future__ import annotations

import numpy as np

from viewer.core import schedule
from viewer.core.cache import BlockCache, BlockKey
from viewer.core.schedule import Ranked, Scheduler


def ranked(prio: tuple[int, ...], units: list[tuple[int, int, int]], per_unit: int,
           prefetch: bool = False, layer: str = "l") -> Ranked:
    """``per_unit`` blocks in each of ``units`` as one ranked list."""
    keys: list[BlockKey] = [(layer, 1, u, i) for u in units for i in range(per_unit)]
    blocks = np.asarray([(u[0] * 8 + i, u[1], u[2]) for u in units for i in range(per_unit)],
                        dtype=np.int64)
    return (prio, (), keys, blocks, prefetch)


def drain(s: Scheduler) -> list[schedule.Taken]:
    """Every task queued now, taken and done in order."""
    out = []
    while s.counts()[1]:
        taken = s.take()
        if taken is None:
            break
        out.append(taken)
        s.done(taken.keys)
    return out


def test_higher_priority_first_and_batches_per_unit() -> None:
    s = Scheduler(BlockCache(1 << 30), set())
    s.replace([ranked((1, 1), [(0, 0, 0)], 40), ranked((0, 0), [(1, 0, 0), (2, 0, 0)], 10)])
    tasks = drain(s)
    first = [t.keys[0][2] for t in tasks]
    assert first[:2] == [(1, 0, 0), (2, 0, 0)]  # the focused view's blocks first
    # A unit with more blocks than a quarter batch gets batches of its own, in batch sizes.
    sizes = [len(t.keys) for t in tasks if t.keys[0][2] == (0, 0, 0)]
    assert sizes == [schedule.VISIBLE_BATCH, 40 - schedule.VISIBLE_BATCH]
    assert all(len({k[2] for k in t.keys}) == 1 for t in tasks)


def test_units_with_few_blocks_share_a_batch() -> None:
    s = Scheduler(BlockCache(1 << 30), set())
    units = [(x, 0, 0) for x in range(50)]
    s.replace([ranked((0, 0), units, 1)])
    tasks = drain(s)
    assert len(tasks) == -(-50 // schedule.VISIBLE_BATCH)
    assert sorted(k[2] for t in tasks for k in t.keys) == units


def test_a_new_wish_list_drops_what_was_queued() -> None:
    s = Scheduler(BlockCache(1 << 30), set())
    s.replace([ranked((0, 0), [(x, 0, 0) for x in range(4)], 32, layer="old")])
    taken = s.take()
    assert taken is not None  # in flight: read whatever happens next
    s.replace([ranked((0, 0), [(0, 5, 0)], 8, layer="new")])
    assert s.dropped == 3
    s.done(taken.keys)
    rest = drain(s)
    assert {k[0] for t in rest for k in t.keys} == {"new"}


def test_blocks_in_flight_or_cached_are_not_handed_out_again() -> None:
    cache = BlockCache(1 << 30)
    s = Scheduler(cache, set())
    s.replace([ranked((0, 0), [(0, 0, 0)], 8)])
    first = s.take()
    assert first is not None
    again = ranked((0, 0), [(0, 0, 0)], 8)
    s.replace([again])  # the same blocks wanted anew while a worker reads them
    assert s.counts()[1] == 0
    with s.lock:
        assert s.missing_locked(again[2]) == []
    cache.put(first.keys[0], np.zeros((1, 8, 8, 8), np.uint8))
    s.done(first.keys)
    s.replace([again])  # no longer in flight: queued again, less the one cached
    got = drain(s)
    assert sorted(k for t in got for k in t.keys) == sorted(first.keys[1:])


def test_blocks_of_absent_or_damaged_units_are_not_queued() -> None:
    bad = {(1, 0, 0)}
    s = Scheduler(BlockCache(1 << 30), bad)
    s.replace([ranked((0, 0), [(0, 0, 0), (1, 0, 0)], 4)])
    got = drain(s)
    assert {k[2] for t in got for k in t.keys} == {(0, 0, 0)}


def test_prefetch_waits_for_the_hold() -> None:
    s = Scheduler(BlockCache(1 << 30), set())
    held = s.replace([ranked((0, 0), [(0, 0, 0)], 4), ranked((2, 1), [(5, 0, 0)], 4, True)],
                     hold_s=3600.0)
    assert held and s.holding
    screen = s.take()
    assert screen is not None and not screen.task.prefetch
    s.done(screen.keys)
    s.release_hold()
    assert not s.holding
    ahead = s.take()
    assert ahead is not None and ahead.task.prefetch
    s.done(ahead.keys)
    assert s.wait_idle(0)


def test_a_key_twice_in_one_ranked_list_is_queued_once() -> None:
    """A block listed twice in one ranked list is read once, at its first place."""
    cache = BlockCache(1 << 20)
    s = Scheduler(cache, set())
    keys = [("l", 1, (0, 0, 0), 3), ("l", 1, (0, 0, 0), 5), ("l", 1, (0, 0, 0), 3)]
    blocks = np.array([[0, 0, 3], [0, 0, 5], [0, 0, 3]], dtype=np.int64)
    s.add([((0, 0), (), keys, blocks, False)])
    queued, tasks, _ = s.counts()
    assert (queued, tasks) == (2, 1)
    taken = s.take()
    assert taken is not None and taken.keys == keys[:2]


def test_interleaved_units_are_batched_per_unit_in_order_of_first_block() -> None:
    """A plane's blocks alternate between storage units along its rows: each unit's blocks
    become batches of their own (in the list's order), units in the order of their first
    block, and every block's coordinates stay with its key."""
    s = Scheduler(BlockCache(1 << 30), set())
    units = [(2, 0, 0), (0, 0, 0), (1, 0, 0)]
    keys: list[BlockKey] = [("l", 1, units[i % 3], i) for i in range(60)]
    blocks = np.asarray([(i, i % 3, 7) for i in range(60)], dtype=np.int64)
    s.replace([((0, 0), (), keys, blocks, False)])
    tasks = drain(s)
    assert [t.keys[0][2] for t in tasks] == units
    for t in tasks:
        assert len({k[2] for k in t.keys}) == 1
        assert [k[3] for k in t.keys] == sorted(k[3] for k in t.keys)
        assert t.blocks[:, 0].tolist() == [k[3] for k in t.keys]
    assert sorted(k[3] for t in tasks for k in t.keys) == list(range(60))
