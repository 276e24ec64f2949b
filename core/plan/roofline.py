"""The roofline of one attention layer on one GPU: its prefill and its decode step as points (FLOPs over
the bytes they move), the compute roof and the bandwidth slope, each point's ideal time, and a timing
measured on the device the app runs on as a point of its own (the achieved FLOP/s at the same intensity).

Bytes moved by one forward of the layer: its weights read once (in the weights dtype), the KV cache (a
decode step reads every cached token's K and V; a prefill writes its tokens'), and the activations (the
input read and the output written, in 16-bit). time >= max(FLOPs / peak, bytes / bandwidth); the bound a
point can reach is min(peak, intensity x bandwidth).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from core.arch.config import AttentionConfig
from core.counts import layer_flop_counts, layer_kv_bytes_per_token, param_counts
from core.kinds.registry import kind_of
from core.plan.fit import WEIGHT_BYTES, kv_format_of
from core.plan.gpus import COMPUTE_DTYPE, GPU

ACTIVATION_BYTES = 2


@dataclass(frozen=True)
class RoofPoint:
    phase: str  # prefill or decode
    flops: int
    bytes: int  # weights + kv + activations
    weights: int
    kv: int
    activations: int
    peak_flops: float  # the roof for this GPU and dtype
    bandwidth: float
    peak_dtype: str = "bf16"  # the dtype that peak is of (a GPU without fp8 runs fp8 weights in bf16)
    layer_kind: str = "global"  # the layer's kind_label ("global", "local W=1024")

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes

    @property
    def bound_flops(self) -> float:
        """min(peak, intensity x bandwidth): the most this point can achieve on this GPU."""
        return min(self.peak_flops, self.intensity * self.bandwidth)

    @property
    def limit(self) -> str:
        return "compute" if self.intensity * self.bandwidth >= self.peak_flops else "memory"

    @property
    def ideal_s(self) -> float:
        return max(self.flops / self.peak_flops, self.bytes / self.bandwidth)

    def measured(self, seconds: float) -> dict[str, float]:
        """A timing of this point as the roofline draws it: achieved FLOP/s and its fraction of the bound."""
        if not seconds > 0:
            raise ValueError(f"a measured time must be above 0 s, not {seconds!r:.30}.")
        achieved = self.flops / seconds
        return {"seconds": seconds, "achieved_flops": achieved, "fraction_of_bound": achieved / self.bound_flops,
                "intensity": self.intensity}

    def to_json(self) -> dict[str, object]:
        out = asdict(self)
        out.update(intensity=self.intensity, bound_flops=self.bound_flops, limit=self.limit, ideal_s=self.ideal_s)
        return out


def layer_point(cfg: AttentionConfig, gpu: GPU, phase: str, weights_dtype: str = "bf16",
                kv_dtype: str = "bfloat16", layer: int = 0) -> RoofPoint:
    """cfg's layer `layer` (its d_model, heads, batch and seq_len; a local layer's window) in `phase` on `gpu`."""
    c = replace(cfg, phase=phase)
    spec = c.layer_spec(layer)
    flops = layer_flop_counts(c.d_model, spec, c).total
    weights = round(param_counts(c).total * WEIGHT_BYTES[weights_dtype])
    B, T = c.batch_size, c.seq_len
    kind, fmt = kind_of(spec), kv_format_of(kv_dtype)
    if not c.causal:
        kv = 0
    elif phase == "decode":  # the cache one step reads (a sparse layer's selection)
        kv = B * kind.decode_read_bytes(spec, fmt, T)
    else:
        kv = B * layer_kv_bytes_per_token(spec, fmt) * T
    q_tokens = T if phase == "prefill" else 1
    activations = 2 * B * q_tokens * c.d_model * ACTIVATION_BYTES
    peak, dtype = gpu.peak_flops(COMPUTE_DTYPE[weights_dtype])
    return RoofPoint(phase, flops, weights + kv + activations, weights, kv, activations, peak, gpu.bandwidth_bytes_s,
                     dtype, spec.kind_label)


def roofline(cfg: AttentionConfig, gpu: GPU, weights_dtype: str = "bf16", kv_dtype: str = "bfloat16",
             layer: int = 0) -> dict[str, RoofPoint]:
    return {phase: layer_point(cfg, gpu, phase, weights_dtype, kv_dtype, layer) for phase in ("prefill", "decode")}


def layer_kinds(cfg: AttentionConfig) -> dict[str, int]:
    """'global' and 'local' -> the first layer of each kind the model has (a model of one kind: one entry)."""
    out: dict[str, int] = {}
    for i, local in enumerate(cfg.local_layers()):
        out.setdefault("local" if local else "global", i)
    return out
