"""The main window: wires the controls, the numbers, the runner and the heatmaps together."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings, Qt, QTimer, Signal
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

from core.arch.config import AttentionConfig
from core.inputs.tokens import DEFAULT_TEXT
from core.kinds.registry import kind_of
from core.models.catalog import SHIPPED, shipped_unavailable_reason
from sandbox.jobs.types import ComputeRequest, Failure, HeatmapResult, TimingOutcome
from sandbox.runner.process_runner import ProcessRunner
from sandbox.tabs.compare import PinController
from sandbox.tabs.export import ExportController
from sandbox.tabs.export_render import ExportJob
from sandbox.tabs.frontier import FrontierTab
from sandbox.tabs.long import LongTab
from sandbox.tabs.models import ModelController
from sandbox.tabs.plan import PlanTab
from sandbox.tabs.roles import RolesController
from sandbox.tabs.sweep import SweepController
from sandbox.window.costs_refresh import CostsRefresh
from sandbox.window.fit import fit_to_screen
from sandbox.window.frame_pacer import FramePacer
from sandbox.window.menus import TAB_TIPS, build_menus
from sandbox.window.settings_store import load_settings, save_settings
from sandbox.window.view_text import describe_view, updating_text
from sandbox.window.worker_status import WorkerStatus
from widgets.common.side_scroll import SideScroll
from widgets.common.steady import LayoutFirewall
from widgets.controls.config_panel import ConfigPanel
from widgets.costs.metrics_panel import MetricsPanel
from widgets.costs.timing_panel import TimingPanel
from widgets.export.dialog import ExportDialog
from widgets.maps.head_view import HeadView
from widgets.maps.heatmap_view import HeatmapMosaic
from widgets.maps.heatmaps_tab import HeatmapsTab, WeightsNote
from widgets.maps.zoom_link import fit_together

log = logging.getLogger(__name__)

WARM_AFTER_IDLE_MS = 5000
# The configuration the window opens with (README: bench/live_latency.py measures at it).
OPENING_CONFIG = AttentionConfig(d_model=768, n_heads=12, n_kv_heads=4, seq_len=1024, batch_size=1,
                                 n_layers=12, causal=True)


class MainWindow(QMainWindow):
    heatmaps_shown = Signal(object)  # a HeatmapResult, once it is the view on screen

    def __init__(self, runner: Any = None, settings: QSettings | None = None,
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
        self.runner = runner if runner is not None else ProcessRunner(parent=self)  # or ComputeRunner
        self.settings = settings
        self.seed = seed
        self.last_heatmaps: HeatmapResult | None = None
        self.mosaic_relaid = False  # the last heatmaps laid the main mosaic out anew
        self.last_timing: TimingOutcome | None = None
        self.last_error = ""
        self.last_timing_error = ""
        # The timing in progress: (config, device, asked for with Measure now). A new text interrupts it
        # (heatmaps never wait behind a measurement) and it starts again, forced if it was.
        self.measuring: tuple[AttentionConfig, str, bool] | None = None
        self._forced = False  # the newest request's timing was asked for with Measure now
        self.updating = QTimer(self)  # a request slower than this shows that the heatmaps are being redrawn
        self.updating.setSingleShot(True)
        self.updating.setInterval(200)
        self.updating.timeout.connect(self._on_updating_timeout)
        self.costs = CostsRefresh(self._show_costs, self)  # after the heatmaps (sandbox/window/costs_refresh.py)
        self.head_views: list[HeadView] = []
        saved = load_settings(self.settings)
        cfg = config or saved.get("config") or OPENING_CONFIG
        self.saved_device = saved.get("device", "auto")  # cuda may be known only once the worker has started
        if config is None and "config" not in saved:
            cfg = cfg.with_(dtype=self.runner.info.default_dtype)
        self.config_panel = ConfigPanel(cfg, list(self.runner.info.devices))
        self.config_panel.set_device_choice(self.saved_device)
        self._pick_dtype = config is None and "config" not in saved
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
        self.frontier = FrontierTab(self)
        self.plan = PlanTab(self)
        self.long = LongTab(self)
        self.exports = ExportController(self)
        self.models.loaded.connect(self.pins.on_model_loaded)
        self.last_alert = ""
        self._build_layout()
        self.export_action, self.pin_action = build_menus(self)
        self._build_status()
        self._connect()
        if saved.get("geometry") is not None:
            self.restoreGeometry(saved["geometry"])
        else:
            self.resize(1280, 800)
        fit_to_screen(self)
        # What opening a model imports, once the user rests a few seconds or reaches for the Model box.
        self.warm_timer = QTimer(self)
        self.warm_timer.setSingleShot(True)
        self.warm_timer.setInterval(WARM_AFTER_IDLE_MS)
        self.warm_timer.timeout.connect(self.runner.warm_up_models)
        self.runner.idle.connect(self.warm_timer.start)
        self.models.picker.reaching.connect(self.runner.warm_up_models)
        self._on_config_changed(cfg)
        self.costs.run_if_due()  # the first frame shows every cost, before any heatmaps (once: not again)

    # -- construction ------------------------------------------------------------------------
    def _build_layout(self) -> None:
        left = QWidget()
        lv = QVBoxLayout(left)
        lv.addWidget(self.models.picker)
        lv.addWidget(self.config_panel)
        lv.addStretch(1)
        self.left_scroll = SideScroll(LayoutFirewall(left))  # a new figure repaints its label only
        costs = QWidget()
        cv = QVBoxLayout(costs)
        cv.addWidget(self.metrics)
        cv.addStretch(1)
        # The costs have a pane of their own under the controls: at the foot of one long scroll they showed 2 to 4
        # rows at 1280x800 and none at 1024x700. The user moves the boundary; each pane scrolls on its own.
        self.costs_scroll = SideScroll(LayoutFirewall(costs))
        self.left_split = QSplitter(Qt.Orientation.Vertical)
        self.left_split.addWidget(self.left_scroll)
        self.left_split.addWidget(self.costs_scroll)
        self.left_split.setStretchFactor(0, 11)
        self.left_split.setStretchFactor(1, 9)
        self.left_split.setChildrenCollapsible(False)
        pin_row = QWidget()
        pins = QHBoxLayout(pin_row)
        pins.setContentsMargins(0, 0, 0, 0)
        self.pin_button = QPushButton("Pin (Ctrl+P)")
        self.pin_button.setToolTip("Keep this configuration with its numbers, timing and heatmaps to compare later")
        self.pin_button.clicked.connect(self.pins.pin_current)
        self.pin_count = QLabel("")
        pins.addWidget(self.pin_count, 1)
        shipped = [(k, label) for k, label in SHIPPED.items() if not shipped_unavailable_reason(k)]
        self.weights_note = WeightsNote(shipped)
        self.weights_note.model_requested.connect(self.models.load)
        heat = self.heat_tab = HeatmapsTab(self.text, self.roles.probe_combo, self.info, self.weights_note,
                                           self.mosaic, self.models.original,
                                           [self.models.fidelity, self.timing, pin_row], pin=self.pin_button)
        self.maps = heat.maps
        self.tabs = QTabWidget()
        self.tabs.addTab(LayoutFirewall(heat, sized_by_host=True), "Heatmaps")  # a label's new text no longer repaints every tab
        self.tabs.addTab(self.pins.table, "Compare")
        self.tabs.addTab(self.sweeps.panel, "Sweep")
        self.tabs.addTab(self.models.overview, "Layers")
        self.tabs.addTab(self.roles.panel, "Roles")
        self.tabs.addTab(self.frontier.panel, "Frontier")
        self.tabs.addTab(self.plan.panel, "Plan")
        self.tabs.addTab(self.long.panel, "Long")
        for i, tip in TAB_TIPS.items():
            self.tabs.setTabToolTip(i, tip)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.left_split)
        split.addWidget(self.tabs)
        split.setStretchFactor(1, 1)
        split.setSizes([450, 830])
        self.setCentralWidget(split)

    def _build_status(self) -> None:
        self.worker_status = WorkerStatus(self, self._pick_dtype)
        self.device_label = self.worker_status.label

    def _connect(self) -> None:
        self.config_panel.config_changed.connect(self._on_config_changed)
        self.config_panel.device_changed.connect(lambda _d: self.request())
        self.config_panel.notice.connect(lambda text: self.statusBar().showMessage(text, 8000))
        self.text.textChanged.connect(lambda _t: self.request())
        self.pacer = FramePacer(self._on_runner_heatmaps_ready, self.runner, self, sliders=self.config_panel,
                                maps=self.mosaic.glw)  # one mosaic, slider step and paint a frame
        self.runner.heatmaps_ready.connect(self.pacer.offer)
        self.heat_tab.fit_timer.timeout.connect(self.pacer.after_work)  # a fit's 3-5 ms, then its paint
        self.runner.timing_started.connect(self._on_runner_timing_started)
        self.runner.timing_ready.connect(self._on_runner_timing_ready)
        self.runner.failed.connect(self._on_runner_failed)
        self.mosaic.head_clicked.connect(self.open_head)
        self.mosaic.painted.connect(self.costs.maps_painted)
        self.runner.timing_ready.connect(self.pins.on_timing)
        self.timing.measure_requested.connect(lambda: self.request(force_timing=True))
        self.pins.pins_changed.connect(
            lambda: self.pin_count.setText(f"{len(self.pins.pins)} pinned: see the Compare tab (Ctrl+2)"
                                           if self.pins.pins else ""))
        self.pins.restore_session()  # the last session's pins, once everything that shows them is connected

    # -- state -------------------------------------------------------------------------------
    def config(self) -> AttentionConfig:
        return self.config_panel.config()

    def view_is_current(self) -> bool:
        """The heatmaps and costs on screen are of the configuration and text the controls show, none waiting."""
        return self._maps_current() and not self.costs.due and not self.pacer.holding()

    def _maps_current(self) -> bool:
        hm = self.last_heatmaps
        return hm is not None and hm.config == self.config() and self.runner.is_current(hm.request_id)

    def current_timing(self) -> TimingOutcome | None:
        """The last measurement, if it measured the configuration and device the controls show."""
        t = self.last_timing
        return t if t is not None and t.measures(self.config(), self.config_panel.device_choice(),
                                                 self.models.view_spec(self.config())) else None

    def request(self, force_timing: bool = False) -> int:
        """Heatmaps for what the controls show; timing only when these shapes have not been measured
        (a new text, layer or probe keeps a measurement: timing runs random inputs). A measurement of
        these shapes in progress is interrupted by the new heatmaps and starts again after them."""
        cfg, device = self.config(), self.config_panel.device_choice()
        restart = self.measuring is not None and self.measuring[:2] == (cfg, device)
        force_timing = force_timing or (restart and self.measuring[2])  # Measure now stays asked for
        want_timing = force_timing or restart or (self.live_timing and self.current_timing() is None)
        if want_timing:
            self.timing.show_waiting()
        elif self.current_timing() is None:
            self.timing.show_unmeasured()
        self.measuring = None
        self._forced = force_timing
        req = ComputeRequest(config=cfg, text=self.text.text(), device=device,
                             seed=self.seed, timing_budget_s=self.timing_budget_s, model=self.models.key,
                             layer=self.models.layer, all_layers=self.models.all_layers, probe=self.roles.probe,
                             kv_method=self.models.kv_method,
                             max_timing_s=None if force_timing else self.max_timing_s, want_timing=want_timing)
        self.updating.start()
        if self.warm_timer.isActive():
            self.warm_timer.stop()  # the user is busy: the idle signal restarts it
        return self.runner.submit(req)

    def _on_updating_timeout(self) -> None:
        if not self._maps_current() and not self.last_error:
            self.info.setText(updating_text(first=self.last_heatmaps is None))

    # -- slots -------------------------------------------------------------------------------
    def refresh_costs(self) -> None:
        self.costs.run()

    def _show_costs(self) -> None:
        self.metrics.show_config(self.config(), self.models.cost_context(self.config()))

    def _on_config_changed(self, cfg: AttentionConfig) -> None:
        self.models.design_changed(cfg)
        self.models.heads_changed(cfg)
        self.request()  # the heatmaps first; the costs follow their paint
        self.costs.changed(self._maps_current() or self.runner.is_idle())  # a synchronous runner is done with it

    def _on_runner_heatmaps_ready(self, result: HeatmapResult) -> None:
        if not self.runner.is_current(result.request_id):
            return  # a newer request is on its way: never show a stale view
        self.last_heatmaps = result
        cfg = result.config
        if self.weights_note.isHidden() != (result.model is not None):
            self.weights_note.setVisible(result.model is None)  # random weights say what they can show
        # Side by side, trained and changed heads share one grid (and, linked, one zoom).
        self.mosaic.sink_share = result.sink_share
        spec = result.layer_spec
        self.mosaic.sharing = kind_of(spec).kv_sharing(spec) if spec is not None else ""
        self.mosaic_relaid = self.mosaic.set_data(result.probs, result.tokens, cfg.group_size,
                                                  cols=self.models.shared_cols(result))
        self.roles.show(result)
        if result.model is not None:
            self.models.show(result)
        self.info.setText(describe_view(result, self.models.shape.name if self.models.shape else None))
        if self.last_error and result.model is None:
            self.statusBar().clearMessage()
        self.last_error = ""
        self.costs.maps_shown(painted_later=self.mosaic.glw.isVisible())
        self.heatmaps_shown.emit(result)

    def reset_zoom(self) -> None:
        """Ctrl+0: every map in view, on both sides when the trained heads are shown beside the changed."""
        fit_together(self.mosaic, self.models.original)

    def _on_runner_timing_started(self, request_id: int) -> None:
        if self.runner.is_current(request_id):
            if self.statusBar().currentMessage().startswith("timing"):
                self.statusBar().clearMessage()  # an older configuration's skipped or failed timing
            choice = self.config_panel.device_choice()
            self.measuring = (self.config(), choice, self._forced)
            self.timing.show_measuring(self.worker_status.device_kind(choice))

    def _on_runner_timing_ready(self, outcome: TimingOutcome) -> None:
        if self.measuring is not None and self.measuring[:2] == (outcome.config, outcome.device):
            self.measuring = None
        if not outcome.measures(self.config(), self.config_panel.device_choice(), self.models.view_spec(self.config())):
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
        self.pacer.after_work()  # 4-9 ms of set-up: its paint goes in a turn of its own

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
                        **self.exports.head_where(hm))
        view.export_requested.connect(lambda h: self.open_export_dialog(h))
        view.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        view.destroyed.connect(lambda *_: self.head_views.remove(view) if view in self.head_views else None)
        self.head_views.append(view)
        view.show()
        return view

    def alert(self, title: str, text: str) -> None:
        """Tell the user something went wrong, without blocking (tests read last_alert)."""
        self.last_alert = text
        self.statusBar().showMessage(f"{title}: {text}", 10000)
        box = QMessageBox(QMessageBox.Icon.Warning, title, text, QMessageBox.StandardButton.Ok, self)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()

    def save_workspace_as(self) -> None:
        self.pins.workspace_path = None
        self.pins.save()

    # The export verbs live in sandbox/tabs/export.py; these names are what menus, views and tests call.
    def manifest(self) -> dict[str, Any]:
        return self.exports.manifest()

    def export_to(self, job: ExportJob) -> list[Path]:
        return self.exports.export_to(job)

    def open_export_dialog(self, head: int | None = None) -> None:
        self.exports.open_dialog(head)

    def make_export_dialog(self, head: int | None = None) -> ExportDialog:
        return self.exports.make_dialog(head)

    def export_chosen(self, dialog: ExportDialog) -> list[Path]:
        return self.exports.export_chosen(dialog)

    # -- settings and closing -------------------------------------------------------------------
    def save_settings(self) -> None:
        save_settings(self.settings, self.config(), self.config_panel.device_choice(), self.text.text(),
                      self.mosaic.colormap.currentText(), self.saveGeometry())

    def showEvent(self, event: Any) -> None:  # noqa: N802 (Qt's name)
        super().showEvent(event)
        self.heat_tab.fit_later()  # once the window has its size

    def closeEvent(self, event: Any) -> None:  # noqa: N802 (Qt's name)
        self.save_settings()
        if self.pins.save_session():  # the pins, as they are now, for the next start; if that fails, elsewhere
            self.pins.save_elsewhere()
        for view in list(self.head_views):
            view.close()
        self.worker_finished = self.runner.shutdown(self.quit_wait_s)
        super().closeEvent(event)
