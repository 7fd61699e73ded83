"""Memory for reading and decoding single blocks (``wkw.File``'s plain-int paths).

* Per-thread buffers (``first_buffer``, ``stage_buffer``) for the first bytes of a file being
  opened and for one block's stored bytes, each with its address (a ctypes call takes
  addresses; numpy's ``.ctypes.data`` costs a microsecond per call).
* ``new_block`` (``new_blocks`` for a batch): memory of its own for one decoded block,
  recycled from blocks whose arrays are gone (``BlockMemory``).  Memory new to the process
  costs a page fault per 4 KiB at its first write; after the block cache dropped many blocks
  at once (a far jump with the cache emptied, a dataset closed) the allocator gives their
  pages back to the system, and every block decoded next faulted its pages in again, at more
  than decoding it costs (figures in docs/performance.md).
* ``decode_whole``: one whole LZ4 block by address (liblz4, the GIL released).
"""

from __future__ import annotations

import collections
import ctypes
import threading
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format.wkw import lz4block

#: ``first_buffer``'s size: the most ``wkw.File.open_read`` and ``read_whole`` read at once
#: (a whole small file).
FIRST_BYTES = 80 << 10

_local = threading.local()
_CHAR = ctypes.c_char


def first_buffer() -> tuple[memoryview, int]:
    """This thread's buffer of ``FIRST_BYTES`` for the first bytes of a file being opened,
    and its address."""
    got: tuple[memoryview, int] | None = getattr(_local, "first", None)
    if got is None:
        buf = np.empty(FIRST_BYTES, dtype=np.uint8)
        got = (memoryview(buf).cast("B"), int(buf.ctypes.data))  # type: ignore[arg-type]
        _local.first = got
    return got


def stage_buffer(nbytes: int) -> tuple[memoryview, int]:
    """This thread's buffer for one block's stored bytes (``nbytes`` of it) and its address."""
    got: tuple[memoryview, int] | None = getattr(_local, "stage", None)
    if got is None or len(got[0]) < nbytes:
        buf = np.empty(max(nbytes, 1 << 16), dtype=np.uint8)
        got = (memoryview(buf).cast("B"), int(buf.ctypes.data))  # type: ignore[arg-type]
        if nbytes <= 32 << 20:
            _local.stage = got
    return got[0][:nbytes], got[1]


def new_block(nbytes: int) -> tuple[Any, int]:
    """Memory for one decoded block (``nbytes``; a buffer-protocol object) and its address:
    recycled memory of a block whose last array went (``BlockMemory``), else new."""
    memory = _take(_kind(nbytes), nbytes)
    return memory, ctypes.addressof(memory)


def new_blocks(nbytes: int, count: int) -> tuple[list[BlockMemory], list[int]]:
    """``new_block`` for ``count`` blocks at once (a batch): their memories and addresses."""
    kind = _kind(nbytes)
    memories = [_take(kind, nbytes) for _ in range(count)]
    return memories, list(map(ctypes.addressof, memories))


def _kind(nbytes: int) -> type[BlockMemory]:
    kind = _BLOCK_MEMORY.get(nbytes)
    return kind if kind is not None else _block_memory_type(nbytes)


def _take(kind: type[BlockMemory], nbytes: int) -> BlockMemory:
    """A block's memory: a buffer given back (``free``) or a new one, wrapped."""
    # (try/except, not ``contextlib.suppress``: this runs once per block read, and the
    # context manager is a noticeable share of the Python work around a block's decoding.)
    try:
        inner = kind.free.pop()
    except IndexError:  # none free (or another thread took the last one)
        inner = np.empty(nbytes, dtype=np.uint8)
    memory = kind.from_buffer(inner)  # type: ignore[arg-type]
    memory.inner = inner
    return memory


class BlockMemory(ctypes.Array[ctypes.c_char]):
    """The memory of a decoded block: a ctypes array over a numpy buffer (``inner``), which
    the block's arrays name as their base.  When the last of them goes, ``__del__`` keeps the
    buffer for the next block of its size (``free``, at most ``RECYCLE_BYTES`` of them; see
    the module docstring).  Any thread: ``__del__`` takes no lock (a deque's append is
    atomic)."""

    _length_ = 0
    _type_ = ctypes.c_char
    free: collections.deque[npt.NDArray[np.uint8]]
    inner: npt.NDArray[np.uint8]

    def __del__(self) -> None:
        try:  # noqa: SIM105 - contextlib.suppress costs more, once per block
            self.free.append(self.inner)
        except Exception:  # noqa: BLE001 - at shutdown: nothing to keep, nothing to say
            pass


#: Memory of decoded blocks given back is kept for the next blocks, up to this many bytes
#: per block size.
RECYCLE_BYTES = 32 << 20
_BLOCK_MEMORY: dict[int, type[BlockMemory]] = {}


def _block_memory_type(nbytes: int) -> type[BlockMemory]:
    """The ``BlockMemory`` class of blocks of ``nbytes`` (one per size, with its own list of
    free buffers)."""
    kind = type(f"BlockMemory{nbytes}", (BlockMemory,), {
        "_length_": nbytes, "_type_": ctypes.c_char,
        "free": collections.deque(maxlen=max(1, RECYCLE_BYTES // nbytes))})
    return _BLOCK_MEMORY.setdefault(nbytes, kind)


def decode_whole(src: int, dst: int, size: int, capacity: int) -> int:
    """One whole LZ4 block from address ``src`` into ``capacity`` bytes at ``dst``: the bytes
    decoded, negative when it does not decode."""
    whole = _WHOLE
    if whole is not None:
        got: int = whole(src, dst, size, capacity)
        return got
    return lz4block.decode_many([src], [size], [dst], [capacity], capacity)[0]


_WHOLE = lz4block.whole_decoder()
