"""Benchmarks, one script per capability: ``python -m benchmarks.NAME [--json]``."""
