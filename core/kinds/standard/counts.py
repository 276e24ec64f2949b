"""Exact integer counts of one standard attention layer (MHA, GQA, MQA; windows, sinks, biases, q/k norm):
parameters by projection, FLOPs, and the bytes a timing run allocates.

Formulas from ../shared/REFERENCE.md (d = d_model, H = n_heads, K = n_kv_heads,
h = head_dim, T = seq_len, B = batch_size, b = bytes per element).
Torch-free: the GUI thread calls these on every slider tick.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING

from core.arch.layer import LayerSpec
from core.kinds.kind import FlopCounts, Workload
from core.kinds.standard.band import cached_tokens, causal_pairs_x2

if TYPE_CHECKING:
    from core.arch.config import AttentionConfig


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
    gate: int = 0  # d*H*h (+ H*h bias): q_proj's second half, the output gate (Qwen3-Next)

    def to_dict(self) -> dict[str, int]:
        """Every row; qk_norm, sinks and the gate only when the layer has them (older layers' JSON is unchanged)."""
        return {k: v for k, v in asdict(self).items() if v or k not in ("qk_norm", "sinks", "gate")}

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
        gate = [("gate", "W_gate", self.gate, f"the output gate, q_proj's second half: d_model x n_heads x head_dim"
                 f"{bias} = {d} x {H} x {h}")] if self.gate else []
        return gate + [("q", "W_q", self.q, f"W_q = d_model x n_heads x head_dim{bias} = {d} x {H} x {h}"),
                ("k", "W_k", self.k, f"W_k = d_model x n_kv_heads x head_dim{bias} = {d} x {K} x {h}"),
                ("v", "W_v", self.v, f"W_v = d_model x n_kv_heads x head_dim{bias} = {d} x {K} x {h}"),
                ("o", "W_o", self.o, f"W_o = n_heads x head_dim x d_model{o_bias} = {H} x {h} x {d}")]


def standard_params(d: int, spec: LayerSpec) -> ParamCounts:
    """Parameters of one layer of width d: W_q d x H*h, W_k and W_v d x K*h, W_o H*h x d, their biases
    ("qkv": q, k, v; "all": and o), q/k RMSNorm weights (2*h) and sink logits (H)."""
    H, K, h = spec.n_heads, spec.n_kv_heads, spec.head_dim
    qkv_bias = spec.biases != "none"
    q = d * H * h + (H * h if qkv_bias else 0)
    k = d * K * h + (K * h if qkv_bias else 0)
    v = k
    o = H * h * d + (d if spec.biases == "all" else 0)
    norm = 2 * h if spec.qk_norm else 0
    sinks = H if spec.sinks else 0
    gate = q if spec.output_gate else 0  # q_proj makes H*h gate values beside the queries
    total = q + k + v + o + norm + sinks + gate
    total_mha = total if K == H else standard_params(d, replace(spec, n_kv_heads=H)).total
    return ParamCounts(q=q, k=k, v=v, o=o, total=total, total_mha=total_mha, qk_norm=norm, sinks=sinks, gate=gate)


def standard_flops(d: int, spec: LayerSpec, work: Workload) -> FlopCounts:
    """Forward FLOPs of one layer of width d for the whole batch (a m x k by k x n matmul is 2*m*k*n).

    Prefill core is 4*B*H*T^2*h, halved under a causal mask (FlashAttention's convention); a local
    layer (window W, causal) scores only its band: 4*B*H*h*(T*W - W^2/2) once T > W.
    Decode is the new token's query against seq_len keys (seq_len - 1 cached plus its own), or
    min(seq_len, W) of them in a local layer: core 4*B*H*h*keys.
    Bias additions, norms and sinks are not counted (they are O(B*T*d), like softmax).
    """
    H, K, h = spec.n_heads, spec.n_kv_heads, spec.head_dim
    B, T = work.batch_size, work.seq_len
    Tq = T if work.phase == "prefill" else 1  # tokens each sequence projects
    projections = 2 * B * Tq * d * (H * h + 2 * K * h) + 2 * B * Tq * H * h * d
    if spec.output_gate:
        projections += 2 * B * Tq * d * H * h  # the gate's half of q_proj
    if work.phase == "prefill" and work.causal:
        attention = 2 * B * H * h * causal_pairs_x2(T, spec.window)
    elif work.phase == "prefill":
        attention = 4 * B * H * T * T * h
    else:
        attention = 4 * B * H * h * cached_tokens(T, spec.window)
    return FlopCounts(projections=projections, attention=attention, total=projections + attention)


def standard_timing_bytes(cfg: AttentionConfig, materialises_scores: bool) -> int:
    """Peak bytes a timing run allocates on its device, before it allocates them.

    Weights of the fused layer and of the three separate projections, the prefill
    activations (input, fused QKV, attention output, layer output), the decode KV cache,
    and the T x T scores when the attention backend materialises them (the math path).
    """
    b = cfg.dtype_bytes
    d, H, K, h = cfg.d_model, cfg.n_heads, cfg.kv_heads, cfg.head_dim
    B, T = cfg.batch_size, cfg.seq_len
    weights = 2 * standard_params(cfg.d_model, cfg.layer_spec()).total * b
    activations = B * T * (d + (H + 2 * K) * h + H * h + d) * b
    # Separate Q, K, V outputs live beside the fused one while both are timed.
    activations += B * T * (H + 2 * K) * h * b
    cache = 2 * B * K * T * h * b
    scores = B * H * T * T * 4 if materialises_scores else 0
    return weights + activations + cache + scores + mask_bytes(cfg)



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


