"""OpenVDS: a ``.vds`` file (HueDataStore container) of bricks at several LODs (seeds/003;
FORMAT-NOTES).  ``VdsFile`` / ``VdsVolume`` open one; ``entry`` registers the format."""

from viewer.format.vds.volume import VdsFile, VdsUnit, VdsVolume

__all__ = ["VdsFile", "VdsVolume", "VdsUnit"]
