"""The main window: wires the controls, the numbers, the runner and the heatmaps together."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings, QSignalBlocker, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMainWindow,
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
from sandbox.state.app_state import AppState
from sandbox.state.shown import Shown
from sandbox.state.view import MAX_TEXT_CHARS, View
from sandbox.tabs.compare import PinController
from sandbox.tabs.export import ExportController
from sandbox.tabs.export_render import ExportJob
from sandbox.tabs.frontier import FrontierTab
from sandbox.tabs.long import LongTab
from sandbox.tabs.memory import MemoryTab
from sandbox.tabs.models import ModelController, WindowCalls
from sandbox.tabs.plan import PlanTab
from sandbox.tabs.roles import RolesController
from sandbox.tabs.sweep import SweepController
from sandbox.window.costs_refresh import CostsRefresh
from sandbox.window.export_folder import ExportFolder
from sandbox.window.fit import fit_to_screen
from sandbox.window.frame_pacer import FramePacer
from sandbox.window.menus import TAB_NAMES, TAB_TIPS, MenuItem, build_menus
from sandbox.window.notices import Notices
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


def counted(view: View) -> tuple:
    """What of the View the Costs panel counts: a change of any of it schedules the costs."""
    return view.config, view.model, view.layer, view.all_layers, view.kv_method
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
        opening_text = text if text is not None else saved.get("text", DEFAULT_TEXT)
        # What the window shows, as one value: controls write it through update(), requests are built from it.
        self.state = AppState(View(config=self.config_panel.config(), text=opening_text,
                                   device=self.config_panel.device_choice()), self)
        self.notices = Notices(self)
        self._pick_dtype = config is None and "config" not in saved
        self.metrics = MetricsPanel()
        self.timing = TimingPanel()
        self.text = QLineEdit(opening_text[:MAX_TEXT_CHARS])
        self.text.setMaxLength(MAX_TEXT_CHARS)  # the View's own limit: the box and the View hold the same text
        self.text.setToolTip("The input whose attention the heatmaps show (random-weight mode: a simple "
                             "word tokenizer, seeded embeddings). Timing uses random inputs of seq_len.")
        self.text.setClearButtonEnabled(True)
        self.info = QLabel()
        self.info.setWordWrap(True)
        self.mosaic = HeatmapMosaic()
        if saved.get("colormap"):
            self.mosaic.colormap.setCurrentText(saved["colormap"])
        self.tabs = QTabWidget()  # filled in _build_layout; tabs' controllers show themselves in it
        self.export_folder = ExportFolder(self.settings)
        self.shown = Shown(heatmaps=lambda: self.last_heatmaps, is_current=self.view_is_current,
                           on_the_way=lambda: self.pacer.holding() or self.costs.due or not self.runner.is_idle(),
                           timing=self.current_timing, last_timing=lambda: self.last_timing)
        self.roles = RolesController(self.state, self.runner, self.notices, self.mosaic, self._open_head_at, self)
        self.models = ModelController(self.state, self.runner, self.notices, self.config_panel, self.mosaic,
                                      WindowCalls(request=self.request, open_head=self.open_head, reset_zoom=self.reset_zoom,
                                                  reshow_timing=self.reshow_timing,
                                                  mosaic_relaid=lambda: self.mosaic_relaid), self)
        self.plan = PlanTab(self.state, self.runner, self.models, self.config_panel, self.shown)
        self.pins = PinController(self.state, self.runner, self.notices, self.shown, self.models, self.plan, self.roles,
                                  self.config_panel, self.timing,
                                  self.settings.fileName() if self.settings is not None else None, self.request, self)
        self.sweeps = SweepController(self.state, self.runner, self.notices, self.export_folder, lambda: self.pins.pins,
                                      self.plan.sweep_series, self)
        self.frontier = FrontierTab(self.state, self.runner, self.notices, self.models, self.config_panel, self.tabs,
                                    self.export_folder, self.heatmaps_shown, self.refresh_costs, self.pins.pin_current,
                                    self.request)
        self.sweeps.panel.frontier_lesson_requested.connect(self.frontier.run_lesson)
        self.long = LongTab(self.state, self.runner, self.notices, self.models, self.roles.panel, self.tabs,
                            self.export_folder, self.seed)
        self.exports = ExportController(self.state, self.notices, self.shown, self.mosaic, self.models, self.export_folder,
                                        self.seed, self)
        self.models.loaded.connect(self.pins.on_model_loaded)
        self._build_layout()
        actions = build_menus(self, self._menu_items(), self.text)
        self.export_action, self.pin_action = actions["Export heatmaps…"], actions["Pin this configuration"]
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
        self._on_state_changed(self.state.view, replace(self.state.view, config=None))  # the first view, as a change
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
        self.maps = self.models.maps = heat.maps
        self.tabs.addTab(LayoutFirewall(heat, sized_by_host=True), "Heatmaps")  # a label's new text no longer repaints every tab
        self.tabs.addTab(self.pins.table, "Compare")
        self.tabs.addTab(self.sweeps.panel, "Sweep")
        self.tabs.addTab(self.models.overview, "Layers")
        self.tabs.addTab(self.roles.panel, "Roles")
        self.tabs.addTab(self.frontier.panel, "Frontier")
        self.tabs.addTab(self.plan.panel, "Plan")
        self.tabs.addTab(self.long.panel, "Long")
        self.memory = MemoryTab(self.state)
        self.tabs.addTab(self.memory.panel, "Memory")
        for i, tip in TAB_TIPS.items():
            self.tabs.setTabToolTip(i, tip)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.left_split)
        split.addWidget(self.tabs)
        split.setStretchFactor(1, 1)
        split.setSizes([450, 830])
        self.setCentralWidget(split)

    def _menu_items(self) -> list[MenuItem]:
        """File, Compare and View, with their shortcuts (docs/app.md: Shortcuts). Each calls through a lambda, so a
        call replaced later (a test's stand-in for a dialog) is the one made."""
        tabs = [MenuItem("&View", f"Show {name}", f"Ctrl+{i + 1}", lambda i=i: self.tabs.setCurrentIndex(i))
                for i, name in enumerate(TAB_NAMES)]
        return [
            MenuItem("&File", "&Export heatmaps…", "Ctrl+E", lambda: self.open_export_dialog(),
                     "PNG, SVG, .npy or .csv, with a JSON manifest beside it"),
            MenuItem("&File", "&Open workspace…", "Ctrl+O", lambda: self.pins.open(), separator_before=True),
            MenuItem("&File", "&Save workspace", "Ctrl+S", lambda: self.pins.save()),
            MenuItem("&File", "Save workspace &as…", "Ctrl+Shift+S", lambda: self.save_workspace_as()),
            MenuItem("&File", "&Quit", "Ctrl+Q", lambda: self.close(), separator_before=True),
            MenuItem("&Compare", "&Pin this configuration", "Ctrl+P", lambda: self.pins.pin_current()),
            MenuItem("&Compare", "&Run sweep", "Ctrl+R",
                     lambda: (self.tabs.setCurrentWidget(self.sweeps.panel), self.sweeps.panel.run.click())),
            MenuItem("&Compare", "&Cancel the shown tab's sweep, frontier or long map", "Esc", lambda: self.cancel_shown(),
                     "Esc stops what runs in the tab in view; a job in another tab runs on"),
            MenuItem("&Compare", "Run the KV &frontier", "Ctrl+Shift+R", lambda: self.frontier.run_from_menu()),
            MenuItem("&View", "&Reset heatmap zoom", "Ctrl+0", lambda: self.reset_zoom()),
            MenuItem("&View", "Edit &text", "Ctrl+L", lambda: (self.text.setFocus(), self.text.selectAll())),
            MenuItem("&View", "&Measure now", "Ctrl+M", lambda: self.request(force_timing=True)),
            MenuItem("&View", "Toggle the &induction probe", "Ctrl+I", lambda: self.roles.toggle_probe()),
            *tabs,
        ]

    def cancel_shown(self) -> None:
        """Esc: stop the job of the tab in view. Esc also leaves a spin box, a text field or a popup anywhere in the
        window: pressed there it is that editor's, and a sweep running in its own tab must not stop for it (the
        Cancel button is beside the progress)."""
        if isinstance(QApplication.focusWidget(), (QLineEdit, QAbstractSpinBox, QComboBox)):
            return
        shown = self.tabs.currentWidget()
        if shown is self.sweeps.panel:
            self.sweeps.cancel()
        elif shown is self.frontier.panel:
            self.frontier.cancel()
        elif shown is self.long.panel:
            self.long.cancel()

    def _build_status(self) -> None:
        self.worker_status = WorkerStatus(self.runner, self.notices, self.config_panel, self.saved_device,
                                          self._pick_dtype, self._on_worker_died)
        self.device_label = self.worker_status.label

    def _connect(self) -> None:
        # The controls write the state; the window follows the state (a write that changes nothing is no request).
        self.config_panel.config_changed.connect(lambda cfg: self.state.update(config=cfg))
        self.config_panel.device_changed.connect(lambda d: self.state.update(device=d))
        self.config_panel.notice.connect(lambda text: self.statusBar().showMessage(text, 8000))
        self.text.textChanged.connect(lambda t: self.state.update(text=t))
        self.state.changed.connect(self._on_state_changed)
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
        return self.state.view.config

    @property
    def last_alert(self) -> str:
        return self.notices.last_alert

    def _on_state_changed(self, new: View, old: View) -> None:
        if new.text != self.text.text():
            with QSignalBlocker(self.text):  # the field follows the state (a pin put back) without writing it again
                self.text.setText(new.text)
        if new.config != old.config:
            # The models controller follows a new configuration (the design's layer spin, a KV point the heads
            # replace); if that changed the state, its own change has made the request and the costs already.
            self.models.design_changed(new.config)
            self.models.heads_changed(new.config)
            if self.state.view != new:
                return
        self.request()  # the heatmaps first; the costs follow their paint
        if counted(new) != counted(old):  # the model, its layer and scope, a KV point count in the costs too
            # a synchronous runner is done with it; an asynchronous one may be idle with its result still on its way to
            # this thread (a worker that answers in a millisecond), so its costs follow the maps' paint
            self.costs.changed(self._maps_current() or (not self.runner.paced and self.runner.is_idle()))

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
        view = self.state.view
        cfg, device = view.config, view.device
        restart = self.measuring is not None and self.measuring[:2] == (cfg, device)
        force_timing = force_timing or (restart and self.measuring[2])  # Measure now stays asked for
        want_timing = force_timing or restart or (self.live_timing and self.current_timing() is None)
        if want_timing:
            self.timing.show_waiting()
        elif self.current_timing() is None:
            self.timing.show_unmeasured()
        self.measuring = None
        self._forced = force_timing
        req = ComputeRequest.of(view, seed=self.seed, timing_budget_s=self.timing_budget_s, want_timing=want_timing,
                                max_timing_s=None if force_timing else self.max_timing_s)
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

    def _on_runner_heatmaps_ready(self, result: HeatmapResult) -> None:
        if not self.runner.is_current(result.request_id):
            return  # a newer request is on its way: never show a stale view
        self.last_heatmaps = result
        cfg = result.config
        if self.weights_note.isHidden() != (result.model is not None):
            self.weights_note.setVisible(result.model is None)  # random weights say what they can show
        # Side by side, trained and changed heads share one grid (and, linked, one zoom).
        self.mosaic.sink_share = result.sink_share
        self.mosaic.selection = result.selection
        spec = result.layer_spec
        self.mosaic.sharing = kind_of(spec).kv_sharing(spec) if spec is not None else ""
        group = spec.group_size if spec is not None else cfg.group_size
        signed = kind_of(spec).signed_maps if spec is not None else ""
        if signed:  # a recurrent layer's implicit attention: signed weights on the diverging map
            self.mosaic_relaid = self.mosaic.set_signed(result.probs, result.tokens, group, signed,
                                                        cols=self.models.shared_cols(result),
                                                        tag=kind_of(spec).group_tag)
        else:
            self.mosaic.set_probabilities()
            self.mosaic_relaid = self.mosaic.set_data(result.probs, result.tokens, group,
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
            choice = self.state.view.device
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
        spec = outcome.layer_spec
        what = c.mode_label  # the layer measured: a hybrid stack's recurrent layer names its own kind
        if spec is not None and kind_of(spec).has_state:
            what = kind_of(spec).label(spec)
        self.timing.show_timing(outcome.result.to_report(),
                                f"{what}, T={c.seq_len:,}, B={c.batch_size}, {c.phase}",
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
        sel = self.mosaic.selection  # a sparse layer's skipped keys, as the mosaic shows them (none while dense)
        skipped = sel.skipped_of(head) if sel is not None and not self.mosaic.dense.isChecked() else None
        probs = sel.dense[head] if sel is not None and self.mosaic.dense.isChecked() else hm.probs[head]
        view = HeadView(probs, hm.tokens, head, hm.config.group_size, self.mosaic.colormap.currentText(), self,
                        skipped=skipped,
                        **self.exports.head_where(hm))
        view.export_requested.connect(lambda h: self.open_export_dialog(h))
        view.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        view.destroyed.connect(lambda *_: self.head_views.remove(view) if view in self.head_views else None)
        self.head_views.append(view)
        view.show()
        return view

    def alert(self, title: str, text: str) -> None:
        """Tell the user something went wrong, without blocking (tests read last_alert)."""
        self.notices.alert(title, text)

    def _open_head_at(self, layer: int, head: int) -> None:
        """A head picked in the Roles tab: a real model's layer and head, or the design's head."""
        if self.models.shape is not None:
            self.models.open_at(layer, head)
        else:
            self.open_head(head)

    def _on_worker_died(self, message: str) -> None:
        """The pins, sweep rows and workspace are the window's: they are kept as they are. The view says why no
        heatmaps are coming, and a timing in progress is said to be skipped."""
        self.info.setText(f"<span style='color:#dc2626'>{message}</span>")
        self.updating.stop()  # "Updating the heatmaps…" must not cover the sentence: the request is not coming
        self.last_error = message  # until the next heatmaps, which clear it
        if self.measuring is not None or self.timing.busy.isVisible():
            self.timing.show_error("timing skipped: the compute worker stopped during this timing; press Measure now "
                                   "(Ctrl+M) to run it again.", skipped=True)
        self.measuring = None

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
