"""Exact integer counts of a model's attention: parameters, FLOPs, KV-cache bytes, for any layer kind.

Each layer's figures come from its kind (core/kinds/registry.py); this module sums them over a model's
layers and gives the figures every view shows. Torch-free: the GUI thread calls these on every slider tick.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.arch.model import Architecture
from core.kinds.kind import FlopCounts, LayerParams
from core.kinds.registry import KINDS, kind_of

__all__ = ["FlopCounts", "KVCacheBytes", "KindCounts", "LayerParams", "ModelCounts", "flop_counts", "kind_counts",
           "kv_cache_bytes", "layer_flop_counts", "layer_kv_bytes", "layer_kv_bytes_per_token", "layer_param_counts",
           "model_counts", "param_counts", "query_tokens", "timing_bytes"]


@dataclass(frozen=True)
class KVCacheBytes:
    bytes_per_token_per_layer: int  # 2*K*h*b
    bytes_per_token: int  # times L
    bytes_total: int  # times B*T
    bytes_total_mha: int  # the same with K = H
    ratio_vs_mha: float  # K / H
    state_bytes: int = 0  # of bytes_total, the recurrent layers' fixed state (a mixer's or a hybrid stack's)

    def to_dict(self) -> dict[str, int | float]:
        out = asdict(self)
        if not self.state_bytes:  # a plain model's JSON reads as before
            out.pop("state_bytes")
        return out


def layer_param_counts(d: int, spec: LayerSpec) -> LayerParams:
    """Parameters of one layer of width d, by projection (its kind's count)."""
    return kind_of(spec).params(d, spec)


def param_counts(cfg: AttentionConfig) -> LayerParams:
    return layer_param_counts(cfg.d_model, cfg.layer_spec())


def query_tokens(cfg: AttentionConfig) -> int:
    """Tokens each sequence projects in one forward: T for prefill, 1 for decode."""
    return cfg.seq_len if cfg.phase == "prefill" else 1


def flop_counts(cfg: AttentionConfig) -> FlopCounts:
    """Forward FLOPs of the configured layer for the whole batch (see layer_flop_counts)."""
    return layer_flop_counts(cfg.d_model, cfg.layer_spec(), cfg)


def layer_flop_counts(d: int, spec: LayerSpec, cfg: AttentionConfig, form: str | None = None) -> FlopCounts:
    """Forward FLOPs of one layer of width d under cfg's workload (its kind's count; form picks an execution
    form where the kind has several)."""
    return kind_of(spec).flops(d, spec, cfg, form)


def layer_kv_bytes_per_token(spec: LayerSpec, kv_format: str | int) -> int:
    """What one token adds to one layer's cache in kv_format (a format name, or bytes per element): 2 x n_kv_heads
    x head_dim values for a standard layer, the latent and its RoPE key for MLA."""
    return kind_of(spec).cache_bytes_per_token(spec, kv_format)


def layer_kv_bytes(spec: LayerSpec, cfg: AttentionConfig) -> int:
    """One layer's cache at cfg's context for the whole batch: a local layer holds min(T, W) tokens; a kind with a
    fixed state adds it per sequence."""
    kind = kind_of(spec)
    state = kind.state_bytes(spec, cfg.state_format, cfg.dtype)
    return (kind.cache_bytes_at(spec, cfg.kv_format, cfg.seq_len) + state) * cfg.batch_size


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
    """The layers of one kind (global, local with one window, or a mixer such as Gated DeltaNet): how many, and their
    summed figures."""

    kind: str  # "global", "local W=1024" (attention of any kind), or a mixer's title ("Gated DeltaNet")
    window: int | None
    n_layers: int
    params: int  # all these layers' attention parameters
    flops: int  # all these layers' forward FLOPs under the workload
    kv_bytes_per_token: int  # what each token adds to their cache while it fits the window
    kv_bytes_total: int  # their cache at batch x seq_len, with any fixed state
    state_bytes: int = 0  # the fixed state of all these layers for the batch (a mixer's; 0 for a KV cache)
    layer_kind: str = "standard"  # the registry's name of a mixer's kind ("standard": attention layers of any kind)

    def to_dict(self) -> dict[str, int | str | None]:
        out = asdict(self)
        if not self.state_bytes and self.layer_kind == "standard":  # a plain model's JSON reads as before
            out.pop("state_bytes")
            out.pop("layer_kind")
        return out


def kind_counts(arch: Architecture, cfg: AttentionConfig) -> list[KindCounts]:
    """Every whole-model figure split by layer kind (global first, then each window, then each other kind in order of
    first appearance), summing to model_counts."""
    groups: dict[tuple[str, int | None], list[int]] = {}
    for spec, n in arch.groups():
        kind = kind_of(spec)
        p = layer_param_counts(arch.d_model, spec).total
        f = layer_flop_counts(arch.d_model, spec, cfg).total
        kv_t = 0 if arch.kind == "encoder" else layer_kv_bytes_per_token(spec, cfg.kv_format)
        kv = 0 if arch.kind == "encoder" else layer_kv_bytes(spec, cfg)
        state = 0 if arch.kind == "encoder" else kind.state_bytes(spec, cfg.state_format, cfg.dtype) * cfg.batch_size
        # attention layers split by window, and by a kind's variants (DeepSeek-V4's layer types)
        key = (spec.kind if kind.has_state else kind.variant(spec) or "standard", spec.window)
        acc = groups.setdefault(key, [0, 0, 0, 0, 0, 0])
        for i, value in enumerate((n, p * n, f * n, kv_t * n, kv * n, state * n)):
            acc[i] += value
    first = list(dict.fromkeys(k for k, _ in groups))
    order = sorted(groups, key=lambda k: (first.index(k[0]) if k[0] != "standard" else -1, k[1] is not None, k[1] or 0))
    out = []
    for name, w in order:
        n, p, f, kv_t, kv, state = groups[(name, w)]
        label = (("global" if w is None else f"local W={w}") if name == "standard" else
                 KINDS[name].title if name in KINDS else name)
        out.append(KindCounts(label, w, n, p, f, kv_t, kv, state, name if name in KINDS else "standard"))
    return out


def kv_cache_bytes(cfg: AttentionConfig) -> KVCacheBytes:
    """KV cache = 2 * K * h * b_kv * B * (L_global * T + L_local * min(T, W)) (the 2 is K and V)."""
    arch = cfg.architecture()
    mha = Architecture(arch.d_model, tuple(kind_of(s).baseline(s) for s in arch.layers))
    mc, mm = model_counts(arch, cfg), model_counts(mha, cfg)
    return KVCacheBytes(
        bytes_per_token_per_layer=layer_kv_bytes_per_token(cfg.layer_spec(), cfg.kv_format),
        bytes_per_token=mc.kv_bytes_per_token,
        bytes_total=mc.kv_bytes_total,
        bytes_total_mha=mm.kv_bytes_total,
        ratio_vs_mha=mc.kv_bytes_total / mm.kv_bytes_total if mm.kv_bytes_total else 0.0,
        state_bytes=model_state_bytes(arch, cfg),
    )


def model_state_bytes(arch: Architecture, cfg: AttentionConfig) -> int:
    """Every recurrent layer's fixed state for the batch (0 for a model of attention layers only, or an encoder)."""
    if arch.kind == "encoder":
        return 0
    return sum(kind_of(s).state_bytes(s, cfg.state_format, cfg.dtype) * n for s, n in arch.groups()) * cfg.batch_size


def timing_bytes(cfg: AttentionConfig, materialises_scores: bool = False) -> int:
    """Peak bytes a timing run of cfg's layer allocates on its device, before it allocates them (its kind's count)."""
    return kind_of(cfg.layer_spec()).timing_bytes(cfg, materialises_scores)
