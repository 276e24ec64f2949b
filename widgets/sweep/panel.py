"""Sweep one knob: values, progress with time left, Cancel, the plots, the seeds' three lessons."""

from __future__ import annotations

from PySide6.QtCore import QSignalBlocker, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from core.study.lessons import LESSONS
from core.study.sweep import KNOB_DEFAULTS, SweepResult
from widgets.common.wheel import FocusCombo
from widgets.maps.hover_readout import HoverReadout
from widgets.sweep.plots import SweepPlots

MAX_NOTES = 5  # skipped or failed values listed under the caption; the rest are counted

class SweepPanel(QWidget):
    run_requested = Signal(str, str, bool)  # knob, values text, timed
    cancel_requested = Signal()
    lesson_requested = Signal(str, bool)  # lesson key, timed
    frontier_lesson_requested = Signal()  # "Which KV saving costs least": the Frontier tab runs it
    export_png_requested = Signal()
    export_csv_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.knob = FocusCombo()
        self.knob.addItems(list(KNOB_DEFAULTS))
        self.knob.setToolTip("The knob to vary; every other knob stays as the controls show it.")
        self.values = QLineEdit(KNOB_DEFAULTS["n_heads"])
        self.values.setToolTip("A list (1,2,4,8), a range (1..64 step 8), a doubling range (128..16384 log) or "
                               "N geometric points (128..16384 log 5). At most 64 points.")
        self.timed = QCheckBox("measure time")
        self.timed.setChecked(True)
        self.timed.setToolTip("Time every point on the device (slower); off: counts only, instantly.")
        self.run = QPushButton("Run sweep")
        self.run.setToolTip("Run the sweep on the compute worker (Ctrl+R)")
        self.cancel = QPushButton("Cancel")
        self.cancel.setEnabled(False)
        self.cancel.setToolTip("Stop now; finished points are kept and marked partial (Esc)")
        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        self.progress.hide()  # an idle bar reads as an empty text box
        self.eta = QLabel("")
        self.caption = QLabel("Pick a knob and values, or one of the seeds' lessons.")
        self.caption.setWordWrap(True)
        self.caption.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.caption.setStyleSheet("font-weight: bold;")
        self.notes = QLabel("")
        self.notes.setWordWrap(True)
        self.readout = HoverReadout("Hover a plot to read its point.")
        self.plots = SweepPlots()
        export_png = QPushButton("Export plots PNG…")
        export_csv = QPushButton("Export data CSV…")
        top = QHBoxLayout()
        self.values.setMinimumWidth(100)
        for w in (QLabel("Vary"), self.knob, self.values, self.run, self.cancel):
            top.addWidget(w)
        top.setStretchFactor(self.values, 1)
        lessons = QGridLayout()  # two buttons a row: four lessons fit a 1024 px window
        lessons.addWidget(QLabel("Lessons:"), 0, 0)
        self.lesson_buttons = {}
        for i, lesson in enumerate(LESSONS):
            b = QPushButton(lesson.title)
            b.setToolTip(lesson.tip)
            b.clicked.connect(lambda _c=False, k=lesson.key: self.lesson_requested.emit(k, self._lesson_timed(k)))
            self.lesson_buttons[lesson.key] = b
            lessons.addWidget(b, i // 2, 1 + i % 2)
        frontier = QPushButton("Which KV saving costs least")
        frontier.setToolTip("Open SmolLM2-135M and run its KV frontier: fewer KV heads, latent KV, sliding windows "
                            "(with and without sinks) and quantised KV, costed on its own weights (the Frontier tab; "
                            "minutes on a CPU the first time, at once after).")
        frontier.clicked.connect(self.frontier_lesson_requested.emit)
        self.lesson_buttons["frontier"] = frontier
        lessons.addWidget(frontier, len(LESSONS) // 2, 1 + len(LESSONS) % 2)
        lessons.setColumnStretch(3, 1)
        prog = QHBoxLayout()
        prog.addWidget(self.timed)
        prog.addWidget(self.progress, 1)
        prog.addWidget(export_png)
        prog.addWidget(export_csv)
        # The step of a timed point ("point 1 of 12: allocating the layer and its inputs (1/5)") and the time
        # left have a line of their own, wrapped: beside the buttons they would be cut at any window size.
        self.eta.setWordWrap(True)
        self.eta.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addLayout(lessons)
        lay.addLayout(prog)
        lay.addWidget(self.eta)
        lay.addWidget(self.caption)
        lay.addWidget(self.notes)
        # The plots keep a readable size (widgets/sweep/plots.py MIN_PLOT_W, MIN_PLOT_H); a smaller pane scrolls
        # them rather than squeezing axes and titles into each other.
        self.plots_scroll = QScrollArea()
        self.plots_scroll.setWidgetResizable(True)
        self.plots_scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        self.plots_scroll.setWidget(self.plots)
        lay.addWidget(self.plots_scroll, 1)
        lay.addWidget(self.readout)
        self.knob.currentTextChanged.connect(lambda k: self.values.setText(KNOB_DEFAULTS[k]))
        self.run.clicked.connect(lambda: self.run_requested.emit(self.knob.currentText(), self.values.text(),
                                                                 self.timed.isChecked()))
        self.cancel.clicked.connect(self.cancel_requested)
        export_png.clicked.connect(self.export_png_requested)
        export_csv.clicked.connect(self.export_csv_requested)
        self.plots.hovered.connect(self.readout.setText)
        self.readout.watch(self.plots)
        self.result: SweepResult | None = None
        self._step, self._left = "", ""  # what the timed point is doing, and the time left
        self._notes: list[str] = []  # each skipped or failed value, as it came

    def _lesson_timed(self, key: str) -> bool:
        """A timed lesson measures only while "measure time" is ticked (unticked: its counts alone)."""
        return next(x for x in LESSONS if x.key == key).timed and self.timed.isChecked()

    def show_knob(self, knob: str, values_text: str) -> None:
        """A lesson's knob and values shown in the Vary row, as if typed."""
        with QSignalBlocker(self.knob):
            self.knob.setCurrentText(knob)
        self.values.setText(values_text)

    def set_running(self, total: int, label: str) -> None:
        self.plots.clear_all("running…")
        self.progress.show()
        self.run.setEnabled(False)
        for b in self.lesson_buttons.values():
            b.setEnabled(False)
        self.cancel.setEnabled(True)
        self.progress.setRange(0, total)
        self.progress.setValue(0)
        self.progress.setFormat("%v of %m points")  # the sweep's name is in the caption: the bar stays one line
        self.progress.setToolTip(label)
        self.eta.setText("estimating time left…")
        self._step, self._left, self._notes = "", "", []
        self.notes.setText("")

    def set_progress(self, done: int, total: int, eta_s: float, note: str) -> None:
        self.progress.setValue(done)
        self._left = f"about {eta_s:.0f} s left" if done < total and eta_s > 0 else ""
        self._show_eta()
        if note:
            self._notes.append(note)
            shown = self._notes[:MAX_NOTES]  # a sweep of many invalid values must not push the plots off the window
            more = len(self._notes) - len(shown)
            self.notes.setText("\n".join(shown) + (f"\n… and {more} more (Export data CSV lists every value and "
                                                   "why)" if more else ""))

    def _show_eta(self) -> None:
        """The step of the point being timed and the time left, on one line, neither hiding the other."""
        self.eta.setText(" · ".join(t for t in (self._step, self._left) if t))

    def set_step(self, text: str) -> None:
        """What the point being timed is doing now (a V3-width MLA point takes a minute on a CPU)."""
        if self.cancel.isEnabled():
            self._step = text
            self._show_eta()
            self.eta.setToolTip(text)

    def show_error(self, message: str) -> None:
        self.caption.setText(message)
        self.caption.setStyleSheet("font-weight: bold; color: #dc2626;")

    def show_result(self, result: SweepResult, knob: str, caption: str, marks: list[tuple[int, str]],
                    plan: tuple[str, list[float | None], float] | None = None) -> None:
        self.result = result
        self.run.setEnabled(True)
        for b in self.lesson_buttons.values():
            b.setEnabled(True)
        self.cancel.setEnabled(False)
        self.eta.setText("")
        partial = f" Partial: {result.stopped_reason}." if result.partial else ""
        self.caption.setText(caption + partial)
        self.caption.setStyleSheet("font-weight: bold;" + (" color: #b45309;" if result.partial else ""))
        self.plots.show_result(result, knob, marks, plan)
