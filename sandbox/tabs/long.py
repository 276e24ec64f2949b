"""The Long tab's controller: builds the overview, zoom and decode jobs from what the window shows (the open
model or the design, the Model box's layer, the text), runs them on the compute worker with progress and instant
cancel, draws what comes back, and exports it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog, QTabWidget

from core.files.atomic import ExportError
from core.kinds.registry import kind_of
from core.long.budget import overview_budget
from core.timing.cpu_load import BUSY_CORES
from resources import long_text
from sandbox.cli.text_file import read_text
from sandbox.jobs.long_types import LongDone, LongJob, LongProgress
from sandbox.state.app_state import AppState
from sandbox.state.view import View
from sandbox.tabs.long_export import DECODE_SUFFIXES, MAP_SUFFIXES, export_decode, export_map
from sandbox.window.export_folder import ExportFolder
from sandbox.window.notices import Notices
from widgets.long.panel import LongPanel

if TYPE_CHECKING:
    from sandbox.tabs.models import ModelController
    from widgets.roles.panel import RolesPanel


FILE_ITEM = 3  # the Text list's entry of the file opened ("a text file…", entry 2, opens one)
CHARS_A_TOKEN = 64  # a job carries at most this many characters a token of its text (a 50 MB file is not sent whole)


def cells_text(n: int) -> str:
    return f"{n:,} token" + ("s" if n != 1 else "")


def busy(meta: dict) -> str:
    """A sentence when other processes kept the CPU busy during the job (its times are inflated), else ''."""
    load = meta.get("other_load_cores")
    if load is None or load < BUSY_CORES:
        return ""
    return (f" Other processes kept {load:.1f} core{'s' * (load >= 1.05)} busy meanwhile: the times are inflated; run "
            "it again when the machine is idle.")


class LongTab:
    def __init__(self, state: AppState, runner: Any, notices: Notices, models: ModelController, roles_panel: RolesPanel,
                 tabs: QTabWidget, folder: ExportFolder, seed: int) -> None:
        self.state, self.runner, self.notices, self.models = state, runner, notices, models
        self.roles_panel, self.tabs, self.folder, self.seed = roles_panel, tabs, folder, seed
        self.panel = p = LongPanel()
        self.job_id = 0
        self.running: LongJob | None = None
        self.queued_region: tuple[int, int, int, int] | None = None  # a zoom asked for while another job ran
        self.overview_job: LongJob | None = None  # the job the overview on screen came from
        self.file_text: tuple[str, str] | None = None  # (file name, text) of an opened text file
        self.decode_meta: dict = {}
        self.decode_source: tuple | None = None  # (model, layer, design) of the decode run on screen
        self.curve: dict | None = None
        runner.progress.connect(lambda kind, progress: self._on_progress(progress) if kind == "long" else None)
        runner.done.connect(lambda kind, done: self._on_done(done) if kind == "long" else None)
        p.compute_requested.connect(self.compute)
        p.cancel_requested.connect(self.cancel)
        p.decode_requested.connect(self.decode)
        p.text_file_requested.connect(self.open_text_file)
        p.settings_changed.connect(self.refresh)
        p.map.region_wanted.connect(self.zoom)
        p.export_map_requested.connect(lambda: self._ask_path("map"))
        p.export_decode_requested.connect(lambda: self._ask_path("decode"))
        p.layers_requested.connect(self.every_layer)
        models.changed.connect(self.refresh)
        models.changed.connect(self._drop_other_models_layers)
        self.layers_model: str | None = None  # the model whose every-layer figures the Roles tab lists
        state.changed.connect(self._on_state_changed)
        self.dirty = True  # the settings changed while the tab was hidden: refreshed when it is shown
        p.shown.connect(lambda: self.refresh() if self.dirty else None)

    def _on_state_changed(self, new: View, old: View) -> None:
        if (new.config, new.layer) != (old.config, old.layer):
            self.refresh()

    # -- what the tab reads ----------------------------------------------------------------------------
    def _device_kind(self) -> str:
        choice = self.state.view.device
        devices = self.runner.info.devices
        if choice == "auto":
            return "cuda" if "cuda" in devices else "mps" if "mps" in devices else "cpu"
        return choice

    def text(self) -> tuple[str, str]:
        """(what it is, the text) a real model reads."""
        index = self.panel.text_source.currentIndex()
        if index == 1:
            return "the Heatmaps tab's text", self.state.view.text
        if index == FILE_ITEM and self.file_text is not None:
            return self.file_text
        return "the shipped long text (Alice, chapters I-IV)", long_text()

    def refresh(self) -> None:
        """The source sentence and the estimate, for what the window shows now: at once when the tab is shown, else
        when it is next shown (a slider drag in the Heatmaps tab does none of this work)."""
        p = self.panel
        if not p.isVisible():
            self.dirty = True
            return
        self.dirty = False
        shape, layer = self.models.shape, self.models.layer
        cfg = self.state.view.config
        T = p.tokens.value()
        if shape is not None:
            limit = shape.max_tokens or 512
            p.set_model_mode(True, limit, shape.kind == "causal")
            T = min(T, limit)
            where, text = self.text()
            p.source.setText(f"<b>{shape.name}</b>, layer {layer} of {shape.n_layers}: up to {T:,} tokens of {where} "
                             f"(it reads at most {limit:,}). The Model box picks the layer.")
            budget = overview_budget(shape.n_heads, shape.n_kv_heads, shape.head_dim, T, int(p.pixels.currentText()),
                                     shape.kind == "causal", None, self._device_kind(), layer + 1, shape.d_model)
        else:
            p.set_model_mode(False, 2**15, True)
            spec = cfg.layer_spec(min(layer, cfg.n_layers - 1))
            p.source.setText(f"<b>Random weights</b>: the design's layer {layer} ({kind_of(spec).label(spec)}, {spec.kind_label}) over "
                             f"{T:,} seeded inputs: shapes, masks and bands, not learned patterns (open SmolLM2 in the "
                             "Model box for a trained model's sink column).")
            budget = overview_budget(spec.n_heads, spec.n_kv_heads, spec.head_dim, T, int(p.pixels.currentText()),
                                     cfg.causal, spec.window if cfg.causal else None, self._device_kind())
        p.estimate.setText(f"Estimate: {budget.text()} ({self._device_kind()})")
        self._mark_stale()

    def _signature(self, job: LongJob | None) -> tuple | None:
        """What decides an overview: a job's source, layer, tokens and drawing settings."""
        if job is None:
            return None
        text = job.text if job.model is not None else ""
        return (job.model, job.config if job.model is None else None, job.layer, hash(text), job.n_tokens, job.pool,
                job.pixels, job.band)

    def _mark_stale(self) -> None:
        """Say when the map (or the decode run) on screen is no longer what the settings above describe."""
        p = self.panel
        notes = []
        if self.overview_job is not None and p.map.view is not None:
            now = self._signature(self.job("overview", count=False))
            if now != self._signature(self.overview_job):
                notes.append(f"The map shows {p.map.view.what} ({self.overview_job.pool} pooled, "
                             f"{self.overview_job.pixels:,} cells): not what the settings above say. Compute "
                             "(Ctrl+Enter) to draw them.")
        ran = self.decode_source
        if ran is not None and ran != (self.models.key, self.models.layer,
                                       self.state.view.config if self.models.key is None else None):
            notes.append("The decode run shown is of another model or layer than the one the Model box shows now.")
        p.stale.setText(" ".join(notes))
        p.stale.setVisible(bool(notes))

    def job(self, kind: str, count: bool = True, **changes: Any) -> LongJob:
        """The job the settings describe (count=False: to compare, without taking an id)."""
        p = self.panel
        if count:
            self.job_id += 1
        shape = self.models.shape
        limit = (shape.max_tokens or 512) if shape is not None else 2**15
        text = self.text()[1][: CHARS_A_TOKEN * min(p.tokens.value(), limit)] if shape is not None else ""
        fields: dict[str, Any] = {
            "config": self.state.view.config, "model": self.models.key, "layer": self.models.layer, "text": text,
            "n_tokens": min(p.tokens.value(), limit), "pool": p.pool.currentText(),
            "pixels": int(p.pixels.currentText()), "band": p.band.value(), "seed": self.seed,
            "device": self.state.view.device, "steps": p.steps.value(), "kv_format": p.kv_format.currentText()}
        return LongJob(self.job_id, kind, **{**fields, **changes})

    # -- running -----------------------------------------------------------------------------------------
    def _submit(self, job: LongJob, what: str) -> None:
        self.running = job
        self.panel.set_running(True, what)
        self.runner.submit(job)

    def compute(self) -> None:
        job = self.job("overview")
        self.queued_region = None
        self._submit(job, "Starting the overview…")

    def zoom(self, r0: int, r1: int, c0: int, c1: int) -> None:
        """Recompute a region of the overview on screen (its own job: the settings may have moved on since)."""
        base = self.overview_job
        if base is None or self.panel.map.view is None:
            self.panel.status.setText("Compute an overview first; then zoom into it.")
            return
        if self.panel.map.current_head() < 0:
            return  # every head small: a tile opens its head, which zooms
        if self.running is not None:
            if self.running.kind == "region":  # the newest zoom wins: the one in progress stops
                self.runner.cancel("long")
            self.queued_region = (r0, r1, c0, c1)
            return
        self.job_id += 1
        job = LongJob(self.job_id, "region", base.config, base.model, base.layer, base.text, base.n_tokens,
                      base.pool, base.pixels, base.band, base.seed, base.device, region=(r0, r1, c0, c1))
        span = max(r1 - r0, c1 - c0)
        self._submit(job, f"Recomputing {r1 - r0:,} x {cells_text(c1 - c0)} at full resolution"
                          + (" (single tokens, with labels)" if span <= 256 else "") + "…")

    def prompt(self) -> str:
        """What a real model reads before it generates (the long map's text is cut to its tokens by the worker)."""
        return self.state.view.text if self.panel.prompt.currentIndex() == 0 else self.text()[1]

    def decode(self) -> None:
        if self.models.shape is not None and not self.prompt().strip():
            self.panel.status.setText("The prompt is the Heatmaps tab's text, and it is empty: type a few words there.")
            return
        self.panel.decode.clear(self.models.shape.n_heads if self.models.shape is not None else 0)
        self.panel.export_decode.setEnabled(False)
        self.curve = None
        self.panel.inner.setCurrentIndex(1)
        job = self.job("decode", text=self.prompt()[: CHARS_A_TOKEN * 2**15] if self.models.shape is not None else "")
        self.decode_source = (self.models.key, self.models.layer, self.state.view.config if self.models.key is None else None)
        self._mark_stale()
        what = (f"Generating {job.steps} tokens after the prompt…" if job.model else
                f"Timing one decode step at {min(job.steps, 24)} context lengths up to {job.n_tokens:,} tokens…")
        self._submit(job, what)

    def every_layer(self) -> None:
        """Every layer x head's figures of the open model over the same text and tokens (the Roles tab shows them)."""
        if self.models.shape is None:
            self.panel.status.setText("Every layer's figures are a real model's: open SmolLM2 in the Model box first.")
            return
        job = self.job("layers")
        self._submit(job, f"Every layer's figures over {job.n_tokens:,} tokens: one forward, every layer mapped…")

    def _drop_other_models_layers(self) -> None:
        if self.layers_model is not None and self.models.shape is not None and \
                self.models.shape.name == self.layers_model:
            return
        if self.layers_model is not None:
            self.roles_panel.set_long_scores({}, {})
            self.layers_model = None

    def cancel(self) -> None:
        if self.running is not None:
            self.queued_region = None
            self.runner.cancel("long")
            self.panel.status.setText("Cancelling…")

    def _on_progress(self, progress: LongProgress) -> None:
        if self.running is None or progress.job_id != self.running.job_id:
            return
        self.panel.show_progress(progress.fraction, progress.text, progress.eta_s)
        if progress.step is not None:
            self.panel.decode.add_step(progress.step)
        if progress.point is not None:
            self.panel.decode.add_point(progress.point)

    def _on_done(self, done: LongDone) -> None:
        if self.running is None or done.job_id != self.running.job_id:
            return  # an older job's last words
        job, self.running = self.running, None
        self.panel.set_running(False)
        p = self.panel
        if done.message:
            p.status.setText("Cancelled." if done.message == "cancelled" else f"Stopped: {done.message}")
        elif done.kind == "overview" and done.view is not None:
            v = done.view
            self.overview_job = job  # the map on screen is this job's: zooms and the stale note follow it
            p.map.set_overview(v)
            p.stats.show_stats(v.stats, None, v.n_kv_heads)
            p.export_map.setEnabled(True)
            read = (f" The text has {v.text_tokens:,} tokens; the map reads the first {v.n_tokens:,}."
                    if v.text_tokens > v.n_tokens else f" The text is longer; the map reads its first {v.n_tokens:,} "
                    "tokens." if v.text_tokens < 0 else "")
            p.status.setText(f"{v.what}: {v.pooled.shape[1]:,} x {v.pooled.shape[2]:,} cells of {cells_text(v.block)}, "
                             f"{v.pool} pooled, in {v.seconds:.1f} s on {v.device}.{read}{busy(v.manifest)} Zoom with "
                             "the wheel: a region is recomputed at full resolution.")
            self._mark_stale()
        elif done.kind == "region" and done.view is not None:
            p.map.set_region(done.view)
            v = done.view
            p.status.setText(f"Zoom: queries {v.rows[0]:,}–{v.rows[1] - 1:,}, keys {v.cols[0]:,}–{v.cols[1] - 1:,}, "
                             f"cells of {cells_text(v.block)}, in {v.seconds:.2f} s.")
        elif done.kind == "layers" and done.layers is not None:
            self._show_layers(done.layers)
        elif done.kind == "decode":
            self.decode_meta = done.decode_meta
            if done.curve is not None:
                self.curve = done.curve
                p.decode.show_curve(done.curve, done.decode_meta)
            p.export_decode.setEnabled(bool(p.decode.steps) or done.curve is not None)
            p.status.setText("Decode run done: the sentence under the charts says what it shows."
                             + busy(done.decode_meta))
        if self.queued_region is not None and (job.kind != "overview" or not done.message):
            region, self.queued_region = self.queued_region, None
            self.zoom(*region)

    def _show_layers(self, layers: dict) -> None:
        W = layers["band_width"]
        texts = {"long sink": "long text: the attention on the first token (the sink), averaged over the queries",
                 "long band": f"long text: the attention within the last {W:,} keys (the band), the first token not",
                 "long beyond": f"long text: the attention further back than {W:,} keys, the first token not",
                 "long distance": "long text: how far back the attention reaches, in tokens"}
        self.roles_panel.set_long_scores({f"long {k}": layers[k] for k in ("sink", "band", "beyond", "distance")}, texts)
        self.layers_model = layers["model"]
        self.tabs.setCurrentWidget(self.roles_panel)
        self.notices.status(f"The Roles tab lists every layer's long figures of {layers['model']} over "
                                  f"{layers['tokens']:,} tokens (Score: long sink, band, beyond, distance).", 10000)
        self.panel.status.setText(f"Every layer's figures over {layers['tokens']:,} tokens in {layers['seconds']:.1f} s: "
                                  "the Roles tab shows them." + busy(layers))

    # -- text and export ---------------------------------------------------------------------------------
    def open_text_file(self) -> None:
        name, _ = QFileDialog.getOpenFileName(self.notices.parent, "Open a text for the long map", str(self.folder.start()),
                                              "Text (*.txt *.md);;All files (*)")
        if not name:
            self.panel.text_source.setCurrentIndex(0 if self.file_text is None else FILE_ITEM)
            return
        self.load_text_file(Path(name))

    def load_text_file(self, path: Path) -> bool:
        try:
            text = read_text(path, "the long map reads at most 32,768 tokens")
        except ValueError as exc:
            self.notices.alert("Cannot read the text", str(exc))
            self.panel.text_source.setCurrentIndex(0)
            return False
        if not text.strip():
            self.notices.alert("Cannot read the text", f"{path.name} holds no text; choose another file.")
            self.panel.text_source.setCurrentIndex(0)
            return False
        self.file_text = (f"the file {path.name}", text)
        box = self.panel.text_source
        if box.count() <= FILE_ITEM:
            box.addItem("")
        box.setItemText(FILE_ITEM, f"file: {path.name}")
        box.setItemData(FILE_ITEM, str(path), Qt.ItemDataRole.ToolTipRole)
        box.setCurrentIndex(FILE_ITEM)
        self.refresh()
        return True

    def _ask_path(self, what: str) -> None:
        p = self.panel
        folder = self.folder.start()
        if what == "map":
            if p.map.view is None:
                p.status.setText("Compute an overview first.")
                return
            filters, default = "PNG (*.png);;SVG (*.svg);;NumPy (*.npy)", "long-map.png"
        else:
            if not p.decode.steps and self.curve is None:
                p.status.setText("Run a decode first.")
                return
            filters, default = "PNG (*.png);;CSV (*.csv)", "decode-run.png"
        name, chosen = QFileDialog.getSaveFileName(self.notices.parent, "Export", str(folder / default), filters)
        if not name:
            return
        path = Path(name)
        self.folder.remember(path.parent)
        suffixes = MAP_SUFFIXES if what == "map" else DECODE_SUFFIXES
        if path.suffix.lower() not in suffixes and "*." in chosen:  # a name typed without one: the filter's
            path = path.with_name(path.name + "." + chosen.split("*.")[-1].rstrip(")"))
        self.export(what, path)

    def export(self, what: str, path: Path) -> list[Path]:
        p = self.panel
        if (what == "map" and p.map.view is None) or (what == "decode" and not p.decode.steps and self.curve is None):
            self.notices.alert("Nothing to export", "Compute an overview first." if what == "map" else
                              "Run a decode first.")
            return []
        try:
            if what == "map":
                paths = export_map(path, p.map, p.map.view, p.map.current_head(), p.map.zoom)
            else:
                paths = export_decode(path, p.decode, p.decode.steps, self.curve, self.decode_meta)
        except (ValueError, ExportError) as exc:
            self.notices.alert("Export failed", str(exc))
            return []
        except OSError as exc:  # a name the file system refuses
            self.notices.alert("Export failed", f"cannot write {path.name[:80]}: {exc.strerror or exc}; choose another "
                                               "name or folder.")
            return []
        self.notices.status(f"Wrote {paths[0]} and {paths[1].name}", 6000)
        return paths
