"""The zarr tests' helpers (``fixtures.py``, ``truth.py``) under names of their own,
``zarr_test_fixtures`` and ``zarr_test_truth`` (another test folder may have a ``fixtures``
module too), the conversion pair that the conversion and compare modules both read, and
zarr-python's codec pipeline encoding chunks in batches (the same bytes, fewer hand-offs to
its threads per chunk: a third of its time for arrays of many small chunks)."""

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from once import once_per_run

for _name, _file in (("zarr_test_truth", "truth.py"), ("zarr_test_fixtures", "fixtures.py")):
    if _name not in sys.modules:
        _spec = importlib.util.spec_from_file_location(_name, Path(__file__).with_name(_file))
        assert _spec is not None and _spec.loader is not None
        _module = importlib.util.module_from_spec(_spec)
        sys.modules[_name] = _module
        _spec.loader.exec_module(_module)


def _write_converted(root: Path) -> tuple[Path, Path]:
    fixtures = sys.modules["zarr_test_fixtures"]
    color = fixtures.sample((1, 90, 70, 40), "uint8", seed=7)
    seg = (fixtures.sample((1, 90, 70, 40), "uint32", seed=8) % 500).astype(np.uint32)
    src = Path(fixtures.write_webknossos_dataset(root / "wkw", {"color": ("wkw", color),
                                                                "segmentation": ("wkw", seg)},
                                                 downsample=True))
    dst = Path(fixtures.wk_dataset_to_zarr3(src, root / "zarr3", shard_len=64, chunk_len=32))
    return src, dst


@pytest.fixture(scope="session")
def converted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A WKW webKnossos dataset written by the ``webknossos`` package (two layers, mags 1, 2,
    4) and its zarr3 conversion (tensorstore, shards of 64^3 holding chunks of 32^3), written
    once for the run: the tests only read them (a test that changes one changes a copy)."""
    pytest.importorskip("tensorstore", reason="tensorstore (test extra) is not installed")
    pytest.importorskip("webknossos", reason="webknossos (test extra) is not installed")
    result: tuple[Path, Path] = once_per_run(tmp_path_factory, "zarr-converted",
                                             _write_converted)
    return result


#: Chunks zarr-python's codec pipeline encodes or decodes in one go (its default is one).
ZARR_PYTHON_BATCH = 64


@pytest.fixture(autouse=True)
def zarr_python_in_batches() -> Iterator[None]:
    """zarr-python (where installed) writes and reads with ``ZARR_PYTHON_BATCH`` chunks per
    batch during each test of this folder, and as before after it."""
    try:
        import zarr
    except ImportError:
        yield
        return
    with zarr.config.set({"codec_pipeline.batch_size": ZARR_PYTHON_BATCH}):
        yield
