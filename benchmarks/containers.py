"""zfpc and OpenVDS: ours against the formats' own readers, in one run.

* **zfpc**: decoding a whole 256^3 float32 file (a smooth field with noise, written by
  ``zfpc.compress`` with its defaults: lossless, every dimension correlated, so one stream),
  ours (``open_volume`` + ``read`` of everything + close) against ``zfpc.decompress`` of the
  file's bytes (read from disk in the round).  A second row (informational) splits the streams
  along z (``correlated_dims=[True, True, False, False]``, 256 streams).
* **VDS**: one XY plane (512 x 512 at a z that moves every round) of a 512^3 float32 VDS with
  wavelet bricks of 64^3 (written by ``openvds``), ours (``open_volume`` + ``read`` + close)
  against ``openvds.open`` + ``requestVolumeSubset`` + close.  Wavelet bricks are decoded by
  OpenVDS on both sides (it is the only wavelet decoder); a second row (informational) reads the
  plane's 64 bricks one by one through the storage unit, as the viewer's loader does.

The two sides take turns, round after round, the order alternating; each figure is the median
per side and the ratio ours/peer of the medians (measured under the same load, so fair on a busy
machine even where absolute times are not).

    python -m benchmarks.containers            # a table
    python -m benchmarks.containers --json     # {"zfpc_full_ratio_vs_zfpc_package",
                                               #  "vds_xy_ratio_vs_openvds", ...}
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import CoreMeter, load_average, with_load
from viewer.format import open_volume

CACHE = Path(os.environ.get("WKW_BENCH_CACHE", Path(__file__).resolve().parent / ".cache"))
#: Targets (ours / peer, at most).
TARGETS = {"zfpc_full_ratio_vs_zfpc_package": 1.0, "vds_xy_ratio_vs_openvds": 1.2}


def _field(shape: tuple[int, int, int], origin: tuple[int, int, int] = (0, 0, 0),
           seed: int = 0) -> Any:
    """A smooth float32 field with a little noise, ``(x, y, z)``."""
    rng = np.random.default_rng(seed + origin[0] * 7 + origin[1] * 131 + origin[2] * 1031)
    x, y, z = (np.arange(o, o + n, dtype=np.float32)[idx]
               for o, n, idx in zip(origin, shape, [np.s_[:, None, None], np.s_[None, :, None],
                                                    np.s_[None, None, :]], strict=True))
    f = (np.sin(x / 17.0) * np.cos(y / 23.0) + 0.5 * np.sin(z / 11.0 + x / 40.0)
         + 0.1 * np.cos((x + y + z) / 5.0))
    return (f + rng.normal(0, 0.01, size=shape)).astype(np.float32)


def zfpc_file(split: bool) -> Path:
    import zfpc

    path = CACHE / "containers" / f"field256{'_z' if split else ''}.zfpc"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    data = np.ascontiguousarray(_field((256, 256, 256)))
    dims = [True, True, False, False] if split else [True, True, True, True]
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(zfpc.compress(data, correlated_dims=dims))
    tmp.rename(path)
    return path


def vds_file() -> Path:
    """512^3 float32, wavelet (tolerance 0.01), bricks of 64, no LODs, written by openvds."""
    import openvds

    path = CACHE / "containers" / "wavelet512.vds"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name("wavelet512.tmp.vds")
    if tmp.exists():
        tmp.unlink()
    n = 512
    L = openvds.VolumeDataLayoutDescriptor
    layout = L(L.BrickSize.BrickSize_64, 0, 0, 4, L.LODLevels.LODLevels_None,
               L.Options.Options_None)
    axes = [openvds.VolumeDataAxisDescriptor(n, name, "unitless", 0.0, float(n - 1))
            for name in ("Sample", "Crossline", "Inline")]
    C = openvds.VolumeDataChannelDescriptor
    channels = [C(C.Format.Format_R32, C.Components.Components_1, "Amplitude", "", -2.0, 2.0)]
    vds = openvds.create(str(tmp), "", layout, axes, channels, openvds.MetadataContainer(),
                         openvds.CompressionMethod.Wavelet, 0.01)
    am = openvds.getAccessManager(vds)
    acc = am.createVolumeDataPageAccessor(openvds.DimensionsND.Dimensions_012, 0, 0, 16,
                                          am.AccessMode.AccessMode_Create)
    for c in range(acc.getChunkCount()):
        page = acc.createPage(c)
        buf = np.array(page.getWritableBuffer(), copy=False)
        lo, hi = page.getMinMax()
        shape = (hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2])
        buf[...] = _field(shape, (lo[0], lo[1], lo[2])).transpose(2, 1, 0)
        page.release()
    acc.commit()
    openvds.close(vds)
    tmp.rename(path)
    return path


def _rounds(rounds: int, ours: Callable[[int], Any], peer: Callable[[int], Any],
            meter: CoreMeter) -> tuple[list[float], list[float]]:
    a: list[float] = []
    b: list[float] = []
    ours(0)
    peer(0)                                   # warm the page cache and the imports
    for k in range(rounds):
        if k % 2:
            b.append(meter.time("peer", lambda k=k: peer(k))[0])
            a.append(meter.time("ours", lambda k=k: ours(k))[0])
        else:
            a.append(meter.time("ours", lambda k=k: ours(k))[0])
            b.append(meter.time("peer", lambda k=k: peer(k))[0])
    return a, b


def bench_zfpc(rounds: int, split: bool) -> dict[str, Any]:
    import zfpc

    path = zfpc_file(split)

    def ours(_: int) -> Any:
        with open_volume(path) as vol:
            return vol.read((0, 0, 0), vol.shape)

    def peer(_: int) -> Any:
        with open(path, "rb") as fh:
            return zfpc.decompress(fh.read())

    np.testing.assert_array_equal(ours(0)[0], peer(0))
    meter = CoreMeter()
    a, b = _rounds(rounds, ours, peer, meter)
    return {"ours_s": statistics.median(a), "peer_s": statistics.median(b),
            "ratio": statistics.median(a) / statistics.median(b),
            "min_ratio": min(a) / min(b), "file_bytes": path.stat().st_size,
            "cores_busy": meter.busy()}


def bench_vds(rounds: int) -> dict[str, Any]:
    import openvds

    path = str(vds_file())
    n = 512

    def z_of(k: int) -> int:
        return (37 + 97 * k) % n

    def ours(k: int) -> Any:
        with open_volume(path) as vol:
            return vol.read((0, 0, z_of(k)), (n, n, 1))[0, :, :, 0]

    def ours_chunks(k: int) -> Any:
        with open_volume(path) as vol:
            out = np.empty((n, n), np.float32)
            unit = vol.open_unit((0, 0, 0))
            assert unit is not None
            z = z_of(k)
            c = vol.chunk_shape
            grid = np.asarray([(i, j, z // c[2]) for j in range(n // c[1])
                               for i in range(n // c[0])], dtype=np.int64)
            _, idx = vol.locate(grid)
            for (i, j, _), chunk in zip(grid, unit.read_chunks(idx.tolist()), strict=True):
                assert isinstance(chunk, np.ndarray)
                out[i * c[0]:(i + 1) * c[0], j * c[1]:(j + 1) * c[1]] = chunk[0, :, :, z % c[2]]
            return out

    def peer(k: int) -> Any:
        vds = openvds.open(path, "")
        try:
            am = openvds.getAccessManager(vds)
            z = z_of(k)
            req = am.requestVolumeSubset((0, 0, z), (n, n, z + 1),
                                         format=openvds.VolumeDataFormat.Format_R32)
            return np.array(req.data).reshape(n, n).T
        finally:
            openvds.close(vds)

    np.testing.assert_array_equal(ours(3), peer(3))
    np.testing.assert_array_equal(ours_chunks(3), peer(3))
    meter = CoreMeter()
    a, b = _rounds(rounds, ours, peer, meter)
    c, d = _rounds(max(3, rounds // 2), ours_chunks, peer, CoreMeter())
    return {"ours_s": statistics.median(a), "peer_s": statistics.median(b),
            "ratio": statistics.median(a) / statistics.median(b),
            "min_ratio": min(a) / min(b),
            "chunks_ours_s": statistics.median(c), "chunks_peer_s": statistics.median(d),
            "chunks_ratio": statistics.median(c) / statistics.median(d),
            "file_bytes": os.path.getsize(path), "cores_busy": meter.busy()}


def run(rounds: int) -> dict[str, Any]:
    z1 = bench_zfpc(rounds, split=False)
    z2 = bench_zfpc(rounds, split=True)
    v = bench_vds(rounds)
    return {
        "zfpc_full_ratio_vs_zfpc_package": round(z1["ratio"], 3),
        "vds_xy_ratio_vs_openvds": round(v["ratio"], 3),
        "zfpc_full": z1, "zfpc_full_split_z": z2, "vds_xy": v, "rounds": rounds,
        "targets": TARGETS,
    }


def main(argv: list[str] | None = None) -> int:
    load_before = load_average()
    parser = argparse.ArgumentParser(prog="python -m benchmarks.containers", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv)
    try:
        import openvds  # noqa: F401
        import zfpc  # noqa: F401
    except ImportError as exc:
        print(f"needs the test extra (zfpc, openvds): {exc}", file=sys.stderr)
        return 2
    result = run(args.rounds)
    if args.json:
        print(json.dumps(with_load(result, load_before)))
        return 0
    rows = [("zfpc 256^3 f32, full (1 stream)", result["zfpc_full"], "zfpc.decompress"),
            ("zfpc 256^3 f32, full (256 streams)", result["zfpc_full_split_z"],
             "zfpc.decompress"),
            ("vds 512^3 wavelet, XY plane", result["vds_xy"], "requestVolumeSubset")]
    print(f"{'read':38} {'ours':>9} {'peer':>9} {'ratio':>7} {'best':>7}  peer")
    for name, r, peer in rows:
        print(f"{name:38} {r['ours_s'] * 1e3:8.1f}ms {r['peer_s'] * 1e3:8.1f}ms "
              f"{r['ratio']:7.2f} {r['min_ratio']:7.2f}  {peer}")
    v = result["vds_xy"]
    print(f"{'vds XY plane, 64 bricks one by one':38} {v['chunks_ours_s'] * 1e3:8.1f}ms "
          f"{v['chunks_peer_s'] * 1e3:8.1f}ms {v['chunks_ratio']:7.2f}          "
          "requestVolumeSubset")
    print(f"targets: {TARGETS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
