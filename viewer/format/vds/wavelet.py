"""Wavelet-compressed VDS chunks, decoded by the ``openvds`` package -- an optional extra
(``pip install 'wkw-viewer[openvds]'``; its wheel is under CC BY-ND 4.0, so it is never
vendored nor required).  Without it a wavelet chunk is a ``NeedsOpenVDSError``: the window
shows the chunk failed (never zeros), the rest of the file opens and the inspector works.

OpenVDS cannot decode a loose chunk, so the file is opened with OpenVDS once (lazily, one
handle per file, shared by its LODs) and a chunk is read through a page accessor of its layer;
a box is read with ``requestVolumeSubset`` (OpenVDS decodes its chunks on its own threads).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format.errors import ChunkDecodeError, UnsupportedFormatError

EXTRA_HINT = "needs the openvds extra (pip install 'wkw-viewer[openvds]')"


class NeedsOpenVDSError(UnsupportedFormatError):
    """A wavelet-compressed chunk where the ``openvds`` package is not installed."""


def available() -> bool:
    try:
        import openvds  # noqa: F401
    except ImportError:
        return False
    return True


class WaveletReader:
    """One file opened with OpenVDS for its wavelet chunks (thread-safe)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._handle: Any = None
        self._manager: Any = None
        self._accessors: dict[int, Any] = {}

    def _open(self) -> tuple[Any, Any]:
        """``(openvds module, access manager)``; ``NeedsOpenVDSError`` without the extra."""
        try:
            import openvds
        except ImportError:
            raise NeedsOpenVDSError(f"wavelet-compressed chunk {EXTRA_HINT}",
                                    self.path) from None
        if self._manager is None:
            try:
                self._handle = openvds.open(self.path, "")
            except Exception as exc:  # noqa: BLE001 - openvds raises its own types
                raise ChunkDecodeError(f"openvds cannot open the file: {exc}",
                                       self.path) from None
            self._manager = openvds.getAccessManager(self._handle)
        return openvds, self._manager

    def read_chunk(self, lod: int, chunk: int, chunk_pos: tuple[int, int, int]) -> \
            npt.NDArray[Any]:
        """The stored brick of ``chunk`` in layer LOD ``lod`` as OpenVDS decodes it,
        ``(z, y, x)`` C order (margins included, clipped at the end of the data)."""
        with self._lock:
            openvds, am = self._open()
            acc = self._accessors.get(lod)
            if acc is None:
                acc = am.createVolumeDataPageAccessor(
                    openvds.DimensionsND.Dimensions_012, lod, 0, 8,
                    am.AccessMode.AccessMode_ReadOnly)
                self._accessors[lod] = acc
            try:
                page = acc.readPage(chunk)
            except Exception as exc:  # noqa: BLE001
                raise ChunkDecodeError(f"openvds cannot decode the wavelet chunk: {exc}",
                                       self.path, chunk=chunk_pos) from None
        try:
            if page is None:
                raise ChunkDecodeError("openvds could not read the wavelet chunk", self.path,
                                       chunk=chunk_pos)
            err = page.getError() if hasattr(page, "getError") else None
            if err is not None and int(getattr(err, "code", 0) or 0) != 0:
                raise ChunkDecodeError(f"openvds: {getattr(err, 'string', err)}", self.path,
                                       chunk=chunk_pos)
            return np.array(page.getBuffer(), copy=True)
        finally:
            if page is not None:
                page.release()

    def read_box(self, lod: int, lo: tuple[int, int, int], hi: tuple[int, int, int],
                 dtype: np.dtype[Any], full: tuple[int, int, int]) -> npt.NDArray[Any]:
        """Samples ``[lo, hi)`` (x, y, z) of LOD ``lod`` as ``(z, y, x)`` C order (``full``:
        the LOD-0 extent; OpenVDS takes boxes in LOD-0 samples)."""
        with self._lock:
            openvds, am = self._open()
        fmt = {np.dtype("u1"): openvds.VolumeDataFormat.Format_U8,
               np.dtype("u2"): openvds.VolumeDataFormat.Format_U16,
               np.dtype("u4"): openvds.VolumeDataFormat.Format_U32,
               np.dtype("u8"): openvds.VolumeDataFormat.Format_U64,
               np.dtype("f4"): openvds.VolumeDataFormat.Format_R32,
               np.dtype("f8"): openvds.VolumeDataFormat.Format_R64}[np.dtype(dtype)]
        try:
            f = 1 << lod
            lo0 = tuple(v * f for v in lo)
            hi0 = tuple(min(v * f, n) for v, n in zip(hi, full, strict=True))
            req = am.requestVolumeSubset(lo0, hi0, lod=lod, format=fmt)
            data = req.data
        except Exception as exc:  # noqa: BLE001
            raise ChunkDecodeError(f"openvds cannot read samples {lo}-{hi} of LOD {lod}: "
                                   f"{exc}", self.path) from None
        return np.asarray(data).reshape(hi[2] - lo[2], hi[1] - lo[1], hi[0] - lo[0])

    def close(self) -> None:
        with self._lock:
            self._accessors.clear()
            handle, self._handle, self._manager = self._handle, None, None
        if handle is not None:
            try:
                import openvds
                openvds.close(handle)
            except Exception:  # noqa: BLE001 - closing is best effort
                pass


__all__ = ["WaveletReader", "NeedsOpenVDSError", "available", "EXTRA_HINT"]
