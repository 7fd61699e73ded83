"""Shared test set-up: GUI tests run offscreen, with no display."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("WKW_VIEWER_NO_SETTINGS", "1")  # tests never touch the user's settings
# The test-only toy format (one .npy file per chunk) is registered in this process and in every
# child process the tests start (the registry imports the modules this variable names).
os.environ.setdefault("WKW_VIEWER_FORMAT_PLUGINS", "toyformat")
_root = os.path.dirname(os.path.abspath(__file__))  # tests/: where toyformat.py lives
if _root not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (_root, os.environ.get("PYTHONPATH", "")) if p)
import toyformat  # noqa: E402,F401 - registers the toy format in this process
