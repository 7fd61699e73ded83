"""Plane assembly alone (pure numpy): blocks cut into a plane with the four looks of a pixel
kept apart, only missing blocks looked at again, the same snapshot while nothing changed."""

from __future__ import annotations

from typing import Any

import numpy as np

from viewer.core.assembly import PlaneAssembler
from viewer.core.cache import ABSENT, BlockKey
from viewer.core.slicing import XY, PlaneRequest, Status
from viewer.format import BlockDecodeError, DatasetLayoutError

B = 8


def block(gx: int, gy: int, gz: int) -> np.ndarray:
    """A distinct (1, B, B, B) block: voxel value from its global coordinates."""
    x, y, z = np.meshgrid(np.arange(B) + gx * B, np.arange(B) + gy * B, np.arange(B) + gz * B,
                          indexing="ij")
    out = np.asfortranarray(((x * 7 + y * 3 + z) % 250 + 1).astype(np.uint8)[None])
    out.flags.writeable = False
    return out


def test_the_four_looks_and_only_missing_blocks_looked_at_again() -> None:
    asm = PlaneAssembler((B, B, B), 1, np.dtype(np.uint8), 0, lambda u: f"unit{u}")
    req = PlaneRequest(XY, 11, (0, 0), (3 * B, 2 * B))  # 3 x 2 blocks, layer 1, depth 3
    lay = asm.layout(req)
    keys: list[BlockKey] = [("l", 1, (int(b[0]), int(b[1]), 0), k)
                            for k, b in enumerate(lay.blocks)]
    entry = asm.add(req, keys)
    first = asm.snapshot(entry)
    assert not first.complete and (first.status == Status.PENDING).all()

    zeros = np.zeros((1, B, B, B), np.uint8)
    damaged = BlockDecodeError("LZ4 block does not decode", "unit", block=2)
    unreadable = DatasetLayoutError("cannot open", "unit(2, 1, 0)")
    states = {(1, 1, 0): None, (2, 1, 0): unreadable}  # an absent and an unreadable unit
    rows = {tuple(int(v) for v in b[:2]): k for k, b in enumerate(lay.blocks)}
    values: list[Any] = [None] * len(lay)
    values[rows[(0, 0)]] = block(0, 0, 1)
    values[rows[(1, 0)]] = ABSENT  # a chunk its unit does not hold
    values[rows[(2, 0)]] = damaged
    values[rows[(0, 1)]] = zeros  # real zeros
    # (1, 1): its unit is absent; (2, 1): unreadable -- neither cached.
    asm.fill(entry, values, set(states), lambda u: states.get(u, "open"))
    plane = asm.snapshot(entry)
    assert plane is not first and plane.complete

    def look(bx: int, by: int) -> np.ndarray:
        return plane.status[bx * B:(bx + 1) * B, by * B:(by + 1) * B]

    assert (look(0, 0) == Status.DATA).all()
    np.testing.assert_array_equal(plane.data[0, :B, :B], block(0, 0, 1)[0, :, :, 3])
    assert (look(1, 0) == Status.ABSENT).all()
    assert (look(2, 0) == Status.FAILED).all()
    assert (look(0, 1) == Status.DATA).all() and not plane.data[0, :B, B:].any()
    assert (look(1, 1) == Status.ABSENT).all()
    assert (look(2, 1) == Status.FAILED).all()
    assert set(plane.errors.values()) == {damaged, unreadable}
    assert asm.snapshot(entry) is plane  # nothing new: the same object


def test_blocks_still_unknown_stay_pending_and_fill_in_later() -> None:
    asm = PlaneAssembler((B, B, B), 1, np.dtype(np.uint8), 0, lambda u: f"unit{u}")
    req = PlaneRequest(XY, 4, (4, 0), (2 * B + 4, B))  # clipped blocks at both ends
    lay = asm.layout(req)
    keys: list[BlockKey] = [("l", 1, (0, 0, 0), k) for k in range(len(lay))]
    entry = asm.add(req, keys)
    blocks = [block(int(b[0]), int(b[1]), int(b[2])) for b in lay.blocks]
    asm.fill(entry, [blocks[0]] + [None] * (len(lay) - 1), set(), lambda u: "open")
    part = asm.snapshot(entry)
    assert not part.complete and entry.missing == list(range(1, len(lay)))
    assert (part.status[:B - 4] == Status.DATA).all()
    assert (part.status[B - 4:] == Status.PENDING).all()
    asm.fill(entry, blocks[1:], set(), lambda u: "open")
    whole = asm.snapshot(entry)
    assert whole.complete and (whole.status == Status.DATA).all()
    x = np.arange(4, 2 * B + 4)[:, None]
    y = np.arange(B)[None, :]
    np.testing.assert_array_equal(whole.data[0], ((x * 7 + y * 3 + 4) % 250 + 1))


def test_every_axis_whole_and_cut_blocks_match_the_volume() -> None:
    """Planes of each normal axis, whole blocks and blocks cut by the plane's edge, filled in
    two arrivals, hold the volume's voxels exactly."""
    from viewer.core.slicing import IN_PLANE

    volume = np.zeros((1, 3 * B, 3 * B, 3 * B), np.uint8)
    for gx in range(3):
        for gy in range(3):
            for gz in range(3):
                volume[:, gx * B:(gx + 1) * B, gy * B:(gy + 1) * B, gz * B:(gz + 1) * B] = \
                    block(gx, gy, gz)
    for axis in (0, 1, 2):
        for lo, hi in (((0, 0), (3 * B, 2 * B)), ((3, 5), (3 * B - 2, 3 * B))):
            asm = PlaneAssembler((B, B, B), 1, np.dtype(np.uint8), 0, lambda u: f"unit{u}")
            req = PlaneRequest(axis, B + 5, lo, hi)
            lay = asm.layout(req)
            keys: list[BlockKey] = [("l", 1, (0, 0, 0), k) for k in range(len(lay))]
            entry = asm.add(req, keys)
            blocks = [block(int(b[0]), int(b[1]), int(b[2])) for b in lay.blocks]
            half = len(blocks) // 2
            asm.fill(entry, blocks[:half] + [None] * (len(blocks) - half), set(),
                     lambda u: "open")
            assert entry.missing == list(range(half, len(blocks)))
            asm.fill(entry, blocks[half:], set(), lambda u: "open")
            plane = asm.snapshot(entry)
            assert plane.complete and (plane.status == Status.DATA).all()
            u, v = IN_PLANE[axis]
            cut: list[Any] = [slice(None)] * 4
            cut[1 + axis] = B + 5
            cut[1 + u] = slice(lo[0], hi[0])
            cut[1 + v] = slice(lo[1], hi[1])
            np.testing.assert_array_equal(plane.data, volume[tuple(cut)])
