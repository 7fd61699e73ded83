"""Multi-resolution browsing: which mag a view reads, and how a mag-1 plane maps onto it.

A mag is the factor ``(fx, fy, fz)`` by which a layer is downsampled (``viewer.format.
webknossos``); voxel ``p`` of mag ``f`` covers the mag-1 voxels ``[p * f, (p + 1) * f)``.  Views
think in mag-1 voxels; this module turns their zoom into a mag and their ``PlaneRequest`` into the
mag's coordinates, and names the coarser mags a view may draw, scaled up, while its own loads.

The rule: a view reads the *coarsest* mag that still gives at least one of its voxels per
screen pixel along each of the view's two in-plane axes (the factor along the normal does not
matter for that; a 2-2-1 mag is as sharp as mag 1 in an XZ view's z direction).  When the view
is zoomed in so far that no mag qualifies, the finest mag is read.  A locked mag overrides the
rule.  ``compose`` puts a view's plane together from the chosen mag and, where that is still
loading, coarser mags scaled up underneath, so a view is never blank while it has any of them.

The physical-space helpers at the end (positions in nm, a scale bar's round length, the drawn
aspect of anisotropic voxels) feed the same zoom arithmetic.

Pure functions on tuples and numpy arrays: Qt-free, stateless, callable from any thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core.slicing import IN_PLANE, Plane, PlaneRequest, Status
from viewer.format import mag_name

Vec3 = tuple[int, int, int]

#: Slack for floating-point zoom factors: a view at exactly 2 voxels per pixel may read mag 2
#: even when its zoom is computed as 1.9999999.
EPSILON = 1e-6


def in_plane_factors(mag: Sequence[int], axis: int) -> tuple[int, int]:
    """The factors of ``mag`` along the in-plane axes (u, v) of a view with normal ``axis``."""
    u, v = IN_PLANE[axis]
    return (int(mag[u]), int(mag[v]))


def voxels_per_pixel(axis: int, nm_per_pixel: float, voxel_size_nm: Sequence[float]
                     ) -> tuple[float, float]:
    """Mag-1 voxels one screen pixel spans along the view's (u, v) axes, for a view that draws
    physical space at ``nm_per_pixel`` (the right aspect for anisotropic voxels)."""
    u, v = IN_PLANE[axis]
    return (nm_per_pixel / float(voxel_size_nm[u]), nm_per_pixel / float(voxel_size_nm[v]))


def _key(mag: Vec3, axis: int) -> tuple[int, int, int]:
    """Orders mags from finest to coarsest as a view sees them: by the in-plane area of a
    voxel, then by the larger in-plane factor; among mags equal in-plane the one finer along the
    normal ranks higher (it is the better picture of the same in-plane resolution)."""
    fu, fv = in_plane_factors(mag, axis)
    return (fu * fv, max(fu, fv), -mag[axis])


def choose_mag(mags: Sequence[Sequence[int]], axis: int,
               voxels_per_px: tuple[float, float],
               locked: Sequence[int] | None = None) -> Vec3:
    """The mag a view with normal ``axis`` should read.

    ``voxels_per_px``: mag-1 voxels per screen pixel along the view's (u, v) axes (>1 when
    zoomed out).  A mag qualifies when each in-plane factor is at most that axis' voxels per
    pixel, i.e. it still gives at least one of its voxels per screen pixel; of those the one
    with the largest in-plane voxel area is taken (a tie goes to the one that is finer along
    the normal, so a 2-2-1 beats a 2-2-2 in an XY view).  None qualifying (zoomed in past mag 1
    or no mag 1): the finest mag.  ``locked``, when it is one of ``mags``, is returned as is.
    ``ValueError`` for an empty ``mags``."""
    vecs = [_vec(m) for m in mags]
    if not vecs:
        raise ValueError("a layer without mags has nothing to show")
    if locked is not None:
        lock = _vec(locked)
        if lock in vecs:
            return lock
    su, sv = voxels_per_px
    fits = [m for m in vecs
            if in_plane_factors(m, axis)[0] <= su * (1 + EPSILON)
            and in_plane_factors(m, axis)[1] <= sv * (1 + EPSILON)]
    if not fits:
        return min(vecs, key=lambda m: (m[0] * m[1] * m[2], _key(m, axis)))
    best = max(_key(m, axis) for m in fits)
    return min(m for m in fits if _key(m, axis) == best)


def placeholder_mags(mags: Sequence[Sequence[int]], chosen: Sequence[int]) -> list[Vec3]:
    """The mags coarser than ``chosen`` (every factor a multiple of its own, one larger): what may
    be drawn scaled up under a view while ``chosen`` loads.  Finest first (the best-looking
    placeholder first; the loader ranks them in this order, right after visible blocks)."""
    c = _vec(chosen)
    out = [m for m in (_vec(v) for v in mags)
           if m != c and all(a >= b and a % b == 0 for a, b in zip(m, c, strict=True))]
    return sorted(set(out), key=lambda m: (m[0] * m[1] * m[2], m))


@dataclass(frozen=True)
class MagPlaneRequest:
    """A mag-1 ``PlaneRequest`` mapped onto ``mag``.

    ``request`` is in the mag's voxel coordinates: ``index = floor(index1 / f_normal)`` (the mag
    voxel whose slab contains the mag-1 slice), ``lo = floor(lo1 / f)`` and ``hi = ceil(hi1 / f)``
    in-plane, so the mag box covers the whole mag-1 box.  ``covered_lo`` / ``covered_hi`` are
    that mag box back in mag-1 coordinates (``lo * f``, ``hi * f``): it may stick out of the
    requested box by less than one mag voxel on each side.  An immutable value: any thread."""

    source: PlaneRequest
    mag: Vec3
    request: PlaneRequest

    @property
    def factors(self) -> tuple[int, int]:
        return in_plane_factors(self.mag, self.source.axis)

    @property
    def covered_lo(self) -> tuple[int, int]:
        fu, fv = self.factors
        return (self.request.lo[0] * fu, self.request.lo[1] * fv)

    @property
    def covered_hi(self) -> tuple[int, int]:
        fu, fv = self.factors
        return (self.request.hi[0] * fu, self.request.hi[1] * fv)

    @property
    def label(self) -> str:
        """The mag's name for the status bar (``2-2-1``)."""
        return mag_name(self.mag)


def to_mag(request: PlaneRequest, mag: Sequence[int]) -> MagPlaneRequest:
    """Map a mag-1 plane request onto ``mag`` (rounding as in :class:`MagPlaneRequest`)."""
    m = _vec(mag)
    fu, fv = in_plane_factors(m, request.axis)
    fn = m[request.axis]
    lo = (request.lo[0] // fu, request.lo[1] // fv)
    hi = (-(-request.hi[0] // fu), -(-request.hi[1] // fv))
    return MagPlaneRequest(request, m, PlaneRequest(request.axis, request.index // fn, lo, hi))


def upscale(data: npt.NDArray[Any], mag_request: MagPlaneRequest) -> npt.NDArray[Any]:
    """A plane read at the mag (last two axes ``(U', V')`` = ``mag_request.request.shape``)
    scaled up by nearest neighbour to the mag-1 box of ``mag_request.source``: the last two
    axes become the source's ``(U, V)``.  Works for ``(C, U', V')`` data and ``(U', V')``
    status arrays alike."""
    want = mag_request.request.shape
    if tuple(data.shape[-2:]) != tuple(want):
        raise ValueError(f"data is {data.shape[-2:]}, the mag request {want}")
    return resample(data, mag_request, to_mag(mag_request.source, (1, 1, 1)))


def placeholder_requests(request: PlaneRequest, mags: Sequence[Sequence[int]],
                         chosen: Sequence[int]) -> list[MagPlaneRequest]:
    """``request`` mapped onto each placeholder mag of ``chosen``, finest first."""
    return [to_mag(request, m) for m in placeholder_mags(mags, chosen)]


def choose_mag_xyz(mags: Sequence[Sequence[int]], axis: int,
                   voxels_per_px_xyz: Sequence[float],
                   locked: Sequence[int] | None = None) -> Vec3:
    """:func:`choose_mag` with the voxels per pixel given along x, y and z (the entry of the
    normal ``axis`` is ignored), so the caller need not know the in-plane (u, v) order, which
    is ``slicing.IN_PLANE``'s, not necessarily the screen's."""
    u, v = IN_PLANE[axis]
    return choose_mag(mags, axis, (float(voxels_per_px_xyz[u]), float(voxels_per_px_xyz[v])),
                      locked)


#: ``ComposedPlane.source`` of a pixel no mag has data for yet.
NO_SOURCE = 255


@dataclass
class ComposedPlane(Plane):
    """A view's plane at the chosen mag's resolution, put together from that mag and, where it
    is still loading, the finest coarser mag that has the pixel (scaled up underneath).

    ``request`` is the view's mag-1 request; ``data`` ``(C, U', V')`` and ``status`` ``(U', V')``
    are on the chosen mag's grid (``mag_request.request``), whose first pixel is the mag-1
    voxel ``origin`` and whose pixels span ``factors`` mag-1 voxels (a placeholder pixel
    carries the placeholder's status).  ``source`` says which mag each pixel comes from.
    ``mags[0]`` is the chosen mag.  Built by :func:`compose` on any
    thread, then handed over and only read."""

    #: ``source`` as built, or None: every pixel that is not PENDING from the chosen mag
    #: (no placeholder was drawn), made on demand.
    sources: npt.NDArray[np.uint8] | None = None
    mags: list[Vec3] = field(default_factory=list)
    mag_request: MagPlaneRequest | None = None

    @cached_property
    def source(self) -> npt.NDArray[np.uint8]:
        """``(U', V')``: 0 where the chosen mag is shown, ``k`` where ``mags[k]`` is,
        ``NO_SOURCE`` where nothing is there yet."""
        if self.sources is not None:
            return self.sources
        pending = np.asarray(self.status) == Status.PENDING
        out: npt.NDArray[np.uint8] = pending.astype(np.uint8) * np.uint8(NO_SOURCE)
        return out

    @cached_property
    def complete(self) -> bool:
        """Every pixel comes from the chosen mag and none is still loading."""
        if self.sources is None:
            return not bool(np.any(np.asarray(self.status) == Status.PENDING))
        return not bool(np.any(self.sources))

    @cached_property
    def shown_mags(self) -> list[Vec3]:
        """The mags some pixel of the plane comes from, chosen first."""
        if self.sources is None:  # nothing underneath: the chosen mag, if anything arrived
            arrived = bool(np.any(np.asarray(self.status) != Status.PENDING))
            return self.mags[:1] if arrived else []
        counts = np.bincount(self.source.ravel(), minlength=NO_SOURCE + 1)
        present = set(np.flatnonzero(counts).tolist()) - {NO_SOURCE}
        return [m for k, m in enumerate(self.mags) if k in present]

    @property
    def label(self) -> str:
        """For the status bar: ``mag 2-2-1``, or ``mag 2-2-1 (4-4-2 while loading)``."""
        text = f"mag {mag_name(self.mags[0])}"
        others = [mag_name(m) for m in self.shown_mags if m != self.mags[0]]
        if others:
            text += f" ({', '.join(others)} while loading)"
        return text


def resample(data: npt.NDArray[Any], coarse: MagPlaneRequest,
             fine: MagPlaneRequest) -> npt.NDArray[Any]:
    """A plane read at ``coarse`` (last two axes = ``coarse.request.shape``) on the grid of
    ``fine`` (a finer mag of the same view whose factors divide ``coarse``'s): each ``fine``
    pixel takes the ``coarse`` voxel that contains it (nearest neighbour), clipped to the
    edge of ``coarse``'s box.  Works for ``(C, U, V)`` data and ``(U, V)`` status alike."""
    cu, cv = coarse.factors
    fu, fv = fine.factors
    lo, hi = coarse.request.lo, coarse.request.hi
    iu = np.clip(np.arange(fine.request.lo[0], fine.request.hi[0]) * fu // cu, lo[0], hi[0] - 1)
    iv = np.clip(np.arange(fine.request.lo[1], fine.request.hi[1]) * fv // cv, lo[1], hi[1] - 1)
    # two 1-D takes, cheaper than one 2-D fancy-index gather
    return np.take(np.take(data, iu - lo[0], axis=-2), iv - lo[1], axis=-1)


def compose(chosen: tuple[MagPlaneRequest, Any],
            placeholders: Sequence[tuple[MagPlaneRequest, Any]] = ()) -> ComposedPlane:
    """Put together a view's plane from the chosen mag's ``(MagPlaneRequest, Plane)`` and
    placeholder ones (finest first, e.g. what the loader's cache holds of
    :func:`placeholder_requests`): each pixel still PENDING at the chosen mag is taken from
    the first placeholder that has it, on the chosen mag's grid.  The ``Plane`` objects are
    ``slicing.Plane`` (anything with ``data``, ``status`` and ``errors``).  Pure; any thread."""
    mreq, plane = chosen
    fu, fv = mreq.factors
    if getattr(plane, "complete", False) is True:
        # Nothing loading (the common case): no mask to build, nothing to put underneath.
        done = ComposedPlane(mreq.source, plane.data, plane.status, dict(plane.errors),
                             factors=(fu, fv), origin=mreq.covered_lo, mags=[mreq.mag],
                             mag_request=mreq)
        done.__dict__["complete"] = True  # what the cached properties would compute
        done.__dict__["shown_mags"] = [mreq.mag]
        return done
    if not any(np.any(np.asarray(p.status) != Status.PENDING) for _, p in placeholders):
        # Nothing underneath to draw (a one-mag layer, or no coarse mag cached yet): the
        # chosen mag's plane as it is; which pixels are loading is worked out on demand.
        out = ComposedPlane(mreq.source, plane.data, plane.status, dict(plane.errors),
                            factors=(fu, fv), origin=mreq.covered_lo,
                            mags=[mreq.mag] + [p.mag for p, _ in placeholders],
                            mag_request=mreq)
        out.__dict__["complete"] = False
        return out
    status = np.asarray(plane.status)
    pending = status == Status.PENDING
    data = plane.data
    source = pending.astype(np.uint8) * np.uint8(NO_SOURCE)
    errors: dict[tuple[str, int], Any] = dict(plane.errors)
    mags = [mreq.mag]
    shown = [k for k in (0,) if not bool(pending.all())]
    copied = False
    for k, (preq, pplane) in enumerate(placeholders, 1):
        if preq.source != mreq.source:
            raise ValueError(f"placeholder for {preq.source}, the view wants {mreq.source}")
        if not pending.any():
            break
        mags.append(preq.mag)
        if not np.any(np.asarray(pplane.status) != Status.PENDING):
            continue  # nothing of it loaded yet (checked on its own, coarser grid)
        p_status = resample(pplane.status, preq, mreq)
        take = pending & (p_status != Status.PENDING)
        if take.any():
            if not copied:  # the source's arrays are snapshots: never written into
                data, status, copied = data.copy(), status.copy(), True
            # copyto(where=) rather than boolean-mask assignment (Fortran-order planes)
            np.copyto(data, resample(pplane.data, preq, mreq), where=take)
            np.copyto(status, p_status, where=take)
            np.copyto(source, np.uint8(k), where=take)
            pending &= ~take
            errors.update(pplane.errors)
            shown.append(k)
    out = ComposedPlane(mreq.source, data, status, errors, factors=(fu, fv),
                        origin=mreq.covered_lo, sources=source, mags=mags, mag_request=mreq)
    out.__dict__["shown_mags"] = [mags[k] for k in shown]  # known here without a scan
    return out


# -- physical space -----------------------------------------------------------------------------
#: Length units for display, largest first: (name, nanometres).
_DISPLAY_UNITS = (("m", 1e9), ("mm", 1e6), ("µm", 1e3), ("nm", 1.0))


def physical_position(pos: Sequence[float], voxel_size_nm: Sequence[float]
                      ) -> tuple[float, float, float]:
    """A mag-1 voxel position in nanometres (the voxel's corner, as webKnossos counts)."""
    return (float(pos[0]) * float(voxel_size_nm[0]), float(pos[1]) * float(voxel_size_nm[1]),
            float(pos[2]) * float(voxel_size_nm[2]))


def format_length(nm: float, digits: int = 3) -> str:
    """``nm`` in the largest unit that keeps it at least 1 (``850 nm``, ``1.25 µm``), with
    ``digits`` significant digits."""
    magnitude = abs(nm)
    for name, scale in _DISPLAY_UNITS:
        if magnitude >= scale or scale == 1.0:
            return f"{nm / scale:.{digits}g} {name}"
    raise AssertionError("unreachable")


def format_physical(pos: Sequence[float], voxel_size_nm: Sequence[float]) -> str:
    """``x, y, z`` in one shared unit for the status bar (``1.2, 0.87, 3.4 µm``)."""
    p = physical_position(pos, voxel_size_nm)
    largest = max(abs(v) for v in p)
    for name, scale in _DISPLAY_UNITS:
        if largest >= scale or scale == 1.0:
            return ", ".join(f"{v / scale:.4g}" for v in p) + f" {name}"
    raise AssertionError("unreachable")


def scale_bar(nm_per_pixel: float, max_pixels: float) -> tuple[float, float, str]:
    """The longest round length (1, 2 or 5 times a power of ten nanometres) that fits in
    ``max_pixels`` at ``nm_per_pixel``: ``(length_nm, length_pixels, label)``."""
    if not nm_per_pixel > 0 or not max_pixels > 0:
        raise ValueError("nm_per_pixel and max_pixels must be positive")
    limit = nm_per_pixel * max_pixels
    exponent = int(np.floor(np.log10(limit)))
    best = 0.0
    for e in (exponent - 1, exponent):
        for mantissa in (1.0, 2.0, 5.0):
            length = mantissa * 10.0 ** e
            if length <= limit * (1 + EPSILON):
                best = max(best, length)
    return best, best / nm_per_pixel, format_length(best)


def pixel_aspect(axis: int, voxel_size_nm: Sequence[float]) -> tuple[float, float]:
    """How much larger a voxel is drawn along the view's (u, v) axes than its smallest
    in-plane side (so anisotropic voxels keep their physical shape): e.g. an XZ view of
    11.24 x 11.24 x 28 nm voxels draws them (1, 2.49) times as large."""
    u, v = IN_PLANE[axis]
    su, sv = float(voxel_size_nm[u]), float(voxel_size_nm[v])
    base = min(su, sv)
    return (su / base, sv / base)


def _vec(mag: Sequence[int]) -> Vec3:
    if len(mag) != 3:
        raise ValueError(f"a mag has three factors, not {tuple(mag)}")
    x, y, z = (int(v) for v in mag)
    if min(x, y, z) < 1:
        raise ValueError(f"mag factors must be at least 1, not {(x, y, z)}")
    return (x, y, z)


__all__ = ["physical_position", "format_length", "format_physical", "scale_bar", "pixel_aspect",
           "choose_mag", "choose_mag_xyz", "compose", "resample", "ComposedPlane", "NO_SOURCE",
           "placeholder_mags", "placeholder_requests", "to_mag", "upscale", "MagPlaneRequest",
           "in_plane_factors", "voxels_per_pixel", "EPSILON"]
