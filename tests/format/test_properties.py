"""Property tests: Morton order and header bytes round-trip for every value the format allows."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from viewer.format import HeaderError, wkw
from viewer.format.wkw import morton
from viewer.format.wkw.header import HEADER_SIZE, VOXEL_TYPES

COORD = st.integers(min_value=0, max_value=(1 << morton.MAX_BITS) - 1)


@given(st.lists(st.tuples(COORD, COORD, COORD), min_size=1, max_size=50))
@settings(deadline=None)
def test_morton_decode_inverts_encode(coords: list[tuple[int, int, int]]) -> None:
    arr = np.asarray(coords, dtype=np.int64)
    index = morton.encode(arr[:, 0], arr[:, 1], arr[:, 2])
    x, y, z = morton.decode(index)
    assert np.array_equal(np.stack([x, y, z], axis=1), arr)


@given(COORD, COORD, COORD)
@settings(deadline=None)
def test_morton_bit_order_x_first(x: int, y: int, z: int) -> None:
    """Bit 3k of the index is bit k of x, 3k+1 of y, 3k+2 of z (as the reference lays out)."""
    index = int(morton.encode(x, y, z))
    for k in range(morton.MAX_BITS):
        assert (index >> (3 * k)) & 1 == (x >> k) & 1
        assert (index >> (3 * k + 1)) & 1 == (y >> k) & 1
        assert (index >> (3 * k + 2)) & 1 == (z >> k) & 1


@given(st.integers(min_value=0, max_value=6))
@settings(deadline=None)  # no timed assertions: speed lives in benchmarks/
def test_morton_is_a_bijection_on_a_file(log2_file_len: int) -> None:
    """The blocks of a file of any file_len map one to one onto 0..file_len^3-1."""
    n = 1 << log2_file_len
    grid = morton.block_grid((0, 0, 0), (n, n, n))
    index = morton.encode(grid[:, 0], grid[:, 1], grid[:, 2])
    assert np.array_equal(np.sort(index), np.arange(n**3))


HEADERS = st.builds(
    lambda vt, ch_mul, bl, fl, bt, offset: (vt, ch_mul, bl, fl, bt, offset),
    st.integers(1, 10),
    st.integers(1, 31),
    st.integers(0, 15),
    st.integers(0, 15),
    st.integers(1, 3),
    st.integers(0, (1 << 64) - 1),
)


@given(HEADERS)
@settings(max_examples=300, deadline=None)
def test_header_bytes_round_trip(fields: tuple[int, int, int, int, int, int]) -> None:
    vt, channels, log2_bl, log2_fl, bt, offset = fields
    if channels * VOXEL_TYPES[vt].itemsize > 255:
        return
    header = wkw.Header(vt, num_channels=channels, block_len=1 << log2_bl,
                        file_len=1 << log2_fl, block_type=bt)
    raw = header.to_bytes(offset)
    assert len(raw) == HEADER_SIZE
    assert raw[:4] == b"WKW\x01"
    assert raw[4] == (log2_fl << 4) | log2_bl
    assert raw[7] == channels * VOXEL_TYPES[vt].itemsize
    back = wkw.Header.from_bytes(raw)
    assert back == header
    assert back.data_offset == offset
    assert back.to_bytes() == raw


@given(st.binary(min_size=0, max_size=32))
@settings(max_examples=500, deadline=None)
def test_header_parse_any_bytes_is_a_header_or_a_header_error(raw: bytes) -> None:
    """Garbage never escapes as anything but HeaderError, and what parses writes back the same."""
    try:
        header = wkw.Header.from_bytes(raw)
    except HeaderError:
        return
    assert header.to_bytes() == raw[:HEADER_SIZE]


@given(st.binary(min_size=12, max_size=12), st.integers(1, 3), st.integers(1, 10))
@settings(deadline=None)
def test_header_parse_valid_prefix_with_random_tail(tail: bytes, bt: int, vt: int) -> None:
    raw = b"WKW\x01" + bytes([tail[0], bt, vt, tail[1]]) + tail[4:]
    try:
        header = wkw.Header.from_bytes(raw)
    except HeaderError as exc:
        assert tail[1] % VOXEL_TYPES[vt].itemsize or tail[1] == 0, str(exc)
        return
    assert header.to_bytes() == raw


BOX_LO = st.integers(min_value=0, max_value=(1 << morton.MAX_BITS) - 9)


@given(BOX_LO, BOX_LO, BOX_LO, st.integers(1, 8), st.integers(1, 8), st.integers(1, 8))
@settings(deadline=None)
def test_box_indices_equal_encoded_block_grid(x: int, y: int, z: int, nx: int, ny: int,
                                              nz: int) -> None:
    lo, hi = (x, y, z), (x + nx, y + ny, z + nz)
    grid = morton.block_grid(lo, hi)
    assert np.array_equal(morton.box_indices(lo, hi),
                          morton.encode(grid[:, 0], grid[:, 1], grid[:, 2]))
