"""The window's state: one View, changed only through update(), which says once what changed (napari's model:
widgets write through update and redraw from `changed`, blocking their own echo)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import fields, replace
from typing import Any

from PySide6.QtCore import QObject, Signal

from sandbox.state.view import View

FIELDS = frozenset(f.name for f in fields(View))


class AppState(QObject):
    changed = Signal(object, object)  # (new View, old View), once per update that changed something

    def __init__(self, view: View, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._view = view
        self._held = 0  # inside held(): updates gather, one `changed` at the end
        self._held_from = view

    @property
    def view(self) -> View:
        return self._view

    def update(self, **changes: Any) -> bool:
        """Set the given fields; emit `changed` once if the View differs. Returns whether it did."""
        unknown = set(changes) - FIELDS
        if unknown:
            raise TypeError(f"View has no field(s) {', '.join(sorted(unknown))}")
        new = replace(self._view, **changes)
        if new == self._view:
            return False
        old, self._view = self._view, new
        if not self._held:
            self.changed.emit(new, old)
        return True

    @contextmanager
    def held(self) -> Iterator[None]:
        """Several updates as one: `changed` is emitted once at the end, from the View before the first (a model that
        loads sets its key and its own configuration together, so no request is made of the one without the other)."""
        if not self._held:
            self._held_from = self._view
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
            if not self._held and self._view != self._held_from:
                self.changed.emit(self._view, self._held_from)
