"""Exact integer counts of one attention layer: parameters, FLOPs, KV-cache bytes.

Formulas from ../shared/REFERENCE.md (d = d_model, H = n_heads, K = n_kv_heads,
h = head_dim, T = seq_len, B = batch_size, L = n_layers, b = bytes per element).
Torch-free: the GUI thread calls these on every slider tick.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from core.arch.layer import LayerSpec
from core.arch.model import Architecture
from core.config import AttentionConfig


@dataclass(frozen=True)
class ParamCounts:
    q: int  # d*H*h (+ H*h bias)
    k: int  # d*K*h (+ K*h bias)
    v: int  # d*K*h (+ K*h bias)
    o: int  # H*h*d (+ d bias)
    total: int
    total_mha: int  # the same layer with K = H

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


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


def layer_param_counts(d: int, spec: LayerSpec) -> ParamCounts:
    """Parameters of one layer of width d: W_q d x H*h, W_k and W_v d x K*h, W_o H*h x d (+ biases)."""
    H, K, h, bias = spec.n_heads, spec.n_kv_heads, spec.head_dim, spec.bias
    q = d * H * h + (H * h if bias else 0)
    k = d * K * h + (K * h if bias else 0)
    v = k
    o = H * h * d + (d if bias else 0)
    total = q + k + v + o
    total_mha = total if K == H else total + 2 * (d * (H - K) * h + ((H - K) * h if bias else 0))
    return ParamCounts(q=q, k=k, v=v, o=o, total=total, total_mha=total_mha)


def param_counts(cfg: AttentionConfig) -> ParamCounts:
    return layer_param_counts(cfg.d_model, cfg.layer_spec())


def query_tokens(cfg: AttentionConfig) -> int:
    """Tokens each sequence projects in one forward: T for prefill, 1 for decode."""
    return cfg.seq_len if cfg.phase == "prefill" else 1


def flop_counts(cfg: AttentionConfig) -> FlopCounts:
    """Forward FLOPs of the configured layer for the whole batch (see layer_flop_counts)."""
    return layer_flop_counts(cfg.d_model, cfg.layer_spec(), cfg)


def layer_flop_counts(d: int, spec: LayerSpec, cfg: AttentionConfig) -> FlopCounts:
    """Forward FLOPs of one layer of width d under cfg's workload (a m x k by k x n matmul is 2*m*k*n).

    Prefill core is 4*B*H*T^2*h, halved under a causal mask (FlashAttention's convention).
    Decode is one new query per sequence against T cached keys: core 4*B*H*T*h.
    Bias additions are not counted (they are O(B*T*d), like softmax).
    """
    H, K, h = spec.n_heads, spec.n_kv_heads, spec.head_dim
    B, T = cfg.batch_size, cfg.seq_len
    Tq = query_tokens(cfg)
    projections = 2 * B * Tq * d * (H * h + 2 * K * h) + 2 * B * Tq * H * h * d
    if cfg.phase == "prefill":
        attention = 4 * B * H * T * T * h
        if cfg.causal:
            attention //= 2
    else:
        attention = 4 * B * H * T * h
    return FlopCounts(projections=projections, attention=attention, total=projections + attention)


def layer_kv_bytes_per_token(spec: LayerSpec, dtype_bytes: int) -> int:
    """K and V of one layer for one token: 2 x n_kv_heads x head_dim x bytes."""
    return 2 * spec.kv_width * dtype_bytes


@dataclass(frozen=True)
class ModelCounts:
    """Whole-model attention figures of an Architecture: sums over its layers."""

    params: int  # attention parameters of every layer (no MLP, no embeddings)
    kv_bytes_per_token: int  # every layer's K and V for one token (0 for an encoder)
    kv_bytes_total: int  # times batch x seq_len

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def model_counts(arch: Architecture, cfg: AttentionConfig) -> ModelCounts:
    """arch's totals under cfg's workload (seq_len, batch, dtype). An encoder keeps no KV cache."""
    params = sum(layer_param_counts(arch.d_model, s).total * n for s, n in arch.groups())
    per_token = 0 if arch.kind == "encoder" else sum(
        layer_kv_bytes_per_token(s, cfg.dtype_bytes) * n for s, n in arch.groups())
    return ModelCounts(params, per_token, per_token * cfg.seq_len * cfg.batch_size)


def kv_cache_bytes(cfg: AttentionConfig) -> KVCacheBytes:
    """KV cache = 2 * L * K * h * T * B * b (the 2 is K and V)."""
    per_layer = 2 * cfg.kv_heads * cfg.head_dim * cfg.dtype_bytes
    per_token = per_layer * cfg.n_layers
    total = per_token * cfg.seq_len * cfg.batch_size
    total_mha = 2 * cfg.n_heads * cfg.head_dim * cfg.dtype_bytes * cfg.n_layers
    total_mha *= cfg.seq_len * cfg.batch_size
    return KVCacheBytes(
        bytes_per_token_per_layer=per_layer,
        bytes_per_token=per_token,
        bytes_total=total,
        bytes_total_mha=total_mha,
        ratio_vs_mha=cfg.kv_heads / cfg.n_heads,
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
    weights = 2 * param_counts(cfg).total * b
    activations = B * T * (d + (H + 2 * K) * h + H * h + d) * b
    # Separate Q, K, V outputs live beside the fused one while both are timed.
    activations += B * T * (H + 2 * K) * h * b
    cache = 2 * B * K * T * h * b
    scores = B * H * T * T * 4 if materialises_scores else 0
    return weights + activations + cache + scores


def format_bytes(n: float) -> str:
    """1536 -> '1.5 KiB', binary units as memory is sold to engineers."""
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
    value = float(n)
    for unit in units:
        if abs(value) < 1024 or unit == units[-1]:
            if unit == "B":
                return f"{int(value)} B"
            return f"{value:.3g} {unit}" if abs(value) < 100 else f"{value:.0f} {unit}"
        value /= 1024
    return f"{value} B"


def format_count(n: float) -> str:
    """2359296 -> '2.36M'."""
    for div, suffix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")):
        if abs(n) >= div:
            return f"{n / div:.3g}{suffix}"
    return f"{n:.0f}" if float(n).is_integer() else f"{n:.3g}"
