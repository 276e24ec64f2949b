"""A window kept on its screen."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget


def fit_to_screen(window: QWidget) -> None:
    """Never open larger than the screen, nor partly off it (a 1024x700 screen, a saved geometry from a
    bigger one)."""
    screen = window.screen().availableGeometry() if window.screen() is not None else None
    if screen is None or screen.width() < 100:
        return
    w, h = min(window.width(), screen.width()), min(window.height(), screen.height())
    if (w, h) != (window.width(), window.height()):
        window.resize(w, h)
    x = min(max(window.x(), screen.x()), screen.x() + max(0, screen.width() - window.width()))
    y = min(max(window.y(), screen.y()), screen.y() + max(0, screen.height() - window.height()))
    if (x, y) != (window.x(), window.y()):
        window.move(x, y)
