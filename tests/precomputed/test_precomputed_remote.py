"""Precomputed volumes over HTTP (a range server on 127.0.0.1) and S3 (moto on 127.0.0.1),
also behind neuroglancer's ``precomputed://`` prefix: the same layers, mags, extents and
voxels as from disk."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from range_server import RangeServer

from viewer import environment
from viewer.format import open_dataset
from viewer.format.remote import config as remote_config

NAMES = ["sharded_identity", "sharded_murmur", "gzip", "jpeg", "cseg32"]


@pytest.fixture(autouse=True)
def fresh_remote_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(environment.CACHE_DIR_ENV, str(tmp_path / "range-cache"))
    monkeypatch.setenv(environment.TIMEOUT_ENV, "5")
    monkeypatch.setenv(environment.ANON_ENV, "0")
    remote_config.reset(environment.read_config(os.environ))
    yield
    remote_config.reset(environment.read_config(os.environ))


def same_as_local(url: str, local: Path, truths: list[np.ndarray]) -> None:
    ds = open_dataset(url)
    ref = open_dataset(local)
    assert ds.format == "precomputed" and not ds.problems
    assert [m.mag for m in ds.layers[0].mags] == [m.mag for m in ref.layers[0].mags]
    assert ds.layers[0].bounding_box == ref.layers[0].bounding_box
    assert ds.layers[0].category == ref.layers[0].category
    for mag, truth in zip(ds.layers[0].mags, truths, strict=True):
        v = mag.volume
        np.testing.assert_array_equal(v.read(v.origin, v.shape), truth)
    ds.close()
    ref.close()


@pytest.mark.parametrize("name", NAMES)
def test_over_http(pc: dict[str, Any], name: str) -> None:
    path, truths = pc[name]
    with RangeServer(str(path.parent)) as srv:
        same_as_local(f"{srv.url}/{name}", path, truths)
        same_as_local(f"precomputed://{srv.url}/{name}/", path, truths)


@pytest.fixture(scope="module")
def s3(pc: dict[str, Any]) -> Iterator[str]:
    """An S3 server on 127.0.0.1 with bucket ``bkt`` holding the test volumes under
    ``pc/``; yields the bucket's URL."""
    pytest.importorskip("moto.server", reason="moto (test extra) is not installed")
    pytest.importorskip("boto3", reason="boto3 is not installed")
    from moto_s3 import MotoS3

    server = MotoS3().__enter__()
    env = {**server.environment, "AWS_CONFIG_FILE": os.devnull,
           "AWS_SHARED_CREDENTIALS_FILE": os.devnull}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    server.fill_bucket(next(iter(pc.values()))[0].parent, "pc/")
    try:
        yield "s3://bkt/pc"
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.__exit__()


@pytest.mark.parametrize("name", ["sharded_murmur", "gzip"])
def test_over_s3(pc: dict[str, Any], s3: str, name: str) -> None:
    remote_config.reset(environment.read_config(os.environ))
    path, truths = pc[name]
    same_as_local(f"{s3}/{name}", path, truths)
    same_as_local(f"precomputed://{s3}/{name}", path, truths)
