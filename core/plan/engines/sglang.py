"""SGLang's KV cache: the token pool mem_fraction_static leaves, as it logs it ("KV Cache is allocated. #tokens: N").

The rule, from SGLang's source (sgl-project/sglang at 226149ac):
- python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py, profile_max_num_token: rest = the free memory
  after loading the weights - the free memory before them x (1 - mem_fraction_static), in GiB; tokens =
  int(rest x 2^30) // cell_size, where cell_size is a token of every layer on one GPU: kv heads (over TP) x
  (head_dim + v_head_dim) x layers x bytes for MHA, (kv_lora_rank + qk_rope_head_dim) x layers x bytes for MLA.
- python/sglang/srt/server_args.py: mem_fraction_static by TP degree when not given (0.88 at TP 1, 0.87 at 2, 0.85 at
  4, 0.81 at 8, 0.79 at 16 and more).
Its sliding-window pool for hybrid models is not modelled: every layer is counted at the full context here.

A hybrid stack's recurrent layers (SGLang v0.5.9: model_runner_kv_cache_mixin.py, handle_max_mamba_cache;
mem_cache/memory_pool.py, MambaPool; configs/mamba_utils.py):
- the pool's share of rest is r / (1 + r), r = --mamba-full-memory-ratio (0.9); it holds
  max_mamba_cache_size = that // a request's state (every recurrent layer's, core/plan/engines/state.py) slots, and the
  token pool takes what the slots leave, its cell counting the attention layers only;
- a running request takes 3 slots while the radix cache is on (1 where the model turns it off), so
  max_running_requests = min(its default, clamp(tokens / context x 512, 2,048, 4,096), slots // that).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from core.arch.model import Architecture
from core.kinds.registry import kind_of
from core.plan.engines.state import EngineState

# --kv-cache-dtype's values (server_args.py); the model's own dtype is "auto"
KV_CACHE_DTYPE = {"fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2"}
MAMBA_FULL_MEMORY_RATIO = 0.9  # --mamba-full-memory-ratio's default


def mem_fraction_static(tp: int) -> float:
    """SGLang's default by tensor-parallel degree (server_args.py)."""
    return 0.79 if tp >= 16 else 0.81 if tp >= 8 else 0.85 if tp >= 4 else 0.87 if tp >= 2 else 0.88


@dataclass(frozen=True)
class SglangPool:
    mem_fraction_static: float
    rest_bytes: int  # what the token pool may take on one GPU
    cell_bytes: int  # a token of every layer on one GPU
    tokens: int  # "KV Cache is allocated. #tokens: N"
    state: EngineState | None = None  # a hybrid stack's recurrent layers as SGLang keeps them
    mamba_slots: int = 0  # "Mamba Cache is allocated. max_mamba_cache_size: N"
    max_running_requests: int | None = None  # what the slots allow (None: no recurrent layers)

    def log(self) -> list[str]:
        """Its start-up lines about the pools (the state's sizes count the pool's one padding slot, in GiB)."""
        out = []
        if self.state is not None:
            n, g = self.state.layers * (self.mamba_slots + 1), 2**30
            out.append(f"Mamba Cache is allocated. max_mamba_cache_size: {self.mamba_slots}, conv_state size: "
                       f"{n * self.state.conv_bytes / g:.2f}GB, ssm_state size: {n * self.state.recurrent_bytes / g:.2f}GB")
        return [*out, f"KV Cache is allocated. #tokens: {self.tokens}"]

    def max_concurrency(self, context: int) -> float:
        """Requests of context tokens at once: the token pool's, and the state slots' where there are any."""
        by_tokens = self.tokens / context if self.cell_bytes else float("inf")  # no attention layer: no token pool
        return by_tokens if self.max_running_requests is None else float(min(by_tokens, self.max_running_requests))

    def to_json(self) -> dict[str, object]:
        out = {k: v for k, v in asdict(self).items() if k != "state"}
        if self.state is None:
            return {k: v for k, v in out.items() if k not in ("mamba_slots", "max_running_requests")}
        return {**out, "state": self.state.to_json()}


def sglang_pool(arch: Architecture, tp: int, kv_format: str, memory_bytes: int, weights_bytes: int,
                fraction: float | None = None, state: EngineState | None = None, context: int = 1) -> SglangPool:
    """The token pool of a GPU of memory_bytes holding weights_bytes of weights (free before loading: all of it);
    state: a hybrid stack's recurrent layers as SGLang keeps them, whose slots take their share first."""
    f = mem_fraction_static(tp) if fraction is None else fraction
    if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0.05 <= f <= 1:
        raise ValueError(f"mem_fraction_static is a fraction from 0.05 to 1, not {f!r:.30}.")
    if kv_format not in KV_CACHE_DTYPE and kv_format != "bfloat16":
        raise ValueError(f"SGLang keeps no {kv_format} cache (--kv-cache-dtype takes auto, the model's bf16, and "
                         "fp8_e4m3, fp8_e5m2); choose bf16 or fp8.")
    cell = sum(kind_of(s).engine_cache_bytes_per_token(s, tp, kv_format, "sglang") for s in arch.layers
               if not kind_of(s).has_state)
    rest = (memory_bytes - weights_bytes) - memory_bytes * (1 - f)
    if state is None:
        return SglangPool(f, int(rest), cell, max(0, int(rest)) // cell)
    r = MAMBA_FULL_MEMORY_RATIO
    slots = max(0, int(rest * r / (1 + r) // state.sequence_bytes))
    kv_rest = rest - slots * state.sequence_bytes
    tokens = max(0, int(kv_rest)) // cell if cell else 0
    per_request = min(kind_of(s).sglang_slots_per_request for s in arch.layers if kind_of(s).has_state)
    if isinstance(context, bool) or not isinstance(context, int) or context < 1:
        raise ValueError(f"the context is a whole number of tokens from 1, not {context!r:.30}.")
    running = min(max(int(tokens / context * 512), 2048), 4096, slots // per_request)
    return SglangPool(f, int(rest), cell, tokens, state, slots, running)
