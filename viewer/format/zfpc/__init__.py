"""zfpc: zfp streams of a 1-4-D array split along its uncorrelated dimensions, in one file
(seeds/002; FORMAT-NOTES).  ``ZfpcVolume`` opens one; ``entry`` registers the format."""

from viewer.format.zfpc.volume import ZfpcUnit, ZfpcVolume

__all__ = ["ZfpcVolume", "ZfpcUnit"]
