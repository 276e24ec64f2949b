"""The Plan tab: which GPUs, how many, the tensor-parallel degree, the dtypes, batch and context; then
whether it fits, the limits, the KV heads per GPU, the decode bound and the three charts. Reads plain
dicts (core/plan/report.py); the controller (sandbox/tabs/plan.py) computes them."""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import QSignalBlocker, Qt, Signal
from PySide6.QtGui import QResizeEvent, QShowEvent
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QDoubleSpinBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from core.plan.fit import CHECKPOINT, RESERVE, WEIGHT_BYTES
from core.plan.gpus import MAX_GIB, MIN_GIB, THIS_MACHINE, catalogue, find_gpu
from core.plan.report import parse_count
from widgets.common.wheel import FocusCombo, FocusSpin
from widgets.plan.charts import ContextCurve, MemoryBars, Roofline, TpBars

KV_CHOICES = ("bf16", "fp16", "fp8", "fp8_e5m2", "q8_0", "q4_0", "fp32")
# engine -> (label, tooltip, lowest, highest, decimals, default; None: the engine's own by TP degree)
ENGINE_SETTINGS: dict[str, tuple[str, str, float, float, int, float | None]] = {
    "vllm": ("memory use", "vLLM's --gpu-memory-utilization: the fraction of each GPU it may take for the weights, "
             "activations and the KV cache", 0.05, 1.0, 2, 0.9),
    "sglang": ("static fraction", "SGLang's --mem-fraction-static: the fraction of each GPU for the weights and the "
               "token pool (the lowest, 'by TP', is SGLang's default for the TP degree)", 0.04, 1.0, 2, None),
    "llama.cpp": ("n_ubatch", "llama.cpp's -ub, its physical batch: a sliding-window layer keeps W + n_ubatch cells",
                  1, 65536, 0, 512),
}


def _combo(items: list[tuple[str, Any]], tip: str) -> FocusCombo:
    c = FocusCombo()
    for text, data in items:
        c.addItem(text, data)
    c.setToolTip(tip)
    c.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    c.setMinimumContentsLength(6)  # a narrow window shrinks the box, not the tab past the screen
    return c


class PlanPanel(QWidget):
    changed = Signal()  # any input
    measure_requested = Signal()
    shown = Signal()  # the tab came on screen: a plan made stale meanwhile is redrawn

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.gpu = _combo([(f"{g.name}", g.id) for g in catalogue()] + [("This machine (measured)", THIS_MACHINE)],
                          "The GPU to plan for: its memory as the driver reports it, dense peak throughput and "
                          "bandwidth from its datasheet (the source lines below), or this machine, measured")
        self.memory = QDoubleSpinBox()
        self.memory.setRange(MIN_GIB, MAX_GIB)
        self.memory.setDecimals(2)
        self.memory.setSuffix(" GiB")
        self.memory.setToolTip("A GPU's memory as the driver reports it and engines plan against (nvidia-smi's MiB / "
                               "1024: an \"80 GB\" H100 is 79.65 GiB): the catalogue's, or type your card's")
        self.set_memory()
        self.n_gpus = FocusSpin()
        self.n_gpus.setRange(1, 4096)
        self.n_gpus.setToolTip("GPUs in all; those beyond the TP degree split the layers into pipeline stages")
        self.tp = _combo([("1", 1)], "Tensor-parallel degree: only degrees that divide the query heads (and divide, "
                                     "or are a multiple of, the KV heads)")
        self.weights = _combo([(k, k) for k in WEIGHT_BYTES] + [("as the checkpoint", CHECKPOINT)],
                              "The weights' dtype: every parameter in one, or each part as the model's checkpoint "
                              "stores it (gpt-oss's MXFP4 experts, DeepSeek-V3's and Qwen3's block-scaled fp8)")
        self.weights.setCurrentText("bf16")
        self.kv = _combo([(k, k) for k in KV_CHOICES], "The KV cache's format (fp8 is e4m3; q8_0/q4_0 llama.cpp's)")
        self.batch = FocusSpin()
        self.batch.setRange(1, 2**20)
        self.batch.setToolTip("Sequences decoded together")
        self.context = FocusSpin()
        self.context.setRange(1, 2**30)
        self.context.setSingleStep(1024)
        self.context.setGroupSeparatorShown(True)
        self.context.setValue(8192)
        self.context.setToolTip("Tokens each sequence holds in its cache")
        self._preset_params = ""  # the text set_params put there: anything else was typed
        self.params = QLineEdit()
        self.params.setPlaceholderText("e.g. 70.55B")
        self.params.setToolTip("The whole model's parameters (embeddings, MLP, every expert): the preset's, or type one")
        self.reserve = QDoubleSpinBox()
        self.reserve.setRange(0, 99)
        self.reserve.setSuffix(" %")
        self.reserve.setValue(RESERVE * 100)
        self.reserve.setToolTip("Kept on each GPU for activations, CUDA graphs and the runtime (10%: vLLM's default "
                                "gpu_memory_utilization of 0.9)")
        self.engine = _combo([("the model's needs", ""), ("vLLM", "vllm"), ("SGLang", "sglang"),
                              ("llama.cpp", "llama.cpp")],
                             "Beside what the model needs: how an engine would allocate it (its pages, pools or cells, "
                             "what it would log) and the command that serves the plan")
        self.engine_setting = QDoubleSpinBox()  # the chosen engine's own knob (ENGINE_SETTINGS)
        self.engine_setting_label = QLabel("engine setting")
        self.engine_text = QLabel()  # the engine's lines and its command, selectable to copy
        self.engine_text.setWordWrap(True)
        self.engine_text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.engine_text.setTextFormat(Qt.TextFormat.PlainText)
        self.engine_text.setStyleSheet("font-family: monospace;")
        self.command_line = QLineEdit()  # one line, never wrapped inside a flag; selectable
        self.command_line.setReadOnly(True)
        self.command_line.setStyleSheet("font-family: monospace;")
        self.command_line.setToolTip("The command that serves this plan with the chosen engine")
        self.copy_command = QPushButton("Copy the command")
        self.copy_command.setToolTip("Copy the command that serves this plan with the chosen engine")
        self.copy_command.clicked.connect(self._copy)
        self.command = ""
        self.measure = QPushButton("Measure this machine")
        self.measure.setToolTip("Time a few large matmuls and copies on the compute worker (about 2 s)")
        self.measure.clicked.connect(self.measure_requested.emit)
        self.measure.hide()
        form = self.form = QGridLayout()
        self.cells = [(self.engine_setting_label if w is self.engine_setting else QLabel(name), w) for name, w in (
            ("GPU", self.gpu), ("memory", self.memory), ("GPUs", self.n_gpus), ("TP", self.tp), ("weights", self.weights),
            ("KV cache", self.kv), ("batch", self.batch), ("context", self.context), ("parameters", self.params),
            ("allowance", self.reserve), ("engine", self.engine), ("", self.engine_setting))]
        self.form_cols = 0
        self._lay_out_form(3)
        self.params_source = self._note()
        self.gpu_source = self._note()
        self.verdict = QLabel()
        self.verdict.setWordWrap(True)
        self.verdict.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details = QLabel()
        self.details.setWordWrap(True)
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.bars, self.curve, self.roof, self.tp_bars = MemoryBars(), ContextCurve(), Roofline(), TpBars()
        self.roof_note = self._note()
        charts = QGridLayout()
        charts.addWidget(self.bars, 0, 0)
        charts.addWidget(self.curve, 0, 1)
        charts.addWidget(self.tp_bars, 1, 0)
        charts.addWidget(self.roof, 1, 1)
        charts.addWidget(self.roof_note, 2, 0, 1, 2)
        body = QWidget()
        lay = QVBoxLayout(body)
        lay.addLayout(form)
        row = QHBoxLayout()
        row.addWidget(self.gpu_source, 1)
        row.addWidget(self.measure)
        lay.addLayout(row)
        lay.addWidget(self.params_source)
        lay.addWidget(self.verdict)
        lay.addWidget(self.details)
        engine_row = QHBoxLayout()
        engine_row.addWidget(self.engine_text, 1)
        lay.addLayout(engine_row)
        command_row = QHBoxLayout()
        command_row.addWidget(self.command_line, 1)
        command_row.addWidget(self.copy_command)
        lay.addLayout(command_row)
        self.show_engine(None)
        lay.addLayout(charts, 1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # it fits the width
        scroll.setWidget(body)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(scroll)
        self.gpu.currentIndexChanged.connect(lambda _i: self.set_memory())  # first: the plan reads the new card's
        self.engine.currentIndexChanged.connect(lambda _i: self.set_engine_setting())  # and the new engine's knob
        for w in (self.gpu, self.tp, self.weights, self.kv, self.engine):
            w.currentIndexChanged.connect(lambda _i: self.changed.emit())
        for w in (self.n_gpus, self.batch, self.context):
            w.valueChanged.connect(lambda _v: self.changed.emit())
        self.reserve.valueChanged.connect(lambda _v: self.changed.emit())
        self.engine_setting.valueChanged.connect(lambda _v: self.changed.emit())
        self.set_engine_setting()
        self.memory.valueChanged.connect(lambda _v: self.changed.emit())
        self.params.editingFinished.connect(self._on_params_edited)

    def _lay_out_form(self, cols: int) -> None:
        """The inputs in `cols` label-and-box columns: three on a wide tab, two on a narrow one."""
        if cols == self.form_cols:
            return
        self.form_cols = cols
        for label, w in self.cells:
            self.form.removeWidget(label)
            self.form.removeWidget(w)
        for i, (label, w) in enumerate(self.cells):
            self.form.addWidget(label, i // cols, 2 * (i % cols))
            self.form.addWidget(w, i // cols, 2 * (i % cols) + 1)
        for col in range(6):
            self.form.setColumnStretch(col, 1 if col % 2 and col < 2 * cols else 0)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt's name)
        self._lay_out_form(3 if event.size().width() >= 660 else 2)
        super().resizeEvent(event)

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 (Qt's name)
        super().showEvent(event)
        self.shown.emit()

    @staticmethod
    def _note() -> QLabel:
        label = QLabel()
        label.setWordWrap(True)
        label.setStyleSheet("color: #888;")
        label.setTextFormat(Qt.TextFormat.PlainText)  # names from a workspace file are text, never markup
        return label

    def set_tp_choices(self, degrees: list[int]) -> None:
        """The degrees the model's heads allow and the GPUs make whole groups of; the current one kept when it
        still is one, else the largest below it."""
        keep = self.tp.currentData() or 1
        allowed = [t for t in degrees if self.n_gpus.value() % t == 0] or [1]
        self.tp.blockSignals(True)
        self.tp.clear()
        for t in allowed:
            self.tp.addItem(str(t), t)
        self.tp.setCurrentIndex(self.tp.findData(max(t for t in allowed if t <= keep) if keep >= allowed[0] else 1))
        self.tp.blockSignals(False)
        self.tp.setToolTip(f"Tensor-parallel degree: divides the query heads, divides or is a multiple of the KV heads, "
                           f"and divides the {self.n_gpus.value()} GPUs (degrees the heads allow: "
                           f"{', '.join(map(str, degrees))})")

    def _on_params_edited(self) -> None:
        if self.params.text() != self._preset_params:
            self.params_source.setText("Parameters: as you typed them.")
        self.changed.emit()

    def set_params(self, params: int | None, source: str) -> None:
        """The preset's count (None: the user types one)."""
        self.params.setText(f"{params:,}" if params else "")
        self._preset_params = self.params.text()
        self.params_source.setText(f"Parameters: {source}" if params else
                                   "Parameters: this configuration is no named model; type its whole-model count.")

    def offer_checkpoint(self, known: bool) -> None:
        """A model whose checkpoint formats are known is planned as its checkpoint loads; another one in bf16."""
        with QSignalBlocker(self.weights):
            if known:
                self.weights.setCurrentIndex(self.weights.findData(CHECKPOINT))
            elif self.weights.currentData() == CHECKPOINT:
                self.weights.setCurrentIndex(self.weights.findData("bf16"))

    def catalogue_gib(self) -> float | None:
        """The chosen catalogue card's memory in GiB as its driver reports it (None: this machine, measured)."""
        gpu_id = self.gpu.currentData()
        return None if gpu_id == THIS_MACHINE else round(find_gpu(gpu_id).memory_bytes / 2**30, 2)

    def set_memory(self, gib: float | None = None) -> None:
        """The memory box at the chosen card's figure (or a pin's typed one); this machine's is measured, not typed."""
        with QSignalBlocker(self.memory):
            catalogue_gib = self.catalogue_gib()
            self.memory.setEnabled(catalogue_gib is not None)
            self.memory.setValue(gib if gib is not None else catalogue_gib or MIN_GIB)

    def inputs(self) -> dict[str, Any]:
        out = {"gpu": self.gpu.currentData(), "n_gpus": self.n_gpus.value(), "tp": self.tp.currentData() or 1,
               "weights_dtype": self.weights.currentData(), "kv_dtype": self.kv.currentData(),
               "batch": self.batch.value(), "context": self.context.value(), "params": parse_count(self.params.text()),
               "reserve": round(self.reserve.value() / 100, 4)}
        catalogue_gib = self.catalogue_gib()
        if catalogue_gib is not None and abs(self.memory.value() - catalogue_gib) >= 0.005:
            out["memory_gib"] = self.memory.value()  # the user's own card
        return out

    def show_plan(self, j: dict[str, Any], verdict: str, details: str, roofs: list[dict[str, Any]], roof_note: str,
                  served: bool = True) -> None:
        """served: False when the chosen engine would not serve the plan (the verdict is then orange too)."""
        colour = "#009E73" if j["fits"] and served else "#D55E00"
        self.verdict.setText(f'<b style="color:{colour}">{html.escape(verdict, quote=False)}</b>')
        self.details.setText(details)
        g = j["gpu"]
        if g["id"] == THIS_MACHINE:  # measured, not typed: the box shows it
            with QSignalBlocker(self.memory):
                self.memory.setValue(g["memory_bytes"] / 2**30)
        self.gpu_source.setText(f"Memory: {g['memory_bytes'] / 2**30:,.2f} GiB"
                                + (f" ({g['datasheet_gb']:g} GB on the datasheet)" if g.get("datasheet_gb") else "")
                                + (f": {g['memory_source']}" if g.get("memory_source") else "")
                                + f". Throughput and bandwidth: {g['source']}")
        self.bars.show_plan(j)
        self.curve.show_plan(j)
        self.tp_bars.show_plan(j)
        self.roof.show_roofs(roofs)
        self.roof_note.setText(roof_note)

    def set_engine_setting(self) -> None:
        """The chosen engine's knob at its default (hidden for the model's needs)."""
        name = self.engine.currentData()
        setting = ENGINE_SETTINGS.get(name)
        self.engine_setting.setVisible(setting is not None)
        self.engine_setting_label.setVisible(setting is not None)
        if setting is None:
            return
        label, tip, low, high, decimals, default = setting
        with QSignalBlocker(self.engine_setting):
            self.engine_setting.setDecimals(decimals)
            self.engine_setting.setRange(low, high)
            self.engine_setting.setValue(default if default is not None else low)
            self.engine_setting.setSpecialValueText("by TP" if default is None else "")  # SGLang's default
        self.engine_setting_label.setText(label)
        self.engine_setting.setToolTip(tip)

    def engine_options(self) -> dict[str, Any]:
        """The engine's knob as engine_plan takes it."""
        name, value = self.engine.currentData(), self.engine_setting.value()
        if name == "vllm":
            return {"utilization": round(value, 4)}
        if name == "sglang":
            return {"mem_fraction": None if value <= ENGINE_SETTINGS["sglang"][2] else round(value, 4)}
        if name == "llama.cpp":
            return {"n_ubatch": int(value)}
        return {}

    def _copy(self) -> None:
        QApplication.clipboard().setText(self.command)
        self.copy_command.setText("Copied")  # until the command changes

    def show_engine(self, lines: list[str] | None, command: str = "") -> None:
        """The chosen engine's figures and its command (None: the model's needs only, nothing to show; a command of ''
        when the engine would not serve the plan)."""
        if command != self.command:
            self.copy_command.setText("Copy the command")
        self.command = command
        self.command_line.setText(command)
        self.command_line.setVisible(bool(command))
        self.command_line.setCursorPosition(0)
        self.engine_text.setText("\n".join(lines or []))
        self.engine_text.setVisible(bool(lines))
        self.copy_command.setVisible(bool(command))

    def show_error(self, message: str) -> None:
        """The sentence, and no charts: the last plan's would read as this one's."""
        self.show_engine(None)
        self.verdict.setText(f'<b style="color:#D55E00">Cannot plan this: {html.escape(message, quote=False)}</b>')
        self.details.setText("")
        self.gpu_source.setText("")
        self.roof_note.setText("")
        for chart in (self.bars, self.curve, self.tp_bars, self.roof):
            chart.plot.clear()
            chart.key.setText("")
