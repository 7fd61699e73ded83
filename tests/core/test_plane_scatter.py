"""The native plane assembly (``viewer.format.native.planes``) places the same voxels as the
numpy path of ``scatter_blocks``, and declines, writing nothing, what it was not made for."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from viewer.core import assembly
from viewer.core.prefetch import plane_layout
from viewer.core.slicing import XY, XZ, YZ, PlaneRequest, Status
from viewer.format.native import planes

needs_native = pytest.mark.skipif(not planes.available(),
                                  reason="the native plane assembly was not built")


def _blocks(chunk: tuple[int, int, int], channels: int, dtype: Any, count: int,
            seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        raw = rng.integers(0, 250, (channels, *chunk)).astype(dtype)
        block = np.asfortranarray(raw)  # (C, X, Y, Z) with x fastest, as the formats give
        block.setflags(write=False)
        out.append(block)
    return out


def _assemble(request: PlaneRequest, chunk: tuple[int, int, int], channels: int, dtype: Any,
              native: bool, monkeypatch: pytest.MonkeyPatch) -> np.ndarray:
    lay = plane_layout(request, chunk)
    rows = [k for k in range(len(lay)) if lay.full[k]]
    blocks = _blocks(chunk, channels, dtype, len(rows), seed=len(rows))
    data = np.zeros((channels, *request.shape), dtype=dtype, order="F")
    status = np.full(request.shape, Status.PENDING, dtype=np.uint8, order="F")
    with monkeypatch.context() as m:
        if not native:
            m.setattr(planes, "_SCATTER", None)
        assembly.scatter_blocks(data, status, lay, rows, blocks)
    assert (status == Status.DATA).all()
    return data


@needs_native
@pytest.mark.parametrize("axis", [XY, XZ, YZ], ids=["xy", "xz", "yz"])
@pytest.mark.parametrize("dtype,channels", [(np.uint8, 1), (np.uint16, 3), (np.float32, 2),
                                            (np.uint64, 1)])
def test_the_native_assembly_places_what_numpy_places(axis: int, dtype: Any, channels: int,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    chunk = (8, 4, 16)  # not cubic: each axis has a size of its own
    request = PlaneRequest(axis, 21, (16, 32), (48, 96))
    native = _assemble(request, chunk, channels, dtype, True, monkeypatch)
    python = _assemble(request, chunk, channels, dtype, False, monkeypatch)
    assert native.any() and np.array_equal(native, python)


@needs_native
def test_a_block_of_another_element_size_is_declined_and_nothing_written() -> None:
    plane = np.zeros((1, 16, 16), dtype=np.uint16, order="F")
    good = _blocks((8, 8, 8), 1, np.uint16, 3, seed=1)
    odd = _blocks((8, 8, 8), 1, np.uint8, 1, seed=2)
    u0 = np.array([0, 8, 0, 8], dtype=np.int64)
    v0 = np.array([0, 0, 8, 8], dtype=np.int64)
    assert not planes.scatter(plane, good + odd, 3, 2, 1, 2, 8, 8, u0, v0)
    assert not plane.any()
    assert planes.scatter(plane, good + _blocks((8, 8, 8), 1, np.uint16, 1, seed=3),
                          3, 2, 1, 2, 8, 8, u0, v0)
    assert plane.all()


@needs_native
@pytest.mark.parametrize("depth,u0", [(8, 0), (-1, 0), (0, 9), (0, -1)],
                         ids=["depth-past", "depth-negative", "row-past", "row-negative"])
def test_a_slice_out_of_bounds_is_declined(depth: int, u0: int) -> None:
    plane = np.zeros((1, 16, 16), dtype=np.uint8, order="F")
    blocks = _blocks((8, 8, 8), 1, np.uint8, 1, seed=4)
    assert not planes.scatter(plane, blocks, 3, depth, 1, 2, 8, 8,
                              np.array([u0], dtype=np.int64), np.array([0], dtype=np.int64))
    assert not plane.any()


@needs_native
def test_a_read_only_plane_is_declined() -> None:
    plane = np.zeros((1, 8, 8), dtype=np.uint8, order="F")
    plane.setflags(write=False)
    blocks = _blocks((8, 8, 8), 1, np.uint8, 1, seed=5)
    zero = np.array([0], dtype=np.int64)
    assert not planes.scatter(plane, blocks, 3, 0, 1, 2, 8, 8, zero, zero)
