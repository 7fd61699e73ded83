"""The zarr tests' helpers (``fixtures.py``, ``truth.py``) under names of their own,
``zarr_test_fixtures`` and ``zarr_test_truth`` (another test folder may have a ``fixtures``
module too)."""

import importlib.util
import sys
from pathlib import Path

for _name, _file in (("zarr_test_truth", "truth.py"), ("zarr_test_fixtures", "fixtures.py")):
    if _name not in sys.modules:
        _spec = importlib.util.spec_from_file_location(_name, Path(__file__).with_name(_file))
        assert _spec is not None and _spec.loader is not None
        _module = importlib.util.module_from_spec(_spec)
        sys.modules[_name] = _module
        _spec.loader.exec_module(_module)
