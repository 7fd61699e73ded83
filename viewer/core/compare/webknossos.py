"""Comparing webKnossos datasets: every (layer, mag) pair the two share, plus their structure.

A webKnossos dataset is many WKW datasets (one per layer and mag).  ``WkCompareJob`` pairs the
layers of A and B by name and their mags by factor, reports what only one side has (a layer, a
mag) and what the properties disagree on (voxel size, category, element class, channels,
bounding box), then runs a ``CompareJob`` per pair.  When only one side is a webKnossos dataset
(the other a plain WKW dataset or file), the plain side is compared with the chosen mag of the
other (``select_mag``: ``layer``/``mag`` or the first color layer's finest mag).

Positions of mismatching blocks are in the voxel coordinates of the pair's mag (a mag-1 voxel
is ``position * mag``); files are relative to A's dataset folder.  A ``box`` is given in mag-1
voxels and cut per mag to the mag voxels that cover it.

Threads: construct on any thread; ``run()`` works on the calling thread (plus each pair's
worker pool) and calls the callbacks there, ``start()`` runs it on a background thread and
``wait()`` collects the summary; ``cancel()`` may be called from any thread.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any

from viewer.core.compare.background import BackgroundRun
from viewer.core.compare.job import (
    BlockCallback,
    CompareJob,
    FindingCallback,
    FinishedCallback,
    ProgressCallback,
)
from viewer.core.compare.model import DIFFERENCE, INFO, Box, Finding, Summary, Vec3
from viewer.format import FormatError, Layer, Mag, mag_name
from viewer.format.webknossos import (
    WkDataset,
    is_webknossos_dataset,
)
from viewer.format.webknossos import select_mag as wk_select_mag

#: What ``coordinates`` says in the JSON of a webKnossos comparison.
COORDINATES_NOTE = ("mismatching_blocks positions are in the voxel coordinates of their pair's "
                    "mag (mag-1 voxel = position * mag); files are relative to A's dataset "
                    "folder")


@dataclass
class PairResult:
    """The comparison of one (layer, mag) pair: ``a``/``b`` are the two mags' WKW folders."""

    layer: str
    mag: Vec3
    a: str
    b: str
    summary: Summary

    @property
    def equal(self) -> bool:
        return self.summary.equal

    def to_json(self) -> dict[str, Any]:
        s = self.summary
        return {
            "layer": self.layer,
            "mag": list(self.mag),
            "a": self.a,
            "b": self.b,
            "equal": s.equal,
            "comparable": s.comparable,
            "block_len": s.block_len,
            "blocks_total": s.blocks_total,
            "blocks_compared": s.blocks_compared,
            "voxels_different": s.voxels_different,
            "max_abs_diff": s.to_json()["max_abs_diff"],
            "mismatching_blocks": [r.to_json() for r in s.mismatching_blocks],
            "structure": [f.to_json() for f in s.structure],
        }


@dataclass
class WkSummary(Summary):
    """The whole comparison (the same keys as a plain one, summed over the pairs; every pair's
    findings appear in ``structure`` prefixed with ``layer/mag``) and ``pairs``."""

    pairs: list[PairResult] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        out["kind"] = "webknossos"
        out["coordinates"] = COORDINATES_NOTE
        out["pairs"] = [p.to_json() for p in self.pairs]
        return out


def is_webknossos_input(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` needs the per-layer-and-mag comparison (a dataset or layer folder)."""
    return os.path.exists(path) and is_webknossos_dataset(path)


class WkCompareJob(BackgroundRun[WkSummary]):
    """Compare two inputs of which at least one is a webKnossos dataset or layer folder,
    restricted to ``layer`` (a name) and ``mag`` (any ``parse_mag`` spelling) when given."""

    thread_name = "wkw-compare-wk"

    def __init__(self, a: str | os.PathLike[str], b: str | os.PathLike[str],
                 layer: str | None = None, mag: Vec3 | None = None, box: Box | None = None,
                 tolerance: float = 0.0, workers: int = 2,
                 on_progress: ProgressCallback | None = None,
                 on_block: BlockCallback | None = None,
                 on_finding: FindingCallback | None = None,
                 on_finished: FinishedCallback | None = None) -> None:
        if tolerance < 0:
            raise ValueError(f"tolerance must be non-negative, not {tolerance}")
        self.a, self.b = os.fspath(a), os.fspath(b)
        self.layer = layer
        self.mag = mag
        self.box = box
        self.tolerance = float(tolerance)
        self.workers = workers
        self.on_progress = on_progress
        self.on_block = on_block
        self.on_finding = on_finding
        self.on_finished = on_finished
        self._cancel = threading.Event()
        self._current: CompareJob | None = None
        self._lock = threading.Lock()
        super().__init__()
        self.summary = WkSummary(self.a, self.b, box, self.tolerance)

    def cancel(self) -> None:
        """Stop after the chunks already running (of the pair being compared)."""
        self._cancel.set()
        with self._lock:
            job = self._current
        if job is not None:
            job.cancel()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    # -- the work -----------------------------------------------------------------------------
    def run(self) -> WkSummary:
        """Compare every selected pair and return the summary.  Raises ``FormatError`` or
        ``OSError`` when either input cannot be opened, ``KeyError`` when the ``layer`` or
        ``mag`` asked for exists on neither side."""
        started = time.perf_counter()
        for label, path in (("A", self.a), ("B", self.b)):
            if not os.path.exists(path):
                raise FileNotFoundError(f"{label}: {path}: no such file or directory")
        wa = WkDataset(self.a) if is_webknossos_input(self.a) else None
        try:
            wb = WkDataset(self.b) if is_webknossos_input(self.b) else None
        except BaseException:
            if wa is not None:
                wa.close()
            raise
        try:
            pairs = self._pairs(wa, wb)
            done_before = [0, 0]
            for layer, mag, side_a, side_b, root_a in pairs:
                if self.cancelled:
                    break
                self._compare_pair(layer, mag, side_a, side_b, root_a, done_before)
        finally:
            for ds in (wa, wb):
                if ds is not None:
                    ds.close()
        s = self.summary
        s.comparable = all(p.summary.comparable for p in s.pairs)
        s.cancelled = self.cancelled
        s.elapsed = time.perf_counter() - started
        if self.on_finished is not None:
            self.on_finished(s)
        return s

    def _add_finding(self, finding: Finding) -> None:
        self.summary.structure.append(finding)
        if self.on_finding is not None:
            self.on_finding(finding)

    def _pairs(self, wa: WkDataset | None, wb: WkDataset | None
               ) -> list[tuple[str, Vec3, Mag | str, Mag | str, str]]:
        """(layer, mag, A side, B side, A's dataset root) per pair to compare, after
        reporting the structural findings.  A side is a ``Mag`` or a plain WKW path."""
        if wa is None or wb is None:  # one plain side: against the other's chosen mag
            wk = wa if wa is not None else wb
            assert wk is not None
            self._report_problems(wk, "A" if wa is not None else "B")
            chosen = wk_select_mag(wk, self.layer, self.mag)
            if wa is not None:
                return [(chosen.layer, chosen.mag, chosen, self.b, wa.path)]
            return [(chosen.layer, chosen.mag, self.a, chosen, self.a)]
        self._report_problems(wa, "A")
        self._report_problems(wb, "B")
        if wa.voxel_size_declared and wb.voxel_size_declared and \
                wa.scale.nanometers != wb.scale.nanometers:
            self._add_finding(Finding(
                "voxel_size", DIFFERENCE, f"voxel size differs: A {_fmt_vs(wa)}, B {_fmt_vs(wb)}",
                {"a": list(wa.scale.nanometers), "b": list(wb.scale.nanometers)}))
        layers_a = {la.name: la for la in wa.layers}
        layers_b = {lb.name: lb for lb in wb.layers}
        if (len(layers_a) == 1 and len(layers_b) == 1 and set(layers_a) != set(layers_b)
                and "dataset" not in (wa.kind, wb.kind)):
            # two single layer (or mag) folders: their names are just folder names
            layers_b = {wa.layers[0].name: wb.layers[0]}
        if self.layer is not None:
            if self.layer not in layers_a and self.layer not in layers_b:
                names = sorted(set(layers_a) | set(layers_b))
                raise KeyError(f"no layer {self.layer!r} in A or B (layers: {', '.join(names)})")
            layers_a = {k: v for k, v in layers_a.items() if k == self.layer}
            layers_b = {k: v for k, v in layers_b.items() if k == self.layer}
        if self.mag is not None:
            mags = {m.mag for layer in (*layers_a.values(), *layers_b.values())
                    for m in layer.mags}
            if self.mag not in mags:
                raise KeyError(f"no mag {mag_name(self.mag, False)} in the layers compared "
                               f"(mags: {', '.join(mag_name(m, False) for m in sorted(mags))})")
        out: list[tuple[str, Vec3, Mag | str, Mag | str, str]] = []
        for name in [*layers_a, *(n for n in layers_b if n not in layers_a)]:
            la, lb = layers_a.get(name), layers_b.get(name)
            if la is None or lb is None:
                absent = "B" if lb is None else "A"
                self._add_finding(Finding(
                    "layer_missing", DIFFERENCE, f"layer {name!r} is absent from {absent}",
                    {"layer": name, "missing_in": absent}))
                continue
            self._compare_layers(la, lb)
            mags_b = {m.mag: m for m in lb.mags}
            for ma in la.mags:
                if self.mag is not None and ma.mag != self.mag:
                    continue
                mb = mags_b.pop(ma.mag, None)
                if mb is None:
                    self._mag_missing(name, ma.mag, "B")
                else:
                    out.append((name, ma.mag, ma, mb, wa.path))
            for mb in mags_b.values():
                if self.mag is None or mb.mag == self.mag:
                    self._mag_missing(name, mb.mag, "A")
        return out

    def _report_problems(self, ds: WkDataset, side: str) -> None:
        for problem in ds.problems:
            self._add_finding(Finding(
                "problem", INFO, f"{side}: {problem}",
                {"side": side, "error": type(problem).__name__, "path": problem.path}))

    def _mag_missing(self, layer: str, mag: Vec3, absent: str) -> None:
        self._add_finding(Finding(
            "mag_missing", DIFFERENCE, f"{layer}/{mag_name(mag, False)} is absent from {absent}",
            {"layer": layer, "mag": list(mag), "missing_in": absent}))

    def _compare_layers(self, la: Layer, lb: Layer) -> None:
        """Findings for what the two layers' properties disagree on."""
        checks: list[tuple[str, Any, Any]] = [
            ("category", la.category, lb.category),
            ("element_class", la.element_class, lb.element_class),
            ("num_channels", la.num_channels, lb.num_channels),
        ]
        for kind, va, vb in checks:
            if va != vb:
                self._add_finding(Finding(
                    kind, DIFFERENCE, f"{la.name}: {kind.replace('_', ' ')} differs: A {va}, B {vb}",
                    {"layer": la.name, "a": va, "b": vb}))
        ba, bb = la.bounding_box, lb.bounding_box
        if ba != bb:
            self._add_finding(Finding(
                "bounding_box", DIFFERENCE,
                f"{la.name}: bounding box differs (mag-1 voxels): A {_fmt_bbox(ba.top_left, ba.size)}"
                f", B {_fmt_bbox(bb.top_left, bb.size)}",
                {"layer": la.name, "a": ba.to_json(), "b": bb.to_json()}))

    def _compare_pair(self, layer: str, mag: Vec3, side_a: Mag | str, side_b: Mag | str,
                      root_a: str, done_before: list[int]) -> None:
        label = f"{layer}/{mag_name(mag, False)}"
        path_a = side_a.path if isinstance(side_a, Mag) else side_a
        path_b = side_b.path if isinstance(side_b, Mag) else side_b
        box = None if self.box is None else _box_at_mag(self.box, mag)
        pair_summary = Summary(path_a, path_b, box, self.tolerance)
        pair = PairResult(layer, mag, path_a, path_b, pair_summary)
        try:
            ds_a = side_a.dataset if isinstance(side_a, Mag) else side_a  # type: ignore[attr-defined]
            ds_b = side_b.dataset if isinstance(side_b, Mag) else side_b  # type: ignore[attr-defined]
            base_done, base_total = done_before

            def progress(done: int, total: int) -> None:
                if self.on_progress is not None:
                    self.on_progress(base_done + done, base_total + total)

            job = CompareJob(ds_a, ds_b, box=box, tolerance=self.tolerance,
                             workers=self.workers, on_progress=progress)
            with self._lock:
                self._current = job
            if self.cancelled:
                job.cancel()
            pair_summary = job.run()
            pair.summary = pair_summary
        except (FormatError, OSError) as exc:
            pair_summary.comparable = False
            pair_summary.structure.append(Finding(
                "mag_unreadable", DIFFERENCE, f"cannot be read: {exc}", {"error": str(exc)}))
        finally:
            with self._lock:
                self._current = None
        done_before[0] += pair_summary.blocks_compared
        done_before[1] += pair_summary.blocks_total
        prefix = _relative_prefix(path_a, root_a)
        pair_summary.mismatching_blocks = [
            replace(r, file=prefix + r.file, layer=layer, mag=mag)
            for r in pair_summary.mismatching_blocks]
        s = self.summary
        s.pairs.append(pair)
        if not s.block_len:
            s.block_len = pair_summary.block_len
        s.blocks_total += pair_summary.blocks_total
        s.blocks_compared += pair_summary.blocks_compared
        s.voxels_different += pair_summary.voxels_different
        s.max_abs_diff = max(s.max_abs_diff, pair_summary.max_abs_diff)
        for r in pair_summary.mismatching_blocks:
            s.mismatching_blocks.append(r)
            if self.on_block is not None:
                self.on_block(r)
        for f in pair_summary.structure:
            self._add_finding(Finding(f.kind, f.severity, f"{label}: {f.message}",
                                      {**f.details, "layer": layer, "mag": list(mag)}))


def compare_webknossos(a: str | os.PathLike[str], b: str | os.PathLike[str],
                       layer: str | None = None, mag: Vec3 | None = None,
                       box: Box | None = None, tolerance: float = 0.0, workers: int = 2,
                       **callbacks: Any) -> WkSummary:
    """Compare two inputs (at least one a webKnossos dataset) on the calling thread."""
    return WkCompareJob(a, b, layer, mag, box, tolerance, workers, **callbacks).run()


def _box_at_mag(box: Box, mag: Vec3) -> Box:
    """The mag voxels covering a mag-1 box (start floored, end ceiled)."""
    (x, y, z), (w, h, d) = box
    lo = [v // m for v, m in zip((x, y, z), mag)]
    hi = [-(-(v + s) // m) for v, s, m in zip((x, y, z), (w, h, d), mag)]
    return ((lo[0], lo[1], lo[2]), (hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]))


def _relative_prefix(path: str, root: str) -> str:
    """``color/2-2-1/`` for a mag folder under ``root`` ("" for the root itself or a file)."""
    if os.path.isfile(path):
        return ""
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    if rel == "." or rel.startswith(".."):
        return ""
    return rel.replace(os.sep, "/") + "/"


def _fmt_vs(ds: WkDataset) -> str:
    return ", ".join(f"{v:g}" for v in ds.scale.nanometers) + " nm"


def _fmt_bbox(top_left: Vec3, size: Vec3) -> str:
    return f"offset ({', '.join(map(str, top_left))}) size {'x'.join(map(str, size))}"


__all__ = ["WkCompareJob", "WkSummary", "PairResult", "compare_webknossos",
           "is_webknossos_input", "COORDINATES_NOTE"]
