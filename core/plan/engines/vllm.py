"""vLLM's KV cache (the V1 engine): how many tokens fit in the bytes left for it, as vLLM logs them
("GPU KV cache size: N tokens", "Maximum concurrency for L tokens per request: x").

The rule, from vLLM's source (vllm-project/vllm at 001cabc1):
- vllm/v1/worker/gpu_worker.py, determine_available_memory: available = total x gpu_memory_utilization - (weights +
  the activation peak of a profiling run + memory outside torch); the plan takes the last two as one overhead.
- vllm/v1/kv_cache_interface.py: a block of block_size tokens of one layer is block_size x kv_heads x (head_size +
  head_size_v) x dtype bytes (a sliding-window layer the same); an MLA layer's block_size x (kv_lora_rank + rope) x
  dtype bytes, fp8 included (the 656-byte fp8 record is the sparse FlashMLA backend's, DeepSeek-V3.2's).
- vllm/v1/core/kv_cache_utils.py, _get_kv_cache_groups_uniform_page_size: layers of one kind of cache form groups of
  group_size layers, group_size = the fewest layers of any kind (the most when max < 1.5 x min), each kind split
  into ceil(layers / group_size) groups; the group_size tensors are shared, layer i of every group in tensor i, so
  get_num_blocks: num_blocks = available // page_bytes // group_size.
- _report_kv_cache_config: "GPU KV cache size" = num_blocks // groups x block_size tokens;
  get_max_concurrency_for_kv_cache_config: num_blocks over the blocks one request of max_model_len takes, summed
  over the groups: a full group ceil(max_model_len / block_size), a sliding one
  ceil(min(W - 1 + max_num_batched_tokens, max_model_len) / block_size) + 1.
- vllm/config/cache.py: block_size 16 by default on CUDA; MLA layers run FlashMLA's blocks of 64.

A hybrid stack's recurrent layers (vllm-project/vllm at 1936cf38 and 001cabc1):
- vllm/v1/kv_cache_interface.py, MambaSpec: a layer's page is its state for one sequence (convolution and
  recurrent state, core/plan/engines/state.py); with prefix caching off, as vLLM sets it for these models, a request
  takes one block of each recurrent group whatever its length (block_size = max_model_len).
- vllm/model_executor/models/config.py, HybridAttentionMambaModelConfig: the attention block grows to the fewest
  tokens, a multiple of the backend's 16 (64 for MLA), whose page holds a recurrent layer's state,
  block = a x ceil(state page / (a x one token's page)); the state page is then padded to the attention page, and the
  grouping above runs over the attention and recurrent layers together.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from core.arch.model import Architecture
from core.kinds.registry import kind_of
from core.plan.engines.pages import cdiv, layer_caches
from core.plan.engines.state import EngineState

DEFAULT_BLOCK_SIZE = 16
GPU_MEMORY_UTILIZATION = 0.9  # --gpu-memory-utilization's default
MAX_NUM_BATCHED_TOKENS = 8192  # the API server's default on a large GPU: how far a sliding layer's blocks reach


@dataclass(frozen=True)
class VllmCache:
    block_size: int
    page_bytes: int  # one layer's block
    group_size: int  # layers a group holds: the tensors shared across groups
    groups: int
    available_bytes: int  # for the KV cache on one GPU
    num_blocks: int
    tokens: int  # "GPU KV cache size: N tokens"
    blocks_per_request: int  # at max_model_len
    max_concurrency: float  # "Maximum concurrency for L tokens per request: x"
    state_layers: int = 0  # a hybrid stack's recurrent layers, one page a request each
    state_page_bytes: int = 0  # a recurrent layer's state for one sequence before padding to page_bytes
    backend_block_size: int = DEFAULT_BLOCK_SIZE  # the attention backend's own block, before recurrent pages grow it

    @property
    def padding_percent(self) -> float:
        """How much vLLM pads a recurrent layer's page to the attention page ("Padding mamba page size by x%")."""
        return 100 * (self.page_bytes - self.state_page_bytes) / self.state_page_bytes if self.state_page_bytes else 0.0

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "padding_percent": self.padding_percent}


def block_size_of(arch: Architecture) -> int:
    """vLLM's block size for the model: its layers' attention backend's (FlashMLA's 64 for MLA), else 16."""
    return max((kind_of(s).vllm_block_size or DEFAULT_BLOCK_SIZE for s in arch.layers), default=DEFAULT_BLOCK_SIZE)


def vllm_cache(arch: Architecture, tp: int, kv_format: str, available_bytes: int, max_model_len: int,
               max_num_batched_tokens: int = MAX_NUM_BATCHED_TOKENS, block_size: int | None = None,
               state: EngineState | None = None) -> VllmCache:
    """The KV capacity vLLM would log for this model with available_bytes for its cache on each GPU; state: a hybrid
    stack's recurrent layers as vLLM keeps them (core/plan/engines/state.py)."""
    caches = layer_caches(arch, tp, kv_format)
    tokens = {c.bytes_per_token for c in caches}
    if len(tokens) > 1:  # vLLM unifies them by growing block sizes; the kinds here keep one page size a model
        raise ValueError("this model's layers keep caches of different sizes a token; vLLM's page unification is not "
                         "modelled here.")
    token_bytes = tokens.pop() if tokens else 0
    bs = block_size or block_size_of(arch)
    if state is not None and caches:  # the attention block grows until its page holds a recurrent layer's state
        a = block_size_of(arch)  # the backend's alignment
        bs = max(bs, a * cdiv(state.layer_bytes, a * token_bytes))
    elif state is not None:  # recurrent layers only: a page is one state, a block max_model_len tokens
        bs = max_model_len
    page = bs * token_bytes if caches else state.layer_bytes
    counts = [c.layers for c in caches] + ([state.layers] if state is not None else [])
    group_size = min(counts) if max(counts) >= 1.5 * min(counts) else max(counts)
    groups = sum(cdiv(n, group_size) for n in counts)
    num_blocks = max(0, available_bytes) // page // group_size
    per_request = cdiv(state.layers, group_size) if state is not None else 0  # one block a recurrent group
    for c in caches:
        if c.window is None:
            need = cdiv(max_model_len, bs)
        else:
            need = cdiv(min(c.window - 1 + max_num_batched_tokens, max_model_len), bs) + 1
        per_request += need * cdiv(c.layers, group_size)
    smallest = min(bs, max_model_len) if state is not None else bs  # the recurrent groups' block is max_model_len
    return VllmCache(bs, page, group_size, groups, available_bytes, num_blocks, num_blocks // groups * smallest,
                     per_request, num_blocks / per_request, state.layers if state is not None else 0,
                     state.layer_bytes if state is not None else 0, block_size_of(arch))
