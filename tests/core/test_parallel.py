"""``ordered_map``: whole-unit passes on every core, results in the listing's order."""

from __future__ import annotations

import threading
import time

import pytest

from viewer.core.parallel import ordered_map


def test_results_in_order_on_several_threads() -> None:
    names: set[str] = set()

    def work(n: int) -> int:
        names.add(threading.current_thread().name)
        time.sleep(0.001 * (n % 3))  # finish out of order
        return n * n

    assert list(ordered_map(work, range(50), threads=3)) == [n * n for n in range(50)]
    assert all(name.startswith("unit-pass") for name in names)


def test_bounded_look_ahead_and_lazy_listing() -> None:
    taken: list[int] = []

    def listing():  # type: ignore[no-untyped-def]
        for n in range(1000):
            taken.append(n)
            yield n

    it = ordered_map(lambda n: n, listing(), threads=2, ahead=5)
    assert next(it) == 0
    assert len(taken) <= 6  # not the whole listing up front
    it.close()


def test_an_error_comes_at_its_items_turn() -> None:
    def work(n: int) -> int:
        if n == 7:
            raise ValueError("seven")
        return n

    got: list[int] = []
    with pytest.raises(ValueError, match="seven"):
        for v in ordered_map(work, range(20), threads=2):
            got.append(v)
    assert got == list(range(7))


def test_one_thread_is_plain_map() -> None:
    names: set[str] = set()

    def work(n: int) -> int:
        names.add(threading.current_thread().name)
        return n

    assert list(ordered_map(work, range(5), threads=1)) == list(range(5))
    assert names == {threading.current_thread().name}
