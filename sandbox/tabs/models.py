"""Real models in the window: the picker, loading on the worker with progress, the locked sliders,
the original beside the changed heads, the fidelity figures and the layers x heads overview."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QSignalBlocker, Signal
from PySide6.QtWidgets import QFileDialog, QMessageBox, QSplitter

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.arch.model import Architecture
from core.costs import CostContext
from core.kinds.strip import strip_cells
from core.models.catalog import SHIPPED, only_pickle_weights, shipped_unavailable_reason
from core.models.choices import ModelShape
from core.models.kv.methods import KVMethod, kv_bytes_per_token
from core.models.kv.methods import ModelShape as KVShape
from core.report import model_context
from sandbox.jobs.types import Failure, HeatmapResult
from sandbox.state.app_state import AppState
from sandbox.window.notices import Notices
from widgets.controls.config_panel import ConfigPanel
from widgets.controls.model_picker import FOLDER, RANDOM, ModelPicker
from widgets.costs.fidelity_panel import FidelityPanel
from widgets.maps.heatmap_view import HeatmapMosaic
from widgets.maps.mosaic import plan_layout
from widgets.maps.zoom_link import link_zoom
from widgets.roles.badges import badges_for


@dataclass(frozen=True)
class WindowCalls:
    """What the models controller asks of the window it lives in."""

    request: Callable[[], object]  # the heatmaps again, for the same view
    open_head: Callable[[int], object]  # one head of the view on screen, large
    reset_zoom: Callable[[], object]  # every map in view, on both sides
    reshow_timing: Callable[[], object]  # the last timing, in today's words
    mosaic_relaid: Callable[[], bool]  # whether the last heatmaps laid the main mosaic out anew


class ModelController(QObject):
    loaded = Signal(str)  # the model's key, once the window shows it
    changed = Signal()  # a real model opened, or back to random weights
    load_failed = Signal()  # the model asked for could not be loaded
    """The model, its layer, whether a change applies to every layer, and a KV point are the state's (`model`,
    `layer`, `all_layers`, `kv_method`): the picker writes them; the request follows the state."""

    def __init__(self, state: AppState, runner: Any, notices: Notices, config_panel: ConfigPanel,
                 mosaic: HeatmapMosaic, window_calls: WindowCalls, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.state, self.runner, self.notices, self.config_panel, self.mosaic = state, runner, notices, config_panel, mosaic
        self.calls = window_calls
        self.maps: QSplitter | None = None  # the two sides' splitter, once the Heatmaps tab is built
        choices = [(key, label, shipped_unavailable_reason(key)) for key, label in SHIPPED.items()]
        self.picker = ModelPicker(choices)
        self.fidelity = FidelityPanel()
        self.fidelity.hide()
        self.original = HeatmapMosaic()  # the trained layer, beside the changed one
        self.original.controls.hide()  # it follows the main mosaic's colormap and scale, at once
        mosaic.colormap.currentTextChanged.connect(self.original.colormap.setCurrentText)
        mosaic.scale.currentIndexChanged.connect(self.original.scale.setCurrentIndex)
        self.original.hide()
        link_zoom(self.original, mosaic)  # one zoom for both sides
        self.original.on_fit = mosaic.on_fit = window_calls.reset_zoom
        self.original.readout.hide()  # its hover goes to the main readout, below both sides
        self.original.hovered.connect(mosaic.readout.setText)
        self.overview = HeatmapMosaic()  # every layer x every head, small; click to jump
        self.shape: ModelShape | None = None
        self.loading: str | None = None  # the model being loaded, until it is shown or fails
        self._open_after: tuple[int, int] | None = None  # (layer, head) to open once it is shown
        self.picker.kv_point_cleared.connect(self.clear_kv_point)
        self.picker.model_requested.connect(self._on_picker_model_requested)
        self.picker.view_changed.connect(self._on_picker_view_changed)
        self.config_panel.layer_picked.connect(self.pick_layer)
        self.overview.head_clicked.connect(self._on_overview_head_clicked)
        runner.model_progress.connect(self.picker.set_loading)
        runner.model_loaded.connect(self._on_runner_model_loaded)
        runner.failed.connect(self._on_runner_failed)

    @property
    def key(self) -> str | None:
        """The open real model's key (None: random weights)."""
        return self.state.view.model

    @property
    def kv_method(self) -> tuple[str, int | str, int] | None:
        """A frontier point's (method, setting, sinks) shown for every layer's KV cache, or None."""
        return self.state.view.kv_method

    def view_spec(self, cfg: AttentionConfig) -> LayerSpec | None:
        """The design's layer on screen (a local or a global one); None for a real model."""
        return cfg.layer_spec(min(self.layer, cfg.n_layers - 1)) if self.shape is None else None

    def design_changed(self, cfg: AttentionConfig) -> None:
        """Random weights: the layer spin follows the design's local and global layers (the state's layer with it, when
        fewer layers clamp it)."""
        if self.shape is None:
            cells = strip_cells(cfg) if cfg.stack is not None else None  # a stack's kinds; else local or global flags
            kinds = (tuple(c.short for c in cells) if cells is not None
                     else tuple("local" if flag else "global" for flag in cfg.local_layers()))
            self.picker.set_design_layers(kinds)
            self.state.update(layer=self.picker.layer.value())
            if cells is not None:
                self.config_panel.strip.set_cells(cells, self.picker.layer.value())

    def pick_layer(self, index: int) -> None:
        """A cell of the Layers strip: that layer's heads and timing (the layer spin follows)."""
        if self.shape is None and self.picker.layer.isEnabled():
            self.picker.layer.setValue(index)

    def heads_changed(self, cfg: AttentionConfig) -> None:
        """A change of heads replaces a frontier point (the two are not shown together)."""
        s = self.shape
        if self.kv_method is not None and s is not None and (cfg.n_heads, cfg.kv_heads) != (s.n_heads, s.n_kv_heads):
            self.clear_kv_point()
            self.notices.status("The frontier point is cleared: the heads change is shown instead.", 6000)

    def show_kv_point(self, kv: tuple[str, int | str, int], label: str) -> None:
        """Every layer's KV cache as a frontier point leaves it (latent, window or quantised), beside the
        trained heads; the model's own heads on the sliders."""
        self.picker.show_kv_point(f"KV cache: {label}")
        self.state.update(kv_method=kv)

    def clear_kv_point(self) -> None:
        """Back to the model's own cache (the request and the costs follow the state)."""
        if self.kv_method is None:
            return
        self.picker.show_kv_point("")
        self.state.update(kv_method=None)

    def _on_picker_view_changed(self) -> None:
        with self.state.held():  # the layer, its scope and a cleared KV point make one request
            if self.kv_method is not None and not self.picker.all_layers.isChecked():
                self.clear_kv_point()  # a frontier point changes every layer: unticking clears it
                self.notices.status("The frontier point is cleared: it changes every layer, and "
                                    "'change every layer' is off.", 6000)
            self.design_changed(self.state.view.config)
            self.state.update(layer=self.picker.layer.value(), all_layers=self.picker.all_layers.isChecked())

    # -- what the requests carry -----------------------------------------------------------------
    @property
    def layer(self) -> int:
        return self.state.view.layer

    @property
    def all_layers(self) -> bool:
        return self.state.view.all_layers

    # -- loading ---------------------------------------------------------------------------------
    def _on_picker_model_requested(self, key: str) -> None:
        if key == self.key or (key == RANDOM and self.key is None and self.loading is None):
            return  # the model already open, picked again: its head changes stay
        if key == RANDOM:
            self.use_random()
        elif key == FOLDER:
            folder = QFileDialog.getExistingDirectory(self.notices.parent, "Open a Hugging Face model folder")
            if folder:
                self.load(folder, allow_pickle=self._ask_pickle(Path(folder)))
            else:
                self.picker.revert()
        else:
            self.load(key)

    def _ask_pickle(self, folder: Path) -> bool:
        """Asked from the folder's file names alone: every file of it is read by the worker, never in this thread."""
        if not only_pickle_weights(folder):
            return False
        text = (f"{folder.name} has only pickle weights, which can run code when loaded; confirm to load them anyway, "
                "or convert them to safetensors.")
        answer = QMessageBox.question(self.notices.parent, "Load pickle weights?", f"{text}\n\nLoad them anyway?")
        return answer == QMessageBox.StandardButton.Yes

    def load(self, key: str, allow_pickle: bool = False) -> None:
        """Open a model on the worker; one already loading is not asked for again (its end would undo what was
        set meanwhile)."""
        if key == self.loading:
            return
        self.loading = key
        self.picker.set_loading(f"loading {SHIPPED.get(key, Path(key).name)}…", 0.0)
        self.runner.submit_load(key, allow_pickle)

    def use_random(self) -> None:
        """Back to random weights: every trace of the real model goes (titles, scope, its timing words)."""
        self.shape = None
        with self.state.held():  # no model, its own configuration back: one request
            self.clear_kv_point()
            self._reset_view()
            self.picker.set_shape(None)
            self.state.update(model=None, layer=self.picker.layer.value(), all_layers=self.picker.all_layers.isChecked())
            self.config_panel.set_model_shape(None)
        self.fidelity.hide()
        self.original.hide()
        self.mosaic.set_title("")
        self.mosaic.hover_prefix = ""
        self.calls.reshow_timing()
        self.changed.emit()

    def _reset_view(self) -> list[str]:
        """A new model starts on its own terms: no change applied everywhere, a layer it has."""
        notes = []
        picker = self.picker
        with QSignalBlocker(picker.all_layers), QSignalBlocker(picker.layer):
            if picker.all_layers.isChecked():
                picker.all_layers.setChecked(False)
                notes.append("'change every layer' is off again")
            if self.shape is not None and picker.layer.value() >= self.shape.n_layers:
                notes.append(f"layer {picker.layer.value()} does not exist there, so it shows layer 0")
                picker.layer.setValue(0)
        return notes

    def _on_runner_model_loaded(self, payload: tuple[str, ModelShape]) -> None:
        key, shape = payload
        self.shape = shape
        self.loading = None if self.loading == key else self.loading
        with self.state.held():  # the model, its layer, its configuration and a pin waiting for it: one request
            self.clear_kv_point()
            notes = self._reset_view()
            self.picker.set_shape(shape, key)
            self.state.update(model=key, layer=self.picker.layer.value(), all_layers=self.picker.all_layers.isChecked())
            self.config_panel.set_model_shape(shape)  # its config_changed writes the state's config
            self.notices.status(f"{shape.name} loaded" + (f"; {', and '.join(notes)}." if notes else "."), 8000)
            self.loaded.emit(key)
        self.fidelity.show()
        self.changed.emit()

    def _on_runner_failed(self, failure: Failure) -> None:
        if failure.stage == "model":  # the app stays on the model it had
            self.loading = None
            self.picker.show_error(failure.message)
            self.notices.alert("Cannot load the model", failure.message)
            self.load_failed.emit()  # after the alert: what waited for the model says so last

    # -- what the costs and the pins count ----------------------------------------------------------
    def cost_context(self, cfg: AttentionConfig) -> CostContext:
        """The architecture the costs count: the design's uniform layers, or this model with its change
        applied only where it is applied, compared with the model as trained."""
        if self.shape is None:
            return CostContext.design(cfg, self.layer)
        arch = self.shape.changed(cfg.n_heads, cfg.kv_heads, self.layer, self.all_layers)
        point = None
        if self.kv_method is not None:  # the frontier point's cache, as the Frontier tab counts it
            s = self.shape
            shape = KVShape(s.n_layers, s.n_heads, s.n_kv_heads, s.head_dim, s.d_model)
            method = KVMethod(*self.kv_method)
            point = (method.label, kv_bytes_per_token(shape, method, cfg.seq_len),
                     kv_bytes_per_token(shape, None, cfg.seq_len))
        return CostContext(arch, self.shape.architecture(), self.layer, "trained", point)

    def pin_context(self, hm: HeatmapResult) -> tuple[Architecture | None, dict[str, Any] | None]:
        """What a pin, a manifest or a workspace keeps beyond the configuration: a real model's layers as
        they are (changed where the change applies) and its context (model, layer, scope, probe, fidelity)."""
        shape = self.shape
        if hm.model is None or shape is None:
            return None, None
        cfg, view = hm.config, hm.model
        arch = shape.changed(cfg.n_heads, cfg.kv_heads, view.layer, view.all_layers)
        changed = arch.change_scope(shape.architecture()) or "nothing"
        label = view.fidelity.get("kv_method")
        point = None
        if label and self.kv_method is not None:  # the heatmaps on screen are this frontier point's
            method, setting, sinks = self.kv_method
            point = {"method": method, "setting": setting, "sinks": sinks, "label": label}
            changed = f"every layer's KV: {label}"
        return arch, model_context(view.key, shape.name, view.fidelity, changed, hm.probe, shape.kind, point)

    # -- showing -----------------------------------------------------------------------------------
    def shared_cols(self, result: HeatmapResult) -> int | None:
        """Columns for both sides when the trained heads are shown beside the changed ones: the trained
        layer's own grid (whole KV groups per row), so both read the same way. None: one side only."""
        view, s = result.model, self.shape
        if view is None or view.after is None or s is None:
            return None
        T = len(result.tokens)
        cols = plan_layout(s.n_heads, T, s.n_heads // s.n_kv_heads, aspect=1.0).cols
        changed = view.after.shape[0]  # (H', T, T)
        own = plan_layout(changed, T, result.config.group_size, aspect=1.0)
        if -(-changed // cols) > 2 * own.rows:  # 576 heads in SmolLM2's 3 columns: a strip too thin to see
            return None  # each side its own grid
        return cols

    def show(self, result: HeatmapResult) -> None:
        view = result.model
        if view is None or self.shape is None:
            return
        s = self.shape
        self.fidelity.show_fidelity(view.fidelity)
        changed = view.after is not None
        appearing = changed and self.original.isHidden()
        self.original.setVisible(changed)
        if changed:
            main = self.mosaic
            self.original.colormap.setCurrentText(main.colormap.currentText())
            self.original.scale.setCurrentIndex(main.scale.currentIndex())
            relaid = self.original.set_data(view.before, result.tokens, s.n_heads // s.n_kv_heads,
                                            cols=self.shared_cols(result))
            trained = {role: scores[view.layer] for role, scores in view.roles.items()}  # (H,) per role
            self.original.set_badges(badges_for(trained, s.n_heads), "")
            self.original.set_title(f"As trained: {s.n_heads} heads, {s.n_kv_heads} KV")
            self.original.hover_prefix, main.hover_prefix = "as trained · ", "changed · "
            cfg = result.config
            where = "every layer" if view.all_layers else f"layer {view.layer}"
            kv = view.fidelity.get("kv_method")
            main.set_title(f"Changed, every layer: {kv}" if kv else
                           f"Changed, {where}: {cfg.n_heads} heads, {cfg.kv_heads} KV")
            if self.maps is not None:
                half = sum(self.maps.sizes()) // 2
                self.maps.setSizes([half, half])  # two halves of one width
            if appearing or relaid or self.calls.mosaic_relaid():
                self.calls.reset_zoom()  # and again as the halves take their sizes (auto_fit)
        else:
            self.mosaic.set_title("")
            self.mosaic.hover_prefix = ""
        self._show_overview(result)
        if self._open_after and self._open_after[0] == view.layer:
            head = self._open_after[1]
            self._open_after = None
            self.calls.open_head(head)

    def _show_overview(self, result: HeatmapResult) -> None:
        """Every layer x every head: as trained, or as changed when the change applies to every layer."""
        view, s = result.model, self.shape
        assert view is not None and s is not None
        changed = view.overview_changed is not None
        maps = view.overview_changed if changed else view.overview
        L = s.n_layers
        H, K = (result.config.n_heads, result.config.kv_heads) if changed else (s.n_heads, s.n_kv_heads)
        n = maps.shape[-1]
        # One column per layer, one row per head: (L * H, T, T) layer-major -> head-major.
        grid = maps.reshape(L, H, n, n).transpose(1, 0, 2, 3).reshape(H * L, n, n)  # (H * L, T, T)
        titles = [f"L{layer}·h{h}" for h in range(H) for layer in range(L)]
        # group_size L*g: tile h*L + l is framed by head h's KV group
        self.overview.set_data(grid, result.tokens, L * (H // K), cols=L, titles=titles)
        self.overview.set_grid_axes("layer", [str(i) for i in range(L)], "head", [str(h) for h in range(H)])
        self.overview.mark_column(view.layer)  # the layer the Heatmaps tab shows and changes
        kv = view.fidelity.get("kv_method")
        how = (f"changed in every layer ({kv})" if changed and kv else
               f"changed in every layer ({H} heads, {K} KV heads)" if changed else "as trained")
        self.overview.legend.setText(f"{s.name} {how}: columns are layers 0–{L - 1}, rows are heads 0–{H - 1}; "
                                     "frame colour is the head's KV group. Click a tile to open that layer's head.")

    def _on_overview_head_clicked(self, index: int) -> None:
        if self.shape is None:
            return
        head, layer = divmod(index, self.shape.n_layers)
        self.open_at(layer, head)

    def set_view(self, layer: int, all_layers: bool) -> None:
        """Show `layer` with the change applied there only or everywhere, as one request."""
        picker = self.picker
        with QSignalBlocker(picker.layer), QSignalBlocker(picker.all_layers):
            picker.layer.setValue(layer)
            picker.all_layers.setChecked(all_layers)
        self._on_picker_view_changed()

    def open_at(self, layer: int, head: int) -> None:
        """Show `layer` and open its `head` once its heatmaps arrive."""
        self._open_after = (layer, head)
        if self.picker.layer.value() == layer:
            self.calls.request()  # the same view again: its heatmaps open the head
        else:
            self.picker.layer.setValue(layer)  # requests the layer; its heatmaps open the head
