"""Between the window's voxels and the inspected mag's: the window may show one mag of a layer
while the inspector looks into another."""

from __future__ import annotations

from dataclasses import dataclass

from viewer.ui.inspector.loaded_file import Vec3


@dataclass(frozen=True)
class MagScale:
    """Window voxels per inspected voxel along x, y, z (``factors``; 1, 1, 1 when the
    inspector looks at the window's own mag)."""

    factors: tuple[float, float, float] = (1.0, 1.0, 1.0)

    @classmethod
    def between(cls, window_mag: Vec3, inspected_mag: Vec3) -> MagScale:
        return cls((inspected_mag[0] / window_mag[0], inspected_mag[1] / window_mag[1],
                    inspected_mag[2] / window_mag[2]))

    def to_inspected(self, window_pos: Vec3) -> Vec3:
        """A window voxel as a voxel of the inspected mag."""
        s = self.factors
        return (int(window_pos[0] // s[0]), int(window_pos[1] // s[1]),
                int(window_pos[2] // s[2]))

    def to_window(self, pos: Vec3) -> Vec3:
        """An inspected mag voxel as the window voxel at its start (its centre when it covers
        several window voxels)."""
        s = self.factors
        return (int(pos[0] * s[0] + max(s[0] - 1, 0) // 2),
                int(pos[1] * s[1] + max(s[1] - 1, 0) // 2),
                int(pos[2] * s[2] + max(s[2] - 1, 0) // 2))
