"""llama.cpp's KV cache (llama-server, llama-cli): the cells each layer keeps and their bytes, as it logs them.

The rule, from llama.cpp's source (ggml-org/llama.cpp):
- src/llama-context.cpp (3514e9f6): n_ctx is padded to a multiple of 256 (GGML_PAD(n_ctx, 256)); a layer without
  a window keeps that many cells.
- src/llama-kv-cache-iswa.cpp (2aef9767): a sliding-window layer keeps
  GGML_PAD(min(n_ctx, n_swa x n_seq_max + n_ubatch), 256) cells ("the SWA cache is always padded to 256").
- src/llama-kv-cache.cpp: a cell of a layer is one row of K (n_kv_heads x head_dim values in -ctk's type) and one of
  V (-ctv's type); q8_0 stores 32 values in 34 bytes, q4_0 in 18. An MLA layer keeps its latent and RoPE key as
  K and no V (PR #19067, "support V-less cache").
- it logs, once for the layers without a window and once for the sliding ones:
  "llama_kv_cache: size = %7.2f MiB (%6u cells, %3d layers, %2u/%u seqs), K (%s): %7.2f MiB, V (%s): %7.2f MiB".

A hybrid stack's recurrent layers (src/llama-memory-hybrid.cpp, src/llama-memory-recurrent.cpp, src/llama-hparams.cpp):
- the KV cache holds the attention layers only; llama_memory_recurrent holds one cell a sequence
  (max(1, n_seq_max), -np) for every recurrent layer: a row R of n_embd_r() values, the convolution's k - 1 inputs,
  and a row S of n_embd_s(), the state, both GGML_TYPE_F32 whatever -ctk says; the context does not change it.
- llama-server picks 4 sequences when -np is not given ("n_parallel is set to auto"): a plan's command names -np.
- it logs "llama_memory_recurrent: size = %7.2f MiB (%6u cells, %3d layers, %2u seqs %2u rs_seq), R (%s): %7.2f MiB,
  S (%s): %7.2f MiB", its layers being the model's n_layer.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from core.arch.formats import kv_format_bytes
from core.arch.model import Architecture
from core.kinds.registry import kind_of
from core.plan.engines.pages import cdiv
from core.plan.engines.state import EngineState

PAD = 256
N_UBATCH = 512  # -ub's default
N_BATCH = 2048  # -b's default: -ub is capped at it
MAX_SEQUENCES = 256  # -np's limit (LLAMA_MAX_SEQ)
MAX_CTX = 2**32 - 1  # n_ctx is a 32-bit count
CACHE_TYPES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "q8_0": "q8_0", "q4_0": "q4_0"}  # -ctk / -ctv


@dataclass(frozen=True)
class LlamaCppCache:
    window: int | None
    layers: int
    cells: int
    k_bytes: int
    v_bytes: int

    @property
    def bytes(self) -> int:
        return self.k_bytes + self.v_bytes

    def log(self, n_seq: int, cache_type: str) -> str:
        mib = 2**20
        return (f"llama_kv_cache: size = {self.bytes / mib:7.2f} MiB ({self.cells:6d} cells, {self.layers:3d} layers, "
                f"{n_seq:2d}/{n_seq} seqs), K ({cache_type}): {self.k_bytes / mib:7.2f} MiB, V ({cache_type}): "
                f"{self.v_bytes / mib:7.2f} MiB")

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "bytes": self.bytes}


@dataclass(frozen=True)
class LlamaCppRecurrent:
    cells: int  # one a sequence
    n_layer: int  # the model's layers, as its log counts them
    r_bytes: int  # every recurrent layer's convolution rows
    s_bytes: int  # every recurrent layer's state rows

    @property
    def bytes(self) -> int:
        return self.r_bytes + self.s_bytes

    def log(self) -> str:
        mib = 2**20
        return (f"llama_memory_recurrent: size = {self.bytes / mib:7.2f} MiB ({self.cells:6d} cells, "
                f"{self.n_layer:3d} layers, {self.cells:2d} seqs {0:2d} rs_seq), R (f32): {self.r_bytes / mib:7.2f} MiB, "
                f"S (f32): {self.s_bytes / mib:7.2f} MiB")

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "bytes": self.bytes}


def llamacpp_recurrent(arch: Architecture, state: EngineState, n_seq: int) -> LlamaCppRecurrent:
    """The recurrent memory llama.cpp allocates for n_seq sequences (state: the layers as it keeps them, in f32)."""
    cells = max(1, n_seq)
    return LlamaCppRecurrent(cells, arch.n_layers, state.layers * cells * state.conv_bytes,
                             state.layers * cells * state.recurrent_bytes)


def pad(n: int) -> int:
    return cdiv(n, PAD) * PAD


def cache_type(kv_format: str) -> str:
    if kv_format not in CACHE_TYPES:
        raise ValueError(f"llama.cpp keeps no {kv_format} cache (-ctk and -ctv take f32, f16, bf16, q8_0, q4_0 ...); "
                         "choose one of those.")
    return CACHE_TYPES[kv_format]


def llamacpp_caches(arch: Architecture, kv_format: str, n_ctx: int, n_ubatch: int = N_UBATCH,
                    n_seq: int = 1) -> list[LlamaCppCache]:
    """The cells and bytes of the layers without a window, then of each window's layers, as llama.cpp allocates them."""
    cache_type(kv_format)
    base = pad(n_ctx)
    by_window: dict[int | None, list] = {}
    for s in arch.layers:
        if not kind_of(s).has_state:  # a recurrent layer keeps its state in llamacpp_recurrent's memory
            by_window.setdefault(s.window, []).append(s)
    out = []
    for window, layers in sorted(by_window.items(), key=lambda item: item[0] is not None):
        cells = base if window is None else pad(min(base, window * n_seq + n_ubatch))
        k = v = 0
        for s in layers:
            k_values, v_values = kind_of(s).kv_values_per_token(s)  # an MLA layer keeps its latent as K and no V
            k += kv_format_bytes(k_values, kv_format) * cells
            v += kv_format_bytes(v_values, kv_format) * cells
        out.append(LlamaCppCache(window, len(layers), cells, k, v))
    return out
