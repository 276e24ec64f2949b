"""Let the window's own shortcuts through a text field that would take them: QLineEdit binds Ctrl+E to "end of
line" on X11, so File > Export (Ctrl+E) did nothing while the Text box had the cursor."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QKeyEvent, QKeySequence


class ShortcutPass(QObject):
    """Installed on a widget: the key sequences given are never overridden by it (the window's actions fire)."""

    def __init__(self, sequences: list[QKeySequence], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.sequences = [s for s in sequences if not s.isEmpty()]

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if event.type() == QEvent.Type.ShortcutOverride and isinstance(event, QKeyEvent):
            pressed = QKeySequence(event.keyCombination())
            if any(pressed.matches(s) == QKeySequence.SequenceMatch.ExactMatch for s in self.sequences):
                event.ignore()  # not the field's: the shortcut map gives it to the window's action
                return True
        return False
