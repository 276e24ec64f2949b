"""DeepSeek sparse attention as a layer kind (DeepSeek-V3.2, GLM-5): MLA whose queries read only the top-k cached
tokens a lightning indexer picks. It counts, caches and times as MLA does, plus the indexer's parameters, its index
key a token, its FLOPs over every cached token, and the tokens each query reads."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.arch.layer import LayerSpec
from core.format import format_count, table_row
from core.kinds.dsa.counts import (
    DSAParamCounts,
    cache_parts,
    dsa_dims,
    dsa_layer_flops,
    dsa_param_counts,
    engine_fp8_parts,
    entries_read,
    indexer_flops,
    indexer_passes_attention_at,
    indexer_share,
)
from core.kinds.dsa.spec import DSADims
from core.kinds.kind import CliFlag, CostRow, FlopCounts, KindLesson, Workload
from core.kinds.mla.counts import decompressed_bytes_per_token, mla_flops
from core.kinds.mla.kind import MLAKind
from core.kinds.mla.switch import fitting_dims, switch_to_mla
from core.kinds.standard.counts import standard_params
from core.kinds.widths import KindWidths

if TYPE_CHECKING:
    from core.arch.config import AttentionConfig

FORMS_KEY = "dsa_forms"
FORM_MS = ("sparse_prefill_ms", "dense_prefill_ms", "sparse_decode_ms", "dense_decode_ms")


class DSAKind(MLAKind):
    name = "dsa"
    short = "DSA"
    title = "DSA (DeepSeek sparse attention)"
    picker = "DSA: MLA + top-k indexer (DeepSeek-V3.2)"
    about = ("DeepSeek sparse attention (DeepSeek-V3.2, GLM-5): MLA whose queries read only the top-k cached tokens "
             "a lightning indexer picks; the indexer scores every cached token with a few small heads and caches one "
             "small index key a token.")
    projection_rows = (*MLAKind.projection_rows, ("index_q", "indexer.wq_b"), ("index_k", "indexer.wk"),
                       ("index_k_norm", "indexer.k_norm"), ("index_weights", "indexer.weights_proj"))
    own_cost_rows = (("mla_kv", "MLA latent | decompressed"), ("dsa_cache", "DSA cache: latent | index key"),
                     ("dsa_read", "DSA tokens read / query"), ("dsa_indexer", "DSA indexer share"))
    widths_type = DSADims
    builds_on = ("mla",)  # its latent, forms, counts and torch layer are MLA's, with the indexer beside them
    colour = "#b45309"
    timing_forms_key = FORMS_KEY
    timing_form_names = FORM_MS
    forms_tip = ("A DSA layer beside the dense MLA layer of the same widths and weights, in the same run: the prefill "
                 "(naive form, the selection mask on every head) and one decode step (the indexer over every cached "
                 "token, then the absorbed form over the top-k latents only, against all of them dense).")
    knobs = ()
    compare_rows = ()
    cli_flags = (*MLAKind.cli_flags,
                 CliFlag("index-heads", "index_n_heads", "DSA: the lightning indexer's heads (DeepSeek-V3.2 64)"),
                 CliFlag("index-head-dim", "index_head_dim", "DSA: an index key's width, cached a token (128)"),
                 CliFlag("index-topk", "index_topk", "DSA: the cached tokens each query reads (2048)"))
    cli_help = "DeepSeek sparse attention (MLA + lightning indexer): the MLA widths and the indexer's, V3.2's by default"

    def mode(self, spec: LayerSpec) -> str:
        return "DSA"

    def baseline(self, spec: LayerSpec) -> LayerSpec:
        return LayerSpec(spec.n_heads, spec.n_heads, dsa_dims(spec).v_head_dim, scale=spec.scale)

    def params(self, d: int, spec: LayerSpec) -> DSAParamCounts:
        return dsa_param_counts(d, spec, standard_params(d, self.baseline(spec)).total)

    def flops(self, d: int, spec: LayerSpec, work: Workload, form: str | None = None) -> FlopCounts:
        return dsa_layer_flops(d, spec, work, form)

    def cache_values_per_token(self, spec: LayerSpec) -> int:
        """MLA's latent and RoPE key, and the indexer's key (transformers' DynamicIndexedLayer keeps both)."""
        m = dsa_dims(spec)
        return m.latent_width + m.index_head_dim

    def kv_values_per_token(self, spec: LayerSpec) -> tuple[int, int]:
        return self.cache_values_per_token(spec), 0

    def engine_cache_bytes_per_token(self, spec: LayerSpec, tp: int, kv_format: str, engine: str) -> int:
        """vLLM keeps the latent in the KV format, or fp8 as FlashMLA's sparse record (fp8_ds_mla, 656 B for
        V3.2's widths), and the index key always as an fp8 record with its scale (DeepseekV32IndexerCache: 132 B),
        one page a layer for each (vllm/model_executor/models/deepseek_v2.py); SGLang's NSA backend is counted
        the same way."""
        fp8 = engine_fp8_parts(spec)
        latent = fp8["latent"] if kv_format.startswith("fp8") else cache_parts(spec, kv_format)["latent"]
        return latent + fp8["index_keys"]

    def decode_read_bytes(self, spec: LayerSpec, kv_format: str | int, seq_len: int) -> int:
        """A decode step reads the top-k tokens' latents and every cached index key (the indexer scores them all)."""
        parts = cache_parts(spec, kv_format)
        return min(seq_len, dsa_dims(spec).index_topk) * parts["latent"] + seq_len * parts["index_keys"]

    def decode_flops_parts(self, d: int, spec: LayerSpec, seq_len: int) -> dict[str, int]:
        scores, core = indexer_share(d, spec, seq_len)
        return {"attention": core, "indexer": scores}

    def decode_core_flops(self, d: int, spec: LayerSpec, batch: int, keys: int) -> int:
        """The absorbed form over the top-k latents, and the indexer's scores over every cached token."""
        m = dsa_dims(spec)
        core = mla_flops(d, spec, batch, 1, 2 * min(keys, m.index_topk), "absorbed")[1]
        return core + indexer_flops(d, spec, batch, 1, 2 * keys)[1]

    def display_bytes(self, cfg: AttentionConfig) -> int:
        p = self.params(cfg.d_model, cfg.layer_spec())
        return (p.total - p.o) * 4

    def report_sections(self, cfg: AttentionConfig, kv: dict[str, Any]) -> dict[str, Any]:
        """MLA's sections, and `dsa`: the indexer's widths, the cache a token by part (as the KV format says, and
        as the engines' fp8 records keep it), the tokens a query reads, and the indexer's FLOPs against the
        attention's."""
        out = super().report_sections(cfg, kv)
        spec, d, T, B = cfg.layer_spec(), cfg.d_model, cfg.seq_len, cfg.batch_size
        m = dsa_dims(spec)
        parts = cache_parts(spec, cfg.kv_format)
        out["kv_cache"]["bytes_per_token_per_layer_latent"] = parts["latent"]
        per_token = {"naive": decompressed_bytes_per_token(spec, cfg.kv_format), "absorbed": parts["latent"]}
        for form, f in out["mla"]["forms"].items():  # a decode step reads its top-k tokens' cache, every index key
            f["decode_bytes_read"] = B * (min(T, m.index_topk) * per_token[form] + T * parts["index_keys"])
            f["decode_intensity"] = f["decode_core_flops"] / f["decode_bytes_read"]
        scores, core = indexer_share(d, spec, T)
        out["dsa"] = {"index_n_heads": m.index_n_heads, "index_head_dim": m.index_head_dim, "index_topk": m.index_topk,
                      "cache_parts": cache_parts(spec, cfg.kv_format), "engine_fp8_parts": engine_fp8_parts(spec),
                      "read_per_query_prefill": entries_read(spec, T, "prefill"),
                      "read_per_query_decode": entries_read(spec, T, "decode"),
                      "decode_indexer_flops": scores, "decode_attention_flops": core,
                      "indexer_passes_attention_at": indexer_passes_attention_at(d, spec)}
        return out

    def report_header(self, report: dict[str, Any]) -> str:
        s = report["dsa"]
        return (super().report_header(report).replace("MLA (", "DSA: MLA (", 1)
                + f"; indexer {s['index_n_heads']} heads of {s['index_head_dim']}, top-{s['index_topk']:,}")

    def report_lines(self, report: dict[str, Any]) -> list[str]:
        s = report["dsa"]
        parts, fp8 = s["cache_parts"], s["engine_fp8_parts"]
        cross = s["indexer_passes_attention_at"]
        return [*super().report_lines(report), "", "DSA",
                table_row("cache / token / layer", f"{sum(parts.values()):,}",
                          f"latent {parts['latent']:,} + index key {parts['index_keys']:,} B"),
                table_row("engines' fp8 records", f"{sum(fp8.values()):,}",
                          f"fp8_ds_mla {fp8['latent']:,} + index key {fp8['index_keys']:,} B (vLLM, SGLang)"),
                table_row("tokens read / query", f"{s['read_per_query_decode']:,.0f}",
                          f"decode (prefill mean {s['read_per_query_prefill']:,.1f}); top-{s['index_topk']:,}"),
                table_row("decode indexer / attention", format_count(s["decode_indexer_flops"]),
                          f"vs {format_count(s['decode_attention_flops'])} FLOPs; the indexer passes it at "
                          + (f"T = {cross:,}" if cross else "no T below 2^30"))]

    def cost_rows(self, cfg: AttentionConfig, spec: LayerSpec, d: int, where: str) -> list[CostRow]:
        m = dsa_dims(spec)
        T, k = cfg.seq_len, m.index_topk
        parts, fp8 = cache_parts(spec, cfg.kv_format), engine_fp8_parts(spec)
        read, read_prefill = entries_read(spec, T, "decode"), entries_read(spec, T, "prefill")
        scores, core = indexer_share(d, spec, T)
        cross = indexer_passes_attention_at(d, spec)
        rows = [r for r in super().cost_rows(cfg, spec, d, where) if r.key not in ("mla_equiv", "mla_decode", "kv_token", "flops_core")]
        return [*rows,
                CostRow("dsa_cache", f"{parts['latent']:,} B", f"| {parts['index_keys']:,} B",
                        f"A token a layer in {cfg.kv_format}: MLA's latent and RoPE key ({m.latent_width} values, "
                        f"{parts['latent']:,} B) and the indexer's key ({m.index_head_dim} values, "
                        f"{parts['index_keys']:,} B), as transformers keeps them. Engines keep fp8 records: vLLM's "
                        f"fp8_ds_mla for FlashMLA's sparse kernels, {m.kv_lora_rank} fp8 values with an fp32 scale per "
                        f"128 and the {m.qk_rope_head_dim}-wide RoPE key in bf16 = {fp8['latent']:,} B, and the index "
                        f"key's {m.index_head_dim} fp8 values with one fp32 scale per 128 = {fp8['index_keys']:,} B: "
                        f"{sum(fp8.values()):,} B a token a layer."),
                CostRow("dsa_read", f"{read:,.0f}", f"of {T:,}",
                        f"The cached tokens one query attends to at T = {T:,}: min(T, top-k) = min({T:,}, {k:,}) for a "
                        f"decode step; a causal prefill's queries read {read_prefill:,.1f} on average (query t reads "
                        f"min(t, {k:,})). Dense MLA reads all T. The indexer still scores every cached token."),
                CostRow("dsa_indexer", f"{scores / (scores + core):.0%}", f"{format_count(scores)} FLOPs",
                        f"One decode step's indexer scores every cached token: 2 x H_I x D_I + 2 H_I = "
                        f"{2 * m.index_n_heads * m.index_head_dim + 2 * m.index_n_heads:,} FLOPs a token, "
                        f"{format_count(scores)} at T = {T:,}, against the absorbed attention's {format_count(core)} "
                        f"over its {read:,.0f} selected tokens: {scores / (scores + core):.0%} of the two. The "
                        + (f"indexer passes the attention it selects for at T = {cross:,}."
                           if cross else "indexer does not pass the attention below 2^30 tokens.")),
                CostRow("kv_token", "", "", f"{cfg.n_layers} x ({parts['latent']:,} + {parts['index_keys']:,}) B{where}: "
                                            "the latent, its RoPE key and the index key, every layer"),
                CostRow("flops_core", "", "", f"the attention over each query's selected tokens (min(t, {k:,})), and the "
                        "indexer's scores over every visible token (2 H_I D_I + 2 H_I a pair)")]

    def timing_forms(self, timing: dict[str, Any]) -> str:
        forms = timing.get(FORMS_KEY)
        if not forms:
            return ""
        parts = []
        for phase in ("prefill", "decode"):
            sparse, dense = forms[f"sparse_{phase}_ms"], forms[f"dense_{phase}_ms"]
            ratio = f" (sparse takes x{sparse / dense:.2f} the dense time)" if dense > 0 else ""
            parts.append(f"{phase}: sparse {sparse:.3g} ms, dense {dense:.3g} ms{ratio}")
        return "; ".join(parts)

    def timing_series(self, timings: list[dict[str, Any] | None]) -> list[tuple[str, list[float | None], str]]:
        return []

    def default_widths(self, d_model: int) -> DSADims:
        m = fitting_dims(d_model)
        return DSADims(q_lora_rank=m.q_lora_rank or max(64, d_model // 2 // 64 * 64), kv_lora_rank=m.kv_lora_rank,
                       qk_nope_head_dim=m.qk_nope_head_dim, qk_rope_head_dim=m.qk_rope_head_dim,
                       v_head_dim=m.v_head_dim)

    def switch_to(self, cfg: AttentionConfig, widths: KindWidths | None) -> tuple[AttentionConfig, str]:
        dims = widths if isinstance(widths, DSADims) else self.default_widths(cfg.d_model)
        new, note = switch_to_mla(cfg, dims)
        return new, note.replace("Attention MLA:", f"Attention DSA (top-{dims.index_topk:,}):", 1)

    def refuse_knob(self, knob: str) -> str:
        return ""

    def knob_needs(self, knob: str) -> str:
        return f"{knob} sweeps a sparse (DSA) layer; choose a DeepSeek-V3.2 preset first."

    def lessons(self) -> tuple[KindLesson, ...]:
        return ()

    def memory_hint(self) -> str:
        return "the MLA ranks, the indexer's widths or the context"


DSA = DSAKind()

