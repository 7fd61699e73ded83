"""The window side of conversion QA: dataset B next to A, compare modes, the background
comparison with its overlay, list and summary.  ``install_compare(window)`` mounts it."""
