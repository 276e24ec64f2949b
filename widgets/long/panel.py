"""The Long tab: a layer's attention over thousands of tokens (the overview, its zoom, the per-head
figures) and a decode run that grows its cache. Controls and views only: the window (sandbox/tabs/long.py) builds
the jobs and runs them on the compute worker."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from core.arch.formats import KV_FORMATS
from core.long.budget import DEFAULT_BAND, MAX_TOKENS
from widgets.common.elided_combo import ElidedCombo
from widgets.common.steady import keep_room, reserve_lines
from widgets.common.wheel import FocusCombo, FocusSpin
from widgets.long.decode_view import DecodeView
from widgets.long.stats import LongStatsTable
from widgets.long.view import LongMapView

PROMPTS = ("the Heatmaps tab's text", "the long map's text (its first Tokens tokens)")
TEXT_SOURCES = ("the shipped long text (Alice, chapters I-IV)", "the Heatmaps tab's text", "a text file…")
PIXELS = (256, 512, 1024, 2048)


class LongPanel(QWidget):
    compute_requested = Signal()
    cancel_requested = Signal()
    decode_requested = Signal()
    text_file_requested = Signal()
    export_map_requested = Signal()
    export_decode_requested = Signal()
    layers_requested = Signal()  # every layer's figures, for the Roles tab
    settings_changed = Signal()  # tokens, pixels, source...: the estimate follows
    shown = Signal()  # the tab came to the front

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.source = QLabel("")
        self.source.setWordWrap(True)
        reserve_lines(self.source, 2)
        self.stale = QLabel("")  # what is on screen, when the settings above no longer describe it
        self.stale.setWordWrap(True)
        self.stale.setStyleSheet("color: #b45309;")
        keep_room(self.stale)
        self.stale.hide()
        self.tokens = FocusSpin()
        self.tokens.setRange(16, MAX_TOKENS)
        self.tokens.setValue(4096)
        self.tokens.setSingleStep(1024)
        self.tokens.setGroupSeparatorShown(True)
        self.tokens.setToolTip(f"Tokens of input, up to {MAX_TOKENS:,} (a real model: at most its own context, "
                               "SmolLM2 8,192; random weights: seeded inputs of this many positions)")
        self.text_source = ElidedCombo(chars=12)
        self.text_source.addItems(list(TEXT_SOURCES))
        self.text_source.setToolTip("What a real model reads: its first 'tokens' tokens (random weights read seeded "
                                    "inputs)")
        self.text_source.activated.connect(self._on_text_source)
        self.pool = FocusCombo()
        self.pool.addItems(["max", "mean"])
        self.pool.setToolTip("Each cell of the overview shows the max (a one-token sink column stays visible at any "
                             "size) or the mean of the probabilities in its block of tokens")
        self.pixels = FocusCombo()
        self.pixels.addItems([str(p) for p in PIXELS])
        self.pixels.setCurrentText("512")
        self.pixels.setToolTip("Cells a side of the overview: the block is tokens / cells tokens wide")
        self.band = FocusSpin()
        self.band.setRange(1, MAX_TOKENS)
        self.band.setValue(DEFAULT_BAND)
        self.band.setGroupSeparatorShown(True)
        self.band.setToolTip("W of the band a global layer's figures count (a local layer counts its own window): "
                             "'band' is the last W keys, 'beyond' what lies further back")
        for w in (self.tokens, self.band):
            w.valueChanged.connect(lambda _v: self.settings_changed.emit())
        for w in (self.pool, self.pixels):
            w.currentTextChanged.connect(lambda _t: self.settings_changed.emit())
        self.text_source.currentIndexChanged.connect(lambda _i: self.settings_changed.emit())
        self.compute = QPushButton("Compute (Ctrl+Enter)")
        self.compute.setToolTip("Compute the overview of the layer the Model box picks (Ctrl+Enter)")
        self.compute.clicked.connect(self.compute_requested.emit)
        self.cancel = QPushButton("Cancel")
        self.cancel.setToolTip("Stop at once (Esc)")
        self.cancel.clicked.connect(self.cancel_requested.emit)
        self.estimate = QLabel("")
        self.estimate.setWordWrap(True)  # a long estimate takes two lines rather than widening the window
        self.estimate.setMinimumWidth(120)
        self.estimate.setToolTip("Before it starts: the time and the memory the overview will take (a map that would "
                                 "not fit is refused with the bytes it needs)")
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setTextVisible(False)
        self.progress.setMaximumHeight(8)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        reserve_lines(self.status, 2)
        for w in (self.cancel, self.progress):
            keep_room(w)
            w.hide()
        self.export_map = QPushButton("Export map…")
        self.export_map.setToolTip("The overview as PNG or SVG, or its pooled probabilities as .npy, each with a .json "
                                   "manifest (block size, tokens, layer, figures)")
        self.export_map.clicked.connect(self.export_map_requested.emit)
        self.export_map.setEnabled(False)
        self.map = LongMapView()
        self.stats = LongStatsTable()
        self.stats.head_clicked.connect(lambda h: self.map.head.setCurrentIndex(h + 1))
        self.steps = FocusSpin()
        self.steps.setRange(1, 256)
        self.steps.setValue(64)
        self.steps.setToolTip("A real model: tokens to generate greedily after the prompt (the Heatmaps tab's text). "
                              "Random weights: context lengths at which one decode step is timed")
        self.kv_format = ElidedCombo(chars=8)
        self.kv_format.addItems(list(KV_FORMATS))
        self.kv_format.setCurrentText("bfloat16")
        self.kv_format.setToolTip("The format the cache's bytes are counted in (the KV formats of core/arch/formats.py); the model runs "
                                  "in float32 on the CPU either way")
        self.prompt = ElidedCombo(chars=14)
        self.prompt.addItems(list(PROMPTS))
        self.prompt.setToolTip("What a real model reads before it generates: the Heatmaps tab's text, or the long "
                               "map's text cut to its first 'Tokens' tokens (each step then reads that long a cache)")
        self.run_decode = QPushButton("Run decode")
        self.run_decode.clicked.connect(self.decode_requested.emit)
        self.export_decode = QPushButton("Export timeline…")
        self.export_decode.setToolTip("The timeline as PNG, or its steps as CSV, with a .json manifest")
        self.export_decode.clicked.connect(self.export_decode_requested.emit)
        self.export_decode.setEnabled(False)
        self.decode = DecodeView()
        self._build()
        QShortcut(QKeySequence("Ctrl+Return"), self, self.compute_requested.emit)
        QShortcut(QKeySequence("Ctrl+Enter"), self, self.compute_requested.emit)
        self.running = False

    def _build(self) -> None:
        row1 = QHBoxLayout()
        for label, w in (("Tokens", self.tokens), ("Text", self.text_source)):
            row1.addWidget(QLabel(label))
            row1.addWidget(w)
        for label, w in (("Pool", self.pool), ("Cells", self.pixels)):
            row1.addWidget(QLabel(label))
            row1.addWidget(w)
        row1.addStretch(1)
        row2 = QHBoxLayout()
        row2.addWidget(QLabel("Band W"))
        row2.addWidget(self.band)
        for w in (self.compute, self.cancel):
            row2.addWidget(w)
        row2.addWidget(self.estimate, 1)
        self.map.legend_row.addWidget(self.export_map)  # with the map it exports
        side = QWidget()
        sv = QVBoxLayout(side)
        sv.setContentsMargins(0, 0, 0, 0)
        sv.addWidget(self.map.mini)  # no title above it (its tooltip says what it is): the map's 22 px taller
        self.every_layer = QPushButton("Every layer…")
        self.every_layer.setToolTip("A real model's sink, band, beyond and distance for every layer x head over the same "
                                    "text and tokens, in one forward: shown in the Roles tab (Score: long …)")
        self.every_layer.setMaximumWidth(self.map.mini.width())
        self.every_layer.clicked.connect(self.layers_requested.emit)
        sv.addWidget(self.every_layer)
        sv.addStretch(1)
        side.setMinimumHeight(self.map.mini.height() + 34)  # the button never runs over the mini-map
        below = QWidget()
        bv = QHBoxLayout(below)
        bv.setContentsMargins(0, 0, 0, 0)
        bv.addWidget(self.stats, 1)
        bv.addWidget(side)
        split = QSplitter(Qt.Orientation.Vertical)  # the map above; every head's figures and the mini-map below
        split.addWidget(self.map)
        split.addWidget(below)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        split.setChildrenCollapsible(False)
        split.setSizes([520, 150])  # the map first; the figures of a few heads, and the splitter for more
        overview = QWidget()
        ov = QVBoxLayout(overview)
        ov.setContentsMargins(0, 0, 0, 0)
        ov.addLayout(row1)
        ov.addLayout(row2)
        ov.addWidget(split, 1)
        decode = QWidget()
        dv = QVBoxLayout(decode)
        dv.setContentsMargins(0, 0, 0, 0)
        drow = QHBoxLayout()
        for label, w in (("Prompt", self.prompt), ("Steps", self.steps)):
            drow.addWidget(QLabel(label))
            drow.addWidget(w)
        drow.addStretch(1)
        drow.addWidget(self.export_decode)
        drow2 = QHBoxLayout()
        drow2.addWidget(QLabel("KV format"))
        drow2.addWidget(self.kv_format)
        drow2.addWidget(self.run_decode)
        drow2.addStretch(1)
        dv.addLayout(drow)
        dv.addLayout(drow2)
        dv.addWidget(self.decode, 1)
        self.inner = QTabWidget()
        self.inner.addTab(overview, "Overview")
        self.inner.addTab(decode, "Decode run")
        lay = QVBoxLayout(self)
        lay.addWidget(self.source)
        lay.addWidget(self.stale)
        lay.addWidget(self.inner, 1)
        bottom = QHBoxLayout()
        bottom.addWidget(self.progress, 1)
        lay.addLayout(bottom)
        lay.addWidget(self.status)

    def showEvent(self, event: object) -> None:  # noqa: N802 (Qt's name)
        super().showEvent(event)
        self.shown.emit()

    def _on_text_source(self, index: int) -> None:
        if index == 2:
            self.text_file_requested.emit()

    def set_model_mode(self, real: bool, max_tokens: int, causal: bool) -> None:
        """A real model reads a text (at most its own context) and decodes when causal; random weights read seeded
        inputs and time a decode curve."""
        self.text_source.setEnabled(real)
        self.prompt.setEnabled(real)
        self.every_layer.setEnabled(real and not self.running)
        self.kv_format.setEnabled(real)
        self.kv_format.setToolTip("The format a real model's cache is counted in (the KV formats of core/arch/formats.py); the model "
                                  "runs in float32 on the CPU either way" if real else
                                  "Random weights: the timed step reads its cache in the compute dtype (the Workload "
                                  "box's dtype), and the bytes are counted in it")
        self.tokens.setMaximum(min(MAX_TOKENS, max_tokens))
        self.run_decode.setEnabled(causal or not real)
        self.run_decode.setToolTip("Generate tokens one at a time, timing each step" if real else
                                   "Time one decode step of the layer at growing context lengths")
        if real and not causal:
            self.run_decode.setToolTip("An encoder reads its input at once and generates nothing: open a causal "
                                       "model (SmolLM2) for a decode run")

    def set_running(self, running: bool, what: str = "") -> None:
        self.running = running
        self.cancel.setVisible(running)
        self.progress.setVisible(running)
        self.progress.setValue(0)
        self.compute.setEnabled(not running)
        self.every_layer.setEnabled(not running and self.text_source.isEnabled())
        self.run_decode.setEnabled(not running and self.run_decode.toolTip().startswith(("Generate", "Time")))
        if what:
            self.status.setText(what)

    def show_progress(self, fraction: float, text: str, eta_s: float | None) -> None:
        self.progress.setValue(int(1000 * max(0.0, min(1.0, fraction))))
        left = "" if eta_s is None else (f" · about {eta_s:.0f} s left" if eta_s >= 1 else " · under a second left")
        self.status.setText(f"{text}…{left}")
