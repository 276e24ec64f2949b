"""The Frontier tab: what each way of shrinking a real model's KV cache costs it, as one chart, a sentence
at the budget the user picks, and the controls to run, cancel and export it. Plain dicts in, signals out;
the window (sandbox/tabs/frontier.py) runs the frontier on the compute worker."""

from __future__ import annotations

import time
from typing import Any

from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSlider,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from core.models.evict.summary import CAVEAT as COMPRESS_CAVEAT
from core.models.evict.summary import compress_sentence
from core.models.frontier.summary import BUDGET_NAMES, BUDGETS, CAVEAT, budget_sentence
from widgets.common.side_scroll import SideScroll
from widgets.common.steady import keep_room, reserve_lines
from widgets.frontier.chart import FrontierChart, describe_point
from widgets.frontier.compress_controls import CompressControls
from widgets.frontier.kept_strip import KeptStrip

PROTOCOLS = (("window", "Window protocol", "Every method on every query of 2 samples of 1,024 tokens of the "
                                          "evaluation text: a layer method changes the layer for the whole text."),
             ("compress", "Compress (kvpress's)", "The first 1,024 tokens prefilled once; each method then "
                                                           "shrinks that cache (an eviction press drops tokens a "
                                                           "layer and head), and the next 256 tokens are read "
                                                           "against it. Eviction methods and the layer methods on "
                                                           "one chart; the loss is of those 256 tokens."))

FAMILY_BOXES = (("heads", "fewer KV heads", "Mean-pool each group's K and V heads (the GQA paper's conversion)."),
                ("latent", "latent KV", "Rebuild every token's keys (before RoPE) and values from r latent values: "
                                        "PCA on a calibration text, and SVD of [W_k; W_v] as the data-free baseline."),
                ("window", "sliding window", "Every layer sees only the last W tokens, with and without the first "
                                             "4 (attention sinks, StreamingLLM)."),
                ("quant", "quantised KV", "K (after RoPE) and V stored as float16, fp8 e4m3/e5m2, q8_0 or q4_0."))


CHART_MIN_HEIGHT = 260  # below this the chart's points crowd its axes: the tab scrolls instead
HINT = ("Hover a point for its figures; click it to select it (click again where points overlap for the next "
        "one). The mouse wheel zooms; the small A at the chart's lower left zooms back out.")


def point_tip(point: dict[str, Any]) -> str:
    """What Show in Heatmaps does with a point, in words."""
    text = " on your text (its loss is your text's, not the evaluation text's)"
    if point.get("family") == "evict":
        return (f"Show the press at ratio {point['setting']:g} on your text in the Heatmaps tab: each KV head's "
                "evicted keys grey, every query reading only the kept ones (untick dense to compare), beside the "
                "trained heads. Clear it in the Model box to undo.")
    if point["method"] == "heads":
        return (f"Set n_kv_heads to {point['setting']} in every layer and show the Heatmaps tab: the pooled heads "
                f"beside the trained ones{text}. Set n_kv_heads back to undo.")
    return (f"Show every layer with its KV cache as {point['label']} in the Heatmaps tab, beside the trained "
            f"heads{text}. Clear it in the Model box, or change the heads, to undo.")


def eta_words(seconds: float) -> str:
    return f"about {seconds / 60:.0f} min left" if seconds >= 90 else f"about {max(1, round(seconds))} s left"


class _Views(QTabWidget):
    """The chart's tabs, asking for no more height than their minimum: a plot's hint (640 x 480) would stretch the
    scrolled page past the window, and the room the window leaves is theirs anyway (stretch 1)."""

    def sizeHint(self) -> QSize:
        return QSize(super().sizeHint().width(), self.minimumHeight())

    def hasHeightForWidth(self) -> bool:
        return False  # the page's wrapped legend asked for the plot's whole hint above it


class FrontierPanel(QWidget):
    run_requested = Signal(tuple)  # the method families ticked (window protocol)
    compress_requested = Signal(dict)  # the compress protocol's families, presses, ratios or budget
    cancel_requested = Signal()
    open_model_requested = Signal(str)  # a shipped model's key
    open_point_requested = Signal(object)  # a clicked point's dict, to show in the Heatmaps tab
    pin_point_requested = Signal(object)  # the same, pinned once shown
    export_chart_requested = Signal()
    export_table_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model_label = QLabel()
        self.model_label.setWordWrap(True)
        reserve_lines(self.model_label, 2)  # another model's longer name moves no button
        self.open_smol = QPushButton("SmolLM2-135M")
        self.open_mini = QPushButton("all-MiniLM-L6-v2")
        self.open_smol.setToolTip("Open SmolLM2-135M (a causal model: the chart shows its loss change)")
        self.open_mini.setToolTip("Open all-MiniLM-L6-v2 (an encoder: the chart shows 1 - cosine of its embedding)")
        self.open_smol.clicked.connect(lambda: self.open_model_requested.emit("smollm2-135m"))
        self.open_mini.clicked.connect(lambda: self.open_model_requested.emit("minilm-l6"))
        self.export_chart = QPushButton("chart…")
        self.export_chart.setToolTip("Export the chart as PNG or SVG, with a .json manifest beside it")
        self.export_chart.clicked.connect(self.export_chart_requested.emit)
        self.export_table = QPushButton("table…")
        self.export_table.setToolTip("Export every point's figures as CSV, with a .json manifest beside it")
        self.export_table.clicked.connect(self.export_table_requested.emit)
        self.boxes: dict[str, QCheckBox] = {}
        methods = QHBoxLayout()
        boxes = QGridLayout()  # two by two: the protocol box beside them fits a 1,024-pixel window
        boxes.setContentsMargins(0, 0, 0, 0)
        boxes.setVerticalSpacing(0)
        for n, (key, name, tip) in enumerate(FAMILY_BOXES):
            box = QCheckBox(name)
            box.setChecked(True)
            box.setToolTip(tip)
            self.boxes[key] = box
            boxes.addWidget(box, n // 2, n % 2)
        methods.addLayout(boxes)
        methods.addStretch(1)
        self.protocol = QComboBox()
        for key, name, tip in PROTOCOLS:
            self.protocol.addItem(name, key)
            self.protocol.setItemData(self.protocol.count() - 1, tip, Qt.ItemDataRole.ToolTipRole)
        self.protocol.setToolTip("Which protocol the chart shows and Run runs; the two are never drawn as one line. "
                                 + " ".join(tip for _k, _n, tip in PROTOCOLS))
        methods.insertWidget(0, self.protocol)
        self.compress = CompressControls()
        self.compress.changed.connect(self._on_settings_changed)
        self.results: dict[str, dict[str, Any] | None] = {"window": None, "compress": None}  # each protocol's chart
        self.run = QPushButton("Run frontier (Ctrl+Shift+R)")
        self.run.setToolTip("Run every point of the ticked methods on the evaluation text (2 samples of 1,024 tokens "
                            "of Alice, 512 for an encoder). Minutes on a CPU; a frontier run before opens at once.")
        self.run.clicked.connect(self._on_run)
        self.cancel = QPushButton("Cancel")
        self.cancel.setToolTip("Stop after the point in progress; the points done stay on the chart (Esc).")
        self.cancel.clicked.connect(self._on_cancel)
        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        self.progress.setMinimumWidth(60)
        self.status = QLabel()
        self.status.setWordWrap(True)
        for w in (self.cancel, self.progress):
            keep_room(w)
        opens = QHBoxLayout()
        opens.addWidget(QLabel("Open:"))
        opens.addWidget(self.open_smol)
        opens.addWidget(self.open_mini)
        opens.addStretch(1)
        opens.addWidget(QLabel("Export:"))
        opens.addWidget(self.export_chart)
        opens.addWidget(self.export_table)
        runs = QHBoxLayout()
        runs.addWidget(self.run)
        runs.addWidget(self.cancel)
        runs.addWidget(self.progress, 1)
        self._zoom_row = runs  # the zoom box joins this row once it exists (below the chart's creation)
        self.chart = FrontierChart()
        self.chart.hovered.connect(self._on_hovered)
        self.chart.point_clicked.connect(self._on_point_clicked)
        self.budget = QSlider(Qt.Orientation.Horizontal)
        self.budget.setRange(0, len(BUDGETS) - 1)
        self.budget.setValue(1)
        self.budget.setMaximumWidth(120)
        self.budget.setTickPosition(QSlider.TickPosition.TicksBelow)
        self.budget.setToolTip("The KV-cache budget, as a fraction of the model's own cache (16-bit K and V): "
                               "right is a smaller cache. The dashed line on the chart marks it.")
        self.budget.valueChanged.connect(self._show_sentence)
        self.budget_label = QLabel()
        self.sentence = QLabel()
        self.sentence.setWordWrap(True)
        self.sentence.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.detail = QLabel()
        self.detail.setWordWrap(True)
        reserve_lines(self.detail, 3)  # a hover's three lines move nothing below, nor the chart above
        self.detail.setMaximumHeight(self.detail.minimumHeight())
        self.open_point = QPushButton("Show in Heatmaps")
        self.open_point.setEnabled(False)
        self.open_point.clicked.connect(lambda: self.open_point_requested.emit(self.chart.selected))
        self.pin_point = QPushButton("Pin")
        self.pin_point.setEnabled(False)
        self.pin_point.setToolTip("Show the selected point in the Heatmaps tab and pin it, to compare it with "
                                  "other pins in the Compare tab")
        self.pin_point.clicked.connect(lambda: self.pin_point_requested.emit(self.chart.selected))
        self.zoom = QCheckBox("zoom to the cheap points")
        self.zoom.setToolTip("Show the points that lose least (y up to a tenth of the costliest, at most 1): a pooled "
                             "point far above squeezes them into the chart's bottom otherwise")
        self.zoom.toggled.connect(self.chart.zoom_cheap)
        self._zoom_row.addWidget(self.zoom)  # beside Run: the budget row has no room left at 1024 pixels
        budget_row = QHBoxLayout()
        budget_row.addWidget(QLabel("KV budget"))
        budget_row.addWidget(self.budget)
        budget_row.addWidget(self.budget_label)
        budget_row.addStretch(1)
        budget_row.addWidget(self.open_point)
        budget_row.addWidget(self.pin_point)
        self.caveat = caveat = QLabel(CAVEAT)
        caveat.setWordWrap(True)
        caveat.setStyleSheet("color: #888;")
        self.strip = KeptStrip()
        body = QWidget()  # scrolls up and down: a 700-pixel window keeps the chart readable below the controls
        layout = QVBoxLayout(body)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(SideScroll(body, min_width=0))
        layout.addWidget(self.model_label)
        layout.addLayout(opens)
        layout.addLayout(runs)
        layout.addLayout(methods)
        layout.addWidget(self.compress)
        layout.addWidget(self.status)
        # the chart, and beside it (a tab: the pane has no height to spare) a selected eviction point's kept tokens
        self.views = _Views()
        self.views.setDocumentMode(True)
        chart_box = QWidget()
        chart_layout = QVBoxLayout(chart_box)
        chart_layout.setContentsMargins(0, 0, 0, 0)
        chart_layout.addWidget(self.chart, 1)
        chart_layout.addWidget(self.chart.key)
        self.views.addTab(chart_box, "Chart")
        self.views.addTab(self.strip, "Kept tokens")
        self.views.setTabToolTip(1, "Which tokens the selected eviction point keeps, a row a layer and KV head, and "
                                    "the text shaded by how many heads keep each token (compress protocol)")
        self.views.setMinimumHeight(CHART_MIN_HEIGHT)
        layout.addWidget(self.views, 1)
        layout.addWidget(self.detail)
        layout.addLayout(budget_row)
        layout.addWidget(self.sentence)
        layout.addWidget(caveat)
        self.protocol.currentIndexChanged.connect(self._on_protocol)
        self.result: dict[str, Any] | None = None
        self.model_name, self.kind = "", "causal"
        self.running = False
        self.eta_at: tuple[float, float] | None = None  # (seconds left, when said): counted down between points
        self.countdown = QTimer(self)
        self.countdown.setInterval(1000)
        self.countdown.timeout.connect(self._tick)
        self.progress_text = ""
        self.set_model(None, "causal")
        self.set_running(False)
        self.clear()
        self._on_protocol()

    def shown_protocol(self) -> str:
        return str(self.protocol.currentData())

    def _on_protocol(self) -> None:
        """The other protocol's chart (or an empty one), and its controls."""
        compress = self.shown_protocol() == "compress"
        self.compress.setVisible(compress)
        self._strip_tab(None)
        self.caveat.setText(COMPRESS_CAVEAT if compress else CAVEAT)
        result = self.results[self.shown_protocol()]
        if result is not None and result.get("model") == self.model_name:
            self.show_result(result)
        else:
            self.clear()
    def families(self) -> tuple[str, ...]:
        return tuple(k for k, box in self.boxes.items() if box.isChecked())

    def set_model(self, name: str | None, kind: str) -> None:
        """The real model the frontier runs on (None: the random-weights design mode, nothing to run); another
        model's chart goes."""
        if name != (self.model_name or None):
            self.results = {"window": None, "compress": None}
            self.clear()
        self.model_name, self.kind = name or "", kind
        if name is None:
            self.model_label.setText("The frontier runs on a real model's weights: open one here (or in the Weights "
                                     "list on the left), then run it.")
        else:
            encoder = (" An encoder keeps no cache between calls: its K and V are counted as a cache would hold "
                       "them." if kind == "encoder" else "")
            self.model_label.setText(f"<b>{name}</b>: what each way of shrinking its KV cache costs it, measured on "
                                     f"its own weights without fine-tuning.{encoder}")
        self.run.setEnabled(name is not None and not self.running)

    def clear(self) -> None:
        self.result = None
        self.chart.set_points([], self.kind, x_key="kv_bytes" if self.shown_protocol() == "compress" else
                              "kv_bytes_per_token")
        self.strip.show_point(None, None)
        self.detail.setText(HINT)
        self.status.setText("")
        self.open_point.setEnabled(False)
        self.pin_point.setEnabled(False)
        self._enable_exports()
        self._show_sentence()

    def set_running(self, running: bool) -> None:
        self.running = running
        self.cancel.setVisible(running)
        self.cancel.setEnabled(running)
        self.progress.setVisible(running)
        self.run.setEnabled(not running and bool(self.model_name))
        for box in self.boxes.values():
            box.setEnabled(not running)
        self.protocol.setEnabled(not running)
        self.compress.set_enabled(not running)
        if running:
            self.progress.setRange(0, 0)
            self.progress.setFormat("starting…")
        else:
            self.countdown.stop()
            self.eta_at = None
        # an empty chart says what it waits for: points while a run goes on, a run when none does
        self.chart.empty.setText("Measuring the unchanged model first; each point appears here as it finishes."
                                 if running else "Run the frontier to draw it.")
        self._show_sentence()
        self._enable_exports()

    def show_progress(self, done: int, total: int, eta_s: float, text: str) -> None:
        self.progress.setRange(0, total)
        self.progress.setValue(done)
        self.progress_text = f"{done} of {total}"
        self.eta_at = (eta_s, time.monotonic())
        self._tick()
        if not self.countdown.isActive():
            self.countdown.start()
        if self.cancel.isEnabled():
            self.status.setText(f"Running: {text}" if text else "")

    def _tick(self) -> None:
        if self.eta_at is None:
            return
        left = max(0.0, self.eta_at[0] - (time.monotonic() - self.eta_at[1]))
        self.progress.setFormat(f"{self.progress_text} · {eta_words(left)}")

    def show_result(self, result: dict[str, Any], note: str = "") -> None:
        protocol = result.get("protocol", "window")
        self.results[protocol] = result
        if protocol != self.shown_protocol():
            self.protocol.blockSignals(True)  # the run's protocol is shown: the combo follows it
            self.protocol.setCurrentIndex(self.protocol.findData(protocol))
            self.protocol.blockSignals(False)
            self.compress.setVisible(protocol == "compress")
            self.caveat.setText(COMPRESS_CAVEAT if protocol == "compress" else CAVEAT)
        self.result = result
        self.kind = result["kind"]
        compress = protocol == "compress"
        title = f"KV frontier of {result['model']} · {'compress' if compress else 'window'} protocol"
        self.chart.set_points(self.rows(), self.kind, title, x_key="kv_bytes" if compress else "kv_bytes_per_token")
        self._strip_tab(None)  # the selection went with the old points
        self.chart.zoom_cheap(self.zoom.isChecked())
        self.open_point.setEnabled(False)  # the selection went with the old points
        self.pin_point.setEnabled(False)
        self.detail.setText(HINT)
        n = len(result["points"])
        if compress and result.get("complete", True):
            notes = "".join(f" Note: {n}." for n in result.get("notes") or [])
            self.status.setText(f"{result['model']}: {n} points; the first {result['context']:,} tokens prefilled "
                                f"once, the next {result['continuation']} read against each cache; computed in "
                                f"{result['seconds']:.0f} s.{note}{notes}")
        elif result.get("complete", True):
            samples = f"{result['samples']} sample{'s' if result['samples'] != 1 else ''}"
            self.status.setText(f"{result['model']}: {n} points on {samples} of {result['context']:,} tokens, "
                                f"computed in {result['seconds']:.0f} s.{note}")
        elif not self.running:
            self.status.setText(f"{result['model']}: cancelled part way; the {n} points done are shown (a cancelled "
                                "frontier is not kept).")
        self._enable_exports()
        self._show_sentence()

    def show_error(self, message: str) -> None:
        self.status.setText(message)

    def rows(self) -> list[dict[str, Any]]:
        if self.result is None:
            return []
        return [self.result["baseline"], *self.result["points"]]

    def _enable_exports(self) -> None:
        have = self.result is not None and bool(self.result.get("points"))
        for b in (self.export_chart, self.export_table):
            b.setEnabled(have and not self.running)

    def _on_run(self) -> None:
        families = self.families()
        if self.shown_protocol() == "compress":
            settings = self.compress.settings()
            if not families and not settings["presses"]:
                self.status.setText("Tick at least one method to run: an eviction method or a layer method.")
                return
            self.compress_requested.emit({"families": families, **settings})
            return
        if not families:
            self.status.setText("Tick at least one method to run.")
            return
        self.run_requested.emit(families)

    def _on_cancel(self) -> None:
        self.cancel.setEnabled(False)
        self.status.setText("Cancelling: the frontier stops after the point in progress…")
        self.cancel_requested.emit()

    def _show_sentence(self, *_: object) -> None:
        budget = BUDGETS[self.budget.value()]
        self.budget_label.setText(f"{BUDGET_NAMES[budget]} of the model's own")
        if self.result is not None and self.result.get("protocol") == "compress":
            self._compress_sentence(budget)
            return
        self.budget.setEnabled(True)
        if self.result is None:
            self.chart.set_budget(None)
            self.sentence.setText("The sentence follows the first points." if self.running else
                                  "Run the frontier to see which method loses least at this budget.")
            return
        self.chart.set_budget(budget * self.result["baseline"]["kv_bytes_per_token"])
        text = budget_sentence(self.rows(), budget, self.kind, self.result["model"])
        if self.running and text.startswith("No measured point"):
            text = f"No point measured so far fits in {BUDGET_NAMES[budget]} of the cache; more are coming."
        self.sentence.setText(text)

    def _compress_sentence(self, fraction: float) -> None:
        """At the slider's fraction of the whole cache, or at the byte budget the run was given."""
        r = self.result
        assert r is not None
        mib = r.get("budget_mib")
        self.budget.setEnabled(mib is None)
        points = r["points"]
        if mib is not None:
            self.budget_label.setText(f"{mib:,.2f} MiB a sequence")
            self.chart.set_budget(mib * 2**20)
            words = r.get("budget_words") or f"{mib:,.2f} MiB a sequence"
            text = compress_sentence(points, mib * 2**20, words, show_bytes=False)
        else:
            whole = r["baseline"]["kv_bytes"]
            self.chart.set_budget(fraction * whole)
            text = compress_sentence(points, fraction * whole, f"{BUDGET_NAMES[fraction]} of {r['model']}'s cache")
        if self.running and text.startswith("No measured point"):
            text = "No point measured so far fits that budget; more are coming."
        self.sentence.setText(text)

    def _on_settings_changed(self) -> None:
        """The chart is the last run's: say so when the methods or the cache asked for change."""
        if self.result is not None and not self.running and self.shown_protocol() == "compress":
            self.status.setText("The settings changed: press Run frontier (Ctrl+Shift+R) to measure them; the chart "
                                "shows the last run's.")

    def _strip_tab(self, point: dict[str, Any] | None) -> None:
        """The Kept tokens tab shows `point` (an eviction point of the compress chart) or says what to click."""
        self.strip.show_point(point, self.result if self.result and self.result.get("tokens") else None)
        compress = self.shown_protocol() == "compress"
        self.views.setTabVisible(1, compress)
        kept = point is not None and bool(point.get("kept_bits"))
        self.views.setTabText(1, f"Kept tokens: {point['label'].split(' (')[0].split(',')[0]}, "
                                 f"{point['kept_tokens']:,} kept" if kept and point else "Kept tokens")
        if not compress:
            self.views.setCurrentIndex(0)

    def _on_hovered(self, text: str) -> None:
        if text:
            self.detail.setText(text)
        elif self.chart.selected is not None:
            self.detail.setText("Selected: " + describe_point(self.chart.selected, self.kind))

    def _on_point_clicked(self, point: dict[str, Any]) -> None:
        self.detail.setText("Selected: " + describe_point(point, self.kind))
        if point.get("protocol") == "compress":
            self._strip_tab(point)
        showable = point["method"] != "baseline"
        self.open_point.setEnabled(showable)
        self.pin_point.setEnabled(showable)
        self.open_point.setToolTip(point_tip(point) if showable else "The unchanged model: the Heatmaps tab shows it "
                                   "with n_kv_heads at the model's own value.")
