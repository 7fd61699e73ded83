"""Every problem of one open data file, not just the first: its jump table checked for every
block (vectorised: only flagged blocks cost Python work), bytes after the last block, and every
block decoded to exactly its size (on all cores, ``pool.share``).  ``File.validate`` and the
dataset validation (``validation``) use it."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from viewer.format import pool
from viewer.format.errors import BlockDecodeError, FormatError, JumpTableError
from viewer.format.wkw import buffers, lz4block
from viewer.format.wkw.blockfile import BlockFile
from viewer.format.wkw.header import HEADER_SIZE

#: Blocks decoded per task while checking (the cores take the next task until none is left).
DECODE_BATCH = 256
#: Threads that decode the blocks of one check (default: every core, up to the pool's size).
DECODE_THREADS = min(pool.cores(), pool.MAX_THREADS)


def file_problems(f: BlockFile, decode: bool = True
                  ) -> tuple[npt.NDArray[np.int64] | None, list[FormatError]]:
    """(block sizes, problems) of an open file: table checks vectorised, then every block
    with a sound range decoded (unless ``decode`` is False).  Raw files: (None, problems)."""
    h = f.header
    if not h.is_compressed:
        return None, raw_problems(f)
    starts, ends = f.block_ranges()
    sizes = ends - starts
    problems: list[FormatError] = []
    bad = f.bad_ranges(starts, ends)
    for k in np.flatnonzero(bad).tolist():
        problem = f._range_problem(k, int(starts[k]), int(ends[k]))
        if problem is not None:
            problems.append(problem)
    last = int(ends[-1])
    if not bad[-1] and last < f.file_size:
        problems.append(JumpTableError(
            f"the file is {f.file_size} bytes but its last block ends at {last}: "
            f"{f.file_size - last} bytes follow the last block",
            f.path, block=h.num_blocks - 1, offset=HEADER_SIZE + 8 * (h.num_blocks - 1)))
    if decode:
        problems.extend(_decode_problems(f, np.flatnonzero(~bad), starts, ends))
    problems.sort(key=lambda p: (p.block if p.block is not None else -1))
    return sizes, problems


def _decode_problems(f: BlockFile, good: npt.NDArray[np.intp], starts: npt.NDArray[np.int64],
                     ends: npt.NDArray[np.int64]) -> list[FormatError]:
    """Decode the blocks ``good`` (their ranges sound), batch by batch on every core, each
    into its thread's scratch buffer; the blocks that do not decode to their size."""
    bb = f.header.block_bytes
    problems: list[FormatError] = []
    batches = [good[a:a + DECODE_BATCH] for a in range(0, len(good), DECODE_BATCH)]

    def one(k: int) -> None:
        batch = batches[k]
        scratch = buffers.staging(bb).ctypes.data
        src, keep = f._sources(starts[batch], ends[batch], batch.astype(np.int64))
        got = lz4block.decode_many(src, (ends[batch] - starts[batch]).tolist(),
                                   [scratch] * len(batch), [bb] * len(batch), bb)
        del keep
        for j, n in zip(batch.tolist(), got, strict=True):
            if n != bb:
                problems.append(f._decode_error(j, int(starts[j]), n, bb, False))

    pool.share(len(batches), one, DECODE_THREADS)
    return problems


def raw_blocks_held(f: BlockFile) -> int:
    """How many blocks a raw file is long enough to hold."""
    h = f.header
    return int(max(min(h.num_blocks, (f.file_size - h.data_offset) // h.block_bytes), 0))


def raw_problems(f: BlockFile) -> list[FormatError]:
    """A raw file holds its blocks when it is long enough; one problem names the first block
    it cuts off (never an array over all blocks: a garbage header may claim 2^45 of them)."""
    h = f.header
    held = raw_blocks_held(f)
    problems: list[FormatError] = []
    if held < h.num_blocks:
        start = h.data_offset + held * h.block_bytes
        needed = h.data_offset + h.num_blocks * h.block_bytes
        problems.append(BlockDecodeError(
            f"raw file is {f.file_size} bytes, shorter than its blocks (all {h.num_blocks} "
            f"need {needed}): blocks {held}..{h.num_blocks - 1} are cut off",
            f.path, block=held, offset=start))
    return problems


__all__ = ["file_problems", "raw_blocks_held", "raw_problems"]
