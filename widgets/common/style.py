"""Style helpers. Re-applying an unchanged style sheet still re-polishes the widget and relays out
its window, which costs milliseconds per slider tick: apply only changes."""

from __future__ import annotations

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QWidget


def set_style(widget: QWidget, css: str) -> None:
    if widget.styleSheet() != css:
        widget.setStyleSheet(css)


def set_tip(widget: QWidget, tip: str) -> None:
    """setToolTip sends a ToolTipChange event even for the same text: sixty labels a slider tick."""
    if widget.toolTip() != tip:
        widget.setToolTip(tip)


def set_colour(widget: QWidget, colour: str) -> None:
    """The text's colour (CSS name or #rrggbb; "" for the parent's) through the palette: a style sheet re-polishes
    the widget at each change, a palette only repaints it (timing figures greyed and back at every slider step)."""
    if widget.property("text_colour") == colour:
        return
    widget.setProperty("text_colour", colour)
    if not colour:
        widget.setPalette(QPalette())  # nothing of its own: the parent's colours again
        return
    palette = widget.palette()
    palette.setColor(QPalette.ColorRole.WindowText, QColor(colour))
    widget.setPalette(palette)


def text_colour(widget: QWidget) -> str:
    """The colour set_colour gave the widget ("" for none)."""
    return widget.property("text_colour") or ""
