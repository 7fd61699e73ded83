"""Fixtures of the extent tests: data written by other tools (``writers.py``, imported as
``extents_writers``), once per session, with what each case must open to; the HTTP server
(``tests/remote/range_server.py``, as ``range_server``) and an S3 server (moto's, on
127.0.0.1: ``tests/moto_s3.py``) serving them, once per module; a fresh range cache per test
(never the user's)."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

_here = Path(__file__).parent
for _name, _file in (("extents_writers", _here / "writers.py"),
                     ("range_server", _here.parent / "remote" / "range_server.py")):
    if _name not in sys.modules:
        _spec = importlib.util.spec_from_file_location(_name, _file)
        assert _spec is not None and _spec.loader is not None
        _module = importlib.util.module_from_spec(_spec)
        sys.modules[_name] = _module
        _spec.loader.exec_module(_module)

import extents_writers as w  # noqa: E402
from once import once_per_run  # noqa: E402
from range_server import RangeServer  # noqa: E402

from viewer import environment  # noqa: E402
from viewer.format.remote import config as remote_config  # noqa: E402

Vec3 = tuple[int, int, int]


@dataclass(frozen=True)
class Case:
    """A dataset written by another tool: where it is below the data root, and per layer
    (in the order it opens) its mags, each with the origin of its extent and the voxels the
    extent holds (``(X, Y, Z)``, or ``(C, X, Y, Z)`` with channels; with a time axis: at
    time point 0)."""

    name: str
    rel: str
    layers: tuple[tuple[tuple[Vec3, Vec3, np.ndarray], ...], ...]  # of Layer


Layer = tuple[tuple[Vec3, Vec3, np.ndarray], ...]


def _one(data: np.ndarray) -> tuple[Layer]:
    """One layer of one mag at the origin."""
    return ((((1, 1, 1), (0, 0, 0), data),),)


def _pyramid(data: np.ndarray, origin: Vec3 = (0, 0, 0)
             ) -> tuple[tuple[Vec3, Vec3, np.ndarray], ...]:
    out = []
    for f, level in zip(w.FACTORS, w.pyramid(data), strict=True):
        lo = (origin[0] // f[0], origin[1] // f[1], origin[2] // f[2])
        out.append((f, lo, level))
    return tuple(out)


def _write_cases(root: Path) -> tuple[Path, bool]:
    """Write every case's dataset below ``root``: ``root`` and whether the ``webknossos``
    package was there to write its cases."""
    t = w.truth(w.ODD)
    t2 = w.truth(w.ODD, seed=1)
    tc = _time_channels()
    w.zarr_python(root / "zp2.zarr", t, 2)
    w.zarr_python(root / "zp3.zarr", t, 3)
    w.zarr_python(root / "zp3s.zarr", t, 3, chunks=16, shards=32)
    w.tensorstore_zarr(root / "ts2.zarr", t, "zarr")
    w.tensorstore_zarr(root / "ts3s.zarr", t, "zarr3", chunks=16, shards=32)
    w.ome_zarr(root / "ome.zarr", w.pyramid(t))
    w.ome_zarr_channels(root / "ome-tc.zarr", tc, 2)
    w.ome_zarr_channels(root / "ome-c.zarr", tc[1], 3, shard_c=2)
    w.ome_zarr_channels(root / "ome-c2.zarr", tc[1], 2, chunk_c=2)
    w.consolidated_group(root / "group.zarr", {"a": t, "b": t2})
    w.n5_bigdataviewer(root / "bdv.n5", t)
    w.n5_paintera(root / "paintera.n5", t)
    w.n5_viewer(root / "viewer.n5", [t, t2])
    try:
        w.webknossos_in_child({root / "wk-zarr3": "zarr3", root / "wk-zarr": "zarr",
                               root / "wk-wkw": "wkw", root / "wk-zarr3-2ch": "zarr3-2ch",
                               root / "wk-wkw-2ch": "wkw-2ch"})
    except ImportError:
        return root, False
    return root, True


def _time_channels() -> np.ndarray:
    """The ``(T, C, X, Y, Z)`` image of the OME-Zarr cases."""
    return np.stack([np.stack([w.truth((*w.ODD[:2], 12), seed=2 + 3 * k + c) for c in range(3)])
                     for k in range(2)])


@pytest.fixture(scope="session")
def cases(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Case]]:
    """The data root and every case written below it (a few seconds: the arrays are small;
    the ``webknossos`` package takes longest, to import), written once for the whole run
    (``once_per_run``: the extents modules may run on both of xdist's workers)."""
    pytest.importorskip("tensorstore")
    pytest.importorskip("zarr")
    root, with_webknossos = once_per_run(tmp_path_factory, "extents-cases", _write_cases)
    t = w.truth(w.ODD)
    t2 = w.truth(w.ODD, seed=1)
    tc = _time_channels()
    out = [
        Case("OME-Zarr tczyx, c chunk 1", "ome-tc.zarr", (((((1, 1, 1), (0, 0, 0), tc[0]),),))),
        Case("OME-Zarr 0.5 czyx, c chunk 1, shards of 2", "ome-c.zarr",
             (((((1, 1, 1), (0, 0, 0), tc[1]),),))),
        Case("OME-Zarr czyx, c chunk 2", "ome-c2.zarr", (((((1, 1, 1), (0, 0, 0), tc[1]),),))),
        Case("zarr-python v2", "zp2.zarr", _one(t)),
        Case("zarr-python v3", "zp3.zarr", _one(t)),
        Case("zarr-python v3 sharded", "zp3s.zarr", _one(t)),
        Case("tensorstore zarr v2", "ts2.zarr", _one(t)),
        Case("tensorstore zarr3 sharded", "ts3s.zarr", _one(t)),
        Case("OME-Zarr", "ome.zarr", (_pyramid(t),)),
        Case("zarr v3 consolidated group", "group.zarr", (_one(t)[0], _one(t2)[0])),
        Case("webKnossos zarr3", "wk-zarr3", (_pyramid(t, w.WK_TOP_LEFT),)),
        Case("webKnossos zarr", "wk-zarr", (_pyramid(t, w.WK_TOP_LEFT),)),
        Case("webKnossos wkw", "wk-wkw", (_pyramid(t, w.WK_TOP_LEFT),)),
        Case("webKnossos zarr3 two channels", "wk-zarr3-2ch",
             (_pyramid(np.stack([t, t2]), w.WK_TOP_LEFT),)),
        Case("webKnossos wkw two channels", "wk-wkw-2ch",
             (_pyramid(np.stack([t, t2]), w.WK_TOP_LEFT),)),
        Case("N5 BigDataViewer", "bdv.n5", (_pyramid(t),)),
        Case("N5 Paintera", "paintera.n5/raw", (_pyramid(t),)),
        Case("N5 multiscale group", "paintera.n5/raw/data", (_pyramid(t),)),
        Case("N5 viewer", "viewer.n5", (_pyramid(t), _pyramid(t2))),
    ]
    if not with_webknossos:
        out = [c for c in out if not c.rel.startswith("wk-")]
    return root, out


@pytest.fixture(autouse=True)
def fresh_remote_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test its own range cache, short timeouts, and settings read afresh."""
    monkeypatch.setenv(environment.CACHE_DIR_ENV, str(tmp_path / "range-cache"))
    monkeypatch.setenv(environment.TIMEOUT_ENV, "5")
    monkeypatch.setenv(environment.ANON_ENV, "0")
    remote_config.reset(environment.read_config(os.environ))
    yield
    remote_config.reset(environment.read_config(os.environ))


@pytest.fixture(scope="module")
def http(cases: tuple[Path, list[Case]]) -> Iterator[RangeServer]:
    with RangeServer(str(cases[0])) as srv:
        yield srv


@pytest.fixture(scope="module")
def moto_server(cases: tuple[Path, list[Case]]) -> Iterator[dict[str, Any]]:
    """An S3 server on 127.0.0.1 with bucket ``bkt`` holding the data root under ``data/``."""
    pytest.importorskip("moto.server", reason="moto is not installed")
    pytest.importorskip("boto3", reason="boto3 is not installed")
    from moto_s3 import MotoS3

    with MotoS3() as srv:
        srv.fill_bucket(cases[0], "data/")
        yield {"endpoint": srv.endpoint, "env": srv.environment}


@pytest.fixture
def s3(moto_server: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    for k, v in moto_server["env"].items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    remote_config.reset(environment.read_config(os.environ))
    return moto_server
