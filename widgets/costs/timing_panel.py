"""Measured timing: median and spread, TFLOP/s, device, backend, fused vs separate QKV,
prefill vs decode. Takes the report's timing dict (plain values), never tensors."""

from __future__ import annotations

import re
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from core.kinds.registry import KINDS
from core.timing.cpu_load import BUSY_CORES
from core.timing.noise import ratio_ci
from widgets.common.steady import keep_room, reserve_lines
from widgets.common.style import set_colour, set_tip


def busy_note(t: dict[str, Any]) -> str:
    """' — other processes kept 1.0 core busy: ...' when a CPU timing shared the machine (core/timing/cpu_load.py)."""
    load = t.get("other_load")
    if load is None or load < BUSY_CORES:
        return ""
    return (f" — other processes kept {load:.1f} core{'s' if load >= 1.5 else ''} busy meanwhile: the figures may be "
            "inflated; measure again (Ctrl+M) when the machine is idle")


def ms(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f} ms"
    if value >= 1:
        return f"{value:.2f} ms"
    return f"{value * 1e3:.0f} µs"


class TimingPanel(QWidget):
    measure_requested = Signal()
    FIELDS = [
        ("state", "Status", "Timing runs once the sliders settle; a new change interrupts it."),
        ("device", "Device", "Where the layer ran, and which scaled_dot_product_attention backend was pinned."),
        ("layer", "Layer forward", "Median of the whole layer (QKV, attention, W_o) for the chosen phase, "
                                   "with the 25th-75th percentile spread, the interquartile range as a share of "
                                   "the median (IQR) and the repeat count."),
        ("tflops", "Achieved", "FLOPs of the layer / median time. Core: attention-core FLOPs / core median, "
                               "the figure comparable with FlashAttention's published numbers."),
        ("qkv", "QKV fused / 3", "One (H+2K)*h projection against three with the same weights: "
                                         "the same math, one kernel launch instead of three."),
        ("phases", "Prefill / decode", "The whole layer for seq_len tokens at once, and for one new token "
                                        "against seq_len keys (seq_len - 1 cached plus its own; min(seq_len, W) in a local "
                                        "layer): decode reads the whole KV cache per token."),
        ("forms", "Forms", "A layer kind of several execution forms, each timed for the prefill and one decode step "
                           "(shown for such a layer's timing)."),
    ]

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        box = QGroupBox("Measured")
        grid = QGridLayout(box)
        grid.setVerticalSpacing(2)
        self.labels: dict[str, QLabel] = {}
        self.names: dict[str, QLabel] = {}
        for i, (key, title, tip) in enumerate(self.FIELDS):
            label = QLabel("–")
            label.setWordWrap(True)  # long figures wrap instead of widening the window past 1280
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            label.setToolTip(tip)
            name = QLabel(title)
            name.setToolTip(tip)
            name.setStyleSheet("color: #6b7280;")
            self.labels[key] = label
            self.names[key] = name
            if i == 0:
                continue  # the status row is laid out below, beside its button
            row, col = 1 + (i - 1) // 2, 2 * ((i - 1) % 2)
            grid.addWidget(name, row, col)
            grid.addWidget(label, row, col + 1)
        grid.setColumnStretch(1, 1)
        grid.setColumnStretch(3, 1)
        self.labels["forms"].hide()  # shown for a timing of a kind of several forms
        self.names["forms"].hide()
        self.busy = QProgressBar()
        self.busy.setRange(0, 0)  # indeterminate: we cannot know how many repeats remain
        self.busy.setMaximumHeight(6)
        self.busy.setTextVisible(False)
        keep_room(self.busy)  # the bar coming and going moves no row
        self.busy.hide()
        grid.addWidget(self.busy, 4, 0, 1, 4)
        self.measure = QPushButton("Measure now (Ctrl+M)")
        self.measure.setToolTip("Time this configuration even if it takes long; a slider change still interrupts it")
        self.measure.clicked.connect(self.measure_requested)
        keep_room(self.measure)
        self.measure.hide()
        reserve_lines(self.labels["state"], 2)  # "waiting…", "measuring…" and "measured …" take the same room
        # The status and its button share one row of their own, so neither clips the other.
        state_name = QLabel(self.FIELDS[0][1])
        state_name.setToolTip(self.FIELDS[0][2])
        state_name.setStyleSheet("color: #6b7280;")
        state_row = QHBoxLayout()
        state_row.addWidget(self.labels["state"], 1)
        state_row.addWidget(self.measure, 0, Qt.AlignmentFlag.AlignTop)
        grid.addWidget(state_name, 0, 0)
        grid.addLayout(state_row, 0, 1, 1, 3)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(box)
        self.timing: dict[str, Any] | None = None

    def show_waiting(self) -> None:
        """A new configuration is waiting to be timed: the figures below are the previous one's, greyed."""
        self.labels["state"].setText("timed once the settings stop changing… (the figures below are the previous "
                                     "configuration's)" if self.timing else "timed once the settings stop changing…")
        set_colour(self.labels["state"], "#6b7280")
        self._stale(True)

    def _stale(self, stale: bool) -> None:
        for key in ("device", "layer", "tflops", "qkv", "phases", "forms"):
            set_colour(self.labels[key], "#9ca3af" if stale else "")

    def show_unmeasured(self) -> None:
        """Live timing is off: nothing measured until the user asks."""
        self.busy.hide()
        self.measure.show()
        self.labels["state"].setText("not measured: live timing is off; press Measure now (Ctrl+M) to time it.")
        set_colour(self.labels["state"], "#6b7280")

    def show_measuring(self, device_label: str) -> None:
        """device_label: CPU, CUDA or MPS. On the CPU nothing moves meanwhile: the busy bar's animation repainted the
        window 60 times a second and took a few percent of the cores the measurement ran on (bench/timing_accuracy.py's
        in-window case shows the difference)."""
        self.measure.hide()
        cpu = device_label == "CPU"
        self.labels["state"].setText(f"measuring on {device_label}…" + (" (no progress animation: it would take CPU "
                                                                         "time from the figure; the window stays live)"
                                                                         if cpu else ""))
        set_colour(self.labels["state"], "#2563eb")
        self.busy.setVisible(not cpu)

    def show_error(self, message: str, skipped: bool = False) -> None:
        """A refused or failed timing (red), or one skipped as too slow (amber, with Measure now)."""
        self.busy.hide()
        self.timing = None
        self.measure.setVisible(skipped)
        self.labels["state"].setText(message)
        set_colour(self.labels["state"], "#b45309" if skipped else "#dc2626")
        for key in ("device", "layer", "tflops", "qkv", "phases", "forms"):
            self.labels[key].setText("–")
        for w in (self.labels["forms"], self.names["forms"]):  # a kind's forms, shown again by its next timing
            w.hide()

    def show_timing(self, t: dict[str, Any], config_text: str, batch: int = 1, seq_len: int = 1,
                    decodes: bool = True) -> None:
        """t: the report's timing dict. Prefill handles batch x seq_len tokens and a decode step batch
        tokens, so the two compare per token; an encoder (decodes False) has no decode step."""
        self._stale(False)
        self.busy.hide()
        self.measure.hide()
        self.timing = t
        cpu = " — CPU run (GPU figures differ)" if t["device"] == "cpu" else ""
        busy = busy_note(t)
        self.labels["state"].setText(f"measured {config_text}{cpu}{busy}")
        set_colour(self.labels["state"], "#b45309" if busy else "#059669")  # amber is a warning's, as elsewhere
        kernel = t.get("kernel", "SDPA")
        # A window or sinks: flex_attention on CUDA; blockwise SDPA once T >= 2W, SDPA with a mask below, elsewhere.
        masked = (" · flex_attention" if kernel.startswith("flex") else " · blockwise" if kernel.startswith("blockwise")
                  else " + mask" if "explicit mask" in kernel else "")
        name = t["device_name"]
        of_all = re.search(r"\((\d+) threads?\)", name)
        fewer = ""  # "1 of 2 threads" beside the figure too: it does not compare with one on every thread
        if t.get("threads") and of_all:  # "CPU (2 threads)" -> "CPU (1 of 2 threads)": the ones the timing ran on
            name = name.replace(of_all.group(0), f"({t['threads']} of {of_all.group(1)} threads)")
            fewer = f", on {t['threads']} of {of_all.group(1)} threads" if t["threads"] < int(of_all.group(1)) else ""
        self.labels["device"].setText(f"{name} · SDPA {t['backend']}{masked} · {t['dtype']}")
        self.labels["device"].setToolTip(f"The core ran as {kernel}, backend {t['backend']}, in the compute dtype "
                                         f"{t['dtype']} (a KV-cache format changes the bytes counted, not the "
                                         "timing). A T x T mask saves no time in SDPA, which still scores every "
                                         "pair; blockwise SDPA (each W queries against their 2W keys) and "
                                         "flex_attention (CUDA) skip what lies outside the band.")
        iqr = (t["p75_ms"] - t["p25_ms"]) / t["median_ms"] if t["median_ms"] > 0 else 0.0
        self.labels["layer"].setText(
            f"{ms(t['median_ms'])}  (p25 {ms(t['p25_ms'])} – p75 {ms(t['p75_ms'])}, IQR {iqr:.0%}, {t['reps']} reps"
            f"{fewer})"
        )
        achieved = f"{t['tflops']:.3g} TFLOP/s layer · {t['core_tflops']:.3g} TFLOP/s core ({ms(t['core_median_ms'])})"
        if t.get("full_core_ms"):  # a local layer: what its window saves, in time against FLOPs
            ratio = t["core_median_ms"] / t["full_core_ms"]
            verdict = "faster" if ratio < 1 else "not faster"
            achieved += (f"\nwindowed core {ms(t['core_median_ms'])} vs full causal {ms(t['full_core_ms'])}: "
                         f"x{ratio:.2f} the time for x{t['band_flop_ratio']:.2f} the FLOPs ({verdict})")
        self.labels["tflops"].setText(achieved)
        kind = next((kind for kind in KINDS.values() if kind.timing_forms(t)), None)  # a kind's own forms
        forms = kind.timing_forms(t) if kind is not None else ""
        self.labels["forms"].setText(forms.replace("; ", "\n") if forms else "–")
        if kind is not None:
            self.names["forms"].setText(f"{kind.short} forms")
            for w in (self.labels["forms"], self.names["forms"]):
                set_tip(w, kind.forms_tip)
        for w in (self.labels["forms"], self.names["forms"]):
            w.setVisible(bool(forms))
        if t.get("fused_qkv_ms"):
            ratio = t["separate_qkv_ms"] / t["fused_qkv_ms"]
            kept = t.get("samples_ms") or {}
            sure = ratio_ci(kept.get("separate_qkv") or [], kept.get("fused_qkv") or [])  # separate over fused
            self.labels["qkv"].setText(f"{ms(t['fused_qkv_ms'])} fused · {ms(t['separate_qkv_ms'])} separate "
                                       + (f"(x{ratio:.2f})" if sure is None else f"({sure.short()})"))
            self.labels["qkv"].setToolTip(self.FIELDS[4][2] + (f" Separate over fused: {sure.text()}, from both "
                                                               "measurements' repeats." if sure else ""))
        else:
            self.labels["qkv"].setText("–")
        prefill_per_token = t["prefill_ms"] / max(1, batch * seq_len)
        if not decodes:
            self.labels["phases"].setText(f"{ms(t['prefill_ms'])} prefill ({ms(prefill_per_token)} per token) · "
                                          "no decode: an encoder reads its input at once")
            return
        decode_per_token = t["decode_ms"] / max(1, batch)
        ratio = decode_per_token / prefill_per_token if prefill_per_token else float("nan")
        self.labels["phases"].setText(
            f"per token: {ms(prefill_per_token)} in prefill, {ms(decode_per_token)} in decode (x{ratio:.3g}); "
            f"{ms(t['prefill_ms'])} for the whole prefill"
        )
