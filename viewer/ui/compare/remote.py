"""``CompareProcess`` (a comparison in a child process) moved to the Qt-free
``viewer.core.compare.process``, on the shared runner ``viewer.core.jobs``; this name stays
for the callers of the window's compare mode."""

from viewer.core.compare.process import CompareProcess, CompareWork

__all__ = ["CompareProcess", "CompareWork"]
