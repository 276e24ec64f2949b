"""The Memory tab's controller: the configuration's cache against context (a hybrid stack's KV and state, or a
plain model's KV) beside a pure-attention baseline the user picks, redrawn when the configuration changes."""

from __future__ import annotations

from core.arch.config import AttentionConfig
from core.arch.presets import find_preset, load_presets
from core.long.memory_curve import memory_curve
from sandbox.state.app_state import AppState
from sandbox.state.view import View
from widgets.long.memory_chart import MemoryChart

DEFAULT_BASELINE = "Llama 3 8B"


def baseline_names() -> list[str]:
    """Presets of pure attention that keep a cache: every layer a softmax layer, and causal."""
    return [p.name for p in load_presets() if p.fields.get("stack") is None and p.fields.get("causal")]


class MemoryTab:
    def __init__(self, state: AppState) -> None:
        self.state = state
        names = baseline_names()
        self.panel = MemoryChart(names, DEFAULT_BASELINE if DEFAULT_BASELINE in names else names[0])
        self.panel.baseline_changed.connect(lambda _n: self.refresh())
        self.panel.shown.connect(self._on_shown)
        state.changed.connect(self._on_state_changed)
        self.stale = True  # drawn when next on screen (a slider drag elsewhere costs nothing here)
        self.curve = None

    def _on_state_changed(self, new: View, old: View) -> None:
        if new.config != old.config:
            self.stale = True
            if self.panel.isVisible():
                self.refresh()

    def _on_shown(self) -> None:
        if self.stale:
            self.refresh()

    def refresh(self) -> None:
        cfg = self.state.view.config
        name = self.panel.baseline.currentText()
        workload = AttentionConfig(seq_len=cfg.seq_len, batch_size=cfg.batch_size, dtype=cfg.dtype, kv_dtype=cfg.kv_dtype,
                                   causal=True)  # the baseline's layers are the preset's; the formats are the user's
        baseline = find_preset(name).apply(workload)
        at = cfg.seq_len
        label = "this stack" if cfg.stack is not None else "this model"
        self.curve = memory_curve(cfg, baseline, name, at, label)
        self.stale = False
        self.panel.show_curve(self.curve, label, name)
