"""Exact counts of one DeepSeek-V4 attention layer: parameters by projection (its compressor and indexer included),
the cache a sequence keeps at T by part (window, compressed entries, index keys), the entries a query reads, and
FLOPs.

Symbols: d = d_model, H = n_heads, r_q = q_lora_rank, D = kv_head_dim, g = o_groups, r_o = o_lora_rank, W = window,
m = compress_ratio, H_I, D_I, k = the indexer's heads, width and top-k. As transformers' DeepseekV4Attention holds
them: q_a d x r_q, q_a_norm r_q, q_b r_q x H D, kv_proj d x D, kv_norm D, o_a (block-diagonal) H D x r_o, o_b
g r_o x d, sinks H. A heavily compressed layer's compressor: kv_proj and gate_proj d x D, position_bias m x D, kv_norm
D. A compressed sparse layer's: the same at 2 D (overlapping windows: each token feeds two entries), kv_norm D, and
its indexer: kv_proj and gate_proj d x 2 D_I, position_bias m x 2 D_I, kv_norm D_I, q_b r_q x H_I D_I, weights_proj
d x H_I.

Which entries query t (n = t + 1 tokens seen) reads: the window's min(n, W) tokens; a compressed entry w once all
its tokens are seen, (w + 1) m <= n, so floor(n / m) of them; a sparse layer at most k of those. Torch-free.
"""

from __future__ import annotations

from core.arch.formats import kv_format_bytes
from core.arch.layer import LayerSpec
from core.kinds.dsv4.spec import V4Dims
from core.kinds.kind import FlopCounts, Workload
from core.kinds.projections import NamedParts


def v4_dims(spec: LayerSpec) -> V4Dims:
    if not isinstance(spec.widths, V4Dims):
        raise ValueError("this layer is not a DeepSeek-V4 layer.")
    return spec.widths


PART_NAMES = {
    "q_a": "q_a_proj", "q_a_norm": "q_a_norm", "q_b": "q_b_proj", "kv": "kv_proj", "kv_norm": "kv_norm",
    "o_a": "o_a_proj", "o_b": "o_b_proj", "sinks": "sinks",
    "comp_kv": "compressor.kv_proj", "comp_gate": "compressor.gate_proj", "comp_bias": "compressor.position_bias",
    "comp_norm": "compressor.kv_norm",
    "idx_kv": "compressor.indexer.kv_proj", "idx_gate": "compressor.indexer.gate_proj",
    "idx_bias": "compressor.indexer.position_bias", "idx_norm": "compressor.indexer.kv_norm",
    "idx_q": "compressor.indexer.q_b_proj", "idx_weights": "compressor.indexer.scorer.weights_proj",
}


def v4_param_counts(d: int, spec: LayerSpec, total_mha: int) -> NamedParts:
    m, H = v4_dims(spec), spec.n_heads
    D, r_q, g, r_o = m.kv_head_dim, m.q_lora_rank, m.o_groups, m.o_lora_rank
    parts = {"q_a": d * r_q, "q_a_norm": r_q, "q_b": r_q * H * D, "kv": d * D, "kv_norm": D, "o_a": H * D * r_o,
             "o_b": g * r_o * d, "sinks": H}
    formulas = {"q_a": f"d_model x q_lora_rank = {d} x {r_q}", "q_a_norm": f"RMSNorm over q_lora_rank = {r_q}",
                "q_b": f"q_lora_rank x H x D = {r_q} x {H} x {D} (then an unweighted RMSNorm a head)",
                "kv": f"d_model x D = {d} x {D}: the one KV head (K = V)", "kv_norm": f"RMSNorm over D = {D}",
                "o_a": f"g blocks of (H D / g) x r_o = H x D x r_o = {H} x {D} x {r_o}: the grouped output",
                "o_b": f"g x r_o x d_model = {g} x {r_o} x {d}", "sinks": f"one sink logit a head: {H}"}
    wide, m_ = (2 * D, m.compress_ratio) if m.compressor == "csa" else (D, m.compress_ratio)
    if m.compressor != "none":
        parts |= {"comp_kv": d * wide, "comp_gate": d * wide, "comp_bias": m_ * wide, "comp_norm": D}
        formulas |= {"comp_kv": f"d_model x {'2 D' if wide != D else 'D'} = {d} x {wide}: what each token adds to its "
                                "entries" + (" (two: this window's and the next's)" if wide != D else ""),
                     "comp_gate": f"d_model x {wide}: each token's weight in its entries, a channel each",
                     "comp_bias": f"m x {wide} = {m_} x {wide}: a position's weight in its window",
                     "comp_norm": f"RMSNorm over an entry's D = {D}"}
    if m.compressor == "csa":
        HI, DI = m.index_n_heads, m.index_head_dim
        parts |= {"idx_kv": d * 2 * DI, "idx_gate": d * 2 * DI, "idx_bias": m_ * 2 * DI, "idx_norm": DI,
                  "idx_q": r_q * HI * DI, "idx_weights": d * HI}
        formulas |= {"idx_kv": f"d_model x 2 D_I = {d} x {2 * DI}: the index keys' compressor",
                     "idx_gate": f"d_model x 2 D_I = {d} x {2 * DI}", "idx_bias": f"m x 2 D_I = {m_} x {2 * DI}",
                     "idx_norm": f"RMSNorm over D_I = {DI}",
                     "idx_q": f"q_lora_rank x H_I x D_I = {r_q} x {HI} x {DI}: the indexer's queries",
                     "idx_weights": f"d_model x H_I = {d} x {HI}: a weight per index head and token"}
    return NamedParts(parts, {k: PART_NAMES[k] for k in parts}, formulas, total_mha)


# --- the entries a query reads -----------------------------------------------------------------------------------------
def floor_sum(T: int, m: int) -> int:
    """sum over n = 1..T of floor(n / m): with q = floor(T / m), r = T mod m, it is m q (q - 1) / 2 + q (r + 1)."""
    q, r = divmod(T, m)
    return m * q * (q - 1) // 2 + q * (r + 1)


def window_pairs(T: int, W: int) -> int:
    """sum over n = 1..T of min(n, W)."""
    return T * (T + 1) // 2 if T <= W else W * (W + 1) // 2 + (T - W) * W


def compressed_pairs(T: int, m: V4Dims) -> int:
    """The (query, entry) pairs a causal prefill of T tokens reads beyond the window: sum over n of floor(n / m), at
    most k of them a query in a sparse layer (floor(n / m) reaches k at n = k m)."""
    if m.compressor == "none":
        return 0
    if m.compressor == "hca" or T < m.index_topk * m.compress_ratio:
        return floor_sum(T, m.compress_ratio)
    k, r = m.index_topk, m.compress_ratio
    return floor_sum(k * r - 1, r) + k * (T - k * r + 1)


def entries_read(spec: LayerSpec, T: int, phase: str) -> tuple[float, float]:
    """(window tokens, compressed entries) one query reads at context T: a decode step's (n = T), or a causal
    prefill's mean over its T queries."""
    m = v4_dims(spec)
    if phase == "decode":
        entries = 0 if m.compressor == "none" else T // m.compress_ratio
        return min(T, m.window), min(entries, m.index_topk) if m.compressor == "csa" else entries
    return window_pairs(T, m.window) / T, compressed_pairs(T, m) / T


def visible_entries_pairs(T: int, m: V4Dims) -> int:
    """The (query, entry) pairs a csa layer's indexer scores in a causal prefill: every entry a query may read."""
    return floor_sum(T, m.compress_ratio) if m.compressor == "csa" else 0


# --- the cache -----------------------------------------------------------------------------------------------------------
def cache_values(spec: LayerSpec, T: int) -> dict[str, int]:
    """Values one sequence keeps at T tokens, by part: the window's min(T, W) tokens of D (K = V, kept once), the
    compressed entries' floor(T / m) of D, a sparse layer's index keys floor(T / m) of D_I."""
    m = v4_dims(spec)
    entries = T // m.compress_ratio if m.compressor != "none" else 0
    return {"window": min(T, m.window) * m.kv_head_dim, "compressed": entries * m.kv_head_dim,
            "index_keys": entries * m.index_head_dim if m.compressor == "csa" else 0}


def cache_bytes(spec: LayerSpec, T: int, kv_format: str | int) -> dict[str, int]:
    def size(values: int) -> int:
        return values * kv_format if isinstance(kv_format, int) else kv_format_bytes(values, kv_format)

    return {part: size(v) for part, v in cache_values(spec, T).items()}


# --- FLOPs ----------------------------------------------------------------------------------------------------------------
def token_projection_flops(d: int, spec: LayerSpec) -> int:
    """A new token's matmuls with weights: the query path, the KV head, the grouped output, and its compressor's and
    indexer's projections (2 FLOPs a weight)."""
    p = v4_param_counts(d, spec, 0).parts
    matmuls = ("q_a", "q_b", "kv", "o_a", "o_b", "comp_kv", "comp_gate", "idx_kv", "idx_gate", "idx_q", "idx_weights")
    return 2 * sum(p.get(k, 0) for k in matmuls)


def decode_parts(spec: LayerSpec, T: int) -> dict[str, int]:
    """One decode step's core at context T by part: the attention over the window and the entries read, and a
    sparse layer's index scores over every complete entry."""
    m = v4_dims(spec)
    window, entries = entries_read(spec, T, "decode")
    scored = T // m.compress_ratio if m.compressor == "csa" else 0
    return {"attention": 4 * spec.n_heads * m.kv_head_dim * int(window + entries),
            "indexer": (2 * m.index_n_heads * m.index_head_dim + 2 * m.index_n_heads) * scored}


def decode_core(spec: LayerSpec, batch: int, T: int) -> int:
    """One decode step's core at context T, every part."""
    return batch * sum(decode_parts(spec, T).values())


def v4_layer_flops(d: int, spec: LayerSpec, work: Workload) -> FlopCounts:
    """One layer's forward: projections on the new tokens; the core over the window and the compressed entries read
    (scores and values, 4 H D a pair); a sparse layer's indexer over every entry a query may read (2 H_I D_I + 2 H_I
    a pair). The compressors' pooling is a few FLOPs a value and is left out."""
    m = v4_dims(spec)
    T, B, H, D = work.seq_len, work.batch_size, spec.n_heads, m.kv_head_dim
    if work.phase == "prefill":
        if not work.causal:
            raise ValueError("a DeepSeek-V4 layer reads tokens in order: it is causal; turn the causal mask on.")
        Tq, pairs = T, window_pairs(T, m.window) + compressed_pairs(T, m)
        scored = visible_entries_pairs(T, m)
    else:
        window, entries = entries_read(spec, T, "decode")
        Tq, pairs = 1, int(window + entries)
        scored = T // m.compress_ratio if m.compressor == "csa" else 0
    projections = B * Tq * token_projection_flops(d, spec)
    core = B * (4 * H * D * pairs + (2 * m.index_n_heads * m.index_head_dim + 2 * m.index_n_heads) * scored)
    return FlopCounts(projections=projections, attention=core, total=projections + core)
