"""Shared test set-up: GUI tests run offscreen, with no display."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("WKW_VIEWER_NO_SETTINGS", "1")  # tests never touch the user's settings
