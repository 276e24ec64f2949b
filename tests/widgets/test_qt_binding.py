"""Guards against Qt-binding releases that would crash a long session."""

import sys

from PySide6.QtCore import QObject, Signal


class _Emitter(QObject):
    changed = Signal(int)


def test_signal_emit_keeps_reference_counts():
    # PySide6 6.12.0 drops a reference to True on every emit; after enough slider ticks the
    # interpreter aborts with "bool_dealloc". pyproject.toml excludes it.
    e = _Emitter()
    e.changed.connect(lambda v: None)
    before = sys.getrefcount(True)
    for i in range(200):
        e.changed.emit(i)
    assert sys.getrefcount(True) - before in range(-5, 6)
