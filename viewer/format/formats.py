"""The built-in formats: importing this module registers each of them with
``viewer.format.registry`` (a new format adds its entry module here)."""

from viewer.format.n5 import entry as _n5  # noqa: F401
from viewer.format.precomputed import entry as _precomputed  # noqa: F401
from viewer.format.remote import entry as _remote  # noqa: F401
from viewer.format.vds import entry as _vds  # noqa: F401
from viewer.format.webknossos import entry as _webknossos  # noqa: F401
from viewer.format.wkw import entry as _wkw  # noqa: F401
from viewer.format.zarr import entry as _zarr  # noqa: F401
from viewer.format.zfpc import entry as _zfpc  # noqa: F401
