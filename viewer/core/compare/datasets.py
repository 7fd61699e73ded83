"""Comparing datasets of layers and mags: every (layer, mag) pair the two share, plus their
structure.

A dataset of any format (a webKnossos dataset or layer folder, an N5 or OME-Zarr multiscale
group, ...) is layers of mags of volumes, as ``viewer.format.open_dataset`` opens it.
``DatasetCompareJob`` pairs the layers of A and B by name and their mags by factor, reports
what only one side has (a layer, a mag) and what the metadata disagree on (voxel size,
category, element class, channels, bounding box), then runs a ``CompareJob`` per pair on the
two mags' volumes.  When only one side is such a collection (the other a single array: a plain
WKW dataset or file, one zarr array), the single array is compared with the chosen mag of the
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
from viewer.core.compare.sides import VolumeSpec
from viewer.format import (
    Dataset,
    FormatError,
    Layer,
    Mag,
    mag_name,
    open_dataset,
    select_mag,
)

#: What ``kind`` of dataset ``Dataset.kind`` names when it is one array (not compared per
#: layer and mag unless the other side is a collection, or a layer or mag is asked for).
SINGLE_ARRAY_KINDS = ("mag", "file", "array")

#: What ``coordinates`` says in the JSON of a per-(layer, mag) comparison.
COORDINATES_NOTE = ("mismatching_blocks positions are in the voxel coordinates of their pair's "
                    "mag (mag-1 voxel = position * mag); files are relative to A's dataset "
                    "folder")


@dataclass
class PairResult:
    """The comparison of one (layer, mag) pair: ``a``/``b`` are the two mags' paths."""

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
            "chunk_shape": None if s.chunk_shape is None else list(s.chunk_shape),
            "blocks_total": s.blocks_total,
            "blocks_compared": s.blocks_compared,
            "voxels_different": s.voxels_different,
            "max_abs_diff": s.to_json()["max_abs_diff"],
            "mismatching_blocks": [r.to_json() for r in s.mismatching_blocks],
            "structure": [f.to_json() for f in s.structure],
        }


@dataclass
class DatasetSummary(Summary):
    """The whole comparison (the same keys as a plain one, summed over the pairs; every pair's
    findings appear in ``structure`` prefixed with ``layer/mag``) and ``pairs``.  ``kind`` is
    the format of the dataset compared per layer and mag (``"webknossos"``, ...)."""

    pairs: list[PairResult] = field(default_factory=list)
    kind: str = ""

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        out["kind"] = self.kind
        out["coordinates"] = COORDINATES_NOTE
        out["pairs"] = [p.to_json() for p in self.pairs]
        return out


def is_collection(dataset: Dataset) -> bool:
    """Whether a dataset is compared layer by layer and mag by mag: more than one array (a
    webKnossos dataset or layer folder, a multiscale group), as opposed to one array (a
    plain WKW dataset, one zarr array)."""
    if len(dataset.layers) != 1 or len(dataset.layers[0].mags) != 1:
        return True
    return dataset.kind not in SINGLE_ARRAY_KINDS


def open_input(path: str | os.PathLike[str]) -> Dataset:
    """One side's dataset through the registry.  ``FileNotFoundError`` for a local path that
    does not exist; the registry's ``FormatError`` for anything it cannot open; a
    ``FormatError`` too for a dataset none of whose layers opened (its problems say why)."""
    p = os.fspath(path)
    if "://" not in p and not os.path.exists(p):
        raise FileNotFoundError(f"{p}: no such file or directory")
    dataset = open_dataset(p)
    if not dataset.layers:
        why = "; ".join(str(e) for e in dataset.problems) or "it holds no layer"
        dataset.close()
        raise FormatError(f"nothing in it can be compared: {why}", p)
    return dataset


class DatasetCompareJob(BackgroundRun[DatasetSummary]):
    """Compare two datasets (paths, or ``Dataset``s already open) per (layer, mag) pair,
    restricted to ``layer`` (a name) and ``mag`` (any ``parse_mag`` spelling) when given.
    At least one of them is normally a collection (``is_collection``)."""

    thread_name = "wkw-compare-datasets"

    def __init__(self, a: str | os.PathLike[str] | Dataset,
                 b: str | os.PathLike[str] | Dataset,
                 layer: str | None = None, mag: Vec3 | None = None, box: Box | None = None,
                 tolerance: float = 0.0, workers: int = 2,
                 on_progress: ProgressCallback | None = None,
                 on_block: BlockCallback | None = None,
                 on_finding: FindingCallback | None = None,
                 on_finished: FinishedCallback | None = None,
                 scheduler: str | None = None) -> None:
        if tolerance < 0:
            raise ValueError(f"tolerance must be non-negative, not {tolerance}")
        #: ``tcp://HOST:PORT`` or ``local:N``: each pair is compared on a Dask cluster.
        self.scheduler = scheduler
        self._a_in, self._b_in = a, b
        self.a = a.path if isinstance(a, Dataset) else os.fspath(a)
        self.b = b.path if isinstance(b, Dataset) else os.fspath(b)
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
        self.summary = DatasetSummary(self.a, self.b, box, self.tolerance)
        #: Layers whose declared bounding boxes differ (their mags' extents then differ too).
        self._box_differs: set[str] = set()

    def cancel(self) -> None:
        """Stop after the tasks already running (of the pair being compared)."""
        self._cancel.set()
        with self._lock:
            job = self._current
        if job is not None:
            job.cancel()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    # -- the work -----------------------------------------------------------------------------
    def run(self) -> DatasetSummary:
        """Compare every selected pair and return the summary.  Raises ``FormatError`` or
        ``OSError`` when either input cannot be opened, ``KeyError`` when the ``layer`` or
        ``mag`` asked for exists on neither side."""
        started = time.perf_counter()
        own: list[Dataset] = []
        try:
            da = self._open(self._a_in, own)
            db = self._open(self._b_in, own)
            pairs = self._pairs(da, db)
            done_before = [0, 0]
            for layer, mag, side_a, side_b in pairs:
                if self.cancelled:
                    break
                self._compare_pair(layer, mag, side_a, side_b, da.path, done_before,
                                   db.path)
        finally:
            for ds in own:
                ds.close()
        s = self.summary
        s.comparable = all(p.summary.comparable for p in s.pairs)
        s.cancelled = self.cancelled
        s.elapsed = time.perf_counter() - started
        if self.on_finished is not None:
            self.on_finished(s)
        return s

    @staticmethod
    def _open(side: str | os.PathLike[str] | Dataset, own: list[Dataset]) -> Dataset:
        if isinstance(side, Dataset):
            return side
        dataset = open_input(side)
        own.append(dataset)
        return dataset

    def _add_finding(self, finding: Finding) -> None:
        self.summary.structure.append(finding)
        if self.on_finding is not None:
            self.on_finding(finding)

    def _pairs(self, da: Dataset, db: Dataset) -> list[tuple[str, Vec3, Mag, Mag]]:
        """(layer, mag, A's mag, B's mag) per pair to compare, after reporting the
        structural findings."""
        many_a, many_b = is_collection(da), is_collection(db)
        self.summary.kind = (da if many_a or not many_b else db).format
        if not (many_a and many_b):  # one single array: against the other's chosen mag
            if many_a or many_b:
                many, label = (da, "A") if many_a else (db, "B")
                self._report_problems(many, label)
                chosen = select_mag(many, self.layer, self.mag)
                single = (db if many_a else da).layers[0].mags[0]
                if many_a:
                    return [(chosen.layer, chosen.mag, chosen, single)]
                return [(chosen.layer, chosen.mag, single, chosen)]
            ma, mb = (select_mag(d, self.layer, self.mag) for d in (da, db))
            return [(ma.layer, ma.mag, ma, mb)]
        self._report_problems(da, "A")
        self._report_problems(db, "B")
        if da.voxel_size_declared and db.voxel_size_declared and \
                da.scale.nanometers != db.scale.nanometers:
            self._add_finding(Finding(
                "voxel_size", DIFFERENCE, f"voxel size differs: A {_fmt_vs(da)}, B {_fmt_vs(db)}",
                {"a": list(da.scale.nanometers), "b": list(db.scale.nanometers)}))
        layers_a = {la.name: la for la in da.layers}
        layers_b = {lb.name: lb for lb in db.layers}
        if (len(layers_a) == 1 and len(layers_b) == 1 and set(layers_a) != set(layers_b)
                and "dataset" not in (da.kind, db.kind)):
            # two single layer (or mag) folders: their names are just folder names
            layers_b = {da.layers[0].name: db.layers[0]}
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
        out: list[tuple[str, Vec3, Mag, Mag]] = []
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
                if ma.mag not in mags_b:
                    self._mag_missing(name, ma.mag, "B")
                else:
                    out.append((name, ma.mag, ma, mags_b.pop(ma.mag)))
            for mb in mags_b.values():
                if self.mag is None or mb.mag == self.mag:
                    self._mag_missing(name, mb.mag, "A")
        return out

    def _report_problems(self, ds: Dataset, side: str) -> None:
        for problem in ds.problems:
            self._add_finding(Finding(
                "problem", INFO, f"{side}: {problem}",
                {"side": side, "error": type(problem).__name__, "path": problem.path}))

    def _mag_missing(self, layer: str, mag: Vec3, absent: str) -> None:
        self._add_finding(Finding(
            "mag_missing", DIFFERENCE, f"{layer}/{mag_name(mag, False)} is absent from {absent}",
            {"layer": layer, "mag": list(mag), "missing_in": absent}))

    def _compare_layers(self, la: Layer, lb: Layer) -> None:
        """Findings for what the two layers' metadata disagree on."""
        checks: list[tuple[str, Any, Any]] = [
            ("category", la.category, lb.category),
            ("element_class", la.element_class, lb.element_class),
            ("num_channels", la.num_channels, lb.num_channels),
        ]
        for kind, va, vb in checks:
            if va != vb:
                what = kind.replace("_", " ")
                self._add_finding(Finding(
                    kind, DIFFERENCE, f"{la.name}: {what} differs: A {va}, B {vb}",
                    {"layer": la.name, "a": va, "b": vb}))
        try:
            ba, bb = la.bounding_box, lb.bounding_box
        except FormatError:
            return  # an undeclared box found from data that cannot be read: the pair says so
        if ba != bb:
            self._box_differs.add(la.name)
            self._add_finding(Finding(
                "bounding_box", DIFFERENCE,
                f"{la.name}: bounding box differs (mag-1 voxels): "
                f"A {_fmt_bbox(ba.top_left, ba.size)}, B {_fmt_bbox(bb.top_left, bb.size)}",
                {"layer": la.name, "a": ba.to_json(), "b": bb.to_json()}))

    def _compare_pair(self, layer: str, mag: Vec3, side_a: Mag, side_b: Mag,
                      root_a: str, done_before: list[int], root_b: str = "") -> None:
        label = f"{layer}/{mag_name(mag, False)}"
        path_a, path_b = side_a.path, side_b.path
        box = None if self.box is None else _box_at_mag(self.box, mag)
        pair_summary = Summary(path_a, path_b, box, self.tolerance)
        pair = PairResult(layer, mag, path_a, path_b, pair_summary)
        try:
            base_done, base_total = done_before

            def progress(done: int, total: int) -> None:
                if self.on_progress is not None:
                    self.on_progress(base_done + done, base_total + total)

            inputs: tuple[Any, Any] = (side_a.volume, side_b.volume)
            if self.scheduler is not None:  # the workers open the pair by name
                inputs = (VolumeSpec(root_a, side_a.layer, side_a.mag,
                                     tuple(side_a.volume.extra_index.items())),
                          VolumeSpec(root_b, side_b.layer, side_b.mag,
                                     tuple(side_b.volume.extra_index.items())))
            job = CompareJob(*inputs, box=box, tolerance=self.tolerance,
                             workers=self.workers, on_progress=progress,
                             scheduler=self.scheduler)
            job.summary.a, job.summary.b = path_a, path_b
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
            s.chunk_shape = pair_summary.chunk_shape
        s.blocks_total += pair_summary.blocks_total
        s.blocks_compared += pair_summary.blocks_compared
        s.voxels_different += pair_summary.voxels_different
        s.max_abs_diff = max(s.max_abs_diff, pair_summary.max_abs_diff)
        for r in pair_summary.mismatching_blocks:
            s.mismatching_blocks.append(r)
            if self.on_block is not None:
                self.on_block(r)
        for f in pair_summary.structure:
            if f.kind == "extent" and layer in self._box_differs:
                continue  # the layer's bounding box finding says it, in mag-1 voxels
            self._add_finding(Finding(f.kind, f.severity, f"{label}: {f.message}",
                                      {**f.details, "layer": layer, "mag": list(mag)}))


def compare_datasets(a: str | os.PathLike[str] | Dataset, b: str | os.PathLike[str] | Dataset,
                     layer: str | None = None, mag: Vec3 | None = None,
                     box: Box | None = None, tolerance: float = 0.0, workers: int = 2,
                     **callbacks: Any) -> DatasetSummary:
    """Compare two datasets per (layer, mag) pair on the calling thread."""
    return DatasetCompareJob(a, b, layer, mag, box, tolerance, workers, **callbacks).run()


#: The names this module had when it compared webKnossos datasets only.
WkCompareJob = DatasetCompareJob
WkSummary = DatasetSummary
compare_webknossos = compare_datasets


def _box_at_mag(box: Box, mag: Vec3) -> Box:
    """The mag voxels covering a mag-1 box (start floored, end ceiled)."""
    (x, y, z), (w, h, d) = box
    lo = [v // m for v, m in zip((x, y, z), mag, strict=True)]
    hi = [-(-(v + s) // m) for v, s, m in zip((x, y, z), (w, h, d), mag, strict=True)]
    return ((lo[0], lo[1], lo[2]), (hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]))


def _relative_prefix(path: str, root: str) -> str:
    """``color/2-2-1/`` for a mag folder under ``root`` ("" for the root itself or a file)."""
    if "://" in path or os.path.isfile(path):
        return ""
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    if rel == "." or rel.startswith(".."):
        return ""
    return rel.replace(os.sep, "/") + "/"


def _fmt_vs(ds: Dataset) -> str:
    return ", ".join(f"{v:g}" for v in ds.scale.nanometers) + " nm"


def _fmt_bbox(top_left: Vec3, size: Vec3) -> str:
    return f"offset ({', '.join(map(str, top_left))}) size {'x'.join(map(str, size))}"


__all__ = ["DatasetCompareJob", "DatasetSummary", "PairResult", "compare_datasets",
           "is_collection", "open_input", "WkCompareJob", "WkSummary", "compare_webknossos",
           "COORDINATES_NOTE", "SINGLE_ARRAY_KINDS"]
