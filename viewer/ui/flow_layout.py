"""A layout that places its widgets left to right at their preferred widths and starts a new
line when the next one does not fit: the status bar's sections keep their whole text at any
window width, taking a second (or third) line on a narrow window instead of being cut off.

Its owner widget's minimum height is kept at the lines' height (``setGeometry``), which is
what tells the status bar (and through it the main window) how tall it must be.
GUI thread only.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QLayout, QLayoutItem, QWidget


class QtFlowLayout(QLayout):
    """Items in reading order, each at its size hint, wrapped into as many lines as needed;
    an item wider than the whole line gets the line to itself (and is shrunk to it)."""

    def __init__(self, parent: QWidget | None = None, spacing: int = 0,
                 line_spacing: int = 0) -> None:
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._h_space = spacing
        self._v_space = line_spacing
        #: (width, height) last laid out: the height kept while the width stays.
        self._sticky = (-1, 0)
        self.setContentsMargins(0, 0, 0, 0)

    # -- QLayout -----------------------------------------------------------------------------
    def addItem(self, item: QLayoutItem) -> None:
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:
        # The owner's minimum height carries the height instead (``setGeometry``): a status
        # bar asks heightForWidth with widths it never gives, and its height then flip-flops.
        return False

    def heightForWidth(self, width: int) -> int:
        return self._arrange(QRect(0, 0, width, 0), place=False)

    def setGeometry(self, rect: QRect) -> None:
        super().setGeometry(rect)
        needed = self._arrange(rect, place=True)
        # Texts that change all the time (the value under the mouse) would make the lines,
        # and the whole window below the views, jump: at one width the height only grows.
        if rect.width() == self._sticky[0]:
            needed = max(needed, self._sticky[1])
        self._sticky = (rect.width(), needed)
        # Not every container asks heightForWidth (QMainWindow gives its status bar the
        # height of its size hint): the widget's minimum height carries the lines' height.
        owner = self.parentWidget()
        if owner is not None and owner.minimumHeight() != needed:
            owner.setMinimumHeight(needed)

    def sizeHint(self) -> QSize:
        """One line holding everything."""
        shown = [i for i in self._items if not i.isEmpty()]
        width = sum(i.sizeHint().width() for i in shown) + self._h_space * max(len(shown) - 1, 0)
        height = max((i.sizeHint().height() for i in shown), default=0)
        m = self.contentsMargins()
        return QSize(width + m.left() + m.right(), height + m.top() + m.bottom())

    def minimumSize(self) -> QSize:
        """As narrow as the widest item (everything else wraps)."""
        width = max((i.minimumSize().width() for i in self._items if not i.isEmpty()), default=0)
        m = self.contentsMargins()
        return QSize(width + m.left() + m.right(), m.top() + m.bottom())

    # -- layout ------------------------------------------------------------------------------
    def lines(self, width: int) -> list[list[QLayoutItem]]:
        """The visible items, line by line, for a layout ``width`` pixels wide."""
        m = self.contentsMargins()
        room = width - m.left() - m.right()
        out: list[list[QLayoutItem]] = []
        used = 0
        for item in self._items:
            if item.isEmpty():
                continue
            w = item.sizeHint().width()
            if out and out[-1] and used + self._h_space + w <= room:
                out[-1].append(item)
                used += self._h_space + w
            else:
                out.append([item])
                used = w
        return out

    def _arrange(self, rect: QRect, place: bool) -> int:
        m = self.contentsMargins()
        y = rect.y() + m.top()
        right = rect.right() - m.right()
        for line in self.lines(rect.width()):
            height = max(i.sizeHint().height() for i in line)
            x = rect.x() + m.left()
            for item in line:
                w = min(item.sizeHint().width(), right - x + 1)
                if place:
                    item.setGeometry(QRect(QPoint(x, y), QSize(w, height)))
                x += w + self._h_space
            y += height + self._v_space
        if self._items:
            y -= self._v_space
        return y - rect.y() + m.bottom()
