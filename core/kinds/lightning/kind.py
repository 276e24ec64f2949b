"""Lightning attention as a layer kind (MiniMax-01): linear attention whose state, the sum of each head's k v^T, decays
at a fixed rate per head; an output gate; no KV cache, an h x h state per head."""

from __future__ import annotations

from core.arch.layer import LayerSpec
from core.kinds.lightning.counts import (
    LightningParams,
    LightningShape,
    lightning_params,
    recurrent_state_values,
)
from core.kinds.lightning.spec import LightningWidths
from core.kinds.mixer_kind import MixerKind, widths_of

BLOCK = 256  # MiniMaxConfig.block_size


def shape(d: int, spec: LayerSpec) -> LightningShape:
    w = widths_of(spec, LightningWidths)
    return LightningShape(d, spec.n_heads, w.head_dim)


def lightning_core_flops(n_heads: int, h: int, batch: int, tokens: int, phase: str, block: int = BLOCK) -> int:
    """Blockwise prefill (per head and block of C: Q K^T and its product with V, 4 C^2 h; the earlier blocks' state
    read Q S and this block's write K^T V, 4 C h^2), or one recurrent step (5 h^2: the write, the decay, the read)."""
    if phase == "decode":
        return 5 * batch * n_heads * h * h
    C = block
    return batch * n_heads * -(-tokens // block) * (4 * C * C * h + 4 * C * h * h)


class LightningKind(MixerKind):
    name = "lightning"
    short = "Lightning"
    title = "Lightning attention"
    picker = "Lightning: decayed linear attention (MiniMax-01)"
    about = ("Lightning attention (MiniMax-01): linear attention, each head's state the sum of k v^T decayed at a fixed "
             "rate per head, read by q; an output gate; no KV cache, an h x h state per head.")
    projection_rows = (("qkv_proj", "qkv_proj"), ("norm", "norm"), ("output_gate", "output_gate"),
                       ("out_proj", "out_proj"))
    widths_type = LightningWidths
    colour = "#ca8a04"
    timing_forms_key = "lightning_forms"
    timing_form_names = ("prefill_ms", "decode_ms", "softmax_prefill_ms", "softmax_decode_ms")
    forms_tip = ("A lightning attention layer: prefill blockwise (blocks of 256), decode as one recurrent step; beside "
                 "them the softmax layer of the same heads and width, in the same run.")
    chunk = BLOCK
    engines = ("vllm",)  # MiniMax-Text-01: vLLM's MiniMaxText01 model file; neither SGLang nor llama.cpp serves it
    cli_help = "lightning attention, MiniMax-01's linear layers: --heads heads"

    def counts(self, d: int, spec: LayerSpec) -> LightningParams:
        return lightning_params(shape(d, spec))

    def part_formulas(self, d: int, spec: LayerSpec) -> dict[str, str]:
        w = spec.n_heads * spec.head_dim
        return {"qkv_proj": f"d x 3 H h = {d} x 3 x {w}", "norm": f"H h = {w}: RMSNorm over every head's output",
                "output_gate": f"d x H h = {d} x {w}: sigmoid gate", "out_proj": f"H h x d = {w} x {d}"}

    def matmul_weights(self, d: int, spec: LayerSpec) -> int:
        p = self.counts(d, spec)
        return p.qkv_proj + p.output_gate + p.out_proj

    def recurrent_values(self, spec: LayerSpec) -> int:
        return recurrent_state_values(shape(1, spec))

    def conv_values(self, spec: LayerSpec, full_kernel: bool = False) -> int:
        return 0  # no convolution

    def core_flops(self, spec: LayerSpec, batch: int, tokens: int, phase: str) -> int:
        return lightning_core_flops(spec.n_heads, spec.head_dim, batch, tokens, phase)

    def core_formula(self, spec: LayerSpec, phase: str) -> str:
        if phase == "decode":
            return "one recurrent step: 5 x B x H x h^2 (k^T v, the decay, q S), whatever T"
        return "blockwise: B x H x ceil(T / 256) blocks x (4 C^2 h + 4 C h^2), C = 256: linear in T"

    def state_shape(self, spec: LayerSpec) -> str:
        return f"{spec.n_heads} heads x {spec.head_dim} x {spec.head_dim}"


LIGHTNING = LightningKind()
