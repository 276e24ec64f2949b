"""A plan as vLLM would make it: the memory it gives the KV cache on each GPU, the capacity it would log, and the
command that serves it.

available = total x gpu_memory_utilization - weights - overhead (vllm/v1/worker/gpu_worker.py,
determine_available_memory: the overhead is the activation peak vLLM measures in a profiling run plus memory
outside torch, such as NCCL's buffers; the plan takes it as an input: read yours off vLLM's log as total x
utilization - the weights - "Available KV cache memory").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.arch.model import Architecture
from core.plan.engines.state import EngineState, engine_state
from core.plan.engines.vllm import (
    GPU_MEMORY_UTILIZATION,
    MAX_NUM_BATCHED_TOKENS,
    VllmCache,
    vllm_cache,
)
from core.plan.fit import PlanInput, stages, weight_bytes

OVERHEAD_BYTES = 2 * 2**30  # the activation peak and memory outside torch, until the user reads theirs off a log
# the KV formats vLLM's --kv-cache-dtype takes (vllm/config/cache.py CacheDType); the model's own dtype is "auto"
KV_CACHE_DTYPE = {"fp8_e4m3": "fp8", "fp8_e5m2": "fp8_e5m2"}
# The `vllm serve` arguments a plan's command uses, with the values each takes (vllm/engine/arg_utils.py's
# EngineArgs.add_cli_args; --kv-cache-dtype's choices from vllm/config/cache.py): tests parse every command with them.
SERVE_ARGS: dict[str, tuple[type, tuple[str, ...]]] = {
    "--tensor-parallel-size": (int, ()), "--pipeline-parallel-size": (int, ()), "--max-model-len": (int, ()),
    "--kv-cache-dtype": (str, ("auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2")),
    "--gpu-memory-utilization": (float, ()),
    "--mamba-ssm-cache-dtype": (str, ("auto", "float32")),  # vllm/config/cache.py MambaDType
}


@dataclass(frozen=True)
class VllmPlan:
    utilization: float
    overhead_bytes: int
    cache: VllmCache
    max_model_len: int
    command: list[str]
    state: EngineState | None = None  # a hybrid stack's recurrent layers as vLLM keeps them

    @property
    def refusal(self) -> str:
        """Why vLLM would stop at start-up ('' when it serves the plan): no memory left for the cache, or a cache that
        cannot hold one request of max_model_len (vllm/v1/core/kv_cache_utils.py, check_enough_kv_cache_memory)."""
        c = self.cache
        if c.available_bytes <= 0:
            return (f"vLLM would stop at start-up: the weights and {self.overhead_bytes / 2**30:.1f} GiB of overhead "
                    f"leave no memory for the KV cache at memory use {self.utilization:g}; raise it, or use more GPUs.")
        if c.num_blocks < c.blocks_per_request:
            return (f"vLLM would stop at start-up: its cache of {c.tokens:,} tokens cannot hold one request of "
                    f"{self.max_model_len:,} tokens; lower the context, raise memory use, or use more GPUs.")
        return ""

    def log(self) -> list[str]:
        """The lines vLLM logs at start-up about its cache (vllm/model_executor/models/config.py's for a hybrid
        stack's pages, then vllm/v1/core/kv_cache_utils.py's)."""
        c, out = self.cache, []
        if self.state is not None and c.block_size < self.max_model_len:
            if c.block_size > c.backend_block_size:
                out.append(f"Setting attention block size to {c.block_size} tokens to ensure that attention page size "
                           "is >= mamba page size.")
            if c.padding_percent > 0:
                out.append(f"Padding mamba page size by {c.padding_percent:.2f}% to ensure that mamba page size and "
                           "attention page size are exactly equal.")
        return out + [f"Available KV cache memory: {c.available_bytes / 2**30:.2f} GiB",
                      f"GPU KV cache size: {c.tokens:,} tokens",
                      f"Maximum concurrency for {self.max_model_len:,} tokens per request: {c.max_concurrency:.2f}x"]

    def to_json(self) -> dict[str, Any]:
        state = {"state": self.state.to_json(), "note": self.state.note} if self.state is not None else {}
        return {"engine": "vllm", "gpu_memory_utilization": self.utilization, "overhead_bytes": self.overhead_bytes,
                **self.cache.to_json(), "max_model_len": self.max_model_len, **state, "log": self.log(),
                "refusal": self.refusal, "command": self.command}


def kv_cache_dtype(kv_format: str, model_dtype: str = "bfloat16") -> str | None:
    """vLLM's --kv-cache-dtype for a KV format (None: the model's own dtype, bf16, vLLM's "auto")."""
    if kv_format == model_dtype:
        return None
    if kv_format not in KV_CACHE_DTYPE:
        raise ValueError(f"vLLM keeps no {kv_format} cache (its --kv-cache-dtype takes auto, the model's bf16, and "
                         "fp8); choose bf16 or fp8, or plan llama.cpp for q8_0 and q4_0.")
    return KV_CACHE_DTYPE[kv_format]


def vllm_plan(p: PlanInput, model: str = "MODEL", utilization: float = GPU_MEMORY_UTILIZATION,
              overhead_bytes: int = OVERHEAD_BYTES,
              max_num_batched_tokens: int = MAX_NUM_BATCHED_TOKENS) -> VllmPlan:
    """The KV capacity vLLM would log for the plan's model on its GPUs, its context as max_model_len."""
    if isinstance(utilization, bool) or not isinstance(utilization, (int, float)) or not 0.05 <= utilization <= 1:
        raise ValueError(f"gpu_memory_utilization is a fraction from 0.05 to 1, not {utilization!r:.30}.")
    if isinstance(overhead_bytes, bool) or not isinstance(overhead_bytes, int) or not 0 <= overhead_bytes <= 2**50:
        raise ValueError("vLLM's overhead is a whole number of bytes from 0 to a PiB.")
    dtype = kv_cache_dtype(p.kv_dtype)
    available = int(p.gpu.memory_bytes * utilization) - weight_bytes(p) - overhead_bytes
    plans = []
    for stage in stage_architectures(p):  # each pipeline stage's GPUs size their own cache: the tightest one serves
        state = engine_state(stage, p.tp, "vllm", p.state_dtype)
        cache = vllm_cache(stage, p.tp, p.kv_dtype, available, p.context, max_num_batched_tokens, state=state)
        plans.append((cache.max_concurrency, cache, state))
    _, cache, state = min(plans, key=lambda plan: plan[0])
    whole = engine_state(p.arch, p.tp, "vllm", p.state_dtype)  # the command asks for the state format of every layer
    return VllmPlan(utilization, overhead_bytes, cache, p.context, vllm_command(p, model, utilization, dtype, whole),
                    state)


def stage_architectures(p: PlanInput) -> list[Architecture]:
    """The layers each pipeline stage's GPUs hold (one stage without pipeline parallelism)."""
    return [Architecture(p.arch.d_model, tuple(p.arch.layers[i] for i in r), p.arch.kind)
            for r in stages(p.arch.n_layers, p.pp)]


def vllm_command(p: PlanInput, model: str, utilization: float, kv_dtype: str | None,
                 state: EngineState | None = None) -> list[str]:
    """`vllm serve` with the plan's parallelism, context, cache formats and memory fraction (vLLM's own flag names:
    vllm/engine/arg_utils.py). A float32 recurrent state is asked for: vLLM's "auto" keeps it in the model's bf16."""
    cmd = ["vllm", "serve", model, "--tensor-parallel-size", str(p.tp)]
    if p.pp > 1:
        cmd += ["--pipeline-parallel-size", str(p.pp)]
    cmd += ["--max-model-len", str(p.context)]
    if kv_dtype is not None:
        cmd += ["--kv-cache-dtype", kv_dtype]
    if state is not None and state.asked_format == "float32":
        cmd += ["--mamba-ssm-cache-dtype", "float32"]
    cmd += ["--gpu-memory-utilization", f"{utilization:g}"]
    return cmd
