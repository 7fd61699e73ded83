"""Indices of the inspector panel's tabs whose plots are built or refreshed only when shown."""

SIZES_TAB, LAYOUT_TAB, MAP_TAB = 3, 4, 6
