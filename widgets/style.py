"""Style helpers. Re-applying an unchanged style sheet still re-polishes the widget and relays out
its window, which costs milliseconds per slider tick: apply only changes."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget


def set_style(widget: QWidget, css: str) -> None:
    if widget.styleSheet() != css:
        widget.setStyleSheet(css)


def set_tip(widget: QWidget, tip: str) -> None:
    """setToolTip sends a ToolTipChange event even for the same text: sixty labels a slider tick."""
    if widget.toolTip() != tip:
        widget.setToolTip(tip)
