"""Pins: keep the current configuration with its numbers, timing and heatmaps; compare, diff,
save and open them as a workspace file."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QDialog, QFileDialog, QLabel, QVBoxLayout, QWidget

from core.files.atomic import ExportError, write_text_atomic
from core.format import format_bytes
from core.study.compare import as_csv, attention_diff
from core.study.workspace import (
    MAX_MAP_BYTES,
    MAX_NAME_CHARS,
    MAX_PINS,
    MAX_TOTAL_MAP_BYTES,
    Pin,
    load_workspace,
    next_pin_name,
    pin_report,
    save_workspace,
    workspace_json,
)
from sandbox.jobs.types import TimingOutcome
from sandbox.state.app_state import AppState
from sandbox.state.shown import Shown
from sandbox.state.view import MAX_TEXT_CHARS, View
from sandbox.window.notices import Notices
from widgets.compare.table import CompareTable
from widgets.maps.heatmap_view import HeatmapMosaic

if TYPE_CHECKING:
    from sandbox.tabs.models import ModelController
    from sandbox.tabs.plan import PlanTab
    from sandbox.tabs.roles import RolesController
    from widgets.controls.config_panel import ConfigPanel
    from widgets.costs.timing_panel import TimingPanel


class DiffDialog(QDialog):
    def __init__(self, diff, tokens: list[str], group_size: int, names: tuple[str, str], note: str,
                 parent: QWidget | None = None) -> None:
        """diff (H, T, T) is names[0]'s attention minus names[1]'s."""
        title = f"{names[0]} − {names[1]}"
        super().__init__(parent)
        self.setWindowTitle(title)
        self.mosaic = HeatmapMosaic()
        self.mosaic.resize(900, 560)
        self.note = QLabel(note)
        self.note.setWordWrap(True)
        lay = QVBoxLayout(self)
        lay.addWidget(self.note)
        lay.addWidget(self.mosaic, 1)
        self.resize(960, 680)
        self.mosaic.set_diff(diff, tokens, group_size, *names)


def why_tokens_differ(a: Pin, b: Pin) -> str:
    """What to do when two pins show different tokens: the text, the tokenizer or the probe differs."""
    source = lambda p: (p.model["key"] if p.model else "random weights", p.probe)  # noqa: E731
    if source(a) != source(b):
        what_a = f"{a.model['name'] if a.model else 'random weights'}, {a.probe}"
        what_b = f"{b.model['name'] if b.model else 'random weights'}, {b.probe}"
        return (f"they were read by different tokenizers or probes ({what_a} vs {what_b}); compare pins of one "
                "model and one probe")
    return "pin both with the same text to compare their heatmaps"


PIN_WAIT_S = 3.0  # Ctrl+P just after a change pins the change once its heatmaps are shown, if they come by then
SESSION_SAVE_S = 1.0  # pins are written this long after their last change (and at once when the window closes)
SESSION_FILE = "session-pins.attn.json"


def session_file(settings_file: str) -> Path:
    """Where the pins of the last session live: beside the window's settings (so a test's settings in a temporary
    folder keep its pins there too)."""
    return Path(settings_file).with_name(SESSION_FILE)


class PinController(QObject):
    pins_changed = Signal()

    """A pin keeps the View's configuration, text, probe, model, layer and KV point with what was shown of them; putting
    it back writes them all to the state at once."""

    def __init__(self, state: AppState, runner: Any, notices: Notices, shown: Shown, models: ModelController,
                 plan: PlanTab, roles: RolesController, config_panel: ConfigPanel, timing_panel: TimingPanel,
                 settings_file: str | None, request: Callable[[], object], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.state, self.runner, self.notices, self.shown = state, runner, notices, shown
        self.models, self.plan, self.roles, self.config_panel, self.timing_panel = (models, plan, roles, config_panel,
                                                                                   timing_panel)
        self.request = request  # the heatmaps of the View again, for a pin that is what the View holds
        self.pins: list[Pin] = []
        self.table = CompareTable()
        self.workspace_path: Path | None = None
        self._awaiting: list[Pin] = []  # pins still waiting for the timing of their configuration
        self.diff_dialogs: list[DiffDialog] = []
        self.table.rename_requested.connect(self.rename)
        self.table.remove_requested.connect(self.remove)
        self.table.load_requested.connect(self.load_on_sliders)
        self.table.diff_requested.connect(self.open_diff)
        self.table.export_requested.connect(self._on_table_export_requested)
        self._load_after_model: Pin | None = None  # a pin to put back once its model has loaded
        self._pin_asked_at = 0.0
        self._pin_asked_of: View | None = None  # the View Ctrl+P was pressed on, while its heatmaps were on their way
        self._pin_wait = QTimer(self)  # Ctrl+P while the heatmaps of what the controls show are on their way
        self._pin_wait.setInterval(20)
        models.load_failed.connect(self.on_model_failed)
        self._pin_wait.timeout.connect(self._pin_when_current)
        # Unsaved pins are never lost: every change is written (atomically, as a workspace) to the session file,
        # which the next start opens again. A window without settings (snapshot, most tests) keeps none.
        self.session_path = session_file(settings_file) if settings_file is not None else None
        self.unsaved = False  # pins changed since a workspace was saved or opened
        self._session_save = QTimer(self)
        self._session_save.setSingleShot(True)
        self._session_save.setInterval(round(SESSION_SAVE_S * 1000))
        self._session_save.timeout.connect(self.save_session)
        self.pins_changed.connect(lambda: self._session_save.start() if self.session_path is not None else None)

    def save_session(self) -> str:
        """Write the pins to the session file now; '' when written (or nothing to write), else why not (said in the
        status bar too; the pins stay)."""
        self._session_save.stop()
        if self.session_path is None:
            return ""
        try:
            self.session_path.parent.mkdir(parents=True, exist_ok=True)
            save_workspace(self.session_path, self.pins)
        except (ExportError, OSError, ValueError) as exc:
            why = f"Could not keep this session's pins in {self.session_path}: {exc}"
            self.notices.status(why, 10000)
            return why
        return ""

    def save_elsewhere(self) -> Path | None:
        """The session file could not be written as the window closes: the pins go, written plainly (no rename),
        to the first of the home folder and the temporary folder that takes them, and the log says where. Nothing
        asks: a closing window has no one to answer, and a question there would block whatever closes it."""
        import logging
        import tempfile

        if not self.pins:
            return None
        name = f"attention-sandbox-pins-{time.strftime('%Y%m%d-%H%M%S')}.attn.json"
        for folder in (Path.home(), Path(tempfile.gettempdir())):
            target = folder / name
            try:
                with open(target, "x", encoding="utf-8") as f:  # never over an existing file
                    f.write(workspace_json(self.pins))
            except (OSError, ValueError):
                continue
            logging.getLogger(__name__).warning("the session's pins could not be kept beside the settings; they "
                                                "are in %s (File > Open workspace opens them)", target)
            return target
        return None

    def keep_replaced(self) -> str:
        """Pins about to be replaced by an opened workspace, and never saved in one: written beside the session file
        first, so that opening a workspace never drops them. Returns where, or ''."""
        if not self.pins or not self.unsaved or self.session_path is None:
            return ""
        kept = self.session_path.with_name(f"pins-replaced-{time.strftime('%Y%m%d-%H%M%S')}.attn.json")
        try:
            save_workspace(kept, self.pins)
        except (ExportError, OSError):
            return ""
        return str(kept)

    def restore_session(self) -> None:
        """The last session's pins, back as they were. A file that no longer reads is set aside (renamed
        .unreadable), never overwritten, and the status bar says where it is."""
        path = self.session_path
        if path is None or not path.exists():
            return
        try:
            pins = load_workspace(path)
        except ValueError as exc:
            kept = path.with_name(f"{path.name}.{time.strftime('%Y%m%d-%H%M%S')}.unreadable")
            n = 1
            while kept.exists():  # an earlier one set aside is never replaced
                kept = path.with_name(f"{path.name}.{time.strftime('%Y%m%d-%H%M%S')}-{n}.unreadable")
                n += 1
            try:
                path.rename(kept)
            except OSError:
                kept = path
            self.notices.status(f"The last session's pins could not be restored ({exc}); the file is "
                                                f"kept as {kept}.", 15000)
            return
        if not pins:
            return
        self.pins = pins
        self.refresh()
        self._session_save.stop()  # nothing changed: no write
        self.notices.status(
            f"Restored {len(pins)} pin{'' if len(pins) == 1 else 's'} from the last session (Compare tab).", 8000)

    def _pin_when_current(self) -> None:
        if self.state.view != self._pin_asked_of:  # the user moved on: pinning what is shown now would be a surprise
            self._pin_wait.stop()
            self.notices.status("Nothing pinned: the view changed before its heatmaps were shown; press Ctrl+P again "
                                "on the one to keep.", 8000)
        elif self.shown.is_current():
            self._pin_wait.stop()
            self.pin_current()
        elif not self.shown.on_the_way():  # they came and could not be drawn: the line above the maps says why
            self._pin_wait.stop()
            self.notices.status("Nothing pinned: the heatmaps of this configuration could not be drawn (the line "
                                "above the maps says why).", 8000)
        elif time.monotonic() - self._pin_asked_at > PIN_WAIT_S:
            self._pin_wait.stop()
            self.notices.status(
                f"Nothing pinned: the heatmaps of this configuration took over {PIN_WAIT_S:.0f} s; press Ctrl+P again "
                "once they are shown.", 8000)

    def refresh(self) -> None:
        self.table.set_pins([p.name for p in self.pins], [p.report for p in self.pins])
        self.unsaved = True  # changed since the last save or open of a workspace (open and save clear it after)
        self.pins_changed.emit()

    def pin_current(self) -> Pin | None:
        hm = self.shown.heatmaps()
        if len(self.pins) >= MAX_PINS:
            self.notices.status(f"A workspace holds at most {MAX_PINS:,} pins; remove some first.", 6000)
            return None
        if hm is None or not self.shown.is_current():
            if self.shown.on_the_way():  # pin them when shown
                self._pin_asked_at, self._pin_asked_of = time.monotonic(), self.state.view
                self._pin_wait.start()
                self.notices.status("Pinning once the heatmaps of this configuration are shown…", 6000)
                return None
            self.notices.status("Nothing to pin yet: wait for the heatmaps of this configuration.", 6000)
            return None
        self._pin_wait.stop()
        size = 4 * hm.probs.size  # the maps as a workspace stores them: float32
        held = sum(4 * p.probs.size for p in self.pins if p.probs is not None)
        if size > MAX_MAP_BYTES or held + size > MAX_TOTAL_MAP_BYTES:  # else the session file would not open again
            self.notices.status(
                f"Not pinned: its heatmaps are {format_bytes(size)}, and a workspace holds at most "
                f"{format_bytes(MAX_MAP_BYTES)} a pin and {format_bytes(MAX_TOTAL_MAP_BYTES)} in all "
                f"({format_bytes(held)} pinned now); pin fewer heads or tokens, or remove pins first.", 10000)
            return None
        t = self.shown.timing()
        timing = t.result.to_report() if t is not None else None
        arch, model = self.models.pin_context(hm)
        view = self.state.view
        pin = Pin(name=next_pin_name([p.name for p in self.pins]), config=hm.config, report={},
                  text=view.text, tokens=list(hm.tokens), probs=hm.probs.copy(), seed=hm.seed,
                  device=view.device, arch=arch, model=model, probe=hm.probe,
                  plan=self.plan.pin_inputs(hm.config, arch))
        pin.report = pin_report(pin, timing)
        if timing is None:
            self._awaiting.append(pin)
        self.pins.append(pin)
        self.refresh()
        asked = not self.timing_panel.measure.isHidden()  # the panel offers Measure now: no timing runs until asked
        note = ("" if timing else " (no timing yet: Measure now (Ctrl+M) adds it)" if asked
                else " (its timing is added when the measurement finishes)")
        what = (f"{model['name']}, {model['changed']} changed" if model and model["changed"] != "nothing"
                else model["name"] if model else f"d_model {pin.config.d_model}")
        self.notices.status(f"Pinned {pin.name}: {pin.config.mode_label}, {what}{note}.", 6000)
        return pin

    def on_timing(self, outcome: TimingOutcome) -> None:
        """Every waiting pin of the measured configuration and device gets the measurement."""
        done = [p for p in self._awaiting if outcome.measures(p.config, p.device)]
        self._awaiting = [p for p in self._awaiting if p not in done and p in self.pins]
        for pin in done:
            if pin in self.pins:
                pin.report = pin_report(pin, outcome.result.to_report())
        if done:
            self.refresh()

    def rename(self, index: int, name: str) -> None:
        name = name.strip()
        if not name or len(name) > MAX_NAME_CHARS:
            self.notices.status(f"A pin's name has 1 to {MAX_NAME_CHARS} characters; choose a "
                                                "shorter name.", 6000)
            return
        if name in [p.name for i, p in enumerate(self.pins) if i != index]:
            self.notices.status(f"A pin is already named {name}; choose another name.", 6000)
            return
        self.pins[index].name = name
        self.refresh()

    def remove(self, index: int) -> None:
        pin = self.pins.pop(index)
        self._awaiting = [p for p in self._awaiting if p is not pin]
        self.refresh()

    def load_on_sliders(self, index: int) -> None:
        """Put a pin back: its text, probe and configuration; a real model's pin opens that model, its
        layer and its scope first (loading it when another is open)."""
        pin = self.pins[index]
        self._load_after_model = None  # the pin put back last wins over one still waiting for its model
        if pin.model is not None and self.models.key != pin.model["key"]:
            self._load_after_model = pin
            self.notices.status(f"Opening {pin.model['name']} for pin {pin.name}…", 6000)
            self.models.load(pin.model["key"])  # not again when it is loading already
            return
        before = self.state.view
        with self.state.held():  # back to random weights and the pin's view: one request
            if pin.model is None and self.models.key is not None:
                self.models.use_random()
            self._apply(pin)
        if self.state.view == before:
            self.request()  # the pin is what the View holds: show it again (after a failure, a worker's death)

    def _apply(self, pin: Pin) -> None:
        shape = self.models.shape
        if pin.model is not None and shape is not None and (
                (pin.config.d_model, pin.config.n_layers) != (shape.d_model, shape.n_layers)
                or pin.config.n_heads not in shape.head_choices()
                or pin.config.kv_heads not in shape.kv_choices(pin.config.n_heads)):
            self.notices.alert("Cannot load the pin", f"pin {pin.name} does not fit {shape.name} (d_model {pin.config.d_model}, "
                                           f"{pin.config.n_heads} heads, {pin.config.kv_heads} KV heads); it was "
                                           "made for another model.")
            return
        if len(pin.text) > MAX_TEXT_CHARS:
            self.notices.status(f"Pin {pin.name}'s text is {len(pin.text):,} characters; the text box holds "
                                f"{MAX_TEXT_CHARS:,}, so the rest is cut.", 10000)
        with self.state.held():  # the pin's text, probe, KV point, layer and configuration: one request
            self.state.update(text=pin.text)
            self.roles.set_probe(pin.probe)
            point = pin.model.get("kv_point") if pin.model is not None else None
            if point is not None:
                self.models.show_kv_point((point["method"], point["setting"], point["sinks"]), point["label"])
            else:
                self.models.clear_kv_point()
            if pin.model is not None:
                self.models.set_view(pin.model["layer"], pin.model["all_layers"])
            self.config_panel.set_config(pin.config)
        self.plan.restore(pin.plan)

    def on_model_loaded(self, key: str) -> None:
        """A pin waiting for this model is put back (another model's end leaves it waiting for its own)."""
        pin = self._load_after_model
        if pin is None or pin.model is None or pin.model["key"] != key:
            return
        self._load_after_model = None
        if pin in self.pins:
            self._apply(pin)

    def on_model_failed(self) -> None:
        """The model a pin waited for could not be loaded: the pin is not put back later by surprise."""
        pin, self._load_after_model = self._load_after_model, None
        if pin is not None:
            self.notices.status(f"Pin {pin.name} was not put back: its model could not be loaded.", 10000)

    def open_diff(self, a: int, b: int) -> DiffDialog | None:
        pa, pb = self.pins[a], self.pins[b]
        if pa.probs is None or pb.probs is None:
            self.notices.status("One of the pins has no heatmaps to compare.", 6000)
            return None
        try:
            diff, note = attention_diff(pa.probs, pa.tokens, pb.probs, pb.tokens, pa.name, pb.name,
                                        why_tokens_differ(pa, pb))
        except ValueError as exc:
            self.notices.alert("Cannot compare these heatmaps", str(exc))
            return None
        group = pa.config.group_size if len(diff) == pa.config.n_heads else 1
        dialog = DiffDialog(diff, pa.tokens, group, (pa.name, pb.name), note, self.notices.parent)
        self.diff_dialogs.append(dialog)
        dialog.finished.connect(lambda *_: self.diff_dialogs.remove(dialog) if dialog in self.diff_dialogs else None)
        dialog.show()
        return dialog

    # -- files ---------------------------------------------------------------------------------
    def _on_table_export_requested(self, fmt: str) -> None:
        name, _ = QFileDialog.getSaveFileName(self.notices.parent, "Export comparison", f"comparison.{fmt}",
                                              "CSV (*.csv)" if fmt == "csv" else "Markdown (*.md)")
        if name:
            self.export_table(Path(name), fmt)

    def export_table(self, path: Path, fmt: str) -> None:
        t = self.table
        text = as_csv(t.names, t.rows()) if fmt == "csv" else t.markdown()
        try:
            write_text_atomic(path, text)
        except ExportError as exc:
            self.notices.alert("Export failed", str(exc))
            return
        self.notices.status(f"Wrote {path}", 6000)

    def save(self, path: Path | None = None) -> bool:
        if path is None:
            path = self.workspace_path
        if path is None:
            name, _ = QFileDialog.getSaveFileName(self.notices.parent, "Save workspace", "workspace.attn.json",
                                                  "Attention Sandbox workspace (*.json)")
            if not name:
                return False
            path = Path(name)
        try:
            save_workspace(path, self.pins)
        except ExportError as exc:
            self.notices.alert("Save failed", str(exc))
            return False
        self.workspace_path = path
        self.unsaved = False
        self.notices.status(f"Saved {len(self.pins)} pin{'' if len(self.pins) == 1 else 's'} to {path}", 6000)
        return True

    def open(self, path: Path | None = None) -> bool:
        if path is None:
            name, _ = QFileDialog.getOpenFileName(self.notices.parent, "Open workspace", "",
                                                  "Attention Sandbox workspace (*.json);;All files (*)")
            if not name:
                return False
            path = Path(name)
        try:
            pins = load_workspace(path)
        except ValueError as exc:  # nothing in the open workspace changes
            self.notices.alert("Cannot open workspace", str(exc))
            return False
        kept = self.keep_replaced()
        old = (self.pins, self.workspace_path, self._awaiting)
        self.pins, self.workspace_path, self._awaiting = pins, path, []
        try:
            self.refresh()
        except Exception as exc:  # a file the checks let through but the table cannot show: put it all back
            self.pins, self.workspace_path, self._awaiting = old
            self.refresh()
            self.notices.alert("Cannot open workspace", f"{path.name} cannot be shown ({type(exc).__name__}: {exc}); "
                                                       "the open workspace is unchanged.")
            return False
        self.unsaved = False
        replaced = f"; the unsaved pins it replaced are kept in {kept}" if kept else ""
        self.notices.status(f"Opened {len(pins)} pin{'' if len(pins) == 1 else 's'} from {path}"
                                            f"{replaced}", 12000 if kept else 6000)
        return True
