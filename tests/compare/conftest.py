"""Fixtures of the comparison tests (helpers live in compare_fixtures)."""

from compare_fixtures import make  # noqa: F401  (a fixture, found by name)
