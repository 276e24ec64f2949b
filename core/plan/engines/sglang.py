"""SGLang's KV cache: the token pool mem_fraction_static leaves, as it logs it ("KV Cache is allocated. #tokens: N").

The rule, from SGLang's source (sgl-project/sglang at 226149ac):
- python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py, profile_max_num_token: rest = the free memory
  after loading the weights - the free memory before them x (1 - mem_fraction_static), in GiB; tokens =
  int(rest x 2^30) // cell_size, where cell_size is a token of every layer on one GPU: kv heads (over TP) x
  (head_dim + v_head_dim) x layers x bytes for MHA, (kv_lora_rank + qk_rope_head_dim) x layers x bytes for MLA.
- python/sglang/srt/server_args.py: mem_fraction_static by TP degree when not given (0.88 at TP 1, 0.87 at 2, 0.85 at
  4, 0.81 at 8, 0.79 at 16 and more).
Its sliding-window pool for hybrid models is not modelled: every layer is counted at the full context here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from core.arch.model import Architecture
from core.kinds.registry import kind_of

# --kv-cache-dtype's values (server_args.py); the model's own dtype is "auto"
KV_CACHE_DTYPE = {"fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2"}


def mem_fraction_static(tp: int) -> float:
    """SGLang's default by tensor-parallel degree (server_args.py)."""
    return 0.79 if tp >= 16 else 0.81 if tp >= 8 else 0.85 if tp >= 4 else 0.87 if tp >= 2 else 0.88


@dataclass(frozen=True)
class SglangPool:
    mem_fraction_static: float
    rest_bytes: int  # what the token pool may take on one GPU
    cell_bytes: int  # a token of every layer on one GPU
    tokens: int  # "KV Cache is allocated. #tokens: N"

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def sglang_pool(arch: Architecture, tp: int, kv_format: str, memory_bytes: int, weights_bytes: int,
                fraction: float | None = None) -> SglangPool:
    """The token pool of a GPU of memory_bytes holding weights_bytes of weights (free before loading: all of it)."""
    f = mem_fraction_static(tp) if fraction is None else fraction
    if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0.05 <= f <= 1:
        raise ValueError(f"mem_fraction_static is a fraction from 0.05 to 1, not {f!r:.30}.")
    if kv_format not in KV_CACHE_DTYPE and kv_format != "bfloat16":
        raise ValueError(f"SGLang keeps no {kv_format} cache (--kv-cache-dtype takes auto, the model's bf16, and "
                         "fp8_e4m3, fp8_e5m2); choose bf16 or fp8.")
    cell = sum(kind_of(s).gpu_cache_bytes_per_token(s, tp, kv_format) for s in arch.layers)
    rest = (memory_bytes - weights_bytes) - memory_bytes * (1 - f)
    return SglangPool(f, int(rest), cell, max(0, int(rest)) // cell)
