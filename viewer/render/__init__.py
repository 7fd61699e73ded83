"""Voxels to pixels, without Qt: what a slice view shows, computed with numpy.

- ``palette``: colormaps, lookup tables and the ``Palette`` of one contrast and voxel type;
- ``plane``: one plane as the screen lays it out (``render_plane`` -> ``Rendered``), with the
  looks of pixels that are not data (loading, absent, failed);
- ``segments``: a colour per segment id (``SegmentPalette``, ``render_segments``);
- ``blend``: layers composited over each other, one layer's render by its category;
- ``difference``: the pictures of the compare modes (A - B, the mismatch mask);
- ``levels``: histogram and value ranges for the contrast levels.

The ui wraps the ARGB arrays in QImages; nothing here imports Qt or ``viewer.ui`` (an
import-linter contract in pyproject.toml holds it), so all of it runs and is tested without a
window.  Layer: above ``viewer.core`` (planes, contrast), below ``viewer.ui``.
"""
