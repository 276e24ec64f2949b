"""DeepSeek-V4's attention as a layer kind (V4-Flash, V4-Pro): one shared KV head read in a window of W tokens and,
beyond it, over compressed entries (compressed sparse: every 4 tokens merged, an indexer's top-k read; heavily
compressed: every 128 merged, all read), per-head sinks and a grouped low-rank output. Its cache is not one record a
token: it says its own at T (the window, the entries, the index keys)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.arch.layer import LayerSpec
from core.format import format_bytes, format_noun, table_row
from core.kinds.dsv4.counts import (
    cache_bytes,
    decode_core,
    decode_parts,
    entries_read,
    v4_dims,
    v4_layer_flops,
    v4_param_counts,
)
from core.kinds.dsv4.spec import V4Dims
from core.kinds.kind import CliFlag, CostRow, FlopCounts, LayerKind, Workload
from core.kinds.projections import NamedParts
from core.kinds.standard.counts import standard_params
from core.timing.rates import ASSUMED_FLOPS_PER_S

if TYPE_CHECKING:
    from core.arch.config import AttentionConfig


VARIANTS = {"none": ("V4 window", "#94a3b8"), "csa": ("V4 CSA", "#0f766e"), "hca": ("V4 HCA", "#2dd4bf")}


class V4Kind(LayerKind):
    name = "dsv4"
    short = "V4"
    title = "DeepSeek-V4 attention"
    picker = "DeepSeek-V4: window + compressed entries"
    about = ("DeepSeek-V4 (V4-Flash, V4-Pro): every layer reads the last 128 tokens of one shared KV head and, beyond "
             "them, compressed entries: every 4 tokens merged with an indexer's top-k read (compressed sparse), or "
             "every 128 merged and all read (heavily compressed); per-head sinks and a grouped low-rank output.")
    projection_rows = (("q_a", "q_a_proj"), ("q_a_norm", "q_a_norm"), ("q_b", "q_b_proj"), ("kv", "kv_proj"),
                       ("kv_norm", "kv_norm"), ("o_a", "o_a_proj"), ("o_b", "o_b_proj"), ("sinks", "sinks"),
                       ("comp_kv", "compressor.kv_proj"), ("comp_gate", "compressor.gate_proj"),
                       ("comp_bias", "compressor.position_bias"), ("comp_norm", "compressor.kv_norm"),
                       ("idx_kv", "indexer.kv_proj"), ("idx_gate", "indexer.gate_proj"),
                       ("idx_bias", "indexer.position_bias"), ("idx_norm", "indexer.kv_norm"),
                       ("idx_q", "indexer.q_b_proj"), ("idx_weights", "indexer.weights_proj"))
    own_cost_rows = (("v4_cache", "V4 cache: window | entries | index"), ("v4_read", "V4 read / query: window + entries"))
    widths_type = V4Dims
    engine_pages = False  # engines keep its window and compressed entries in pools of their own, not modelled here
    cache_name = "window and compressed entries"
    colour = "#0f766e"
    timing_forms_key = "v4_forms"
    timing_form_names = ("v4_prefill_ms", "dense_prefill_ms", "v4_decode_ms", "dense_decode_ms")
    forms_tip = ("A DeepSeek-V4 layer's prefill and one decode step (its window and compressed entries, sinks, grouped "
                 "output) beside the same layer reading every causal token of its KV head, in the same run.")
    cli_flags = (CliFlag("v4-window", "window", "DeepSeek-V4: the recent tokens every layer reads (128)"),
                 CliFlag("v4-topk", "index_topk", "DeepSeek-V4: the compressed entries a sparse query reads (512)"))
    cli_help = "DeepSeek-V4 attention (window + compressed sparse entries), V4-Flash's widths by default"

    def variant(self, spec: LayerSpec) -> str:
        return VARIANTS[v4_dims(spec).compressor][0]

    def variant_colour(self, spec: LayerSpec) -> str:
        return VARIANTS[v4_dims(spec).compressor][1]

    def mode(self, spec: LayerSpec) -> str:
        return "V4"

    def label(self, spec: LayerSpec) -> str:
        return v4_dims(spec).label

    def baseline(self, spec: LayerSpec) -> LayerSpec:
        """The MHA layer of its heads and head width (each head its own K and V of D values, every token cached),
        against which its one shared KV head and its compressed cache are read."""
        return LayerSpec(spec.n_heads, spec.n_heads, spec.head_dim, scale=spec.scale)

    def badge_tip(self, spec: LayerSpec) -> str:
        return f"{format_noun(spec.n_heads, 'head')} sharing one KV head of {v4_dims(spec).kv_head_dim} values."

    def kv_sharing(self, spec: LayerSpec) -> str:
        return (f"{format_noun(spec.n_heads, 'head')} sharing one KV head of {v4_dims(spec).kv_head_dim} values (K = "
                "V): one group, one frame colour.")

    def params(self, d: int, spec: LayerSpec) -> NamedParts:
        return v4_param_counts(d, spec, standard_params(d, self.baseline(spec)).total)

    def flops(self, d: int, spec: LayerSpec, work: Workload, form: str | None = None) -> FlopCounts:
        return v4_layer_flops(d, spec, work)

    # --- its cache: a window, and entries that grow 1 / m a token --------------------------------------------------
    def cache_values_per_token(self, spec: LayerSpec) -> int:
        """What a token adds at long context (the window no longer grows): D / m, and D_I / m of index keys."""
        m = v4_dims(spec)
        if m.compressor == "none":
            return 0
        return (m.kv_head_dim + (m.index_head_dim if m.compressor == "csa" else 0)) // m.compress_ratio

    def cache_bytes_per_token(self, spec: LayerSpec, kv_format: str | int) -> int:
        """An entry's bytes (and its index key's) over the m tokens it merges, rounded up: a block format's blocks
        are whole in the entry, not in a token's share of it."""
        m = v4_dims(spec)
        if m.compressor == "none":
            return 0
        entry = cache_bytes(spec, m.compress_ratio, kv_format)
        return -(-(entry["compressed"] + entry["index_keys"]) // m.compress_ratio)

    def kv_values_per_token(self, spec: LayerSpec) -> tuple[int, int]:
        return self.cache_values_per_token(spec), 0  # K = V: one record

    def cache_bytes_at(self, spec: LayerSpec, kv_format: str | int, seq_len: int) -> int:
        return sum(cache_bytes(spec, seq_len, kv_format).values())

    def gpu_cache_bytes_at(self, spec: LayerSpec, tp: int, kv_format: str, seq_len: int) -> int:
        return self.cache_bytes_at(spec, kv_format, seq_len)  # one KV head: whole on every GPU

    def decode_read_bytes(self, spec: LayerSpec, kv_format: str | int, seq_len: int) -> int:
        """The window and the entries a step reads, and every index key a sparse layer's indexer scores."""
        m = v4_dims(spec)
        window, entries = entries_read(spec, seq_len, "decode")
        whole = cache_bytes(spec, seq_len, kv_format)
        per_entry = whole["window"] // max(1, min(seq_len, m.window))
        return int(window + entries) * per_entry + whole["index_keys"]

    def decode_core_flops_at(self, d: int, spec: LayerSpec, batch: int, seq_len: int) -> int:
        return decode_core(spec, batch, seq_len)

    def decode_flops_parts(self, d: int, spec: LayerSpec, seq_len: int) -> dict[str, int]:
        return decode_parts(spec, seq_len)

    def decode_core_flops(self, d: int, spec: LayerSpec, batch: int, keys: int) -> int:
        return self.decode_core_flops_at(d, spec, batch, keys)

    def replication(self, spec: LayerSpec, tp: int) -> int:
        return tp  # one KV head: every GPU of the group keeps all of it

    def check_kv_format(self, spec: LayerSpec, kv_format: str) -> None:
        v4_dims(spec).check_kv_format(kv_format)

    # --- timing ---------------------------------------------------------------------------------------------------
    def timing_bytes(self, cfg: AttentionConfig, materialises_scores: bool) -> int:
        """The weights, the input and its projections, the (T, T + n) scores and weights a head in float32, and a
        sparse layer's (T, H_I, n) index scores."""
        spec, B, T, d = cfg.layer_spec(), cfg.batch_size, cfg.seq_len, cfg.d_model
        m = v4_dims(spec)
        n = T // m.compress_ratio if m.compressor != "none" else 0
        weights = self.params(d, spec).total * cfg.dtype_bytes
        acts = B * T * (2 * d + m.q_lora_rank + 2 * spec.n_heads * m.kv_head_dim + 4 * m.kv_head_dim) * 4
        scores = 4 * B * spec.n_heads * T * (T + n) * 4
        index = 2 * B * T * m.index_n_heads * n * 4 if m.compressor == "csa" else 0
        return weights + acts + scores + index

    def timing_forms(self, timing: dict[str, Any]) -> str:
        """'prefill: V4 120 ms, dense 98 ms; decode: V4 2.1 ms, dense 3.9 ms'."""
        f = timing.get(self.timing_forms_key)
        if not f:
            return ""
        return (f"prefill: V4 {f['v4_prefill_ms']:.3g} ms, dense {f['dense_prefill_ms']:.3g} ms; decode: V4 "
                f"{f['v4_decode_ms']:.3g} ms, dense {f['dense_decode_ms']:.3g} ms")

    def estimate_timing_s(self, cfg: AttentionConfig, device_type: str, budget_s: float, include_qkv: bool) -> float:
        rate = ASSUMED_FLOPS_PER_S.get(device_type, 1.0e11) / (4 if device_type == "cpu" else 1)
        prefill = self.flops(cfg.d_model, cfg.layer_spec(), cfg.with_(phase="prefill", causal=True)).total
        return 4 * max(budget_s, 7 * prefill / rate)

    def display_bytes(self, cfg: AttentionConfig) -> int:
        return self.params(cfg.d_model, cfg.layer_spec()).total * 4

    def hides(self) -> frozenset[str]:
        return frozenset({"n_kv_heads", "bias", "head_dim", "qk_norm", "window", "sinks"})

    # --- what the panels and the report read -------------------------------------------------------------------------
    def cost_rows(self, cfg: AttentionConfig, spec: LayerSpec, d: int, where: str) -> list[CostRow]:
        m = v4_dims(spec)
        T = cfg.seq_len
        parts = cache_bytes(spec, T, cfg.kv_format)
        window, entries = entries_read(spec, T, "decode")
        kind = {"none": "a window-only layer", "csa": f"a compressed sparse layer (every {m.compress_ratio} tokens "
                f"merged, its top-{m.index_topk:,} entries read)", "hca": "a heavily compressed layer (every "
                f"{m.compress_ratio} tokens merged, all read)"}[m.compressor]
        return [
            CostRow("v4_cache", format_bytes(parts["window"]), f"| {format_bytes(parts['compressed'])} | "
                    f"{format_bytes(parts['index_keys'])}",
                    f"One sequence's cache of {kind} at T = {T:,} in {cfg.kv_format}: the window's min(T, {m.window}) "
                    f"tokens of the one KV head ({m.kv_head_dim} values, K = V, kept once), the compressed entries "
                    f"floor(T / m) x {m.kv_head_dim}" + (f", and the indexer's keys floor(T / m) x {m.index_head_dim}"
                                                         if m.compressor == "csa" else "")
                    + ". Transformers' cache keeps a window-only layer's K and V apart (twice the window); engines "
                    "keep one."),
            CostRow("v4_read", f"{window + entries:,.0f}", f"{window:,.0f} + {entries:,.0f}",
                    f"What one decode step's query reads at T = {T:,}: the window's {window:,.0f} tokens and "
                    f"{entries:,.0f} compressed entries ({kind}). A dense layer reads all {T:,}."),
            CostRow("kv_token", "", "", f"what a token adds at long context: (D + D_I) / m a compressed sparse layer, "
                                        f"D / m a heavily compressed one, none beyond a window{where}"),
        ]

    def report_sections(self, cfg: AttentionConfig, kv: dict[str, Any]) -> dict[str, Any]:
        spec, T = cfg.layer_spec(), cfg.seq_len
        m = v4_dims(spec)
        prefill, decode = entries_read(spec, T, "prefill"), entries_read(spec, T, "decode")
        return {"kv_cache": kv, "dsv4": {**m.to_dict(), "cache_parts": cache_bytes(spec, T, cfg.kv_format),
                                         "read_per_query_decode": {"window": decode[0], "entries": decode[1]},
                                         "read_per_query_prefill": {"window": prefill[0], "entries": prefill[1]}}}

    def report_lines(self, report: dict[str, Any]) -> list[str]:
        s = report["dsv4"]
        parts, dec = s["cache_parts"], s["read_per_query_decode"]
        return ["", "DeepSeek-V4",
                table_row("cache / sequence / layer", f"{sum(parts.values()):,}",
                          f"window {parts['window']:,} + entries {parts['compressed']:,} + index {parts['index_keys']:,}"),
                table_row("read / decode query", f"{dec['window'] + dec['entries']:,.0f}",
                          f"window {dec['window']:,.0f} + entries {dec['entries']:,.0f}"),
                table_row("compressor", s["compressor"], f"1/{s['compress_ratio'] or 1}, top-{s['index_topk']:,}")]

    def report_header(self, report: dict[str, Any]) -> str:
        c, s = report["config"], report["dsv4"]
        return (f"Attention layer: d_model {c['d_model']}, {c['n_heads']} heads over one KV head of {s['kv_head_dim']}, "
                f"DeepSeek-V4 {s['compressor']} (window {s['window']}, ratio {s['compress_ratio']})")

    def default_widths(self, d_model: int) -> V4Dims:
        return V4Dims()

    def memory_hint(self) -> str:
        return "the heads, the KV head's width or the context"


DSV4 = V4Kind()
