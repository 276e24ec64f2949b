"""The window's menus and their shortcuts (README: Shortcuts)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QAbstractSpinBox, QApplication, QComboBox, QLineEdit

from widgets.common.shortcut_pass import ShortcutPass

if TYPE_CHECKING:
    from sandbox.window.main_window import MainWindow


# The tabs' tooltips (by index; the View menu's Ctrl+1-8 shows each tab).
TAB_TIPS = {
    3: "A real model's every layer x every head; click a tile to open that head",
    5: "What each way of shrinking a real model's KV cache costs it, on its own weights",
    6: "Will the model fit on these GPUs, and how fast can it decode: memory plan and roofline",
    7: "One layer's attention over thousands of tokens, zoomable to single tokens, and a decode run that grows its cache",
}


def cancel_shown(w: MainWindow) -> None:
    """Esc: stop the job of the tab in view. Esc also leaves a spin box, a text field or a popup anywhere in the
    window: pressed there it is that editor's, and a sweep running in its own tab must not stop for it (the
    Cancel button is beside the progress)."""
    if isinstance(QApplication.focusWidget(), (QLineEdit, QAbstractSpinBox, QComboBox)):
        return
    shown = w.tabs.currentWidget()
    if shown is w.sweeps.panel:
        w.sweeps.cancel()
    elif shown is w.frontier.panel:
        w.frontier.cancel()
    elif shown is w.long.panel:
        w.long.cancel()


def build_menus(w: MainWindow) -> tuple[QAction, QAction]:
    """File, Compare and View; returns the export and pin actions (tests and the soak trigger them)."""
    file_menu = w.menuBar().addMenu("&File")
    export_action = QAction("&Export heatmaps…", w, shortcut=QKeySequence("Ctrl+E"))
    export_action.setToolTip("PNG, SVG, .npy or .csv, with a JSON manifest beside it")
    export_action.triggered.connect(lambda: w.open_export_dialog())
    quit_action = QAction("&Quit", w, shortcut=QKeySequence("Ctrl+Q"))
    quit_action.triggered.connect(w.close)
    open_ws = QAction("&Open workspace…", w, shortcut=QKeySequence("Ctrl+O"))
    open_ws.triggered.connect(lambda: w.pins.open())
    save_ws = QAction("&Save workspace", w, shortcut=QKeySequence("Ctrl+S"))
    save_ws.triggered.connect(lambda: w.pins.save())
    save_as = QAction("Save workspace &as…", w, shortcut=QKeySequence("Ctrl+Shift+S"))
    save_as.triggered.connect(lambda: w.save_workspace_as())
    file_menu.addAction(export_action)
    file_menu.addSeparator()
    file_menu.addActions([open_ws, save_ws, save_as])
    file_menu.addSeparator()
    file_menu.addAction(quit_action)
    pin_menu = w.menuBar().addMenu("&Compare")
    pin_action = QAction("&Pin this configuration", w, shortcut=QKeySequence("Ctrl+P"))
    pin_action.triggered.connect(w.pins.pin_current)
    run_sweep = QAction("&Run sweep", w, shortcut=QKeySequence("Ctrl+R"))
    run_sweep.triggered.connect(lambda: (w.tabs.setCurrentWidget(w.sweeps.panel), w.sweeps.panel.run.click()))
    cancel_sweep = QAction("&Cancel the shown tab's sweep, frontier or long map", w, shortcut=QKeySequence("Esc"))
    cancel_sweep.setToolTip("Esc stops what runs in the tab in view; a job in another tab runs on")
    cancel_sweep.triggered.connect(lambda: cancel_shown(w))
    run_frontier = QAction("Run the KV &frontier", w, shortcut=QKeySequence("Ctrl+Shift+R"))
    run_frontier.triggered.connect(w.frontier.run_from_menu)
    pin_menu.addActions([pin_action, run_sweep, cancel_sweep, run_frontier])
    view = w.menuBar().addMenu("&View")
    reset = QAction("&Reset heatmap zoom", w, shortcut=QKeySequence("Ctrl+0"))
    reset.triggered.connect(w.reset_zoom)
    focus_text = QAction("Edit &text", w, shortcut=QKeySequence("Ctrl+L"))
    focus_text.triggered.connect(lambda: (w.text.setFocus(), w.text.selectAll()))
    view.addAction(reset)
    view.addAction(focus_text)
    measure = QAction("&Measure now", w, shortcut=QKeySequence("Ctrl+M"))
    measure.triggered.connect(lambda: w.request(force_timing=True))
    view.addAction(measure)
    probe = QAction("Toggle the &induction probe", w, shortcut=QKeySequence("Ctrl+I"))
    probe.triggered.connect(w.roles.toggle_probe)
    view.addAction(probe)
    for i, name in enumerate(("Heatmaps", "Compare", "Sweep", "Layers", "Roles", "Frontier", "Plan", "Long")):
        tab = QAction(f"Show {name}", w, shortcut=QKeySequence(f"Ctrl+{i + 1}"))
        tab.triggered.connect(lambda _c=False, i=i: w.tabs.setCurrentIndex(i))
        view.addAction(tab)
    # The window's shortcuts reach their actions from the Text field too (it would take Ctrl+E as "end of line").
    passing = ShortcutPass([a.shortcut() for a in w.findChildren(QAction)], w.text)
    w.text.installEventFilter(passing)
    return export_action, pin_action
