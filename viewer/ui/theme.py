"""The dark theme's checkboxes: a light outline on the dark panels and an accent fill with a
white check mark when checked (Qt's own indicator, dark grey on dark grey, all but vanished).

``checkbox_style()`` is style sheet text the window appends to its own; the check mark is a
package resource (``viewer/resources/check.png``, drawn by ``packaging/make_icon.py``).
"""

from __future__ import annotations

from importlib import resources

#: Outline, fill and accent of an indicator (contrast >= 3:1 against the panels' #232428).
OUTLINE = "#9da1ad"
FILL = "#16171a"
ACCENT = "#4f7fd9"


def _check_image() -> str | None:
    found = resources.files("viewer.resources").joinpath("check.png")
    path = str(found)
    return path.replace("\\", "/") if found.is_file() else None


def checkbox_style() -> str:
    check = _check_image()
    image = f'image: url("{check}");' if check is not None else ""
    return f"""
QCheckBox::indicator, QGroupBox::indicator {{ width: 13px; height: 13px;
  border: 1px solid {OUTLINE}; border-radius: 3px; background: {FILL}; }}
QCheckBox::indicator:hover, QGroupBox::indicator:hover {{ border-color: #d0d3dc; }}
QCheckBox::indicator:checked, QGroupBox::indicator:checked {{ background: {ACCENT};
  border-color: #9dbcf5; {image} }}
QCheckBox::indicator:indeterminate {{ background: #3a4f78; }}
QCheckBox::indicator:disabled {{ border-color: #4a4c54; background: #1e1f23; }}
QCheckBox::indicator:checked:disabled {{ background: #3a3d46; }}
QCheckBox:disabled {{ color: #6f727b; }}
"""
