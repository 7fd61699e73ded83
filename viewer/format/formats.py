"""The built-in formats: importing this module registers each of them with
``viewer.format.registry`` (a new format adds its entry module here)."""

from viewer.format.webknossos import entry as _webknossos  # noqa: F401
from viewer.format.wkw import entry as _wkw  # noqa: F401
from viewer.format.remote import entry as _remote  # noqa: F401
