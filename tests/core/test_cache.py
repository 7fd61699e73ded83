"""The block cache: budget, LRU eviction order, pinning, read-only values, jump tables."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from viewer.core.cache import BlockCache, BlockKey, block_key, default_budget_bytes
from viewer.format.errors import BlockDecodeError

BLOCK = 4096


def key(n: int, layer: str = "color") -> BlockKey:
    return block_key(layer, 1, (0, 0, n // 1000), n % 1000)


def block(fill: int = 0, nbytes: int = BLOCK) -> np.ndarray:
    return np.full((1, nbytes, 1, 1), fill % 256, dtype=np.uint8)


def test_default_budget_is_at_most_one_gib() -> None:
    assert 0 < default_budget_bytes() <= 1 << 30


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(1, 3), st.booleans()), max_size=200),
       st.integers(0, 12))
def test_budget_never_exceeded_by_more_than_one_block(ops: list[tuple[int, int, bool]],
                                                      budget_blocks: int) -> None:
    cache = BlockCache(budget_blocks * BLOCK)
    for n, size, pin in ops:
        if pin:
            cache.set_pinned({key(n), key(n + 1)}, 2 * BLOCK)
        cache.put(key(n), block(n, size * BLOCK // 2))
        cache.account_file(("f", n % 3), 100)
        assert cache.used_bytes <= cache.budget_bytes + BLOCK
        assert cache.stats().peak_used_bytes <= cache.budget_bytes + BLOCK


def test_least_recently_used_is_evicted_first() -> None:
    cache = BlockCache(3 * BLOCK)
    for n in range(3):
        cache.put(key(n), block(n))
    assert cache.get(key(0)) is not None  # 0 becomes the most recent; 1 is now the oldest
    cache.put(key(3), block(3))
    assert key(1) not in cache
    assert cache.keys() == [key(2), key(0), key(3)]
    cache.put(key(4), block(4))
    assert cache.keys() == [key(0), key(3), key(4)]
    assert cache.stats().evictions == 2


def test_peek_does_not_refresh() -> None:
    cache = BlockCache(2 * BLOCK)
    cache.put(key(0), block())
    cache.put(key(1), block())
    assert cache.peek(key(0)) is not None
    cache.put(key(2), block())
    assert key(0) not in cache and key(1) in cache


def test_pinned_blocks_outlive_older_unpinned_ones() -> None:
    cache = BlockCache(3 * BLOCK)
    for n in range(3):
        cache.put(key(n), block(n))
    cache.set_pinned({key(0), key(1)}, 2 * BLOCK)
    cache.put(key(3), block(3))
    cache.put(key(4), block(4))
    assert key(0) in cache and key(1) in cache
    assert key(2) not in cache and key(3) not in cache and key(4) in cache
    assert not cache.stats().pinned_over_budget


def test_screen_larger_than_budget_raises_the_warning_and_keeps_the_budget() -> None:
    cache = BlockCache(2 * BLOCK)
    pins = {key(n) for n in range(4)}
    cache.set_pinned(pins, 4 * BLOCK)
    for n in range(4):
        cache.put(key(n), block(n))
        assert cache.used_bytes <= 2 * BLOCK
    stats = cache.stats()
    assert stats.pinned_over_budget
    assert stats.blocks == 2 and stats.pinned_blocks == 2


def test_values_are_read_only() -> None:
    cache = BlockCache(4 * BLOCK)
    value = block(7)
    cache.put(key(0), value)
    stored = cache.get(key(0))
    assert isinstance(stored, np.ndarray)
    with pytest.raises(ValueError):
        stored[0, 0, 0, 0] = 1


def test_a_value_larger_than_the_budget_is_not_cached() -> None:
    cache = BlockCache(BLOCK)
    assert not cache.put(key(0), block(0, 2 * BLOCK))
    assert len(cache) == 0 and cache.used_bytes == 0


def test_set_budget_evicts_at_once() -> None:
    cache = BlockCache(8 * BLOCK)
    for n in range(8):
        cache.put(key(n), block(n))
    cache.set_budget(3 * BLOCK)
    assert cache.used_bytes <= 3 * BLOCK
    assert cache.keys() == [key(5), key(6), key(7)]
    with pytest.raises(ValueError):
        cache.set_budget(-1)


def test_jump_tables_are_charged_to_the_budget() -> None:
    cache = BlockCache(4 * BLOCK)
    for n in range(4):
        cache.put(key(n), block(n))
    cache.account_file(("color", 1, (0, 0, 0)), BLOCK + 10)
    stats = cache.stats()
    assert stats.table_bytes == BLOCK + 10
    assert stats.used_bytes == stats.block_bytes + stats.table_bytes <= 4 * BLOCK
    assert len(cache) == 2
    cache.release_file(("color", 1, (0, 0, 0)))
    assert cache.stats().table_bytes == 0


def test_failed_blocks_are_remembered_cheaply() -> None:
    cache = BlockCache(4 * BLOCK)
    err = BlockDecodeError("bad", "/x.wkw", block=3, offset=99)
    cache.put(key(3), err)
    assert cache.get(key(3)) is err
    assert cache.used_bytes < BLOCK


def test_clear_one_layer() -> None:
    cache = BlockCache(8 * BLOCK)
    cache.put(key(0, "a"), block())
    cache.put(key(1, "b"), block())
    cache.clear("a")
    assert cache.keys() == [key(1, "b")]
    assert cache.used_bytes == BLOCK


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 40), st.integers(1, 3)), max_size=12),
                max_size=30),
       st.integers(0, 12))
def test_put_many_keeps_the_budget_and_evicts_like_put(batches: list[list[tuple[int, int]]],
                                                       budget_blocks: int) -> None:
    """A worker's batch goes in under one lock; the cache ends as after putting one by one
    whenever the batch fits, and never holds more than the budget."""
    many = BlockCache(budget_blocks * BLOCK)
    one = BlockCache(budget_blocks * BLOCK)
    same = True  # a key twice in one batch: put_many skips its first value (no eviction for it)
    for batch in batches:
        items = [(key(n), block(n, size * BLOCK // 2)) for n, size in batch]
        fits = sum(v.nbytes for _, v in dict(items).items()) <= many.budget_bytes
        same = same and len(dict(items)) == len(items)
        # A key already cached with another size: put evicts for the old and new value both
        # while put_many counts only the difference (it may keep a block put had to drop).
        same = same and all(many.peek(k) is None or many.peek(k).nbytes == v.nbytes
                            for k, v in items)
        many.put_many(items)
        for k, v in items:
            one.put(k, v.copy())
        assert many.used_bytes <= many.budget_bytes
        assert many.stats().peak_used_bytes <= many.budget_bytes
        if fits and same:
            assert many.keys() == one.keys()
        for k, _ in items[-1:]:
            value = many.peek(k)
            assert value is None or not value.flags.writeable


def test_put_many_of_more_than_the_budget_keeps_the_newest() -> None:
    cache = BlockCache(3 * BLOCK)
    cache.put_many([(key(n), block(n)) for n in range(5)])
    assert cache.keys() == [key(2), key(3), key(4)]
    np.testing.assert_array_equal(cache.get(key(4)), block(4))
