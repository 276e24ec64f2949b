"""The standard attention layer as a layer kind: MHA, GQA and MQA, with the 2026 extras (a head width of its own,
q/k norm, biases by projection, a sliding window, sinks)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from core.arch.formats import check_kv_format
from core.arch.layer import LayerSpec
from core.format import format_noun
from core.kinds.kind import FlopCounts, LayerKind, Workload
from core.kinds.standard.counts import (
    ParamCounts,
    standard_flops,
    standard_params,
    standard_timing_bytes,
)
from core.kinds.standard.estimate import estimate_standard_timing_s

if TYPE_CHECKING:
    from core.arch.config import AttentionConfig


class StandardKind(LayerKind):
    name = "standard"
    short = "standard"
    title = "Standard (MHA / GQA / MQA)"
    picker = "standard: MHA / GQA / MQA"
    about = "Standard: each KV head caches its own key and value (MHA, GQA, MQA: the n_kv_heads slider)."
    projection_rows = (("gate", "W_gate"), ("q", "W_q"), ("k", "W_k"), ("v", "W_v"), ("o", "W_o"))
    cli_help = "MHA/GQA/MQA: --heads, --kv-heads"

    def mode(self, spec: LayerSpec) -> str:
        if spec.n_kv_heads == spec.n_heads:
            return "MHA"
        return "MQA" if spec.n_kv_heads == 1 else "GQA"

    def label(self, spec: LayerSpec) -> str:
        mode = self.mode(spec)
        label = f"GQA-{spec.n_kv_heads} (group {spec.group_size})" if mode == "GQA" else mode
        return f"{label}, gated" if spec.output_gate else label

    def baseline(self, spec: LayerSpec) -> LayerSpec:
        return replace(spec, n_kv_heads=spec.n_heads)

    def params(self, d: int, spec: LayerSpec) -> ParamCounts:
        return standard_params(d, spec)

    def flops(self, d: int, spec: LayerSpec, work: Workload, form: str | None = None) -> FlopCounts:
        return standard_flops(d, spec, work)

    def cache_values_per_token(self, spec: LayerSpec) -> int:
        return 2 * spec.kv_width  # K and V of every KV head

    def check_kv_format(self, spec: LayerSpec, kv_format: str) -> None:
        check_kv_format(kv_format, spec.head_dim)

    def check_tp(self, spec: LayerSpec, tp: int) -> None:
        K = spec.n_kv_heads
        if K % tp and tp % K:
            raise ValueError(f"a TP degree of {tp} neither divides nor is a multiple of {K} KV heads, so they "
                             f"cannot be shared out evenly; choose a degree that divides {K} or a multiple of it.")

    def kv_heads_per_gpu(self, spec: LayerSpec, tp: int) -> int:
        """max(1, K / t): beyond t = K each GPU keeps one head, replicated t / K times."""
        return max(1, spec.n_kv_heads // tp)

    def replication(self, spec: LayerSpec, tp: int) -> int:
        return max(1, tp // spec.n_kv_heads)

    def gpu_cache_bytes_per_token(self, spec: LayerSpec, tp: int, kv_format: str) -> int:
        share = replace(spec, n_kv_heads=self.kv_heads_per_gpu(spec, tp), n_heads=spec.n_heads // tp)
        return self.cache_bytes_per_token(share, kv_format)

    def timing_bytes(self, cfg: AttentionConfig, materialises_scores: bool) -> int:
        return standard_timing_bytes(cfg, materialises_scores)

    def estimate_timing_s(self, cfg: AttentionConfig, device_type: str, budget_s: float, include_qkv: bool) -> float:
        return estimate_standard_timing_s(cfg, device_type, budget_s, include_qkv)

    def switch_to(self, cfg: AttentionConfig, widths: object = None) -> tuple[AttentionConfig, str]:
        """Back to standard attention: MHA of the same heads, head_dim tied when d_model allows, else the other kind's
        baseline width."""
        H = cfg.n_heads
        width = cfg.widths.baseline_head_dim if cfg.widths is not None else cfg.head_dim
        tied = cfg.d_model % H == 0
        new = cfg.with_(widths=None, n_kv_heads=H, explicit_head_dim=None if tied else width)
        return new, (f"Attention standard: MHA of {format_noun(H, 'head')}, head_dim "
                     + (f"{cfg.d_model // H} (d_model / n_heads)." if tied
                        else f"{width} (its own, as {cfg.mode}'s values)."))


STANDARD = StandardKind()
