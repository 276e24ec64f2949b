"""Exact integer counts of one attention layer: parameters, FLOPs, KV-cache bytes.

Formulas from ../shared/REFERENCE.md (d = d_model, H = n_heads, K = n_kv_heads,
h = head_dim, T = seq_len, B = batch_size, L = n_layers, b = bytes per element).
Torch-free: the GUI thread calls these on every slider tick.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from core.arch.config import AttentionConfig
from core.arch.formats import kv_format_bytes
from core.arch.layer import LayerSpec
from core.arch.model import Architecture
from core.kinds.mla.counts import (
    MLAParamCounts,
    latent_bytes_per_token,
    mla_flops,
    mla_param_counts,
    usual_form,
)
from core.kinds.standard.band import cached_tokens, causal_pairs_x2


@dataclass(frozen=True)
class ParamCounts:
    q: int  # d*H*h (+ H*h bias)
    k: int  # d*K*h (+ K*h bias)
    v: int  # d*K*h (+ K*h bias)
    o: int  # H*h*d (+ d bias)
    total: int
    total_mha: int  # the same layer with K = H
    qk_norm: int = 0  # 2*h: the RMSNorm weights over head_dim of q and of k
    sinks: int = 0  # H: one learned sink logit per query head

    def to_dict(self) -> dict[str, int]:
        """Every row; qk_norm and sinks only when the layer has them (the JSON of older layers is unchanged)."""
        return {k: v for k, v in asdict(self).items() if v or k not in ("qk_norm", "sinks")}

    def formula(self, d: int, spec: LayerSpec) -> str:
        """The total's formula, as the costs panel's tooltip gives it."""
        bias = "" if spec.biases == "none" else " + bias"
        tied = spec.n_heads * spec.head_dim == d
        return (f"2 x d_model x head_dim x (n_heads + n_kv_heads){bias}" + (" + q/k norm + sinks" if self.qk_norm
                or self.sinks else "") + f"; the same layer as MHA (n_kv_heads = n_heads): {self.total_mha:,}"
                + (f" (4 x d_model^2 = {4 * d * d:,} when head_dim is tied)" if tied else ""))

    def rows(self, d: int, spec: LayerSpec) -> list[tuple[str, str, int, str]]:
        """(key, name, count, formula) of each projection, as the costs panel lists them."""
        H, K, h = spec.n_heads, spec.n_kv_heads, spec.head_dim
        bias = {"none": "", "qkv": " + bias", "all": " + bias"}[spec.biases]
        o_bias = " + bias" if spec.biases == "all" else ""
        return [("q", "W_q", self.q, f"W_q = d_model x n_heads x head_dim{bias} = {d} x {H} x {h}"),
                ("k", "W_k", self.k, f"W_k = d_model x n_kv_heads x head_dim{bias} = {d} x {K} x {h}"),
                ("v", "W_v", self.v, f"W_v = d_model x n_kv_heads x head_dim{bias} = {d} x {K} x {h}"),
                ("o", "W_o", self.o, f"W_o = n_heads x head_dim x d_model{o_bias} = {H} x {h} x {d}")]


@dataclass(frozen=True)
class FlopCounts:
    projections: int  # QKV and W_o matmuls
    attention: int  # the core: QK^T and PV
    total: int

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class KVCacheBytes:
    bytes_per_token_per_layer: int  # 2*K*h*b
    bytes_per_token: int  # times L
    bytes_total: int  # times B*T
    bytes_total_mha: int  # the same with K = H
    ratio_vs_mha: float  # K / H

    def to_dict(self) -> dict[str, int | float]:
        return asdict(self)


LayerParams = ParamCounts | MLAParamCounts  # each has total, total_mha, to_dict() and rows()


def layer_param_counts(d: int, spec: LayerSpec) -> LayerParams:
    """Parameters of one layer of width d: W_q d x H*h, W_k and W_v d x K*h, W_o H*h x d, their biases
    ("qkv": q, k, v; "all": and o), q/k RMSNorm weights (2*h) and sink logits (H). An MLA layer's
    projections are core/kinds/mla/counts.py's."""
    if spec.mla is not None:
        return mla_param_counts(d, spec, layer_param_counts(d, spec.mha()).total)
    H, K, h = spec.n_heads, spec.n_kv_heads, spec.head_dim
    qkv_bias = spec.biases != "none"
    q = d * H * h + (H * h if qkv_bias else 0)
    k = d * K * h + (K * h if qkv_bias else 0)
    v = k
    o = H * h * d + (d if spec.biases == "all" else 0)
    norm = 2 * h if spec.qk_norm else 0
    sinks = H if spec.sinks else 0
    total = q + k + v + o + norm + sinks
    total_mha = total if K == H else layer_param_counts(d, replace(spec, n_kv_heads=H)).total
    return ParamCounts(q=q, k=k, v=v, o=o, total=total, total_mha=total_mha, qk_norm=norm, sinks=sinks)


def param_counts(cfg: AttentionConfig) -> LayerParams:
    return layer_param_counts(cfg.d_model, cfg.layer_spec())


def query_tokens(cfg: AttentionConfig) -> int:
    """Tokens each sequence projects in one forward: T for prefill, 1 for decode."""
    return cfg.seq_len if cfg.phase == "prefill" else 1


def flop_counts(cfg: AttentionConfig) -> FlopCounts:
    """Forward FLOPs of the configured layer for the whole batch (see layer_flop_counts)."""
    return layer_flop_counts(cfg.d_model, cfg.layer_spec(), cfg)


def layer_flop_counts(d: int, spec: LayerSpec, cfg: AttentionConfig, form: str | None = None) -> FlopCounts:
    """Forward FLOPs of one layer of width d under cfg's workload (a m x k by k x n matmul is 2*m*k*n).

    Prefill core is 4*B*H*T^2*h, halved under a causal mask (FlashAttention's convention); a local
    layer (window W, causal) scores only its band: 4*B*H*h*(T*W - W^2/2) once T > W.
    Decode is the new token's query against seq_len keys (seq_len - 1 cached plus its own), or
    min(seq_len, W) of them in a local layer: core 4*B*H*h*keys.
    Bias additions, norms and sinks are not counted (they are O(B*T*d), like softmax).
    An MLA layer runs form (naive or absorbed; by default naive for prefill, absorbed for decode): see
    core/kinds/mla/counts.py.
    """
    H, K, h = spec.n_heads, spec.n_kv_heads, spec.head_dim
    B, T = cfg.batch_size, cfg.seq_len
    Tq = query_tokens(cfg)
    if spec.mla is not None:
        pairs_x2 = (causal_pairs_x2(T, None) if cfg.causal else 2 * T * T) if cfg.phase == "prefill" else 2 * T
        projections, attention = mla_flops(d, spec, B, Tq, pairs_x2, form or usual_form(cfg.phase))
        return FlopCounts(projections=projections, attention=attention, total=projections + attention)
    projections = 2 * B * Tq * d * (H * h + 2 * K * h) + 2 * B * Tq * H * h * d
    if cfg.phase == "prefill" and cfg.causal:
        attention = 2 * B * H * h * causal_pairs_x2(T, spec.window)
    elif cfg.phase == "prefill":
        attention = 4 * B * H * T * T * h
    else:
        attention = 4 * B * H * h * cached_tokens(T, spec.window)
    return FlopCounts(projections=projections, attention=attention, total=projections + attention)


def layer_kv_bytes_per_token(spec: LayerSpec, kv_format: str | int) -> int:
    """K and V of one layer for one token: 2 x n_kv_heads x head_dim values in kv_format (a format name,
    or bytes per element as before). An MLA layer caches its latent and RoPE key: r_kv + r values."""
    if spec.mla is not None:
        return latent_bytes_per_token(spec, kv_format)
    values = 2 * spec.kv_width
    return values * kv_format if isinstance(kv_format, int) else kv_format_bytes(values, kv_format)


def layer_kv_bytes(spec: LayerSpec, cfg: AttentionConfig) -> int:
    """One layer's cache at cfg's context for the whole batch: a local layer holds min(T, W) tokens."""
    per_token = layer_kv_bytes_per_token(spec, cfg.kv_format)
    return per_token * cached_tokens(cfg.seq_len, spec.window) * cfg.batch_size


@dataclass(frozen=True)
class ModelCounts:
    """Whole-model attention figures of an Architecture: sums over its layers."""

    params: int  # attention parameters of every layer (no MLP, no embeddings)
    kv_bytes_per_token: int  # every layer's K and V for one token, while the context fits every window (0: encoder)
    kv_bytes_total: int  # the cache at batch x seq_len, each local layer holding min(seq_len, W) tokens

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def model_counts(arch: Architecture, cfg: AttentionConfig) -> ModelCounts:
    """arch's totals under cfg's workload (seq_len, batch, KV format). An encoder keeps no KV cache."""
    params = sum(layer_param_counts(arch.d_model, s).total * n for s, n in arch.groups())
    if arch.kind == "encoder":
        return ModelCounts(params, 0, 0)
    per_token = sum(layer_kv_bytes_per_token(s, cfg.kv_format) * n for s, n in arch.groups())
    total = sum(layer_kv_bytes(s, cfg) * n for s, n in arch.groups())
    return ModelCounts(params, per_token, total)


@dataclass(frozen=True)
class KindCounts:
    """The layers of one kind (global, or local with one window): how many, and their summed figures."""

    kind: str  # "global" or "local W=1024"
    window: int | None
    n_layers: int
    params: int  # all these layers' attention parameters
    flops: int  # all these layers' forward FLOPs under the workload
    kv_bytes_per_token: int  # what each token adds to their cache while it fits the window
    kv_bytes_total: int  # their cache at batch x seq_len

    def to_dict(self) -> dict[str, int | str | None]:
        return asdict(self)


def kind_counts(arch: Architecture, cfg: AttentionConfig) -> list[KindCounts]:
    """Every whole-model figure split by layer kind (global first, then each window), summing to model_counts."""
    kinds: dict[int | None, list[int]] = {}
    for spec, n in arch.groups():
        p = layer_param_counts(arch.d_model, spec).total
        f = layer_flop_counts(arch.d_model, spec, cfg).total
        kv_t = 0 if arch.kind == "encoder" else layer_kv_bytes_per_token(spec, cfg.kv_format)
        kv = 0 if arch.kind == "encoder" else layer_kv_bytes(spec, cfg)
        acc = kinds.setdefault(spec.window, [0, 0, 0, 0, 0])
        for i, value in enumerate((n, p * n, f * n, kv_t * n, kv * n)):
            acc[i] += value
    order = sorted(kinds, key=lambda w: (w is not None, w or 0))
    return [KindCounts("global" if w is None else f"local W={w}", w, *kinds[w]) for w in order]


def kv_cache_bytes(cfg: AttentionConfig) -> KVCacheBytes:
    """KV cache = 2 * K * h * b_kv * B * (L_global * T + L_local * min(T, W)) (the 2 is K and V)."""
    arch = cfg.architecture()
    mha = Architecture(arch.d_model, tuple(s.mha() for s in arch.layers))
    mc, mm = model_counts(arch, cfg), model_counts(mha, cfg)
    return KVCacheBytes(
        bytes_per_token_per_layer=layer_kv_bytes_per_token(cfg.layer_spec(), cfg.kv_format),
        bytes_per_token=mc.kv_bytes_per_token,
        bytes_total=mc.kv_bytes_total,
        bytes_total_mha=mm.kv_bytes_total,
        ratio_vs_mha=mc.kv_bytes_total / mm.kv_bytes_total if mm.kv_bytes_total else 0.0,
    )


def timing_bytes(cfg: AttentionConfig, materialises_scores: bool = False) -> int:
    """Peak bytes a timing run allocates on its device, before it allocates them.

    Weights of the fused layer and of the three separate projections, the prefill
    activations (input, fused QKV, attention output, layer output), the decode KV cache,
    and the T x T scores when the attention backend materialises them (the math path).
    """
    b = cfg.dtype_bytes
    d, H, K, h = cfg.d_model, cfg.n_heads, cfg.kv_heads, cfg.head_dim
    B, T = cfg.batch_size, cfg.seq_len
    if cfg.mla is not None:
        return mla_timing_bytes(cfg, materialises_scores)
    weights = 2 * param_counts(cfg).total * b
    activations = B * T * (d + (H + 2 * K) * h + H * h + d) * b
    # Separate Q, K, V outputs live beside the fused one while both are timed.
    activations += B * T * (H + 2 * K) * h * b
    cache = 2 * B * K * T * h * b
    scores = B * H * T * T * 4 if materialises_scores else 0
    return weights + activations + cache + scores + mask_bytes(cfg)


def mla_timing_bytes(cfg: AttentionConfig, materialises_scores: bool) -> int:
    """An MLA timing's peak (core/kinds/mla/timing.py): the weights; what it keeps (the input, the query, the latent cache
    and the decompressed per-head cache); one forward's temporaries: the low-rank query and the latent with their
    RMSNorms (four copies each: the projection, its square, the result, a spare), then the larger of the naive form's
    (kv_b's output, the concatenated keys and queries, the output and its reshape) and the absorbed form's (the
    absorbed query, its concatenation, the latent outputs, the values and their reshape, the key [c | k_pe]); and
    the T x T scores and mask on the math path (tests/core/test_mla_timing.py holds it above a run's growth)."""
    m, b = cfg.mla, cfg.dtype_bytes
    assert m is not None
    B, T, H, d = cfg.batch_size, cfg.seq_len, cfg.n_heads, cfg.d_model
    n, r, v, r_kv = m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim, m.kv_lora_rank
    weights = param_counts(cfg).total * b
    kept = d + H * m.qk_head_dim + m.latent_width + m.decompressed_width(H)
    paths = 4 * m.q_lora_rank + H * m.qk_head_dim + 4 * m.latent_width
    naive = H * (n + v) + 2 * H * m.qk_head_dim + 2 * H * v + d
    absorbed = H * (3 * r_kv + r + r_kv + 2 * v) + m.latent_width + d
    # the math path: the scores, their masked copy and the softmax (float32), and a T x T causal mask
    scores = 3 * B * H * T * T * 4 + T * T * 4 if materialises_scores else 0
    return weights + B * T * (kept + paths + max(naive, absorbed)) * b + scores


def mask_bytes(cfg: AttentionConfig) -> int:
    """What a window's or the sinks' core allocates beyond SDPA's own: the blockwise kernel's per-block copies
    of K and V (T >= 2W), or a T x T mask (bool, built in a few temporaries, turned to float by SDPA: about
    8 bytes a pair) and the sinks' float mask (H x T x (T + 1)) with their padded K and V."""
    spec, b = cfg.layer_spec(), cfg.dtype_bytes
    B, T, H, K, h = cfg.batch_size, cfg.seq_len, cfg.n_heads, cfg.kv_heads, cfg.head_dim
    W = spec.window if cfg.causal else None
    if W is not None and T >= 2 * W:  # blockwise: [prev | own] keys and values of every block, a small shared mask
        blocks = -(-T // W)
        return 2 * 2 * B * K * blocks * (2 * W + 1) * h * b + H * W * (2 * W + 1) * b + 2 * B * H * T * h * b
    pairs_mask = 8 * T * T if (W is not None and T > W) or (spec.sinks and cfg.causal) else 0
    sinks = H * T * (T + 1) * b + 2 * B * K * (T + 1) * h * b if spec.sinks else 0
    return pairs_mask + sinks


def format_bytes(n: float) -> str:
    """1536 -> '1.5 KiB', binary units as memory is sold to engineers."""
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB"]  # 1.18e18 B read '1048 PiB' without EiB
    value = float(n)
    for unit in units:
        if abs(value) < 1024 or unit == units[-1]:
            if unit == "B":
                return f"{int(value)} B"
            return f"{value:.3g} {unit}" if abs(value) < 100 else f"{value:.0f} {unit}"
        value /= 1024
    return f"{value} B"


def format_noun(n: float, noun: str) -> str:
    """format_noun(1, "head") -> '1 head', (12, "head") -> '12 heads', (2.25, "head") -> '2.25 heads'."""
    figure = f"{int(n):,}" if float(n).is_integer() else f"{n:.3g}"
    return f"{figure} {noun}" if n == 1 else f"{figure} {noun}s"


def format_count(n: float) -> str:
    """2359296 -> '2.36M'. The unit follows the value rounded to 3 figures: 999,999 is '1M', not '1e+03K'."""
    rounded = float(f"{n:.3g}")
    for div, suffix in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")):
        if abs(rounded) >= div:
            return f"{rounded / div:.3g}{suffix}"
    return f"{n:.0f}" if float(n).is_integer() else f"{n:.3g}"
