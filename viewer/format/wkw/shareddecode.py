"""One batch of compressed blocks (a plane, a medium box) read and decoded by all cores at once.

The batch's stored bytes are cut into runs (blocks closer than ``MERGE_GAP`` in the file are
read by one ``pread``, as ``File._sources`` does), and the runs into items of at least
``ITEM_BLOCKS`` blocks, in file order.  The calling thread and the pool's threads take the
next item until none is left (``pool.share``); an item reads its runs and decodes their
blocks at once.  So the reading of one item overlaps the decoding of another, where reading
everything first and sharing the decoding after left one core idle while the other read.

Every block's address, size, destination and prefix are worked out once, vectorised, before
the threads start: what an item does under the GIL is a few list slices and the calls that
release it (``preadv``, liblz4).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from viewer.format import pool
from viewer.format.errors import FormatError
from viewer.format.handles import readinto_fd
from viewer.format.wkw import buffers, lz4block
from viewer.format.wkw.blockfile import MERGE_GAP, BlockFile

#: Blocks an item holds at least (the runs it reads, whole): small, so that when a thread is
#: descheduled in the middle of its item the others wait for little.
ITEM_BLOCKS = 8


def read_and_decode(f: BlockFile, starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64],
                    indices: npt.NDArray[np.int64], dst: list[int], prefixes: list[int],
                    capacity: int, threads: int) -> list[int]:
    """Read the stored bytes ``[starts[k], ends[k])`` of blocks ``indices`` (ranges already
    checked) and decode block ``k`` into ``capacity`` bytes at address ``dst[k]``, stopping
    after ``prefixes[k]`` bytes when that is less (``lz4block.decode_many``), on ``threads``
    threads.  Returns per block what the decoder returned.  A file that shrank since it was
    opened raises the ``BlockDecodeError`` of the first block past its end."""
    n = len(starts)
    if not n:
        return []
    order = np.argsort(starts, kind="stable")
    s_sorted, e_sorted = starts[order], ends[order]
    reach = np.maximum.accumulate(e_sorted)  # the end of everything up to each block
    first = np.flatnonzero(np.concatenate(([True], s_sorted[1:] - reach[:-1] > MERGE_GAP)))
    runs = len(first)
    last = np.append(first[1:], n) - 1
    run_lo, run_hi = s_sorted[first], reach[last]
    size = run_hi - run_lo
    pos = np.cumsum(size) - size  # where each run lands in the buffer
    buf = buffers.source(int(size.sum()))
    run_of = np.repeat(np.arange(runs), np.diff(np.append(first, n)))
    src = (buf.ctypes.data + pos[run_of] + s_sorted - run_lo[run_of]).tolist()
    sizes = (e_sorted - s_sorted).tolist()
    ordered = order.tolist()
    dst_s = [dst[k] for k in ordered]
    prefix_s = [prefixes[k] for k in ordered]
    # Items: the runs whose first block falls in the same stretch of ITEM_BLOCKS blocks
    # (a run longer than that is an item of its own).
    group = first // ITEM_BLOCKS
    item_first_run = np.flatnonzero(np.concatenate(([True], group[1:] != group[:-1])))
    bounds = np.append(item_first_run, runs).tolist()
    block_at = np.append(first, n).tolist()  # the first block (sorted) of each run, and n
    lo_l, hi_l, at_l = run_lo.tolist(), run_hi.tolist(), pos.tolist()
    got_s = [0] * n
    short: list[FormatError] = []
    view = memoryview(buf)  # type: ignore[arg-type]
    decode = lz4block.decode_many

    with f._reading() as fd:
        def one(k: int) -> None:
            r0, r1 = bounds[k], bounds[k + 1]
            for r in range(r0, r1):
                lo, hi, at = lo_l[r], hi_l[r], at_l[r]
                read = readinto_fd(fd, view[at:at + hi - lo], lo)
                if read < hi - lo:  # the file shrank since it was opened
                    j = block_at[r] + int(np.argmax(e_sorted[block_at[r]:] > lo + read))
                    short.append(f._short(int(indices[ordered[j]]), int(s_sorted[j]),
                                          int(e_sorted[j])))
                    return
            a, b = block_at[r0], block_at[r1]
            got_s[a:b] = decode(src[a:b], sizes[a:b], dst_s[a:b], prefix_s[a:b], capacity)

        pool.share(len(bounds) - 1, one, threads)
        if short:  # raised inside: the handle says the file changed meanwhile
            raise min(short, key=lambda e: e.offset if e.offset is not None else -1)
    got = [0] * n
    for j, k in enumerate(ordered):
        got[k] = got_s[j]
    return got
