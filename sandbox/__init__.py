"""The application: entry point, CLI, main window and the compute runner.

Qt's own event loop instead of GLib's (QT_NO_GLIB=1, read when the QApplication is made; every entry point imports
this package first). Under GLib, Qt runs its timers at GLib's idle priority once they have fired, behind any posted
event: a heatmap's result slot, the scene's repaint it posts and the layout requests after it ran back to back while
the event loop's timers waited, so a 1 ms heartbeat stalled two to three times longer under GLib's loop
(bench/live_latency.py's drag measures it). QT_NO_GLIB set empty (`QT_NO_GLIB= make run`) brings GLib's loop back:
Qt reads any other value, "0" too, as no GLib."""

import os

os.environ.setdefault("QT_NO_GLIB", "1")
