"""Building coarser mags from finer ones.

Each coarser mag is computed from the next finer mag the layer has (mag 4-4-2 from 2-2-1, 2-2-1
from 1), by the relative factor between them, which must be whole on every axis.  A coarse voxel
is computed from the window of finer voxels it covers that lie inside the layer's bounding box
(at the edges of the box a window is partial):

- ``mean`` (color): the mean of the window per channel; integer types round to nearest with
  halves up (``floor(mean + 0.5)``), floats are not rounded;
- ``mode`` (segmentation): the most frequent id of the window; a tie goes to the smallest id;
- ``stride``: the window's first voxel (its lowest x, y, z corner), as a fast alternative.

Data made of whole windows with no mask take a shortcut with the same results: integer sums
for ``mean`` ((2 sum + k) // 2k is floor(mean + 0.5) exactly) and, for ``mode``, the window's
values sorted with element-wise min/max and the longest run of equal values (cheaper than
the general path's float64 sums and k x k comparisons; figures in docs/performance.md).

Work goes file by file of the coarse mag (each file is written once, whole), reading the finer
mag in slabs, so memory stays near one coarse file (clipped to the bounding box) plus a slab.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format.webknossos.layer import Layer
from viewer.format.webknossos.mag import Mag

Vec3 = tuple[int, int, int]

MODES = ("mean", "mode", "stride")

#: Finer voxels read per slab while building a coarse file (about 64 MiB of uint8).
SLAB_VOXELS = 64 << 20


def default_mode(category: str) -> str:
    """``mean`` for color layers, ``mode`` for segmentation (means of ids are meaningless)."""
    return "mode" if category == "segmentation" else "mean"


def downsample(data: npt.NDArray[Any], factor: Sequence[int], mode: str = "mean",
               mask: npt.NDArray[np.bool_] | None = None) -> npt.NDArray[Any]:
    """Downsample ``data`` (``(X, Y, Z)`` or ``(C, X, Y, Z)``) by ``factor`` (x, y, z).

    ``data`` starts at a window boundary; a size that is not a multiple of ``factor`` leaves
    partial windows at the far end.  ``mask`` (``(X, Y, Z)`` bool) marks the voxels that count;
    a window with none gives 0.  Returns the same dtype, ``(X', Y', Z')`` or ``(C, X', Y', Z')``
    with ``X' = ceil(X / fx)``."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    f = tuple(int(v) for v in factor)
    if len(f) != 3 or min(f) < 1:
        raise ValueError(f"factor must be three positive integers, not {factor!r}")
    squeeze = data.ndim == 3
    vol = data[np.newaxis] if squeeze else data
    if vol.ndim != 4:
        raise ValueError(f"data must be (X, Y, Z) or (C, X, Y, Z), not {data.shape}")
    spatial = vol.shape[1:]
    if mask is not None and tuple(mask.shape) != tuple(spatial):
        raise ValueError(f"mask {mask.shape} does not match data {spatial}")
    coarse = tuple(-(-s // k) for s, k in zip(spatial, f, strict=True))
    if mode == "stride" and mask is None:
        out = np.ascontiguousarray(vol[:, ::f[0], ::f[1], ::f[2]])
        return out[0] if squeeze else out
    if f == (1, 1, 1) and mask is None:
        return data.copy()
    if mask is None and all(s % k == 0 for s, k in zip(spatial, f, strict=True)):
        fast = _whole_windows(vol, f, coarse, mode)
        if fast is not None:
            return fast[0] if squeeze else fast
    padded_shape = tuple(c * k for c, k in zip(coarse, f, strict=True))
    pad = [(0, p - s) for p, s in zip(padded_shape, spatial, strict=True)]
    valid = np.ones(spatial, dtype=bool) if mask is None else mask.astype(bool, copy=False)
    valid = np.pad(valid, pad, constant_values=False)
    vol = np.pad(vol, [(0, 0), *pad])
    k = f[0] * f[1] * f[2]

    def windows(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """(..., X'fx, Y'fy, Z'fz) -> (..., X', Y', Z', k)."""
        lead = a.shape[:-3]
        r = a.reshape(*lead, coarse[0], f[0], coarse[1], f[1], coarse[2], f[2])
        n = len(lead)
        r = r.transpose(*range(n), n, n + 2, n + 4, n + 1, n + 3, n + 5)
        return r.reshape(*lead, coarse[0], coarse[1], coarse[2], k)

    w_valid = windows(valid)
    w = windows(vol)
    if mode == "stride":
        first = np.argmax(w_valid, axis=-1)
        out = np.take_along_axis(w, first[np.newaxis, ..., np.newaxis], axis=-1)[..., 0]
        out = np.where(w_valid.any(axis=-1), out, np.zeros((), dtype=vol.dtype))
    elif mode == "mean":
        count = w_valid.sum(axis=-1)
        total = np.where(w_valid, w, 0).sum(axis=-1, dtype=np.float64)
        mean = total / np.maximum(count, 1)
        if np.issubdtype(vol.dtype, np.integer):
            mean = np.floor(mean + 0.5)
            info = np.iinfo(vol.dtype)
            mean = np.clip(mean, info.min, info.max)
        out = mean.astype(vol.dtype)
    else:
        out = _mode(w, w_valid)
    out = np.asarray(out, dtype=vol.dtype)
    return out[0] if squeeze else out


def _whole_windows(vol: npt.NDArray[Any], f: tuple[int, ...], coarse: tuple[int, ...],
                   mode: str) -> npt.NDArray[Any] | None:
    """``mean`` or ``mode`` of ``(C, X, Y, Z)`` data made of whole windows only (no mask):
    the same values as the general path, without its float64 sums and k x k comparisons.
    None when no shortcut applies (floats, 64-bit means)."""
    k = f[0] * f[1] * f[2]
    c = vol.shape[0]
    if mode == "mean":
        if vol.dtype.kind not in "iu" or vol.dtype.itemsize > 4:
            return None
        # floor(sum / k + 0.5) == (2 sum + k) // 2k exactly, in integers
        order = "F" if vol.flags.f_contiguous and not vol.flags.c_contiguous else "C"
        if order == "F":
            r = vol.reshape((c, f[0], coarse[0], f[1], coarse[1], f[2], coarse[2]), order="F")
            total = r.sum(axis=(1, 3, 5), dtype=np.int64)
        else:
            r = vol.reshape((c, coarse[0], f[0], coarse[1], f[1], coarse[2], f[2]))
            total = r.sum(axis=(2, 4, 6), dtype=np.int64)
        mean: npt.NDArray[Any] = ((2 * total + k) // (2 * k)).astype(vol.dtype)
        return mean
    if mode != "mode":
        return None
    r = vol.reshape((c, coarse[0], f[0], coarse[1], f[1], coarse[2], f[2]))
    if k > 16:
        w = np.sort(r.transpose(0, 1, 3, 5, 2, 4, 6).reshape(c, *coarse, k), axis=-1)
        cols = [w[..., j] for j in range(k)]
    else:  # few values per window: sort them with element-wise min/max, no per-row sort
        cols = [r[:, :, i, :, j, :, m] for m in range(f[2]) for j in range(f[1])
                for i in range(f[0])]
        for step in range(k):  # odd-even transposition sort
            for i in range(step % 2, k - 1, 2):
                cols[i], cols[i + 1] = (np.minimum(cols[i], cols[i + 1]),
                                        np.maximum(cols[i], cols[i + 1]))
    # The values are sorted: ``run`` counts the equal values ending at column j; the first
    # column where it beats every earlier count ends the run of the smallest most frequent id.
    best = np.array(cols[0], copy=True)
    best_run = np.ones(best.shape, dtype=np.int32)
    run = best_run.copy()
    for j in range(1, k):
        same = cols[j] == cols[j - 1]
        run = np.where(same, run + 1, 1)
        better = run > best_run
        np.copyto(best, cols[j], where=better)
        np.copyto(best_run, run, where=better)
    return best


def _mode(w: npt.NDArray[Any], valid: npt.NDArray[np.bool_]) -> npt.NDArray[Any]:
    """Most frequent valid value along the last axis; ties to the smallest value."""
    k = w.shape[-1]
    counts = np.zeros(w.shape, dtype=np.int32)
    for j in range(k):
        counts += (w == w[..., j:j + 1]) & valid[..., j:j + 1]
    counts[~np.broadcast_to(valid, w.shape)] = -1
    best = counts.max(axis=-1, keepdims=True)
    if np.issubdtype(w.dtype, np.integer):
        high: Any = np.iinfo(w.dtype).max
    else:
        high = np.inf
    pick = np.where(counts == best, w, np.array(high, dtype=w.dtype)).min(axis=-1)
    return np.where(valid.any(axis=-1), pick, np.zeros((), dtype=w.dtype))


def relative_factor(finer: Sequence[int], coarser: Sequence[int]) -> Vec3:
    """``coarser / finer`` per axis; ``ValueError`` unless whole and at least 1."""
    out = []
    for a, b in zip(finer, coarser, strict=True):
        if int(b) % int(a) or int(b) < int(a):
            raise ValueError(f"mag {tuple(coarser)} is not a whole multiple of {tuple(finer)}")
        out.append(int(b) // int(a))
    return (out[0], out[1], out[2])


def build_mag(layer: Layer, source: Mag, target: Mag, mode: str | None = None,
              on_file: Callable[[], None] | None = None, workers: int = 2) -> None:
    """Fill ``target`` from ``source`` (both mags of ``layer``) over the layer's bounding box,
    one coarse file per task on ``workers`` threads (lz4 and numpy release the GIL; files are
    distinct, so tasks never touch the same file).  ``on_file()`` is called after each file
    (from a worker thread)."""
    mode = mode or default_mode(layer.category)
    r = relative_factor(source.mag, target.mag)
    src_box = layer.bounding_box.at_mag(source.mag)
    dst_box = layer.bounding_box.at_mag(target.mag)
    if dst_box.is_empty:
        return
    dst = target.dataset
    side = dst.file_len_vx

    def one_file(pos: Vec3) -> None:
        lo = [max(g * side, b) for g, b in zip(pos, dst_box.top_left, strict=True)]
        hi = [min((g + 1) * side, e) for g, e in zip(pos, dst_box.end, strict=True)]
        shape = [b - a for a, b in zip(lo, hi, strict=True)]
        out = np.zeros((layer.num_channels, *shape), dtype=source.dtype, order="F")
        plane_voxels = shape[0] * shape[1] * r[0] * r[1] * r[2]
        slab = max(1, SLAB_VOXELS // max(plane_voxels, 1))
        for z0 in range(lo[2], hi[2], slab):
            z1 = min(z0 + slab, hi[2])
            t_lo = (lo[0], lo[1], z0)
            t_hi = (hi[0], hi[1], z1)
            s_lo = [t * k for t, k in zip(t_lo, r, strict=True)]
            s_shape = [(b - a) * k for a, b, k in zip(t_lo, t_hi, r, strict=True)]
            data = source.read(s_lo, s_shape)
            mask = _box_mask(s_lo, s_shape, src_box.top_left, src_box.end)
            out[:, :, :, z0 - lo[2]:z1 - lo[2]] = downsample(data, r, mode, mask)
        dst.write(lo, out)
        if on_file is not None:
            on_file()

    run_parallel(one_file, list(dst.files_in_box(dst_box.top_left, dst_box.size)), workers)


def run_parallel(task: Callable[[Vec3], None], items: Sequence[Vec3], workers: int) -> None:
    """``task(item)`` for every item, on up to ``workers`` threads; the first error is raised
    after the others finished."""
    if workers <= 1 or len(items) <= 1:
        for item in items:
            task(item)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for future in [pool.submit(task, item) for item in items]:
            future.result()


def coarse_file_count(layer: Layer) -> int:
    """How many files ``downsample_layer`` writes (for progress reports)."""
    total = 0
    for m in layer.mags[1:]:
        box = layer.bounding_box.at_mag(m.mag)
        if not box.is_empty:
            total += len(list(m.dataset.files_in_box(box.top_left, box.size)))
    return total


def _box_mask(lo: Sequence[int], shape: Sequence[int], box_lo: Sequence[int],
              box_hi: Sequence[int]) -> npt.NDArray[np.bool_] | None:
    """The voxels of ``[lo, lo + shape)`` inside ``[box_lo, box_hi)``; None when all are."""
    if all(a >= b for a, b in zip(lo, box_lo, strict=True)) and all(
            a + s <= b for a, s, b in zip(lo, shape, box_hi, strict=True)):
        return None
    axes = [(np.arange(a, a + s) >= b0) & (np.arange(a, a + s) < b1)
            for a, s, b0, b1 in zip(lo, shape, box_lo, box_hi, strict=True)]
    return axes[0][:, None, None] & axes[1][None, :, None] & axes[2][None, None, :]


def downsample_layer(layer: Layer, mode: str | None = None,
                     progress: Callable[[int, int], None] | None = None,
                     workers: int = 2) -> None:
    """Build every mag of ``layer`` coarser than its finest, each from the coarsest finer mag
    it is a whole multiple of (4-4-2 from 2-2-1, 2-2-1 from 1).

    ``progress(done, total)`` counts coarse files over all mags (called from worker threads)."""
    total = coarse_file_count(layer) if progress is not None else 0
    done = [0]
    lock = threading.Lock()

    def step() -> None:
        if progress is None:
            return
        with lock:
            done[0] += 1
            now = done[0]
        progress(now, total)

    for i, coarser in enumerate(layer.mags[1:], 1):
        sources = [m for m in layer.mags[:i] if _divides(m.mag, coarser.mag)]
        if not sources:
            raise ValueError(f"mag {coarser.name} of layer {layer.name!r} is no whole multiple "
                             "of a finer mag")
        build_mag(layer, sources[-1], coarser, mode, step, workers)


def _divides(finer: Sequence[int], coarser: Sequence[int]) -> bool:
    try:
        relative_factor(finer, coarser)
    except ValueError:
        return False
    return tuple(finer) != tuple(coarser)


__all__ = ["downsample", "downsample_layer", "build_mag", "coarse_file_count", "run_parallel",
           "relative_factor", "default_mode", "MODES"]
