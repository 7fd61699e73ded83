"""What the window remembers of each dataset between sessions: the cursor, zoom, active layer,
the element shown of each extra axis (time point), and per layer its contrast (levels, gamma,
invert, colormap, channel), visibility, opacity and locked mag.  Qt-free: a plain JSON-able dict
made from a ``ViewerState`` and applied back to one (the window keeps it in its settings,
``viewer.ui.memory``).

``snapshot`` and ``apply`` run on the GUI thread (they read and change the state).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from viewer.core.state import MAX_ZOOM, MIN_ZOOM, Contrast, ViewerState, known_colormap

#: Datasets remembered; the least recently opened is forgotten first.
REMEMBERED_DATASETS = 50
#: Bumped when the layout of a snapshot changes; other versions are ignored.
VERSION = 1


def snapshot(state: ViewerState) -> dict[str, Any]:
    """The state's view of its dataset as a JSON-able dict."""
    layers = {}
    for layer in state.layers:
        c = layer.contrast
        layers[layer.name] = {
            "visible": layer.visible, "opacity": layer.opacity,
            "mag_lock": list(layer.mag_lock) if layer.mag_lock is not None else None,
            "contrast": {"lo": c.lo, "hi": c.hi, "gamma": c.gamma, "invert": c.invert,
                         "colormap": c.colormap, "channel": c.channel},
        }
    return {"version": VERSION, "cursor": list(state.cursor), "zoom": state.zoom,
            "active_layer": state.active_layer, "layers": layers, "index": dict(state.index)}


def _number(value: Any, default: float) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return default
    return out if math.isfinite(out) else default


def _contrast(old: Contrast, saved: Mapping[str, Any]) -> Contrast:
    lo = _number(saved.get("lo"), old.lo)
    hi = _number(saved.get("hi"), old.hi)
    colormap = saved.get("colormap", old.colormap)
    channel = saved.get("channel", old.channel)
    if not hi > lo:
        lo, hi = old.lo, old.hi
    return replace(old, lo=lo, hi=hi,
                   gamma=max(_number(saved.get("gamma"), old.gamma), 1e-3),
                   invert=bool(saved.get("invert", old.invert)),
                   colormap=colormap if known_colormap(colormap) else old.colormap,
                   channel=channel if isinstance(channel, int) and channel >= 0 else old.channel)


def apply(state: ViewerState, saved: Mapping[str, Any], mags: Mapping[str, Any],
          position: bool = True, zoom: bool = True, channels: Mapping[str, int] | None = None
          ) -> bool:
    """Apply a ``snapshot`` to ``state`` (whose layers and bounds are already those of the
    dataset): layers that no longer exist, mags a layer no longer has, channels beyond a
    layer's and unknown colormaps are left as they are; the cursor is kept inside the bounds.
    ``mags``: each layer's mags; ``position``/``zoom``: False when the person asked for
    another one (``--pos``, ``--zoom``).  Returns whether anything was applied."""
    if not isinstance(saved, Mapping) or saved.get("version") != VERSION:
        return False
    layers = saved.get("layers")
    if isinstance(layers, Mapping):
        for name, found in layers.items():
            if not isinstance(found, Mapping) or name not in {la.name for la in state.layers}:
                continue
            old = state.layer(name)
            changes: dict[str, Any] = {}
            lock = found.get("mag_lock")
            if lock is None or (isinstance(lock, list) and tuple(lock) in
                                {tuple(m) for m in mags.get(name, ())}):
                changes["mag_lock"] = tuple(lock) if lock is not None else None
            if isinstance(found.get("contrast"), Mapping):
                contrast = _contrast(old.contrast, found["contrast"])
                if contrast.channel >= (channels or {}).get(name, 1 << 30):
                    contrast = replace(contrast, channel=old.contrast.channel)
                changes["contrast"] = contrast
            changes["visible"] = bool(found.get("visible", old.visible))
            changes["opacity"] = _number(found.get("opacity"), old.opacity)
            state.set_layer(name, **changes)
    index = saved.get("index")
    if isinstance(index, Mapping):
        for axis, value in index.items():
            if isinstance(axis, str) and isinstance(value, int) and not isinstance(value, bool):
                state.set_index(axis, value)
    active = saved.get("active_layer")
    if isinstance(active, str) and active in {la.name for la in state.layers}:
        state.set_active_layer(active)
    if zoom:
        z = _number(saved.get("zoom"), state.zoom)
        state.set_zoom(min(max(z, MIN_ZOOM), MAX_ZOOM))
    cursor = saved.get("cursor")
    if position and isinstance(cursor, list) and len(cursor) == 3 \
            and all(isinstance(v, int) for v in cursor):
        state.jump_to(state.clamp(cursor))
    return True


def remember(memory: Mapping[str, Any], key: str, view: dict[str, Any]) -> dict[str, Any]:
    """``memory`` (dataset key -> snapshot) with ``view`` as ``key``'s, most recent last,
    at most ``REMEMBERED_DATASETS`` entries."""
    out = {k: v for k, v in memory.items() if k != key}
    out[key] = view
    while len(out) > REMEMBERED_DATASETS:
        del out[next(iter(out))]
    return out
