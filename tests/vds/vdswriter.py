"""Write ``.vds`` test files with the real OpenVDS (the ``openvds`` package), and read them back
with it: the peer every VDS test compares with."""

from __future__ import annotations

from typing import Any

import numpy as np


def write_vds(path: str, data: Any, method: str = "None", tolerance: float = 0.0,
              brick: int = 32, lods: int = 0, margin: int | tuple[int, int] = 0,
              fmt: str = "R32", value_range: tuple[float, float] = (-1.0, 1.0),
              full_resolution_dimension: int | None = None) -> None:
    """``data`` is ``(z, y, x)`` C order (dimension 0, x, fastest); OpenVDS makes the LODs.
    ``margin``: both margins, or ``(negative, positive)``; ``full_resolution_dimension``: the
    dimension the LODs keep whole (``Options_ForceFullResolutionDimension``)."""
    import openvds

    L = openvds.VolumeDataLayoutDescriptor
    nz, ny, nx = data.shape
    levels = L.LODLevels.LODLevels_None if lods == 0 else getattr(L.LODLevels,
                                                                  f"LODLevels_{lods}")
    neg, pos = (margin, margin) if isinstance(margin, int) else margin
    if full_resolution_dimension is None:
        layout = L(getattr(L.BrickSize, f"BrickSize_{brick}"), neg, pos, 4, levels,
                   L.Options.Options_None)
    else:
        layout = L(getattr(L.BrickSize, f"BrickSize_{brick}"), neg, pos, 4, levels,
                   L.Options.Options_ForceFullResolutionDimension, full_resolution_dimension)
    axes = [openvds.VolumeDataAxisDescriptor(nx, "Sample", "ms", 0.0, 4.0 * (nx - 1)),
            openvds.VolumeDataAxisDescriptor(ny, "Crossline", "unitless", 100.0, 100.0 + ny),
            openvds.VolumeDataAxisDescriptor(nz, "Inline", "unitless", 10.0, 10.0 + nz)]
    C = openvds.VolumeDataChannelDescriptor
    channels = [C(getattr(C.Format, f"Format_{fmt}"), C.Components.Components_1, "Amplitude",
                  "", value_range[0], value_range[1])]
    vds = openvds.create(path, "", layout, axes, channels, openvds.MetadataContainer(),
                         getattr(openvds.CompressionMethod, method), tolerance)
    am = openvds.getAccessManager(vds)
    acc = am.createVolumeDataPageAccessor(openvds.DimensionsND.Dimensions_012, 0, 0, 8,
                                          am.AccessMode.AccessMode_Create)
    for c in range(acc.getChunkCount()):
        page = acc.createPage(c)
        buf = np.array(page.getWritableBuffer(), copy=False)
        lo, hi = page.getMinMax()
        buf[...] = data[lo[2]:hi[2], lo[1]:hi[1], lo[0]:hi[0]]
        page.release()
    acc.commit()
    openvds.close(vds)


def read_vds(path: str, lod: int = 0, fmt: str = "R32") -> Any:
    """The whole LOD as OpenVDS reads it, ``(x, y, z)``."""
    import openvds

    vds = openvds.open(path, "")
    try:
        am = openvds.getAccessManager(vds)
        layout = openvds.getLayout(vds)
        full = tuple(layout.getDimensionNumSamples(d) for d in range(3))
        ld = layout.getLayoutDescriptor()
        kept = ld.getFullResolutionDimension() if ld.isForceFullResolutionDimension() else -1
        fs = [1 if d == kept else 1 << lod for d in range(3)]
        shape = tuple((n + f - 1) // f for n, f in zip(full, fs, strict=True))
        req = am.requestVolumeSubset((0, 0, 0), full, lod=lod,
                                     format=getattr(openvds.VolumeDataFormat, f"Format_{fmt}"))
        return np.array(req.data).reshape(shape[::-1]).transpose(2, 1, 0).copy()
    finally:
        openvds.close(vds)


def brick_facts(path: str, lod: int = 0) -> list[tuple[bool, Any]]:
    """Per brick of a LOD, as OpenVDS sees it: (constant?, hash)."""
    import openvds

    vds = openvds.open(path, "")
    try:
        am = openvds.getAccessManager(vds)
        acc = am.createVolumeDataPageAccessor(openvds.DimensionsND.Dimensions_012, lod, 0, 8,
                                              am.AccessMode.AccessMode_ReadOnly)
        out = []
        for c in range(acc.getChunkCount()):
            h = acc.getChunkVolumeDataHash(c)
            out.append((bool(openvds.volumeDataHash_IsConstant(h)), h))
        return out
    finally:
        openvds.close(vds)
