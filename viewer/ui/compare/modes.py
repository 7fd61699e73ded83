"""The compare modes: what the views show while a dataset B is open, their names and keys.

- ``A_ONLY``: the window as usual (the outlines of mismatching blocks stay);
- ``SIDE``: every quadrant split in two, A's view on the left, B's on the right;
- ``FLICKER``: the views show A or B; a key (B) toggles;
- ``SWIPE``: each view shows A left and B right of a draggable divider;
- ``DIFFERENCE``: ``A - B`` through a diverging colormap with symmetric levels;
- ``MASK``: A dimmed, with ``|A - B| > tolerance`` in yellow.
"""

from __future__ import annotations

A_ONLY, SIDE, FLICKER, SWIPE, DIFFERENCE, MASK = (
    "a", "side", "flicker", "swipe", "difference", "mask")
MODES = (A_ONLY, SIDE, FLICKER, SWIPE, DIFFERENCE, MASK)
MODE_NAMES = {A_ONLY: "A only", SIDE: "Side by side", FLICKER: "Flicker A/B", SWIPE: "Swipe",
              DIFFERENCE: "Difference A\u2212B", MASK: "Mismatch mask"}
#: Keys of the modes (in the Compare menu, on the panel's buttons and in the docs).
MODE_KEYS = {A_ONLY: "Alt+1", SIDE: "Alt+2", FLICKER: "Alt+3", SWIPE: "Alt+4",
             DIFFERENCE: "Alt+5", MASK: "Alt+6"}
#: The modes whose picture covers A's views (``A_ONLY`` and ``SIDE`` show A's own image).
PICTURE_MODES = (FLICKER, SWIPE, DIFFERENCE, MASK)

__all__ = ["A_ONLY", "DIFFERENCE", "FLICKER", "MASK", "MODES", "MODE_KEYS", "MODE_NAMES",
           "PICTURE_MODES", "SIDE", "SWIPE"]
