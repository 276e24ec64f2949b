"""Multi-head latent attention as a layer kind (DeepSeek-V2/V3, Kimi K2): every token caches one latent and one
shared RoPE key, and each head's key and value are rebuilt from them; two execution forms, naive and absorbed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.arch.formats import KV_FORMATS, bytes_per_value, check_kv_format
from core.arch.layer import LayerSpec
from core.format import format_bytes, format_count, format_noun, table_row
from core.kinds.kind import CliFlag, CostRow, FlopCounts, KindLesson, LayerKind, Workload
from core.kinds.mla import study
from core.kinds.mla.counts import (
    FORM_MS,
    FORMS,
    FORMS_KEY,
    MEMORY_HINT,
    MLAParamCounts,
    decode_bytes_read,
    decode_intensity,
    decompressed_bytes_per_token,
    equivalent_gqa_heads,
    forms_summary,
    latent_bytes_per_token,
    mla_flops,
    mla_layer_flops,
    mla_param_counts,
    mla_timing_bytes,
    usual_form,
)
from core.kinds.mla.estimate import estimate_mla_timing_s
from core.kinds.mla.spec import MLADims
from core.kinds.mla.switch import fitting_dims, switch_to_mla, widths_note
from core.kinds.standard.counts import standard_params
from core.kinds.widths import KindWidths

if TYPE_CHECKING:
    from core.arch.config import AttentionConfig


def dims(spec: LayerSpec) -> MLADims:
    if not isinstance(spec.widths, MLADims):
        raise ValueError("this layer is not an MLA layer.")
    return spec.widths


class MLAKind(LayerKind):
    name = "mla"
    short = "MLA"
    title = "MLA (multi-head latent attention)"
    picker = "MLA: latent KV (DeepSeek)"
    about = ("MLA (DeepSeek-V2/V3, Kimi K2): every token caches one small latent and one shared RoPE key, and each "
             "head's key and value are rebuilt from them; run naive (decompress, then per-head attention) or absorbed "
             "(scores against the latent itself).")
    projection_rows = (("q", "q_proj"), ("q_a", "q_a_proj"), ("q_a_norm", "q_a_layernorm"), ("q_b", "q_b_proj"),
                       ("kv_a", "kv_a_proj_with_mqa"), ("kv_a_norm", "kv_a_layernorm"), ("kv_b", "kv_b_proj"),
                       ("o", "o_proj"))
    own_cost_rows = (("mla_kv", "MLA latent | decompressed"), ("mla_equiv", "MLA latent as GQA heads"),
                     ("mla_decode", "MLA decode FLOP/byte"))
    widths_type = MLADims
    cache_name = "latent cache"
    vllm_block_size = 64  # FlashMLA's block (vllm/platforms/cuda.py forces it for the FlashMLA backend)
    colour = "#ea580c"
    timing_forms_key = FORMS_KEY
    timing_form_names = FORM_MS
    forms_tip = ("An MLA layer, run both ways: naive (every head's key and value decompressed from the latent, then "
                 "per-head attention) and absorbed (W_uk folded into the query, scores against the latent itself, W_uv "
                 "after), each timed for the prefill and one decode step. The panel's other rows show naive prefill "
                 "and absorbed decode, as engines run.")
    knobs = study.KNOBS
    compare_rows = study.COMPARE_ROWS
    cli_flags = (
        CliFlag("q-lora-rank", "q_lora_rank", "MLA: the low-rank query's width (0: a plain W_q; DeepSeek-V3 1536)"),
        CliFlag("kv-lora-rank", "kv_lora_rank", "MLA: the cached latent's width (DeepSeek-V3 512)"),
        CliFlag("qk-nope-dim", "qk_nope_head_dim", "MLA: each head's query/key width without position (128)"),
        CliFlag("qk-rope-dim", "qk_rope_head_dim", "MLA: the RoPE part of each query and of the one shared key, even (64)"),
        CliFlag("v-head-dim", "v_head_dim", "MLA: each head's value width (128)"),
    )
    cli_help = "multi-head latent attention, DeepSeek: the widths below, DeepSeek-V3's by default"

    def mode(self, spec: LayerSpec) -> str:
        return "MLA"

    def label(self, spec: LayerSpec) -> str:
        return dims(spec).label

    def baseline(self, spec: LayerSpec) -> LayerSpec:
        """The MHA layer of its n_heads with head_dim v_head_dim (DeepSeek-V2's comparison: d_h = 128), no latent."""
        return LayerSpec(spec.n_heads, spec.n_heads, dims(spec).v_head_dim, scale=spec.scale)

    def badge_tip(self, spec: LayerSpec) -> str:
        return (f"{format_noun(spec.n_heads, 'head')}, each with its own key and value rebuilt from one latent of "
                f"{dims(spec).latent_width} values a token.")

    def kv_sharing(self, spec: LayerSpec) -> str:
        return (f"{format_noun(spec.n_heads, 'head')}, each key and value rebuilt from one shared latent of "
                f"{dims(spec).latent_width} values a token (MLA): grey frames, no groups.")

    def warnings(self, spec: LayerSpec, d_model: int) -> list[str]:
        return dims(spec).warnings(d_model)

    def params(self, d: int, spec: LayerSpec) -> MLAParamCounts:
        return mla_param_counts(d, spec, standard_params(d, self.baseline(spec)).total)

    def flops(self, d: int, spec: LayerSpec, work: Workload, form: str | None = None) -> FlopCounts:
        """Naive for prefill and absorbed for decode unless form says which (core/kinds/mla/counts.py)."""
        return mla_layer_flops(d, spec, work, form)

    def cache_values_per_token(self, spec: LayerSpec) -> int:
        """The latent and the shared RoPE key: what DeepSeek's code, vLLM, SGLang, FlashMLA and transformers 5 keep."""
        return dims(spec).latent_width

    def kv_values_per_token(self, spec: LayerSpec) -> tuple[int, int]:
        """The latent and its RoPE key as K, no V: how llama.cpp (since its V-less cache) and FlashMLA keep it."""
        return dims(spec).latent_width, 0

    def cached_tokens(self, spec: LayerSpec, seq_len: int) -> int:
        return seq_len

    def check_kv_format(self, spec: LayerSpec, kv_format: str) -> None:
        """A block format must fit the latent (what the cache holds)."""
        check_kv_format(kv_format, 32)  # the name itself (32 values fill a block of every format)
        block = KV_FORMATS[kv_format][1]
        if dims(spec).latent_width % block:
            raise ValueError(f"the {kv_format} KV format stores blocks of {block} values, and the MLA latent of "
                             f"{dims(spec).latent_width} values is not a whole number of them; choose another format.")

    def decode_core_flops(self, d: int, spec: LayerSpec, batch: int, keys: int) -> int:
        """The absorbed form's core: scores against the latent as one shared key head."""
        return mla_flops(d, spec, batch, 1, 2 * keys, "absorbed")[1]

    # the planner: the latent is one shared "head", kept whole on every GPU of the TP group (the defaults)

    def timing_bytes(self, cfg: AttentionConfig, materialises_scores: bool) -> int:
        return mla_timing_bytes(cfg, materialises_scores)

    def estimate_timing_s(self, cfg: AttentionConfig, device_type: str, budget_s: float, include_qkv: bool) -> float:
        return estimate_mla_timing_s(cfg, device_type, budget_s)  # both forms; there is no fused QKV to time

    def display_bytes(self, cfg: AttentionConfig) -> int:
        p = self.params(cfg.d_model, cfg.layer_spec())
        return (p.total - p.o) * 4

    def memory_hint(self) -> str:
        return MEMORY_HINT

    def report_sections(self, cfg: AttentionConfig, kv: dict[str, Any]) -> dict[str, Any]:
        """kv_cache's latent beside the decompressed cache; the `mla` section: the widths, the equivalent GQA heads,
        and each form's prefill and decode FLOPs, the bytes a decode step reads and its FLOP per cache byte."""
        spec, d, B, T = cfg.layer_spec(), cfg.d_model, cfg.batch_size, cfg.seq_len
        m = dims(spec)
        latent, full = kv["bytes_per_token_per_layer"], decompressed_bytes_per_token(spec, cfg.kv_format)
        kv = {**kv, "bytes_per_token_per_layer_latent": latent, "bytes_per_token_per_layer_decompressed": full,
              "bytes_total_decompressed": full * T * B * cfg.n_layers}
        forms = {}
        for form in FORMS:
            prefill = self.flops(d, spec, cfg.with_(phase="prefill"), form)
            decode = self.flops(d, spec, cfg.with_(phase="decode"), form)
            forms[form] = {"prefill_flops": prefill.total, "prefill_core_flops": prefill.attention,
                           "decode_flops": decode.total, "decode_core_flops": decode.attention,
                           "decode_bytes_read": decode_bytes_read(spec, T, B, cfg.kv_format, form),
                           "decode_intensity": decode_intensity(spec, T, B, cfg.kv_format, form)}
        section = {**m.to_dict(), "qk_head_dim": m.qk_head_dim, "latent_width": m.latent_width,
                   "equivalent_gqa_heads": equivalent_gqa_heads(spec), "forms": forms,
                   "flops_form": usual_form(cfg.phase)}
        return {"kv_cache": kv, "mla": section}

    def report_header(self, report: dict[str, Any]) -> str:
        c, m = report["config"], report["mla"]
        return (f"Attention layer: d_model {c['d_model']}, {c['n_heads']} heads, MLA (latent {m['kv_lora_rank']} + "
                f"rope {m['qk_rope_head_dim']}; q/k width {m['qk_head_dim']}, v width {m['v_head_dim']}, q_lora_rank "
                f"{m['q_lora_rank'] or 'none'})")

    def cost_rows(self, cfg: AttentionConfig, spec: LayerSpec, d: int, where: str) -> list[CostRow]:
        """Its two caches, its latent as GQA heads, each form's decode intensity, and the shared rows' formulas
        written for MLA."""
        m = dims(spec)
        H, B, T, L = spec.n_heads, cfg.batch_size, cfg.seq_len, cfg.n_layers
        fmt, kb = cfg.kv_format, bytes_per_value(cfg.kv_format)
        latent, full = latent_bytes_per_token(spec, fmt), decompressed_bytes_per_token(spec, fmt)
        heads = equivalent_gqa_heads(spec)
        naive, absorbed = (decode_intensity(spec, T, B, fmt, form) for form in FORMS)
        per_layer = f"{L} x ({m.kv_lora_rank} + {m.qk_rope_head_dim}) x {kb:g}"
        form = usual_form(cfg.phase)
        tq = "T" if cfg.phase == "prefill" else "1"
        return [
            CostRow("mla_kv", f"{latent:,} B", f"| {format_bytes(full)}",
                    f"The latent cache: (kv_lora_rank + rope) x bytes = ({m.kv_lora_rank} + {m.qk_rope_head_dim}) x "
                    f"{kb:g} = {latent:,} B a token a layer (DeepSeek's code, vLLM, SGLang, FlashMLA and transformers 5 "
                    f"keep this). Decompressed into per-head keys and values: {H} x ({m.qk_head_dim} + {m.v_head_dim}) "
                    f"x {kb:g} = {full:,} B (x{full / latent:.1f}), what an engine without MLA kernels keeps. Both a "
                    "token a layer. Under tensor parallelism the latent cannot be split by heads: every GPU keeps all "
                    "of it (DeepSeek serves attention data-parallel for this reason), where GQA's KV heads are split "
                    "across GPUs."),
            CostRow("head_dim", str(spec.head_dim), f"{m.qk_nope_head_dim} + {m.qk_rope_head_dim}",
                    f"An MLA head's query and key are qk_nope + qk_rope = {m.qk_nope_head_dim} + {m.qk_rope_head_dim} "
                    f"= {m.qk_head_dim} wide (the softmax scale is 1/sqrt of it), its value v_head_dim = "
                    f"{m.v_head_dim}."),
            CostRow("mla_equiv", f"{heads:.3g}", f"of width {m.v_head_dim}",
                    f"The latent's {m.latent_width} values a token equal {heads:.3g} GQA KV heads of width "
                    f"{m.v_head_dim} (each a key and a value): DeepSeek-V2's '2.25 groups'. The Latent vs grouped "
                    "lesson runs MLA beside the GQA layer nearest it."),
            CostRow("mla_decode", f"{absorbed:,.1f}", f"naive {naive:,.1f}",
                    f"Core FLOPs of one decode step over the cache bytes it reads, at {T:,} keys: absorbed (scores "
                    f"against the latent: 2 H (2 r_kv + r) FLOPs a key over (r_kv + r) values) {absorbed:,.1f}; naive "
                    f"(the decompressed per-head cache) {naive:,.1f}. An H200's ridge point is about 206 FLOP/byte: "
                    "above it a step is compute-bound."),
            CostRow("kv_token", "", "", f"{L * latent:,} B = layers x (kv_lora_rank + rope) x bytes per value "
                                        f"({fmt}) = {per_layer}{where}: the latent and the shared RoPE key"),
            CostRow("kv_total", "", "", f"{per_layer} x batch {B} x {T:,} tokens: the latent cache "
                                        f"(decompressed: {format_bytes(full * L * B * T)})"),
            CostRow("flops_proj", "", "", f"the {form} form's matmuls with weights, {tq} tokens: the query path, kv_a, "
                    "o_proj" + (", kv_b on every new token (naive)" if form == "naive" else
                                ", W_uk folded into each query (2 H n r_kv) and W_uv after (2 H r_kv v) (absorbed)")),
            CostRow("flops_core", "", "", f"the {form} form's core: 2 x B x H x pairs x "
                    + (f"(q/k {m.qk_head_dim} + v {m.v_head_dim})" if form == "naive"
                       else f"(latent + rope {m.latent_width} + latent {m.kv_lora_rank})")
                    + ("; causal prefill scores T^2 / 2 pairs" if cfg.phase == "prefill" else f"; decode: {T:,} keys")),
            CostRow("intensity", "", "", "core FLOPs over Q, K, V and output bytes of the per-head (naive) layout; the "
                    f"row 'MLA decode FLOP/byte' gives each form against its cache. d_model {d:,}."),
        ]

    def baseline_note(self) -> str:
        return " (head_dim v)"

    def timing_forms(self, timing: dict[str, Any]) -> str:
        forms = timing.get(FORMS_KEY)
        return forms_summary(forms) if forms else ""

    def report_lines(self, report: dict[str, Any]) -> list[str]:
        """Both caches, the equivalent GQA heads, each form's FLOPs and intensity."""
        m, kv = report["mla"], report["kv_cache"]
        full = kv["bytes_per_token_per_layer_decompressed"]
        lines = [table_row("latent / token / layer", f"{kv['bytes_per_token_per_layer_latent']:,}",
                     f"{m['kv_lora_rank']} + {m['qk_rope_head_dim']} values (DeepSeek, vLLM, SGLang, FlashMLA)"),
                 table_row("decompressed / token / layer", f"{full:,}",
                     f"x{full / kv['bytes_per_token_per_layer_latent']:.1f}: per-head K and V"),
                 table_row("decompressed total", f"{kv['bytes_total_decompressed']:,}",
                     format_bytes(kv["bytes_total_decompressed"])),
                 table_row("equivalent GQA KV heads", f"{m['equivalent_gqa_heads']:.3g}", f"of width {m['v_head_dim']}"),
                 "", f"MLA forms (the FLOPs above: {m['flops_form']})"]
        for form, f in m["forms"].items():
            lines.append(table_row(f"{form} prefill / decode", format_count(f["prefill_flops"]),
                             f"{format_count(f['decode_flops'])} decode FLOPs, reads "
                             f"{format_bytes(f['decode_bytes_read'])}, {f['decode_intensity']:.3g} FLOP/B"))
        return lines

    # --- the controls --------------------------------------------------------------------------------------------
    def default_widths(self, d_model: int) -> MLADims:
        return fitting_dims(d_model)

    def switch_to(self, cfg: AttentionConfig, widths: KindWidths | None) -> tuple[AttentionConfig, str]:
        return switch_to_mla(cfg, widths if isinstance(widths, MLADims) else fitting_dims(cfg.d_model))

    def widths_note(self, cfg: AttentionConfig) -> str:
        return widths_note(cfg)

    def hides(self) -> frozenset[str]:
        """Its heads' keys and values come from the latent: no KV heads or head width of its own, and none of the
        standard extras (DeepSeek's layers have no biases, q/k norm, window or sinks)."""
        return frozenset({"n_kv_heads", "bias", "head_dim", "qk_norm", "window", "sinks"})

    # --- studies ---------------------------------------------------------------------------------------------------
    def refuse_knob(self, knob: str) -> str:
        if knob in study.REFUSED_KNOBS:
            return (f"{knob} does not apply to an MLA layer (its heads' keys and values come from the latent); "
                    "sweep kv_lora_rank, or choose standard attention.")
        return ""

    def knob_needs(self, knob: str) -> str:
        return f"{knob} sweeps an MLA layer; choose attention MLA (a DeepSeek preset) first."

    def lessons(self) -> tuple[KindLesson, ...]:
        return study.lessons()

    def compare_value(self, report: dict[str, Any], section: str, key: str, value: Any) -> Any:
        return study.compare_value(report, section, key, value)

    def compare_why(self, section: str, key: str, own: bool) -> str:
        return study.compare_why(section, key, own)

    def timing_series(self, timings: list[dict[str, Any] | None]) -> list[tuple[str, list[float | None], str]]:
        return study.timing_series(timings)


MLA = MLAKind()
