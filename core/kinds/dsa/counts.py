"""Exact counts of one DeepSeek sparse attention layer (DeepSeek-V3.2, GLM-5): MLA's, plus the lightning indexer's
parameters, cache and FLOPs, and the cached tokens each query reads.

Symbols as core/kinds/mla/counts.py, plus H_I = index_n_heads, D_I = index_head_dim, k = index_topk.
The indexer as transformers' DeepseekV32Indexer holds it: wq_b r_q x H_I D_I (its queries from MLA's query latent),
wk d x D_I and a LayerNorm over D_I (weight and bias: its one key a token), weights_proj d x H_I (a weight per head and
token). A query's index score of a cached token s is I = sum_h w_h ReLU(q_h . k_s / sqrt(D_I)); attention then reads
its top-k tokens only. Torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.arch.formats import kv_format_bytes
from core.arch.layer import LayerSpec
from core.kinds.dsa.spec import DSADims
from core.kinds.kind import FlopCounts, Workload
from core.kinds.mla.counts import MLAParamCounts, mla_flops, mla_param_counts, usual_form

FP8_BLOCK = 128  # values an fp32 scale covers in the engines' fp8 records (FlashMLA's and the indexer's)


def dsa_dims(spec: LayerSpec) -> DSADims:
    if not isinstance(spec.widths, DSADims):
        raise ValueError("this layer is not a sparse (DSA) layer.")
    return spec.widths


@dataclass(frozen=True)
class DSAParamCounts(MLAParamCounts):
    index_q: int  # wq_b: r_q x H_I D_I
    index_k: int  # wk: d x D_I
    index_k_norm: int  # the index key's LayerNorm: weight and bias, 2 D_I
    index_weights: int  # weights_proj: d x H_I

    @property
    def indexer(self) -> int:
        return self.index_q + self.index_k + self.index_k_norm + self.index_weights

    def to_dict(self) -> dict[str, int]:
        out = super().to_dict()
        totals = {k: out.pop(k) for k in ("total", "total_mha")}
        return {**out, "index_q": self.index_q, "index_k": self.index_k, "index_k_norm": self.index_k_norm,
                "index_weights": self.index_weights, **totals}

    def formula(self, d: int, spec: LayerSpec) -> str:
        return ("MLA's d r_q + r_q + r_q H (n + r) + d (r_kv + r) + r_kv + r_kv H (n + v) + H v d, and the indexer's "
                "r_q H_I D_I + d D_I + 2 D_I + d H_I, as transformers' DeepseekV32Attention holds them; the MHA layer "
                f"of {spec.n_heads} heads of width v: {self.total_mha:,}")

    def rows(self, d: int, spec: LayerSpec) -> list[tuple[str, str, int, str]]:
        m = dsa_dims(spec)
        HI, DI = m.index_n_heads, m.index_head_dim
        return [*super().rows(d, spec),
                ("index_q", "indexer.wq_b", self.index_q, f"the indexer's queries from MLA's query latent: q_lora_rank x "
                 f"H_I x D_I = {m.q_lora_rank} x {HI} x {DI}"),
                ("index_k", "indexer.wk", self.index_k, f"the index key a token caches: d_model x D_I = {d} x {DI}"),
                ("index_k_norm", "indexer.k_norm", self.index_k_norm, f"its LayerNorm's weight and bias: 2 x {DI}"),
                ("index_weights", "indexer.weights_proj", self.index_weights, f"a weight per index head and token: "
                 f"d_model x H_I = {d} x {HI}")]


def dsa_param_counts(d: int, spec: LayerSpec, total_mha: int) -> DSAParamCounts:
    m = dsa_dims(spec)
    base = mla_param_counts(d, spec, total_mha)
    index_q, index_k = m.q_lora_rank * m.index_n_heads * m.index_head_dim, d * m.index_head_dim
    index_k_norm, index_weights = 2 * m.index_head_dim, d * m.index_n_heads
    mla = {f: getattr(base, f) for f in ("q_a", "q_a_norm", "q_b", "q", "kv_a", "kv_a_norm", "kv_b", "o")}
    total = base.total + index_q + index_k + index_k_norm + index_weights
    return DSAParamCounts(**mla, total=total, total_mha=total_mha, index_q=index_q, index_k=index_k,
                          index_k_norm=index_k_norm, index_weights=index_weights)


# --- the tokens a query reads ----------------------------------------------------------------------------------------
def selected_pairs(T: int, k: int) -> int:
    """The (query, key) pairs a causal prefill of T tokens attends to: query t (1-based) reads min(t, k) tokens, so
    sum_t min(t, k) = T (T + 1) / 2 up to T = k, then k (k + 1) / 2 + (T - k) k."""
    return T * (T + 1) // 2 if T <= k else k * (k + 1) // 2 + (T - k) * k


def entries_read(spec: LayerSpec, T: int, phase: str) -> float:
    """Cached tokens one query attends to at context T: a decode step's min(T, k); a causal prefill's mean over its
    T queries."""
    k = dsa_dims(spec).index_topk
    return min(T, k) if phase == "decode" else selected_pairs(T, k) / T


# --- the indexer's FLOPs ----------------------------------------------------------------------------------------------
def indexer_flops(d: int, spec: LayerSpec, B: int, Tq: int, pairs_x2: int) -> tuple[int, int]:
    """(projections, scores) of the indexer for Tq new tokens a sequence scoring pairs_x2 / 2 (query, key) pairs:
    wq_b, wk and weights_proj on each new token; a pair's H_I dot products of D_I, and the weighted sum over heads
    (2 H_I D_I + 2 H_I). The top-k's comparisons are not FLOPs and are not counted."""
    m = dsa_dims(spec)
    HI, DI = m.index_n_heads, m.index_head_dim
    projections = B * Tq * 2 * (m.q_lora_rank * HI * DI + d * DI + d * HI)
    return projections, B * (HI * DI + HI) * pairs_x2


def dsa_layer_flops(d: int, spec: LayerSpec, work: Workload, form: str | None = None) -> FlopCounts:
    """One layer's forward: MLA over the selected tokens only (a causal prefill's sum_t min(t, k) pairs, a decode
    step's min(T, k)), and the indexer over every visible token (T (T + 1) / 2 pairs, or T)."""
    m = dsa_dims(spec)
    T, prefill = work.seq_len, work.phase == "prefill"
    if prefill and not work.causal:
        raise ValueError("a sparse (DSA) layer's indexer reads tokens in order: it is causal; turn the causal mask on.")
    read_x2 = 2 * (selected_pairs(T, m.index_topk) if prefill else min(T, m.index_topk))
    scored_x2 = 2 * (T * (T + 1) // 2 if prefill else T)
    Tq = T if prefill else 1
    proj, core = mla_flops(d, spec, work.batch_size, Tq, read_x2, form or usual_form(work.phase))
    index_proj, index_scores = indexer_flops(d, spec, work.batch_size, Tq, scored_x2)
    return FlopCounts(projections=proj + index_proj, attention=core + index_scores,
                      total=proj + index_proj + core + index_scores)


def indexer_share(d: int, spec: LayerSpec, T: int, phase: str = "decode") -> tuple[int, int]:
    """(the indexer's score FLOPs, the attention core's over its selected tokens) of one query at context T, in the
    form engines run: at long context the indexer, which scores every token, passes the attention it selects for."""
    m = dsa_dims(spec)
    form = usual_form(phase)
    _, core = mla_flops(d, spec, 1, 1, 2 * min(T, m.index_topk), form)
    _, scores = indexer_flops(d, spec, 1, 1, 2 * T)
    return scores, core


def indexer_passes_attention_at(d: int, spec: LayerSpec, phase: str = "decode", limit: int = 2**30) -> int | None:
    """The least context T at which a query's indexer scores cost more FLOPs than its attention (None below limit)."""
    lo, hi = 1, limit
    if indexer_share(d, spec, hi, phase)[0] <= indexer_share(d, spec, hi, phase)[1]:
        return None
    while lo < hi:  # the indexer's share grows with T: the first T where it passes
        mid = (lo + hi) // 2
        scores, core = indexer_share(d, spec, mid, phase)
        lo, hi = (mid + 1, hi) if scores <= core else (lo, mid)
    return lo


# --- the cache ----------------------------------------------------------------------------------------------------------
def cache_parts(spec: LayerSpec, kv_format: str | int) -> dict[str, int]:
    """Bytes a token a layer by part, every value in kv_format: MLA's latent and RoPE key, and the index key (as
    transformers keeps them, in the model's dtype by default)."""
    m = dsa_dims(spec)

    def size(values: int) -> int:
        return values * kv_format if isinstance(kv_format, int) else kv_format_bytes(values, kv_format)

    return {"latent": size(m.latent_width), "index_keys": size(m.index_head_dim)}


def engine_fp8_parts(spec: LayerSpec) -> dict[str, int]:
    """The engines' fp8 records a token a layer (vLLM's fp8_ds_mla with FlashMLA's sparse kernels, SGLang's NSA
    backend): the latent's r_kv values in fp8 with an fp32 scale per 128 and the RoPE key in bf16 (DeepSeek-V3.2:
    512 + 16 + 128 = 656 B), and the index key's D_I fp8 values with an fp32 scale per 128 (128 + 4 = 132 B)."""
    m = dsa_dims(spec)
    latent = m.kv_lora_rank + 4 * -(-m.kv_lora_rank // FP8_BLOCK) + 2 * m.qk_rope_head_dim
    return {"latent": latent, "index_keys": m.index_head_dim + 4 * -(-m.index_head_dim // FP8_BLOCK)}
