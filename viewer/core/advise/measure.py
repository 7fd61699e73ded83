"""Re-encode chunks with each candidate: stored bytes, encode and decode time, error.

``measure_chunks`` reads each target chunk through ``Volume.read`` (the declared interface:
any format, any store), lays it out as each candidate's format does, encodes it, decodes the
payload again and compares: a lossless candidate must give the stored voxels back (else it is
a bug of the encoder, raised); a lossy one's error is measured on its own decoded output.
Candidates whose bytes and encoding agree (WKW and zarr3 lay voxels out alike; N5 and
precomputed too, and every format alike for one channel of bytes) are encoded once.

Times are the worker thread's CPU time (``time.thread_time_ns``), so a figure is per core and
is not inflated by other work on the machine waiting for a core.

Qt-free; any thread (each call uses its own arrays).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core.advise.targets import Candidate
from viewer.format import FormatError, Volume

Vec3 = tuple[int, int, int]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class ChunkMeasure:
    """One target chunk re-encoded by every candidate of its chunk shape (arrays along the
    candidates): ``sizes`` stored bytes (payload and the format's per-chunk header; 0 when
    the format does not store it, a chunk of fill only), CPU nanoseconds to encode and decode,
    the sum of squared errors and the largest absolute error, over ``voxels`` voxels of
    ``voxel_bytes`` decoded bytes; ``lo``/``hi`` the chunk's value range.  ``error``: the
    chunk could not be read (then the arrays are empty)."""

    grid: Vec3
    sizes: IntArray
    encode_ns: IntArray
    decode_ns: IntArray
    sq_error: FloatArray
    max_error: FloatArray
    voxels: int
    voxel_bytes: int
    lo: float
    hi: float
    error: str | None = None


def read_chunk(volume: Volume, grid: Vec3, chunk_shape: Vec3, lo: Vec3, hi: Vec3
               ) -> tuple[npt.NDArray[Any], tuple[slice, ...]]:
    """The target chunk at ``grid`` as a full ``(C, X, Y, Z)`` array (voxels outside the
    extent ``[lo, hi)`` hold the fill value, as a writer pads them) and the slices of the
    part inside the extent."""
    start = [grid[a] * chunk_shape[a] for a in range(3)]
    a0 = [max(start[a], lo[a]) for a in range(3)]
    a1 = [min(start[a] + chunk_shape[a], hi[a]) for a in range(3)]
    inside = volume.read(a0, [a1[a] - a0[a] for a in range(3)])
    out = np.empty((volume.num_channels, *chunk_shape), dtype=volume.dtype, order="F")
    out[...] = volume.fill_value
    sl = (slice(None),) + tuple(slice(a0[a] - start[a], a1[a] - start[a]) for a in range(3))
    out[sl] = inside
    return out, sl


def _measure_one(cand: Candidate, arr: npt.NDArray[Any]
                 ) -> tuple[int, int, int, float, float]:
    """``(payload bytes, encode ns, decode ns, squared error sum, max abs error)``."""
    enc = cand.encoding
    t0 = time.thread_time_ns()
    payload = enc.encode(arr)
    t1 = time.thread_time_ns()
    back = enc.decode(payload, arr)
    t2 = time.thread_time_ns()
    if enc.lossless:
        if not np.array_equal(back, arr):
            raise RuntimeError(f"{cand.label} did not give the voxels back: an encoder bug")
        sq, mx = 0.0, 0.0
    else:
        diff = back.astype(np.float64) - arr.astype(np.float64)
        sq = float(np.dot(diff.ravel(), diff.ravel()))
        mx = float(np.abs(diff).max()) if diff.size else 0.0
    return len(payload), t1 - t0, t2 - t1, sq, mx


def measure_array(chunk: npt.NDArray[Any], inside: tuple[slice, ...], fill: float,
                  candidates: Sequence[Candidate], grid: Vec3 = (0, 0, 0)) -> ChunkMeasure:
    """Every candidate on one chunk ``chunk`` (``(C, X, Y, Z)``, full size; ``inside`` the
    part within the extent)."""
    n = len(candidates)
    sizes = np.zeros(n, np.int64)
    enc_ns = np.zeros(n, np.int64)
    dec_ns = np.zeros(n, np.int64)
    sq = np.zeros(n, np.float64)
    mx = np.zeros(n, np.float64)
    fill_only = bool((chunk == fill).all())
    clipped = np.asarray(chunk[inside], order="F")
    done: dict[tuple[Any, ...], tuple[int, int, int, float, float]] = {}
    layouts: dict[tuple[Any, ...], npt.NDArray[Any]] = {}
    for k, cand in enumerate(candidates):
        target = cand.target
        clip = target.clips_edges
        lkey = (target.layout_key(chunk.dtype, chunk.shape[0]), clip)
        key = (lkey, cand.encoding)
        if key not in done:
            if lkey not in layouts:
                layouts[lkey] = target.layout(clipped if clip else chunk)
            done[key] = _measure_one(cand, layouts[lkey])
        payload, enc_ns[k], dec_ns[k], sq[k], mx[k] = done[key]
        sizes[k] = 0 if fill_only and not target.stores_fill_chunks else \
            payload + target.chunk_overhead(chunk.shape[0])
    lo = float(chunk[inside].min()) if clipped.size else 0.0
    hi = float(chunk[inside].max()) if clipped.size else 0.0
    voxels = int(np.prod(chunk.shape[1:]))
    return ChunkMeasure(grid, sizes, enc_ns, dec_ns, sq, mx, voxels, int(chunk.nbytes), lo, hi)


def measure_chunks(volume: Volume, grids: Sequence[Vec3], chunk_shape: Vec3, lo: Vec3,
                   hi: Vec3, candidates: Sequence[Candidate]) -> list[ChunkMeasure]:
    """Every candidate on every chunk at ``grids`` (target chunk positions); a chunk that
    cannot be read is a ``ChunkMeasure`` with its ``error``."""
    out: list[ChunkMeasure] = []
    empty_i = np.zeros(0, np.int64)
    empty_f = np.zeros(0, np.float64)
    for g in grids:
        pos: Vec3 = (int(g[0]), int(g[1]), int(g[2]))
        try:
            chunk, inside = read_chunk(volume, pos, chunk_shape, lo, hi)
        except (FormatError, OSError) as exc:
            out.append(ChunkMeasure(pos, empty_i, empty_i, empty_i, empty_f, empty_f, 0, 0,
                                    0.0, 0.0, str(exc)))
            continue
        out.append(measure_array(chunk, inside, volume.fill_value, candidates, pos))
    return out


def fill_chunk_sizes(volume: Volume, chunk_shape: Vec3,
                     candidates: Sequence[Candidate]) -> IntArray:
    """What a chunk of fill only costs each candidate that stores such chunks (WKW: the
    blocks of a file with no data), 0 for the others."""
    chunk = np.empty((volume.num_channels, *chunk_shape), dtype=volume.dtype, order="F")
    chunk[...] = volume.fill_value
    every = (slice(None),) * 4
    m = measure_array(chunk, every, volume.fill_value,
                      [c for c in candidates if c.target.stores_fill_chunks])
    out = np.zeros(len(candidates), np.int64)
    it = iter(m.sizes.tolist())
    for k, c in enumerate(candidates):
        if c.target.stores_fill_chunks:
            out[k] = next(it)
    return out


__all__ = ["ChunkMeasure", "measure_chunks", "measure_array", "read_chunk",
           "fill_chunk_sizes"]
