"""The window side of conversion QA: dataset B next to A, compare modes, the background
comparison with its overlay, list and summary.  ``QtMainWindow.add_compare()`` mounts it;
``controller`` says which part lives where."""
