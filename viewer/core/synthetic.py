"""Synthetic, EM-like volumes: the demo dataset and the benchmarks' data.

Deterministic for a seed, and computable chunk by chunk (any box of an unbounded volume), so a
large dataset is generated file by file in bounded memory.  The look: cells (smooth cytoplasm of
varying brightness) separated by thin dark membranes, dark vesicles, a little noise.  The
membranes are the zero level set of a smooth random field, so they are closed surfaces as in a
real EM stack; the segmentation is the sign pattern of three such fields, cut by the membranes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

Vec3 = Sequence[int]


class SmoothField:
    """A smooth random field: random values on a lattice of ``spacing`` voxels, interpolated
    with a cubic smoothstep.  Values lie in [-1, 1]."""

    def __init__(self, seed: int, spacing: float, lattice: int = 64) -> None:
        rng = np.random.default_rng(seed)
        self.spacing = float(spacing)
        self.n = lattice
        self.values = rng.uniform(-1.0, 1.0, (lattice, lattice, lattice)).astype(np.float32)

    def _weights(self, start: int, size: int
                 ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float32]]:
        """Lattice indices a span of voxels needs and the (size, len(indices)) weights."""
        pos = (np.arange(start, start + size, dtype=np.float64) + 0.5) / self.spacing
        i0 = np.floor(pos).astype(np.intp)
        t = (pos - i0).astype(np.float32)
        t = t * t * (3 - 2 * t)
        first = int(i0.min())
        count = int(i0.max()) - first + 2
        weights = np.zeros((size, count), dtype=np.float32)
        rows = np.arange(size)
        weights[rows, i0 - first] = 1 - t
        weights[rows, i0 - first + 1] = t
        return np.arange(first, first + count) % self.n, weights

    def box(self, offset: Vec3, shape: Vec3) -> npt.NDArray[np.float32]:
        """The field on the box ``[offset, offset + shape)`` as ``(X, Y, Z)`` float32."""
        (ix, wx), (iy, wy), (iz, wz) = (self._weights(int(o), int(s))
                                        for o, s in zip(offset, shape, strict=True))
        sub = self.values[np.ix_(ix, iy, iz)]
        # Separable: contract the small lattice along x, then y, then z (one BLAS product each).
        t = np.tensordot(wx, sub, axes=(1, 0))  # (X, ny, nz)
        t = np.einsum("yj,xjk->xyk", wy, t)  # (X, Y, nz)
        return np.ascontiguousarray(t @ wz.T)  # (X, Y, Z)


class EMVolume:
    """An unbounded EM-like volume, generated on demand for any box.

    Immutable after construction: every method may be called from any thread, concurrently."""

    def __init__(self, seed: int = 0, cell_size: float = 48.0, noise: float = 1.0,
                 step: int = 2) -> None:
        # noise 1 on a grey step of 2 compresses about 1.3x with LZ4HC, as real EM does.
        self.seed = seed
        self.noise = noise
        self.step = step
        self.membrane = [SmoothField(seed * 10 + k, cell_size * (1.0 + 0.35 * k)) for k in range(3)]
        self.brightness = SmoothField(seed * 10 + 5, cell_size * 0.9)
        self.texture = SmoothField(seed * 10 + 6, 5.0)
        self.vesicles = SmoothField(seed * 10 + 7, 3.0, lattice=128)

    def _fields(self, offset: Vec3, shape: Vec3) -> tuple[list[npt.NDArray[np.float32]],
                                                          npt.NDArray[np.float32]]:
        fields = [f.box(offset, shape) for f in self.membrane]
        distance = np.minimum.reduce([np.abs(f) for f in fields])
        return fields, distance

    def em(self, offset: Vec3, shape: Vec3) -> npt.NDArray[np.uint8]:
        """uint8 grey values of the box, ``(X, Y, Z)``."""
        _, distance = self._fields(offset, shape)
        return self._grey(offset, shape, distance, self.brightness.box(offset, shape))

    def segmentation(self, offset: Vec3, shape: Vec3) -> npt.NDArray[np.uint32]:
        """uint32 cell ids of the box, ``(X, Y, Z)``: ids 1..8 change only across membranes,
        which are 0."""
        fields, distance = self._fields(offset, shape)
        return self._ids(fields, distance)

    def em_and_segmentation(self, offset: Vec3, shape: Vec3
                            ) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint32]]:
        """``(em(box), segmentation(box))``, equal to the two calls but cheaper: the membrane
        fields they share are computed once."""
        fields, distance = self._fields(offset, shape)
        return (self._grey(offset, shape, distance, self.brightness.box(offset, shape)),
                self._ids(fields, distance))

    def _grey(self, offset: Vec3, shape: Vec3, distance: npt.NDArray[np.float32],
              brightness: npt.NDArray[np.float32]) -> npt.NDArray[np.uint8]:
        grey = 150.0 + 45.0 * brightness
        grey += 12.0 * self.texture.box(offset, shape)
        grey -= 110.0 * np.exp(-((distance / 0.06) ** 2))  # membranes: dark, a few voxels thick
        ves = self.vesicles.box(offset, shape)
        grey -= 70.0 * np.clip((ves - 0.72) * 8.0, 0.0, 1.0)  # vesicles: small dark spots
        if self.noise:
            rng = np.random.default_rng(
                [self.seed, *(int(o) & 0xFFFFFFFF for o in offset)])
            grey += self.noise * rng.standard_normal(grey.shape, dtype=np.float32)
        if self.step > 1:
            grey = np.round(grey / self.step) * self.step
        out: npt.NDArray[np.uint8] = np.clip(grey, 0, 255).astype(np.uint8)
        return out

    @staticmethod
    def _ids(fields: list[npt.NDArray[np.float32]],
             distance: npt.NDArray[np.float32]) -> npt.NDArray[np.uint32]:
        """1 + the sign bits of the three membrane fields, 0 on membranes.  An id changes only
        where a field changes sign, which is inside a membrane (a field moves less than 0.07
        per voxel, a membrane is where it is within 0.06 of zero), so two cells that touch
        across a membrane always differ; ids repeat further away (1..8)."""
        ids = np.ones(fields[0].shape, dtype=np.uint32)
        for k, f in enumerate(fields):
            ids += (f > 0).astype(np.uint32) << k
        ids[distance < 0.06] = 0
        return ids
