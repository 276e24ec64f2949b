"""The Plan tab's controller: the model the window shows (its layers from the sliders or the open real model,
its parameter count from the preset) planned on the chosen GPUs, redrawn when the tab is on screen; this
machine measured on the compute worker; the app's own timing drawn on the roofline as measured points."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QTimer

from core.arch.config import AttentionConfig, divisors
from core.arch.model import Architecture
from core.arch.presets import load_presets
from core.format import format_bytes, format_count
from core.kinds.registry import kind_of
from core.plan.engines.engine_plan import engine_plan
from core.plan.fit import CHECKPOINT
from core.plan.fit import plan as plan_of
from core.plan.gpus import GPU, THIS_MACHINE, find_gpu, this_machine
from core.plan.pin import MACHINE_KEYS, plan_input
from core.plan.report import (
    decode_sentence,
    engine_lines,
    engine_sentence,
    gib,
    heads_sentence,
    plan_inputs,
    plan_json,
    trained_context_note,
    verdict,
    weights_sentence,
)
from core.plan.weights import WeightParts
from sandbox.jobs.types import Failure
from sandbox.state.app_state import AppState
from sandbox.state.shown import Shown
from sandbox.state.view import View
from sandbox.tabs.plan_roofs import roofs as plan_roofs
from widgets.plan.panel import PlanPanel

if TYPE_CHECKING:
    from sandbox.tabs.models import ModelController
    from widgets.controls.config_panel import ConfigPanel

KV_NAMES = {"bfloat16": "bf16", "float16": "fp16", "fp8_e4m3": "fp8", "float32": "fp32"}  # the panel's names


def tp_degrees(cfg: AttentionConfig) -> list[int]:
    """The TP degrees the layer allows: divisors of n_heads its kind can share its cache out by (a standard layer's
    divide, or are multiples of, K)."""
    spec = cfg.layer_spec()
    kind = kind_of(spec)

    def fits(tp: int) -> bool:
        try:
            kind.check_tp(spec, tp)
        except ValueError:
            return False
        return True

    return [t for t in divisors(cfg.n_heads) if fits(t)]


class PlanTab:
    def __init__(self, state: AppState, runner: Any, models: ModelController, config_panel: ConfigPanel,
                 shown: Shown) -> None:
        self.state, self.runner, self.models, self.config_panel, self.shown = state, runner, models, config_panel, shown
        self.panel = PlanPanel()
        self.machine: dict[str, Any] | None = None  # this machine's measured roof
        self.dirty = True
        self.used = False  # shown once: pins keep its plan
        self.last: dict[str, Any] | None = None  # the plan on screen, as JSON
        self._params_for: object = None  # the preset (or model) whose count the parameters box holds
        self._kept_from: str | None = None  # a named model whose count stays in the box after the sliders left it
        self._kept_kind, self._kept_active, self._kept_total = "causal", None, None  # that model's, kept with it
        self._kept_weights: dict[str, Any] | None = None  # its parts and their checkpoint formats, kept with it
        p = self.panel
        p.changed.connect(self.refresh)
        p.params.editingFinished.connect(self._on_params_typed)
        p.measure_requested.connect(self.measure)
        runner.roof_ready.connect(self._on_roof)
        runner.failed.connect(self._on_failed)
        # after the window has kept the timing (its slot runs after this one's): the measured points follow
        runner.timing_ready.connect(lambda _o: QTimer.singleShot(0, self.changed))
        runner.timing_started.connect(self._on_timing_started)
        state.changed.connect(self._on_state_changed)
        models.changed.connect(self.changed)
        p.shown.connect(lambda: self.refresh() if self.dirty else None)

    def _on_state_changed(self, new: View, old: View) -> None:
        if new.config != old.config:
            self.changed()

    def visible(self) -> bool:
        return self.panel.isVisible()

    def changed(self) -> None:
        """The model or the timing changed: redraw now when the tab is shown, else when it is next shown."""
        self.dirty = True
        if self.visible():
            self.refresh()

    def active_params(self, params: int) -> int | None:
        """A mixture of experts' active count, while the parameters box holds its preset's total (also once the
        sliders left the preset and its count was kept: read as dense, a mixture's decode bound falls several-fold)."""
        _key, total, _source = self._named_model()
        preset = self.config_panel.preset.currentData()
        if preset is None and self._kept_from is not None and self.models.shape is None:
            return self._kept_active if params == self._kept_total else None
        active = preset.active_params if preset is not None and self.models.shape is None else None
        return active if active is not None and params == total else None

    def weight_parts(self) -> WeightParts | None:
        """The model's weights by part and checkpoint format (also once the sliders left the preset and its count
        was kept; a count typed over it is refused in checkpoint mode); None for a model whose parts are not known."""
        preset = self.config_panel.preset.currentData()
        if preset is None and self._kept_from is not None and self.models.shape is None:
            data = self._kept_weights
        else:
            data = preset.weights if preset is not None and self.models.shape is None else None
        return WeightParts.from_json(data) if data else None

    def kind(self) -> str:
        """encoder for an open encoder or an encoder's preset (no cache to plan), also once the sliders left it and
        its count was kept; else causal."""
        if self.models.shape is not None:
            return self.models.shape.kind
        preset = self.config_panel.preset.currentData()
        if preset is None and self._kept_from is not None:
            return self._kept_kind
        return preset.kind if preset is not None else "causal"

    def _named_model(self) -> tuple[object, int | None, str]:
        """(key, params, source) of the preset the sliders show, or of the open real model."""
        shape = self.models.shape
        if shape is not None:
            preset = next((p for p in load_presets() if p.name == shape.name), None)
            return (shape.name, preset.params if preset else None,
                    preset.params_source if preset else f"{shape.name} has no count here; type it")
        preset = self.config_panel.preset.currentData()
        if preset is None:
            return None, None, ""
        return preset.name, preset.params, f"{preset.name}: {preset.params_source}"

    def _on_params_typed(self) -> None:
        if self.panel.params.text() != self.panel._preset_params:
            self._kept_from = None  # the user's own count: no longer another model's

    def _sync_model(self, cfg: AttentionConfig) -> None:
        self.panel.set_tp_choices(tp_degrees(cfg))
        key, params, source = self._named_model()
        if key != self._params_for:  # a new preset or model: its own count; a slider move keeps the user's
            if key is not None:  # what the count belongs to, kept with it if the sliders leave this model
                preset = self.config_panel.preset.currentData()
                self._kept_kind = self.kind()
                self._kept_active = preset.active_params if preset is not None else None
                self._kept_weights = preset.weights if preset is not None else None
                self._kept_total = params
                self.panel.offer_checkpoint(bool(self._kept_weights) and self.models.shape is None)
            left, self._params_for = self._params_for, key
            if key is not None or not self.panel.params.text():
                self.panel.set_params(params, source)
                self._kept_from = None
            else:
                if self.panel.params.text() == self.panel._preset_params:  # the named model's, not typed
                    self._kept_from = str(left)
                self.panel.params_source.setText(f"Parameters: kept from {left}; the sliders no longer show it, so "
                                                 "type this model's own count if it is another.")

    def gpu(self, gpu_id: str, memory_gib: float | None = None) -> GPU:
        """The card planned for: a catalogue card (with the memory the user typed, if any) or this machine."""
        if gpu_id != THIS_MACHINE:
            gpu = find_gpu(gpu_id)
            return gpu.with_memory_gib(memory_gib) if memory_gib is not None else gpu
        if self.machine is None:
            raise ValueError("this machine is not measured yet; press Measure this machine.")
        m = self.machine
        return this_machine(m["name"], m["memory_bytes"], m["peak_flops"], m["bandwidth_bytes_s"], m["dtype"], m["how"])

    def refresh(self) -> None:
        if not self.visible():
            self.dirty = True
            return
        self.dirty = False
        self.used = True  # pins from now on keep the plan
        cfg = self.state.view.config
        self._sync_model(cfg)
        p = self.panel
        p.measure.setVisible(p.gpu.currentData() == THIS_MACHINE)  # measure, or measure again (a loaded machine)
        p.measure.setText("Measure this machine" if self.machine is None else "Measure again")
        try:
            i = p.inputs()
            gpu = self.gpu(i["gpu"], i.get("memory_gib"))
            plan = plan_inputs(cfg, i["params"], gpu, i["n_gpus"], i["tp"], i["weights_dtype"], i["kv_dtype"],
                               i["batch"], i["context"], i["reserve"], self.kind(), self.active_params(i["params"]),
                               self.architecture(cfg), self.weight_parts())
            j = plan_json(plan, cfg)
            engine_error = self.add_engine(j, plan)
        except (ValueError, OverflowError) as exc:
            self.last = None
            p.show_error(str(exc))  # and the charts of the last plan go: they are not this one's
            return
        self.last = j
        machine = self.gpu(THIS_MACHINE) if self.machine is not None else None
        roofs, note = plan_roofs(j, self.shown.timing(), machine)
        mode = "As the model needs it: " if j.get("engine") is not None or engine_error else ""
        e = j.get("engine")
        refused = bool(engine_error or (e is not None and e["refusal"]))
        first = engine_error or (e["refusal"] if e is not None else "")  # a refusal is said first, then the rest
        p.show_plan(j, " ".join(s for s in (first, self.kept_note(i["params"]), mode + verdict(j),
                                            "" if first else engine_sentence(j), self.context_note(j)) if s),
                    self.details(j), roofs, note, served=not refused)
        p.show_engine(engine_lines(j, with_command=False) if e is not None else None,
                      " ".join(e["command"]) if e is not None and not refused else "")

    def add_engine(self, j: dict[str, Any], plan: Any) -> str:
        """The chosen engine's figures into j; '' or the sentence that says why this engine cannot serve the plan."""
        name = self.panel.engine.currentData()
        if not name:
            return ""
        preset = self.config_panel.preset.currentData()
        model = preset.repo if preset is not None and preset.repo and self.models.shape is None else (
            self.models.shape.name if self.models.shape is not None else "MODEL")
        try:
            j["engine"] = engine_plan(name, plan, model, **self.panel.engine_options())
        except ValueError as exc:
            return f"{self.panel.engine.currentText()} cannot serve this plan: {exc}"
        return ""

    def architecture(self, cfg: AttentionConfig) -> Architecture | None:
        """The open real model's layers with the change applied only where it is (one layer, or every layer), as the
        costs count them; None in design mode (the sliders' layers, every one alike)."""
        if self.models.shape is None:
            return None
        return self.models.cost_context(cfg).arch

    def kept_note(self, params: int) -> str:
        """Said first in the verdict: the parameter count is another model's, kept after the sliders left it."""
        if self._kept_from is None or self.panel.params.text() != self.panel._preset_params:
            return ""
        return (f"The parameters ({format_count(params).replace('G', 'B')}) are {self._kept_from}'s, kept after the sliders changed the "
                "model: type this model's own count to plan it.")

    def context_note(self, j: dict[str, Any]) -> str:
        shape = self.models.shape
        return trained_context_note(j, shape.name, shape.max_tokens) if shape is not None else ""

    @staticmethod
    def details(j: dict[str, Any]) -> str:
        per, i = j["per_gpu"], j["inputs"]
        parts = " · ".join(f"{name} {gib(per[k])}" for k, name in
                           (("weights", "weights"), ("kv_cache", "KV cache"), ("reserve", "allowance"), ("free", "free")))
        state = (f" The KV cache includes the recurrent layers' fixed state, {gib(per['state'])} ("
                 f"{i.get('state_dtype', 'float32')}, whatever the context)." if per.get("state") else "")
        lines = [f"Per GPU: {parts} of {gib(per['capacity'])}.{state}", *weights_sentence(j), heads_sentence(j)]
        if i["pp"] > 1:
            lines.append(f"{i['n_gpus']} GPUs at TP {i['tp']}: {i['pp']} pipeline stages of up to "
                         f"{j['layers_per_stage']} layers each (the GPUs beyond one TP group split the layers).")
        if j["decode"] is not None:
            lines.append(decode_sentence(j))
        return "<br>".join(html.escape(line, quote=False) for line in lines)

    def sweep_series(self, configs: list[AttentionConfig | None],
                     knob: str = "") -> tuple[str, list[float | None], float] | None:
        """The Sweep tab's KV plot gains each point's memory a GPU under this tab's plan, once it is used."""
        if not self.used:
            return None
        try:
            d = self.panel.inputs()
            gpu = self.gpu(d["gpu"], d.get("memory_gib"))
        except (ValueError, OverflowError):
            return None
        values: list[float | None] = []
        for c in configs:
            try:
                if c is None:
                    raise ValueError("not a configuration")
                context = c.seq_len if knob == "seq_len" else d["context"]  # a swept workload is the plan's too
                batch = c.batch_size if knob == "batch" else d["batch"]
                p = plan_inputs(c, d["params"], gpu, d["n_gpus"], d["tp"], d["weights_dtype"], d["kv_dtype"],
                                batch, context, d["reserve"], self.kind(), weights=self.weight_parts())
                q = plan_of(p)
                r = float(q.weights + q.kv_cache + q.reserve)
            except ValueError:
                r = None  # a point the plan cannot take (a TP degree its heads do not allow)
            values.append(r)
        return (f"memory a GPU: {d['n_gpus']} x {gpu.name}, TP {d['tp']} (dashed: its {format_bytes(gpu.memory_bytes)})",
                values, float(gpu.memory_bytes))

    # -- pins ------------------------------------------------------------------------------------
    def pin_inputs(self, cfg: AttentionConfig, arch: Architecture | None) -> dict[str, Any] | None:
        """The plan a new pin keeps: the tab's inputs once it has been used, when they plan cfg's model."""
        if not self.used:
            return None
        try:
            d = self.panel.inputs()
            if d["gpu"] == THIS_MACHINE:
                if self.machine is None:
                    return None
                d["machine"] = {k: self.machine[k] for k in MACHINE_KEYS}
            if self.kind() == "encoder":
                d["kind"] = "encoder"  # a pin of random weights has no architecture to say so
            active = self.active_params(d["params"])
            if active is not None:
                d["active_params"] = active  # a mixture of experts' Compare rows decode as the tab does
            if d["weights_dtype"] == CHECKPOINT:
                parts = self.weight_parts()
                if parts is None:
                    return None
                d["weights"] = parts.to_file()  # the pin plans its checkpoint as the tab does
            plan_input(d, cfg, arch)
        except (ValueError, OverflowError):
            return None
        return d

    def restore(self, d: dict[str, Any] | None) -> None:
        """A pin's plan back in the tab (a pin without one leaves the tab as it is)."""
        if d is None:
            return
        p = self.panel
        widgets = (p.gpu, p.n_gpus, p.tp, p.weights, p.kv, p.batch, p.context, p.reserve, p.params)
        for w in widgets:
            w.blockSignals(True)
        try:
            if d["gpu"] == THIS_MACHINE and self.machine is None:  # never in place of this machine's own measurement
                self.machine = {**d["machine"], "name": f"{d['machine']['name']} (as pinned)"}
            p.gpu.setCurrentIndex(max(0, p.gpu.findData(d["gpu"])))
            p.n_gpus.setValue(d["n_gpus"])
            self._sync_model(self.state.view.config)
            p.tp.setCurrentIndex(max(0, p.tp.findData(d["tp"])))
            p.weights.setCurrentIndex(max(0, p.weights.findData(d["weights_dtype"])))
            p.kv.setCurrentIndex(max(0, p.kv.findData(KV_NAMES.get(d["kv_dtype"], d["kv_dtype"]))))
            p.batch.setValue(d["batch"])
            p.context.setValue(d["context"])
            p.reserve.setValue(d["reserve"] * 100)
            p.set_memory(d.get("memory_gib"))
            p.params.setText(f"{d['params']:,}")
        finally:
            for w in widgets:
                w.blockSignals(False)
        self.changed()

    def _on_timing_started(self, _rid: int) -> None:
        if self.visible():
            self.panel.roof_note.setText("Timing the layer on this machine… its points follow when it is done.")

    def measure(self) -> None:
        self.panel.measure.setEnabled(False)
        self.panel.measure.setText("Measuring…")
        self.runner.submit_roof(self.state.view.device)

    def _on_roof(self, roof: dict[str, Any]) -> None:
        self.machine = roof
        self.panel.measure.setEnabled(True)
        self.panel.measure.setText("Measure this machine")
        self.changed()

    def _on_failed(self, failure: Failure) -> None:
        if failure.stage == "roof":
            self.panel.measure.setEnabled(True)
            self.panel.measure.setText("Measure this machine")
            self.panel.show_error(f"measuring this machine failed: {failure.message}")
