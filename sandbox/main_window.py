"""The main window: wires the controls, the numbers, the runner and the heatmaps together."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import PySide6
import torch
from PySide6.QtCore import QRectF, QSettings, QStandardPaths, Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMessageBox,
    QPushButton,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from core.arch.model import Architecture
from core.atomic import ExportError
from core.attention import MAX_DISPLAY_TOKENS
from core.config import AttentionConfig
from core.device import default_dtype, device_name, resolve_device
from core.models.source import SHIPPED, shipped_unavailable_reason
from core.report import build_report, model_context
from core.tokens import DEFAULT_TEXT
from sandbox.compute import ComputeRequest, Failure, HeatmapResult, TimingOutcome
from sandbox.export import ExportJob, export
from sandbox.models_controller import ModelController
from sandbox.pins import PinController
from sandbox.roles import RolesController
from sandbox.runner import ComputeRunner
from sandbox.settings_store import load_settings, save_settings
from sandbox.sweeps import SweepController
from widgets.config_panel import ConfigPanel
from widgets.export_dialog import ExportDialog, default_export_folder
from widgets.head_view import HeadView
from widgets.heatmap_view import HeatmapMosaic
from widgets.heatmaps_tab import HeatmapsTab, WeightsNote
from widgets.metrics_panel import CostContext, MetricsPanel
from widgets.side_scroll import SideScroll
from widgets.timing_panel import TimingPanel

log = logging.getLogger(__name__)

# The configuration the window opens with (README: bench/live_latency.py measures at it).
OPENING_CONFIG = AttentionConfig(d_model=768, n_heads=12, n_kv_heads=4, seq_len=1024, batch_size=1,
                                 n_layers=12, causal=True)


def available_devices() -> list[str]:
    devices = ["auto", "cpu"]
    if torch.cuda.is_available():
        devices.append("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        devices.append("mps")
    return devices


class MainWindow(QMainWindow):
    def __init__(self, runner: ComputeRunner | None = None, settings: QSettings | None = None,
                 config: AttentionConfig | None = None, text: str | None = None, seed: int = 0,
                 timing_budget_s: float = 0.15, max_timing_s: float | None = 20.0, live_timing: bool = True,
                 quit_wait_s: float | None = None) -> None:
        super().__init__()
        self.quit_wait_s = quit_wait_s  # None: closing waits for the worker; the app itself waits a second at most
        self.worker_finished = True
        self.live_timing = live_timing  # False: time only when asked (Measure now; snapshot --no-time)
        self.timing_budget_s = timing_budget_s  # per measurement; six measurements make one timing
        self.max_timing_s = max_timing_s  # live timings expected to take longer wait for "Measure now"
        self.setWindowTitle("Attention Sandbox")
        self.runner = runner or ComputeRunner(parent=self)
        self.settings = settings
        self.seed = seed
        self.last_heatmaps: HeatmapResult | None = None
        self.mosaic_relaid = False  # the last heatmaps laid the main mosaic out anew
        self.last_timing: TimingOutcome | None = None
        self.last_error = ""
        self.last_timing_error = ""
        self.measuring: tuple[AttentionConfig, str] | None = None  # the timing in progress: (config, device)
        self.updating = QTimer(self)  # a request slower than this shows that the heatmaps are being redrawn
        self.updating.setSingleShot(True)
        self.updating.setInterval(200)
        self.updating.timeout.connect(self._on_updating_timeout)
        self.head_views: list[HeadView] = []
        saved = load_settings(self.settings)
        cfg = config or saved.get("config") or OPENING_CONFIG
        device = saved.get("device", "auto")
        if config is None and "config" not in saved:
            cfg = cfg.with_(dtype=default_dtype(resolve_device("auto")))
        self.config_panel = ConfigPanel(cfg, available_devices())
        self.config_panel.set_device_choice(device)
        self.metrics = MetricsPanel()
        self.timing = TimingPanel()
        self.text = QLineEdit(text if text is not None else saved.get("text", DEFAULT_TEXT))
        self.text.setToolTip("The input whose attention the heatmaps show (random-weight mode: a simple "
                             "word tokenizer, seeded embeddings). Timing uses random inputs of seq_len.")
        self.text.setClearButtonEnabled(True)
        self.info = QLabel()
        self.info.setWordWrap(True)
        self.mosaic = HeatmapMosaic()
        if saved.get("colormap"):
            self.mosaic.colormap.setCurrentText(saved["colormap"])
        self.pins = PinController(self)
        self.sweeps = SweepController(self)
        self.models = ModelController(self)
        self.roles = RolesController(self)
        self.models.loaded.connect(self.pins.on_model_loaded)
        self.last_alert = ""
        self._build_layout()
        self._build_menus()
        self._build_status()
        self._connect()
        if saved.get("geometry") is not None:
            self.restoreGeometry(saved["geometry"])
        else:
            self.resize(1280, 800)
        self._fit_to_screen()
        self._on_config_changed(cfg)
        # Once the first heatmaps and timing are done, import what opening a model needs.
        self.runner.idle.connect(self.runner.warm_up_models)

    def _fit_to_screen(self) -> None:
        """Never open larger than the screen, nor partly off it (a 1024x700 screen, a saved geometry
        from a bigger one)."""
        screen = self.screen().availableGeometry() if self.screen() is not None else None
        if screen is None or screen.width() < 100:
            return
        w, h = min(self.width(), screen.width()), min(self.height(), screen.height())
        if (w, h) != (self.width(), self.height()):
            self.resize(w, h)
        x = min(max(self.x(), screen.x()), screen.x() + max(0, screen.width() - self.width()))
        y = min(max(self.y(), screen.y()), screen.y() + max(0, screen.height() - self.height()))
        if (x, y) != (self.x(), self.y()):
            self.move(x, y)

    # -- construction ------------------------------------------------------------------------
    def _build_layout(self) -> None:
        left = QWidget()
        lv = QVBoxLayout(left)
        lv.addWidget(self.models.picker)
        lv.addWidget(self.config_panel)
        lv.addWidget(self.metrics)
        lv.addStretch(1)
        scroll = self.left_scroll = SideScroll(left)
        pin_row = QWidget()
        pins = QHBoxLayout(pin_row)
        pins.setContentsMargins(0, 0, 0, 0)
        self.pin_button = QPushButton("Pin (Ctrl+P)")
        self.pin_button.setToolTip("Keep this configuration with its numbers, timing and heatmaps to compare later")
        self.pin_button.clicked.connect(self.pins.pin_current)
        self.pin_count = QLabel("")
        pins.addWidget(self.pin_button)
        pins.addWidget(self.pin_count, 1)
        shipped = [(k, label) for k, label in SHIPPED.items() if not shipped_unavailable_reason(k)]
        self.weights_note = WeightsNote(shipped)
        self.weights_note.model_requested.connect(self.models.load)
        heat = self.heat_tab = HeatmapsTab(self.text, self.roles.probe_combo, self.info, self.weights_note,
                                           self.mosaic, self.models.original,
                                           [self.models.fidelity, self.timing, pin_row])
        self.maps = heat.maps
        self.tabs = QTabWidget()
        self.tabs.addTab(heat, "Heatmaps")
        self.tabs.addTab(self.pins.table, "Compare")
        self.tabs.addTab(self.sweeps.panel, "Sweep")
        self.tabs.addTab(self.models.overview, "Layers")
        self.tabs.addTab(self.roles.panel, "Roles")
        self.tabs.setTabToolTip(3, "A real model's every layer x every head; click a tile to open that head")
        right = self.tabs
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(scroll)
        split.addWidget(right)
        split.setStretchFactor(1, 1)
        split.setSizes([450, 830])
        self.setCentralWidget(split)

    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        self.export_action = QAction("&Export heatmaps…", self, shortcut=QKeySequence("Ctrl+E"))
        self.export_action.setToolTip("PNG, SVG, .npy or .csv, with a JSON manifest beside it")
        self.export_action.triggered.connect(lambda: self.open_export_dialog())
        quit_action = QAction("&Quit", self, shortcut=QKeySequence("Ctrl+Q"))
        quit_action.triggered.connect(self.close)
        open_ws = QAction("&Open workspace…", self, shortcut=QKeySequence("Ctrl+O"))
        open_ws.triggered.connect(lambda: self.pins.open())
        save_ws = QAction("&Save workspace", self, shortcut=QKeySequence("Ctrl+S"))
        save_ws.triggered.connect(lambda: self.pins.save())
        save_as = QAction("Save workspace &as…", self, shortcut=QKeySequence("Ctrl+Shift+S"))
        save_as.triggered.connect(lambda: self._save_workspace_as())
        file_menu.addAction(self.export_action)
        file_menu.addSeparator()
        file_menu.addActions([open_ws, save_ws, save_as])
        file_menu.addSeparator()
        file_menu.addAction(quit_action)
        pin_menu = self.menuBar().addMenu("&Compare")
        self.pin_action = QAction("&Pin this configuration", self, shortcut=QKeySequence("Ctrl+P"))
        self.pin_action.triggered.connect(self.pins.pin_current)
        run_sweep = QAction("&Run sweep", self, shortcut=QKeySequence("Ctrl+R"))
        run_sweep.triggered.connect(lambda: (self.tabs.setCurrentWidget(self.sweeps.panel), self.sweeps.panel.run.click()))
        cancel_sweep = QAction("&Cancel sweep", self, shortcut=QKeySequence("Esc"))
        cancel_sweep.triggered.connect(self.sweeps.cancel)
        pin_menu.addActions([self.pin_action, run_sweep, cancel_sweep])
        view = self.menuBar().addMenu("&View")
        reset = QAction("&Reset heatmap zoom", self, shortcut=QKeySequence("Ctrl+0"))
        reset.triggered.connect(self.reset_zoom)
        focus_text = QAction("Edit &text", self, shortcut=QKeySequence("Ctrl+L"))
        focus_text.triggered.connect(lambda: (self.text.setFocus(), self.text.selectAll()))
        view.addAction(reset)
        view.addAction(focus_text)
        measure = QAction("&Measure now", self, shortcut=QKeySequence("Ctrl+M"))
        measure.triggered.connect(lambda: self.request(force_timing=True))
        view.addAction(measure)
        probe = QAction("Toggle the &induction probe", self, shortcut=QKeySequence("Ctrl+I"))
        probe.triggered.connect(self.roles.toggle_probe)
        view.addAction(probe)
        for i, name in enumerate(("Heatmaps", "Compare", "Sweep", "Layers", "Roles")):
            tab = QAction(f"Show {name}", self, shortcut=QKeySequence(f"Ctrl+{i + 1}"))
            tab.triggered.connect(lambda _c=False, i=i: self.tabs.setCurrentIndex(i))
            view.addAction(tab)

    def _build_status(self) -> None:
        dev = resolve_device("auto")
        self.device_label = QLabel(f"{device_name(dev)} · torch {torch.__version__} · Qt {PySide6.QtCore.qVersion()}")
        self.statusBar().addPermanentWidget(self.device_label)

    def _connect(self) -> None:
        self.config_panel.config_changed.connect(self._on_config_changed)
        self.config_panel.device_changed.connect(lambda _d: self.request())
        self.config_panel.notice.connect(lambda text: self.statusBar().showMessage(text, 8000))
        self.text.textChanged.connect(lambda _t: self.request())
        self.runner.heatmaps_ready.connect(self._on_runner_heatmaps_ready)
        self.runner.timing_started.connect(self._on_runner_timing_started)
        self.runner.timing_ready.connect(self._on_runner_timing_ready)
        self.runner.failed.connect(self._on_runner_failed)
        self.mosaic.head_clicked.connect(self.open_head)
        self.runner.timing_ready.connect(self.pins.on_timing)
        self.timing.measure_requested.connect(lambda: self.request(force_timing=True))
        self.pins.pins_changed.connect(
            lambda: self.pin_count.setText(f"{len(self.pins.pins)} pinned: see the Compare tab (Ctrl+2)"
                                           if self.pins.pins else ""))

    # -- state -------------------------------------------------------------------------------
    def config(self) -> AttentionConfig:
        return self.config_panel.config()

    def view_is_current(self) -> bool:
        """The heatmaps on screen belong to the configuration and text the controls show."""
        hm = self.last_heatmaps
        return (hm is not None and hm.config == self.config() and self.runner.is_current(hm.request_id))

    def current_timing(self) -> TimingOutcome | None:
        """The last measurement, if it measured the configuration and device the controls show."""
        t = self.last_timing
        return t if t is not None and t.measures(self.config(), self.config_panel.device_choice()) else None

    def request(self, force_timing: bool = False) -> int:
        """Heatmaps for what the controls show; timing only when these shapes have not been measured
        (a new text, layer or probe keeps a measurement: timing runs random inputs)."""
        cfg, device = self.config(), self.config_panel.device_choice()
        measuring = self.measuring == (cfg, device) and not force_timing
        want_timing = force_timing or (self.live_timing and self.current_timing() is None and not measuring)
        if want_timing:
            self.timing.show_waiting()
        elif self.current_timing() is None and not measuring:
            self.timing.show_unmeasured()
        req = ComputeRequest(config=cfg, text=self.text.text(), device=device,
                             seed=self.seed, timing_budget_s=self.timing_budget_s, model=self.models.key,
                             layer=self.models.layer, all_layers=self.models.all_layers, probe=self.roles.probe,
                             max_timing_s=None if force_timing else self.max_timing_s, want_timing=want_timing,
                             keep_timing=measuring)
        self.updating.start()
        return self.runner.submit(req)

    def _on_updating_timeout(self) -> None:
        if not self.view_is_current() and not self.last_error:
            self.info.setText("<span style='color:#2563eb'>Updating the heatmaps for the new settings…</span> "
                              "(the maps below are the previous ones)")

    # -- slots -------------------------------------------------------------------------------
    def cost_context(self) -> CostContext:
        """The architecture the costs count: the design's uniform layers, or a real model with its
        change applied only where it is applied, compared with the model as trained."""
        cfg, shape = self.config(), self.models.shape
        if shape is None:
            return CostContext.design(cfg)
        layer = self.models.layer
        arch = shape.changed(cfg.n_heads, cfg.kv_heads, layer, self.models.all_layers)
        return CostContext(arch, shape.architecture(), layer, "trained")

    def pin_context(self, hm: HeatmapResult) -> tuple[Architecture | None, dict[str, Any] | None]:
        """What a pin, a manifest or a workspace keeps beyond the configuration: a real model's layers as
        they are (changed where the change applies) and its context (model, layer, scope, probe, fidelity)."""
        shape = self.models.shape
        if hm.model is None or shape is None:
            return None, None
        cfg, view = hm.config, hm.model
        arch = shape.changed(cfg.n_heads, cfg.kv_heads, view.layer, view.all_layers)
        changed = arch.change_scope(shape.architecture()) or "nothing"
        return arch, model_context(view.key, shape.name, view.fidelity, changed, hm.probe, shape.kind)

    def refresh_costs(self) -> None:
        self.metrics.show_config(self.config(), self.cost_context())  # exact counts on every tick

    def _on_config_changed(self, cfg: AttentionConfig) -> None:
        self.refresh_costs()
        self.request()

    def _on_runner_heatmaps_ready(self, result: HeatmapResult) -> None:
        if not self.runner.is_current(result.request_id):
            return  # a newer request is on its way: never show a stale view
        self.last_heatmaps = result
        cfg = result.config
        if self.weights_note.isHidden() != (result.model is not None):
            self.weights_note.setVisible(result.model is None)  # random weights say what they can show
        # Side by side, trained and changed heads share one grid (and, linked, one zoom).
        self.mosaic_relaid = self.mosaic.set_data(result.probs, result.tokens, cfg.group_size,
                                                  cols=self.models.shared_cols(result))
        self.roles.show(result)
        n, total = len(result.tokens), result.n_text_tokens
        if result.model is not None:
            self.models.show(result)
            shown = "changed (right) beside as trained (left)" if result.model.after is not None else "as trained"
            changed_any = result.model.after is not None
            where = (f"layer {result.model.layer}, every layer changed" if result.model.all_layers and changed_any
                     else f"layer {result.model.layer}")
            cut = f" (showing the first {n} of {total})" if total > n else ""
            source = "the induction probe" if result.probe == "induction" else "your text, in its own tokenizer"
            self.info.setText(f"{self.models.shape.name}, {where}: {cfg.n_heads} heads × {total} tokens of {source}"
                              f"{cut}, {shown}. Timing runs these shapes with random weights.")
            self.last_error = ""
            return
        source = "the induction probe" if result.probe == "induction" else "your text"
        parts = [f"{cfg.n_heads} heads × {n} tokens of {source}"]
        if total > n:
            limit = "seq_len" if n == cfg.seq_len else f"the {MAX_DISPLAY_TOKENS}-token display limit"
            parts.append(f"showing {n} of {total} tokens ({limit})")
        if cfg.seq_len > n:
            parts.append(f"timing runs the full seq_len {cfg.seq_len:,} on random inputs")
        if cfg.phase == "decode":
            parts.append("decode: the last row is the new token's attention")
        self.info.setText(" · ".join(parts) + ".")
        if self.last_error:
            self.statusBar().clearMessage()
        self.last_error = ""

    def reset_zoom(self) -> None:
        """Ctrl+0: every map in view, on both sides when the trained heads are shown beside the changed
        (one scale that fits the larger grid into the smaller view; the other side follows)."""
        shown = [m for m in (self.mosaic, self.models.original) if m.isVisible() and m.layout_ is not None]
        if not shown:
            return
        width, height = max(m.layout_.width for m in shown), max(m.layout_.height for m in shown)
        vb = self.mosaic.plot.getViewBox()
        scale = 1.02 * max(max(width / max(1.0, m.plot.getViewBox().width()),
                               height / max(1.0, m.plot.getViewBox().height())) for m in shown)
        # Both sides share this top-left corner, so centre the grid in the smaller of the two views.
        small_w = min(m.plot.getViewBox().width() for m in shown) * scale
        small_h = min(m.plot.getViewBox().height() for m in shown) * scale
        vb.setRange(QRectF((width - small_w) / 2, (height - small_h) / 2, vb.width() * scale, vb.height() * scale),
                    padding=0)
        for m in (self.mosaic, self.models.original):
            m.auto_fit = True

    def _on_runner_timing_started(self, request_id: int) -> None:
        if self.runner.is_current(request_id):
            choice = self.config_panel.device_choice()
            self.measuring = (self.config(), choice)
            self.timing.show_measuring(resolve_device(choice).type.upper() if choice != "cuda" else "CUDA")

    def _on_runner_timing_ready(self, outcome: TimingOutcome) -> None:
        if self.measuring == (outcome.config, outcome.device):
            self.measuring = None
        if not outcome.measures(self.config(), self.config_panel.device_choice()):
            return  # the controls moved on; a newer request measures what they show
        self.last_timing = outcome
        self.last_timing_error = ""
        if self.statusBar().currentMessage().startswith("timing"):
            self.statusBar().clearMessage()  # the timing it spoke of has been measured now
        self._show_timing(outcome)

    def reshow_timing(self) -> None:
        """Draw the last measurement again with today's words (a real model's kind may have changed)."""
        t = self.current_timing()
        if t is not None:
            self._show_timing(t)

    def _show_timing(self, outcome: TimingOutcome) -> None:
        c = outcome.config
        decodes = self.models.shape is None or self.models.shape.kind == "causal"
        self.timing.show_timing(outcome.result.to_report(),
                                f"{c.mode_label}, T={c.seq_len:,}, B={c.batch_size}, {c.phase}",
                                c.batch_size, c.seq_len, decodes)

    def _on_runner_failed(self, failure: Failure) -> None:
        if failure.stage == "timing":
            self.measuring = None
        if not self.runner.is_current(failure.request_id):
            return
        message = failure.message if failure.message.startswith(failure.stage) else f"{failure.stage}: {failure.message}"
        self.statusBar().showMessage(message)
        if failure.stage == "timing":
            self.last_timing_error = failure.message
            self.timing.show_error(failure.message, skipped=failure.message.startswith("timing skipped"))
        else:
            self.last_error = failure.message  # the heatmaps could not be drawn: the view says why
            self.info.setText(f"<span style='color:#dc2626'>{failure.message}</span>")

    # -- heads and export ----------------------------------------------------------------------
    def open_head(self, head: int) -> HeadView | None:
        hm = self.last_heatmaps
        if hm is None or not 0 <= head < len(hm.probs):
            return None
        view = HeadView(hm.probs[head], hm.tokens, head, hm.config.group_size, self.mosaic.colormap.currentText(), self,
                        **self._head_where(hm))
        view.export_requested.connect(lambda h: self.open_export_dialog(h))
        view.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        view.destroyed.connect(lambda *_: self.head_views.remove(view) if view in self.head_views else None)
        self.head_views.append(view)
        view.show()
        return view

    def _head_where(self, hm: HeatmapResult) -> dict[str, Any]:
        """A real model's head is named with its model and layer."""
        if hm.model is None or self.models.shape is None:
            return {}
        changed = " (changed)" if hm.model.after is not None else ""
        return {"layer": hm.model.layer, "model_name": self.models.shape.name + changed}

    def manifest(self) -> dict[str, Any]:
        hm = self.last_heatmaps
        t = self.last_timing
        timing = t.result.to_report() if t and hm and t.measures(hm.config, self.config_panel.device_choice()) else None
        cfg = hm.config if hm else self.config()
        arch, model = self.pin_context(hm) if hm else (None, None)
        probe = hm.probe if hm else self.roles.probe
        return {
            "title": "Attention Sandbox heatmaps",
            "report": build_report(cfg, timing, arch, model, model["layer"] if model else 0),
            "architecture": arch.to_dict() if arch is not None else cfg.architecture().to_dict(),
            "model": model,
            "device": self.config_panel.device_choice(),
            "seed": self.seed,
            "probe": probe,
            # What the tokens were read from: the typed text, or the induction probe (its own tokens).
            "text": self.text.text() if probe == "text" else None,
            "typed_text": self.text.text(),
            "tokens": hm.tokens if hm else [],
            "colormap": self.mosaic.colormap.currentText(),
            "scale": "per head" if self.mosaic.per_head else "shared",
        }

    def export_to(self, job: ExportJob) -> list[Path]:
        """Export the current view; raises ExportError with a sentence on failure."""
        hm = self.last_heatmaps
        if hm is None:
            raise ExportError("there are no heatmaps to export yet.")
        widget = None
        view: HeadView | None = None
        if job.fmt in ("png", "svg"):
            if job.head is None:
                widget = self.mosaic.glw
            else:
                view = HeadView(hm.probs[job.head], hm.tokens, job.head, hm.config.group_size,
                                self.mosaic.colormap.currentText(), **self._head_where(hm))
                view.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen)
                view.show()
                widget = view.plot
        try:
            return export(job, widget, hm.probs, hm.tokens, self.manifest())
        finally:
            if view is not None:
                view.close()
                view.deleteLater()

    def alert(self, title: str, text: str) -> None:
        """Tell the user something went wrong, without blocking (tests read last_alert)."""
        self.last_alert = text
        self.statusBar().showMessage(f"{title}: {text}", 10000)
        box = QMessageBox(QMessageBox.Icon.Warning, title, text, QMessageBox.StandardButton.Ok, self)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()

    def _save_workspace_as(self) -> None:
        self.pins.workspace_path = None
        self.pins.save()

    def open_export_dialog(self, head: int | None = None) -> None:
        if self.last_heatmaps is None:
            self.statusBar().showMessage("There are no heatmaps to export yet.", 5000)
            return
        dialog = self.make_export_dialog(head)
        if dialog.exec() != ExportDialog.DialogCode.Accepted:
            return
        self.export_chosen(dialog)

    def make_export_dialog(self, head: int | None = None) -> ExportDialog:
        where = QStandardPaths.writableLocation
        last = self.settings.value("export/folder") if self.settings is not None else None
        folder = default_export_folder(str(last) if last else None,
                                       where(QStandardPaths.StandardLocation.PicturesLocation),
                                       where(QStandardPaths.StandardLocation.DocumentsLocation))
        n_heads = len(self.last_heatmaps.probs) if self.last_heatmaps is not None else 0
        return ExportDialog(n_heads, folder, head, self)

    def export_chosen(self, dialog: ExportDialog) -> list[Path]:
        """Write what the accepted dialog asks for; a failure is an alert, never an exception."""
        try:
            c = dialog.choice()
            written = self.export_to(ExportJob(c.path, c.fmt, c.scale, c.head))
        except (ExportError, ValueError) as exc:
            self.alert("Export failed", str(exc))
            return []
        if self.settings is not None:
            self.settings.setValue("export/folder", str(c.path.parent))  # the next export starts there
        self.statusBar().showMessage("Exported " + ", ".join(str(p) for p in written), 10000)
        return written

    # -- settings and closing -------------------------------------------------------------------
    def save_settings(self) -> None:
        save_settings(self.settings, self.config(), self.config_panel.device_choice(), self.text.text(),
                      self.mosaic.colormap.currentText(), self.saveGeometry())

    def showEvent(self, event: Any) -> None:  # noqa: N802 (Qt's name)
        super().showEvent(event)
        QTimer.singleShot(0, self.heat_tab.fit_lower)  # once the window has its size

    def closeEvent(self, event: Any) -> None:  # noqa: N802 (Qt's name)
        self.save_settings()
        for view in list(self.head_views):
            view.close()
        self.worker_finished = self.runner.shutdown(self.quit_wait_s)
        super().closeEvent(event)
