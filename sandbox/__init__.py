"""The application: entry point, CLI, main window and the compute runner.

Qt's own event loop instead of GLib's (QT_NO_GLIB=1, read when the QApplication is made; every entry point imports
this package first). Under GLib, Qt runs its timers at GLib's idle priority once they have fired, behind any posted
event: a heatmap's result slot, the scene's repaint it posts and the layout requests after it ran back to back while
the event loop's timers waited (five chained 2 ms events: the longest gap of a 1 ms timer 4-6 ms with GLib's loop,
2.2 ms with Qt's). The drag of bench/live_latency.py costs the window 6.1-6.4 ms of CPU a step instead of 7.6-7.8
(paired runs, 2026-12-03). QT_NO_GLIB set empty (`QT_NO_GLIB= make run`) brings GLib's loop back: Qt reads any
other value, "0" too, as no GLib."""

import os

os.environ.setdefault("QT_NO_GLIB", "1")
