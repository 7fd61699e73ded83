"""Chunk keys parsed many at once (``viewer.format.zarr.keys.parse_keys``, what
``ZarrVolume.iter_units`` lists with) give what the rule says key by key: ``head``, then
``ndim`` numbers of ASCII digits joined by the separator, nothing else; sorted, in the order
of the keys sorted as strings; and a listing of several batches of keys is the listing of all
of them, in the order of its keys sorted."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from viewer.format.zarr.keys import MAX_DIGITS, parse_keys

zarr = pytest.importorskip("zarr", reason="zarr-python (test extra) is not installed")

from viewer.format import open_volume  # noqa: E402
from viewer.format.store import LocalStore, Store  # noqa: E402


def _rule(key: str, head: str, sep: str, ndim: int) -> tuple[int, ...] | None:
    """The rule, one key, written plainly."""
    if not key.startswith(head):
        return None
    parts = key[len(head):].split(sep)
    if len(parts) != ndim or not all(p and all("0" <= c <= "9" for c in p) for p in parts):
        return None
    return tuple(int(p) for p in parts)


def _as_tuples(found: object) -> list[tuple[int, ...]]:
    if isinstance(found, np.ndarray):
        assert found.dtype == np.int64
        return [tuple(int(v) for v in row) for row in found]
    assert isinstance(found, list)
    return found


PIECES = ["0", "1", "7", "10", "007", "123456", ".", "/", "c", "x", "-", " ", "\u0663", "\n",
          "\u00e9", "\udcff", "99999999999999999999"]


def test_random_keys_parse_as_the_rule_says() -> None:
    rng = random.Random(20)
    for _ in range(2000):
        sep = rng.choice("./")
        ndim = rng.randint(1, 5)
        head = rng.choice(["", "c" + sep, "c", "a1/b2/c/", "\u00e4/"])
        keys = []
        for _ in range(rng.randint(0, 40)):
            if rng.random() < 0.5:  # a key that may well name a position
                keys.append(head + sep.join(
                    "0" * rng.randint(0, 2) + str(rng.randint(0, 10 ** rng.randint(0, 7)))
                    for _ in range(ndim + rng.choice([0, 0, 0, -1, 1]))))
            else:
                keys.append(rng.choice(["", head]) + "".join(
                    rng.choice(PIECES) for _ in range(rng.randint(0, 9))))
        want = [p for p in (_rule(k, head, sep, ndim) for k in keys) if p is not None]
        assert _as_tuples(parse_keys(keys, head, sep, ndim)) == want, (keys, head, sep, ndim)


def test_sorted_the_positions_come_in_the_order_of_their_keys_sorted() -> None:
    rng = random.Random(21)
    for _ in range(500):
        sep = rng.choice("./")
        ndim = rng.randint(1, 4)
        head = rng.choice(["", "c" + sep])
        keys = list({head + sep.join(str(rng.randint(0, 10 ** rng.randint(0, 12)))
                                     for _ in range(ndim)) for _ in range(rng.randint(1, 60))})
        keys += ["x", head + "1", "", "\u00e9", head + "0" + sep * ndim]
        rng.shuffle(keys)
        want = [p for p in (_rule(k, head, sep, ndim) for k in sorted(keys)) if p is not None]
        assert _as_tuples(parse_keys(keys, head, sep, ndim, sort=True)) == want, keys


def test_a_batch_of_well_formed_keys_comes_back_as_one_array() -> None:
    keys = [f"c/{z}/{y}/{x}" for z in range(3) for y in range(40) for x in (0, 5, 123)]
    found = parse_keys(keys, "c/", "/", 3)
    assert isinstance(found, np.ndarray)
    assert found.shape == (len(keys), 3)
    assert _as_tuples(found) == [tuple(int(p) for p in k.split("/")[1:]) for k in keys]


@pytest.mark.parametrize("keys,want", [
    (["0.0.01234", "01234", "1x0x1", "1.1.1.", ".1.1.1", "1..1.1", "0.0.00"],
     [(0, 0, 1234), (0, 0, 0)]),  # "." is a separator, never any character
    (["1.2.3", "4.5.6\x007.8.9"], [(1, 2, 3)]),  # a NUL inside a key
    ([f"1.2.{'9' * (MAX_DIGITS + 2)}", "1.2.3"], [(1, 2, int("9" * (MAX_DIGITS + 2))), (1, 2, 3)]),
    ([f"1.2.{'9' * MAX_DIGITS}"], [(1, 2, int("9" * MAX_DIGITS))]),
    ([""], []), ([], []),
])
def test_edge_keys(keys: list[str], want: list[tuple[int, ...]]) -> None:
    assert _as_tuples(parse_keys(keys, "", ".", 3)) == want


def test_a_separator_is_one_ascii_character_neither_digit_nor_nul() -> None:
    for sep in ("", "..", "1", "\0", "\u00e9"):
        with pytest.raises(ValueError):
            parse_keys(["1"], "", sep, 1)


@pytest.mark.parametrize("separator", [".", "/"])
def test_a_listing_of_many_batches_is_the_listing_of_every_chunk(
        tmp_path: Path, separator: str) -> None:
    """2,000 chunk files (the first batches of keys are small, later ones bigger), a stray
    name in the last folder, and names a separator taken for any character would match."""
    root = tmp_path / "many.zarr"
    shape = (10, 20, 10)  # z, y, x: one chunk per voxel
    arr = zarr.create_array(store=str(root), shape=shape, chunks=(1, 1, 1), dtype="u1",
                            zarr_format=2, fill_value=0,
                            chunk_key_encoding={"name": "v2", "separator": separator})
    arr[...] = 1
    for stray in (separator.join(["9", "19", "x"]), "01234", "1x0x1"):
        (root / stray).write_bytes(b"x")
    with open_volume(str(root)) as volume:
        listed = list(volume.iter_units())
    assert len(listed) == len(set(listed)) == 2000
    assert set(listed) == {(x, y, z) for z in range(10) for y in range(20) for x in range(10)}
    # in the order of the keys sorted as strings, as the generic walk gives them
    keys = Store.walk(LocalStore(str(root)))
    in_order = [p for p in (_rule(k, "", separator, 3) for k in keys) if p is not None]
    assert listed == [(x, y, z) for z, y, x in in_order]


def test_a_huge_flat_folder_is_sorted_first_and_listed_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``FLAT_SORT_MAX`` names the folder is sorted as strings, then parsed in batches:
    the same listing in the same order."""
    from viewer.format.zarr import volume as zarr_volume

    root = tmp_path / "flat.zarr"
    arr = zarr.create_array(store=str(root), shape=(6, 30, 4), chunks=(1, 1, 1), dtype="u1",
                            zarr_format=2, fill_value=0)
    arr[...] = 1
    (root / "01234").write_bytes(b"x")
    with open_volume(str(root)) as volume:
        listed = list(volume.iter_units())
        monkeypatch.setattr(zarr_volume, "FLAT_SORT_MAX", 10)
        monkeypatch.setattr(zarr_volume, "MAX_BATCH", 100)
        assert list(volume.iter_units()) == listed
    assert len(listed) == 720

