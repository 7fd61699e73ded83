"""What an inspector tab may ask of whoever holds it: the one service the tabs share.

``QtInspectorPanel`` implements it (and turns it into the cursor move the window makes); a
test or another host may implement it alone.  A typed ``Protocol``: a tab never sees the
panel's or the window's other parts."""

from __future__ import annotations

from typing import Protocol


class InspectorHost(Protocol):
    """The services a tab calls."""

    def go_to(self, path: str, chunk: int | None) -> None:
        """Move the cursor to chunk ``chunk`` of the unit at ``path`` (the unit's centre when
        ``chunk`` is None), as when the user picks it in a tab."""
