"""The contract every ``Store`` passes (as zarr-python's ``testing/store.py`` for its stores).

Subclass ``StoreContract`` and provide two fixtures:

- ``contract_store``: an open ``Store`` whose root holds the files of ``contract_root``;
- ``contract_root``: the local folder with the same files (the truth it must read as).

Each store says what it can do through its declared capabilities (``supports_listing``,
``supports_prefetch``, ``tables_ahead_bytes``); the contract holds what a caller may count on
whatever they say.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from viewer.format import FormatError
from viewer.format.store import Store

#: An object every contract root holds (a WKW file of the remote tests' dataset).
KEY = "ds/color/1/z0/y0/x0.wkw"
MISSING = "ds/color/1/z9/y9/x9.wkw"


class StoreContract:
    def test_read_whole_and_ranges(self, contract_store: Store, contract_root: Path) -> None:
        whole = (contract_root / KEY).read_bytes()
        assert contract_store.read(KEY) == whole
        assert contract_store.read_whole(KEY) == whole
        assert contract_store.read(KEY, 100, 50) == whole[100:150]
        ranges = [(0, 16), (500, 100), (len(whole) - 8, 8)]
        assert contract_store.read_ranges(KEY, ranges) == [whole[o:o + n] for o, n in ranges]

    def test_a_range_past_the_end_is_short(self, contract_store: Store,
                                           contract_root: Path) -> None:
        whole = (contract_root / KEY).read_bytes()
        assert contract_store.read(KEY, len(whole) - 10, 100) == whole[-10:]

    def test_size_exists_and_known_size(self, contract_store: Store,
                                        contract_root: Path) -> None:
        n = (contract_root / KEY).stat().st_size
        assert contract_store.size(KEY) == n
        assert contract_store.exists(KEY)
        assert contract_store.known_size(KEY) in (None, n)
        assert contract_store.size(MISSING) is None
        assert not contract_store.exists(MISSING)

    def test_a_missing_object_is_file_not_found(self, contract_store: Store) -> None:
        with pytest.raises(FileNotFoundError):
            contract_store.read(MISSING, 0, 1)
        with pytest.raises(FileNotFoundError):
            contract_store.read_whole(MISSING)

    def test_results_per_range(self, contract_store: Store, contract_root: Path) -> None:
        whole = (contract_root / KEY).read_bytes()
        got = contract_store.read_ranges_results(KEY, [(0, 8), (300, 20)])
        assert got == [whole[:8], whole[300:320]]
        assert contract_store.read_ranges_results(KEY, []) == []
        failed = contract_store.read_ranges_results(MISSING, [(0, 8), (10, 8)])
        assert len(failed) == 2
        assert all(isinstance(f, FileNotFoundError) for f in failed)
        assert all(isinstance(f, OSError | FormatError) for f in failed)

    def test_ranges_with_their_version(self, contract_store: Store,
                                       contract_root: Path) -> None:
        """The version learnt with some ranges reads more ranges of that same object; a
        store that names none reads them all the same."""
        whole = (contract_root / KEY).read_bytes()
        got, version = contract_store.read_ranges_versioned(KEY, [(0, 16)])
        assert got == [whole[:16]]
        assert contract_store.read_ranges_results(KEY, [(100, 30), (0, 4)], version) == \
            [whole[100:130], whole[:4]]
        missing, none = contract_store.read_ranges_versioned(MISSING, [(0, 8)])
        assert isinstance(missing[0], FileNotFoundError) and none is None

    def test_folders(self, contract_store: Store, contract_root: Path) -> None:
        assert not contract_store.is_dir("ds/nothing")
        assert not contract_store.is_dir(KEY)
        names = contract_store.list_dir("ds")
        if contract_store.supports_listing:
            assert contract_store.is_dir("ds/color")
            assert names == sorted(p.name for p in (contract_root / "ds").iterdir())
            assert sorted(contract_store.list_names("ds")) == names
            walked = list(contract_store.walk("ds/color"))
            want = sorted(p.relative_to(contract_root).as_posix()
                          for p in (contract_root / "ds" / "color").rglob("*") if p.is_file())
            assert sorted(walked) == want
        else:  # no listing (plain HTTP): nothing is claimed, so nothing is proven absent
            assert names == []

    def test_location_names_the_key(self, contract_store: Store) -> None:
        assert contract_store.location(KEY).replace("\\", "/").endswith(KEY)

    def test_read_ahead_gives_the_same_bytes(self, contract_store: Store,
                                             contract_root: Path) -> None:
        whole = (contract_root / KEY).read_bytes()
        assert isinstance(contract_store.supports_prefetch, bool)
        assert contract_store.tables_ahead_bytes >= 0
        contract_store.prefetch(KEY, [(0, 64), (1000, 200)])
        contract_store.prefetch(MISSING, [(0, 64)])  # never an error: the read says it
        assert contract_store.read(KEY, 1000, 200) == whole[1000:1200]
        contract_store.prefetch(KEY, [(4000, 100)])
        assert contract_store.cancel_prefetch(lambda key: key != KEY) >= 0
        assert contract_store.cancel_prefetch() >= 0
        assert contract_store.read(KEY, 4000, 100) == whole[4000:4100]
