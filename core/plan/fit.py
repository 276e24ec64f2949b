"""Will a model fit on these GPUs, and how fast can it decode: the memory plan of one GPU under tensor and
pipeline parallelism, the longest context and largest batch that fit, and the decode rate's bounds.

Tensor parallelism of degree t (t divides n_heads) gives each GPU n_heads / t query heads and
max(1, K / t) KV heads: beyond t = K the KV heads are replicated t / K times, so MQA's saving per GPU
stops growing. An MLA layer's latent cannot be split by heads: every GPU keeps all of it. The GPUs
beyond the TP degree split the layers into n_gpus / t pipeline stages (contiguous, the first stages one
layer more when they do not divide), so the figures are those of the GPU whose stage caches most.

Per GPU: weights = ceil(params x bytes per weight / n_gpus) (an even split; embeddings are sharded like
the rest), KV = the stage's layers' K and V (core/kinds/standard/counts.py's per-token bytes at the GPU's heads, a local
layer holding min(T, W) tokens) x batch, and an allowance of `reserve` x memory for activations, CUDA
graphs and the runtime (10% by default: vLLM's gpu_memory_utilization of 0.9).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass

from core.arch.formats import KV_FORMATS, STATE_FORMATS, check_kv_format
from core.arch.layer import LayerSpec
from core.arch.model import Architecture
from core.kinds.registry import kind_of
from core.plan.gpus import COMPUTE_DTYPE, GPU
from core.plan.weights import WeightParts

WEIGHT_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}
CHECKPOINT = "checkpoint"  # weights as the model's checkpoint stores them, each part in its own format
# a checkpoint format as the nearest uniform dtype, for one attention layer's roofline
PLAIN_DTYPE = {"fp32": "fp32", "bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "fp8_block128": "fp8", "int8": "int8",
               "int4_g128": "int4", "mxfp4": "int4", "nvfp4": "int4"}
KV_ALIASES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "fp8": "fp8_e4m3"}
RESERVE = 0.10
MAX_CONTEXT = 2**40  # "no limit": every layer's cache stops growing at its window (or memory holds 2^40 tokens)
CONTEXT_LIMIT = 2**30  # the context a plan takes, as the configuration's seq_len


def kv_format_of(name: str) -> str:
    """'fp8' -> 'fp8_e4m3', 'bf16' -> 'bfloat16'; a KV format name stays; anything else is a ValueError."""
    fmt = KV_ALIASES.get(name, name)
    if fmt not in KV_FORMATS:
        raise ValueError(f"KV dtype {shown(name)} is not known; choose one of {', '.join([*KV_ALIASES, *KV_FORMATS])}.")
    return fmt


@dataclass(frozen=True)
class PlanInput:
    arch: Architecture
    params: int  # the whole model's parameters (embeddings, MLP and every expert included)
    gpu: GPU
    n_gpus: int = 1
    tp: int = 1
    weights_dtype: str = "bf16"
    kv_dtype: str = "bfloat16"
    batch: int = 1
    context: int = 4096
    reserve: float = RESERVE
    active_params: int | None = None  # a mixture of experts': the parameters one token runs (None: all of them)
    weights: WeightParts | None = None  # the model's parts and their checkpoint formats, when known
    state_dtype: str = "float32"  # a recurrent layer's state, as engines keep it (its conv inputs: bfloat16)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kv_dtype", kv_format_of(self.kv_dtype))  # 'fp8' -> 'fp8_e4m3'
        check_plan(self)

    @property
    def pp(self) -> int:
        return self.n_gpus // self.tp

    @property
    def attention_dtype(self) -> str:
        """The uniform dtype nearest the attention weights' (the checkpoint's attention format, or the plan's dtype)."""
        if self.weights_dtype != CHECKPOINT or self.weights is None:
            return self.weights_dtype
        return PLAIN_DTYPE[dict(self.weights.formats)["attention"]]

    @property
    def compute_dtype(self) -> str:
        """The dtype the model's matmuls run in (a checkpoint's: its largest part's)."""
        if self.weights_dtype == CHECKPOINT and self.weights is not None:
            return self.weights.compute_dtype()
        return COMPUTE_DTYPE[self.weights_dtype]


def shown(value: object) -> str:
    """A value as an error message names it: its repr, or 'a huge number' (a cut repr would read 10x smaller)."""
    text = repr(value)
    return text if len(text) <= 30 else "a huge number" if isinstance(value, int | float) else "that value"


def _whole(value: object, name: str, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"{name} must be a whole number from {lo:,} to {hi:,}, not {shown(value)}.")


def check_plan(p: PlanInput) -> None:
    """Every input a user can get wrong, as a sentence that says what to change."""
    _whole(p.n_gpus, "the number of GPUs", 1, 4096)
    _whole(p.tp, "the tensor-parallel degree", 1, 4096)
    _whole(p.batch, "the batch", 1, 2**20)
    _whole(p.context, "the context", 1, CONTEXT_LIMIT)
    _whole(p.params, "the parameter count", 1, 10**14)
    if p.active_params is not None:
        _whole(p.active_params, "the active parameter count", 1, p.params)
    heads = {s.n_heads for s in p.arch.layers if not kind_of(s).has_state}  # a recurrent layer checks its own below
    for H in heads:
        if H % p.tp:
            raise ValueError(f"a TP degree of {p.tp} does not divide {H} query heads; choose one of "
                             f"{', '.join(str(t) for t in range(1, H + 1) if H % t == 0)}.")
    for s in set(p.arch.layers):
        kind_of(s).check_tp(s, p.tp)
    if p.n_gpus % p.tp:
        raise ValueError(f"{p.n_gpus} GPUs do not make whole tensor-parallel groups of {p.tp}; use a multiple of "
                         f"{p.tp} GPUs (the GPUs beyond one group split the layers).")
    if p.pp > p.arch.n_layers:
        raise ValueError(f"{p.pp} pipeline stages are more than the model's {p.arch.n_layers} layers; use at most "
                         f"{p.arch.n_layers * p.tp} GPUs at TP {p.tp}, or a higher TP degree.")
    if p.weights_dtype == CHECKPOINT:
        if p.weights is None:
            raise ValueError("this model's checkpoint formats are not known here (gpt-oss, DeepSeek-V3 and "
                             "Qwen3-235B-A22B-FP8 carry theirs); choose a weights dtype.")
        if p.weights.total != p.params:
            raise ValueError(f"the checkpoint's parts hold {p.weights.total:,} parameters, not the {p.params:,} given; "
                             "plan a typed count with a weights dtype, or leave the count as the model's.")
    elif p.weights_dtype not in WEIGHT_BYTES:
        raise ValueError(f"weights dtype {shown(p.weights_dtype)} is not known; choose one of "
                         f"{', '.join([*WEIGHT_BYTES, CHECKPOINT])}.")
    check_kv_format(p.kv_dtype, 32)  # the name itself (32 values fill a block of every format)
    for s in set(p.arch.layers):
        kind_of(s).check_kv_format(s, p.kv_dtype)
    if p.state_dtype not in STATE_FORMATS:
        raise ValueError(f"state dtype {shown(p.state_dtype)} is not known; choose one of {', '.join(STATE_FORMATS)}.")
    if isinstance(p.reserve, bool) or not (isinstance(p.reserve, (int, float)) and 0 <= p.reserve <= 0.99):
        raise ValueError(f"the runtime allowance is a fraction of memory from 0 to 0.99, not {shown(p.reserve)}.")


def kv_heads_per_gpu(spec: LayerSpec, tp: int) -> int | None:
    """KV heads one GPU keeps of a layer split by heads (a standard layer: max(1, K / t)); None for a cache that is not
    split by heads (an MLA latent)."""
    return kind_of(spec).kv_heads_per_gpu(spec, tp)


def replication(spec: LayerSpec, tp: int) -> int:
    """How many GPUs hold a copy of each cached value (t / K KV-head copies beyond t = K; a latent on all t)."""
    return kind_of(spec).replication(spec, tp)


def gpu_kv_bytes_per_token(spec: LayerSpec, tp: int, kv_format: str) -> int:
    """One layer's cache per token on one GPU of the TP group."""
    return kind_of(spec).gpu_cache_bytes_per_token(spec, tp, kv_format)


def stages(n_layers: int, pp: int) -> list[range]:
    """Contiguous layer ranges of the pipeline stages, the first n_layers % pp one layer longer."""
    base, extra = divmod(n_layers, pp)
    out, start = [], 0
    for i in range(pp):
        size = base + (1 if i < extra else 0)
        out.append(range(start, start + size))
        start += size
    return out


CONV_FORMAT = "bfloat16"  # a recurrent layer's convolution inputs, in the model's dtype as vLLM keeps them


def stage_state_bytes(p: PlanInput, layers: range, batch: int) -> int:
    """The fixed state of a stage's recurrent layers (a hybrid stack's) on one GPU, for the batch."""
    if p.arch.kind == "encoder":
        return 0
    specs = Counter(p.arch.layers[i] for i in layers)
    return sum(n * kind_of(s).gpu_state_bytes(s, p.tp, p.state_dtype, CONV_FORMAT) for s, n in specs.items()) * batch


def stage_kv_bytes(p: PlanInput, layers: range, context: int, batch: int) -> int:
    """A stage's cache on one GPU: its attention layers' KV at context, and its recurrent layers' fixed state."""
    if p.arch.kind == "encoder":
        return 0
    specs = Counter(p.arch.layers[i] for i in layers)  # a model has a few distinct layers: each counted once
    return sum(n * kind_of(s).gpu_cache_bytes_at(s, p.tp, p.kv_dtype, context)
               for s, n in specs.items()) * batch + stage_state_bytes(p, layers, batch)


def stage_read_bytes(p: PlanInput, layers: range) -> int:
    """What one decode step reads of a stage's cache on one GPU at the plan's context and batch: each layer's GPU share
    of what it reads (a sparse layer its selection, where it keeps more), and the recurrent state."""
    if p.arch.kind == "encoder":
        return 0
    total = 0
    for s, n in Counter(p.arch.layers[i] for i in layers).items():
        kind = kind_of(s)
        kept, gpu = kind.cache_bytes_at(s, p.kv_dtype, p.context), kind.gpu_cache_bytes_at(s, p.tp, p.kv_dtype, p.context)
        total += n * (kind.decode_read_bytes(s, p.kv_dtype, p.context) * gpu // kept if kept else 0)
    return total * p.batch + stage_state_bytes(p, layers, p.batch)


def gpu_kv_bytes(p: PlanInput, context: int | None = None, batch: int | None = None) -> int:
    """The KV cache of the GPU whose stage caches most, at `context` and `batch` (the plan's by default)."""
    T = p.context if context is None else context
    B = p.batch if batch is None else batch
    return max(stage_kv_bytes(p, r, T, B) for r in stages(p.arch.n_layers, p.pp))


def model_weight_bytes(p: PlanInput) -> int:
    """The whole model's weights: each part in its checkpoint format, or every parameter in the plan's dtype."""
    if p.weights_dtype == CHECKPOINT and p.weights is not None:
        return p.weights.total_bytes()
    return math.ceil(p.params * WEIGHT_BYTES[p.weights_dtype])


def active_weight_bytes(p: PlanInput) -> int:
    """What one token's forward reads of the weights (a mixture of experts: its active experts' share only)."""
    if p.weights_dtype == CHECKPOINT and p.weights is not None:
        return p.weights.active_bytes(p.active_params)
    return math.ceil((p.active_params or p.params) * WEIGHT_BYTES[p.weights_dtype])


def weight_bytes(p: PlanInput) -> int:
    """One GPU's share of the weights (an even split)."""
    if p.weights_dtype == CHECKPOINT and p.weights is not None:
        return math.ceil(model_weight_bytes(p) / p.n_gpus)
    return math.ceil(p.params * WEIGHT_BYTES[p.weights_dtype] / p.n_gpus)


def reserve_bytes(p: PlanInput) -> int:
    return math.ceil(p.gpu.memory_bytes * p.reserve)


@dataclass(frozen=True)
class Plan:
    weights: int  # bytes per GPU
    kv_cache: int  # the attention layers' KV and the recurrent layers' state
    reserve: int
    capacity: int
    fits: bool
    max_context: int | None  # at the plan's batch; None: no limit (every layer's cache stops at its window)
    max_batch: int | None  # at the plan's context; None: no cache (an encoder)
    kv_heads_per_gpu: int | None  # None: a cache not split by heads (a latent)
    kv_replication: int  # copies of each KV head (or of the latent) in a TP group
    pp: int
    layers_per_stage: int
    state: int = 0  # of kv_cache, the recurrent layers' fixed state (a hybrid stack's), on the GPU that caches most

    @property
    def free(self) -> int:
        return self.capacity - self.weights - self.kv_cache - self.reserve

    def to_json(self) -> dict[str, object]:
        out = asdict(self)
        out["free"] = self.free
        return out


def max_context(p: PlanInput) -> int | None:
    """The largest context whose cache fits beside the weights and the allowance at the plan's batch."""
    room = p.gpu.memory_bytes - weight_bytes(p) - reserve_bytes(p)
    if gpu_kv_bytes(p, context=1) > room:
        return 0
    if gpu_kv_bytes(p, context=MAX_CONTEXT) <= room:
        return None
    lo, hi = 1, MAX_CONTEXT  # fits at lo, not at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if gpu_kv_bytes(p, context=mid) <= room else (lo, mid)
    return lo


def max_batch(p: PlanInput) -> int | None:
    """The largest batch whose cache fits at the plan's context (the cache is linear in the batch)."""
    per_sequence = gpu_kv_bytes(p, batch=1)
    if per_sequence == 0:
        return None
    room = p.gpu.memory_bytes - weight_bytes(p) - reserve_bytes(p)
    return max(0, room // per_sequence)


def plan(p: PlanInput) -> Plan:
    weights, kv, reserve = weight_bytes(p), gpu_kv_bytes(p), reserve_bytes(p)
    split = [h for h in (kv_heads_per_gpu(s, p.tp) for s in p.arch.layers) if h is not None]
    heads = min(split) if split else None
    copies = max(replication(s, p.tp) for s in p.arch.layers)
    parts = stages(p.arch.n_layers, p.pp)
    fullest = max(parts, key=lambda r: stage_kv_bytes(p, r, p.context, p.batch))
    return Plan(weights, kv, reserve, p.gpu.memory_bytes, weights + kv + reserve <= p.gpu.memory_bytes,
                max_context(p), max_batch(p), heads, copies, p.pp, max(len(r) for r in parts),
                stage_state_bytes(p, fullest, p.batch))


@dataclass(frozen=True)
class DecodeBounds:
    """One decode step of the whole model at the plan's batch and context, no communication counted: each
    GPU reads its weights and its cache once (bandwidth) and does its share of 2 x params x batch FLOPs plus
    the attention cores' (compute); the pipeline's stages run one after another for a token. A mixture of
    experts reads and runs its active parameters only (at batch 1 exactly; a larger batch touches more
    experts, so the figure stays an upper bound on the rate)."""

    bytes_per_gpu: int
    flops_per_gpu: float
    step_s_bandwidth: float
    step_s_compute: float
    peak_dtype: str

    @property
    def step_s(self) -> float:
        return max(self.step_s_bandwidth, self.step_s_compute)

    @property
    def bound(self) -> str:
        return "bandwidth" if self.step_s_bandwidth >= self.step_s_compute else "compute"

    def tokens_per_s(self, batch: int) -> float:
        """Whole-batch tokens a second (a sequence gets 1 / step_s)."""
        return batch / self.step_s

    def to_json(self, batch: int) -> dict[str, object]:
        out = asdict(self)
        out.update(step_s=self.step_s, bound=self.bound, tokens_per_s=self.tokens_per_s(batch),
                   tokens_per_s_per_sequence=1 / self.step_s)
        return out


def decode_core_flops(spec: LayerSpec, d_model: int, batch: int, context: int) -> int:
    """One decode step's attention core in one layer over the tokens its cache holds (the form engines decode with)."""
    return kind_of(spec).decode_core_flops_at(d_model, spec, batch, context)


def decode_bounds(p: PlanInput) -> DecodeBounds:
    B, T = p.batch, p.context
    attention = sum(decode_core_flops(s, p.arch.d_model, B, T) for s in p.arch.layers)
    runs = p.active_params or p.params
    flops = (2 * runs * B + attention) / p.n_gpus
    read = max(stage_read_bytes(p, r) for r in stages(p.arch.n_layers, p.pp))  # a sparse layer reads its selection
    stage_bytes = math.ceil(active_weight_bytes(p) / p.n_gpus) + read
    peak, dtype = p.gpu.peak_flops(p.compute_dtype)
    return DecodeBounds(stage_bytes, flops, p.pp * stage_bytes / p.gpu.bandwidth_bytes_s, p.pp * flops / peak, dtype)
