"""The Heatmaps tab's layout: the input row, what is shown, the maps (one side, or the trained heads
beside the changed ones) and, below a splitter the user can drag, what a change costs, the timing
and the pin row. Layout only: the window hands in the widgets it made."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QResizeEvent, QShowEvent
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from widgets.common.steady import LayoutFirewall
from widgets.maps.heatmap_view import HeatmapMosaic

RANDOM_NOTE = ("Random weights: the shapes, masks and costs are exact; the patterns are seeded noise, not learned "
               "(heads that share a KV head need not look alike). Learned heads: {links}.")


class WeightsNote(QLabel):
    """One line in random-weight mode: what random weights can and cannot show, and the real models."""

    model_requested = Signal(str)  # a shipped model's key

    def __init__(self, models: list[tuple[str, str]], parent: QWidget | None = None) -> None:
        """models: (key, label) of the shipped models that can be opened."""
        links = ", ".join(f"<a href='{key}'>{label}</a>" for key, label in models) or "none installed"
        super().__init__(RANDOM_NOTE.format(links=links), parent)
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setStyleSheet("color: #6b7280;")
        self.setToolTip("Random weights show what the architecture fixes: which tokens each head may see and "
                        "what it costs. Open a real model to see what trained heads do.")
        self.linkActivated.connect(self.model_requested)


def lower_cap(total: int) -> int:
    """The most height the figures below the maps get of the maps' splitter: 35%, 30% under 600 px (the maps had
    200 px at 1024x700 with 45%); the figures scroll for the rest."""
    return int(total * (0.35 if total >= 600 else 0.30))


class HeatmapsTab(QWidget):
    def __init__(self, text: QLineEdit, probe: QWidget, info: QLabel, note: WeightsNote, mosaic: HeatmapMosaic,
                 original: HeatmapMosaic, details: list[QWidget], parent: QWidget | None = None,
                 pin: QWidget | None = None) -> None:
        """pin: the Pin button, in the top row so that it is in view at every window size and model."""
        super().__init__(parent)
        row = QHBoxLayout()
        row.addWidget(QLabel("Text"))
        row.addWidget(text, 1)
        row.addWidget(QLabel("Heads read"))
        row.addWidget(probe)
        if pin is not None:
            row.addWidget(pin)
        top = QWidget()
        tv = QVBoxLayout(top)
        tv.setContentsMargins(0, 0, 0, 0)
        # The colormap row, the badge legend and the hover readout serve both sides, so they stand
        # outside the two mosaics, which then have the same make-up and split the width evenly.
        tv.addWidget(mosaic.controls)
        self.mosaic = mosaic
        self.maps = QSplitter(Qt.Orientation.Horizontal)
        self.maps.addWidget(original)  # a real model's trained heads, shown when changed
        self.maps.addWidget(mosaic)
        self.maps.setChildrenCollapsible(False)
        tv.addWidget(self.maps, 1)
        tv.addWidget(mosaic.roles_legend)
        tv.addWidget(mosaic.readout)
        lower = QWidget()
        lv = QVBoxLayout(lower)
        lv.setContentsMargins(0, 0, 0, 0)
        for w in details:
            lv.addWidget(w)
        lv.addStretch(1)
        self.lower = QScrollArea()  # the figures scroll when the user gives the maps more room
        figures = LayoutFirewall(lower)  # "measuring…" repaints its row, not every figure
        figures.hints_changed.connect(self.fit_later)  # a timing, an error, a model's fidelity: their height
        self.lower.setWidget(figures)
        self.lower.setWidgetResizable(True)
        self.lower.setFrameShape(QFrame.Shape.NoFrame)
        self.lower.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.split = QSplitter(Qt.Orientation.Vertical)
        self.split.addWidget(top)
        self.split.addWidget(self.lower)
        self.split.setChildrenCollapsible(False)
        self.split.setStretchFactor(0, 1)
        self.split.setStretchFactor(1, 0)
        self._user_sized = False  # once the user drags the splitter, their heights stay
        self.split.splitterMoved.connect(self._on_split_splitter_moved)
        self.fit_timer = QTimer(self)  # fit_later(): a timer's turn, not a call posted into the turn that asked
        self.fit_timer.setSingleShot(True)
        self.fit_timer.setInterval(0)
        self.fit_timer.timeout.connect(self.fit_lower)
        lay = QVBoxLayout(self)
        lay.addLayout(row)
        lay.addWidget(LayoutFirewall(info, wraps=True))  # the view's line, new at each result: no relayout of the tab
        lay.addWidget(note)
        lay.addWidget(self.split, 1)

    def _on_split_splitter_moved(self, *_: object) -> None:
        self._user_sized = True

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 (Qt's name)
        super().showEvent(event)
        if self.mosaic.auto_fit and self.mosaic.layout_ is not None:
            self.mosaic.on_fit()  # maps laid out anew behind another tab were not fitted: a hidden view has no size

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt's name)
        super().resizeEvent(event)
        self.fit_lower()

    def fit_later(self) -> None:
        """fit_lower in a turn of its own: its 3-4 ms of heightForWidth, posted into a timing result's turn, made that
        turn's slot, layout and paint one 13-23 ms gap. Called when the figures' hints change (the firewall has seen
        the layouts below it run, so their height is known then: a fit at the timing's slot read the height the
        figures had before, and left the Pin row under a scroll bar) and when the window has its size."""
        self.fit_timer.start()

    def fit_lower(self, force: bool = False) -> None:
        """Give the figures below the maps the height they need, but never more than lower_cap of the tab, unless the
        user has dragged the splitter themselves."""
        if self._user_sized and not force:
            return
        total = sum(self.split.sizes())
        content = self.lower.widget()
        width = self.lower.viewport().width()
        need = (content.heightForWidth(width) if content.hasHeightForWidth() else content.sizeHint().height()) + 10
        lower = min(need, lower_cap(total))
        self.split.setSizes([max(1, total - lower), lower])
