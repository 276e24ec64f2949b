"""Gated DeltaNet as a layer kind (Qwen3-Next, Qwen3.5, OLMo-Hybrid): a delta rule with a scalar decay per value
head, a short convolution over q, k and v, and an output gate; no KV cache, a d_k x d_v state per value head."""

from __future__ import annotations

from core.arch.layer import LayerSpec
from core.kinds.gated_deltanet.counts import (
    GDNParams,
    GDNShape,
    conv_state_values,
    gdn_params,
    recurrent_state_values,
)
from core.kinds.gated_deltanet.spec import GDNWidths
from core.kinds.mixer_kind import MixerKind, widths_of

CHUNK = 64  # transformers' torch_chunk_gated_delta_rule and fla's chunk_gated_delta_rule


def shape(d: int, spec: LayerSpec) -> GDNShape:
    w = widths_of(spec, GDNWidths)
    return GDNShape(d, spec.n_kv_heads, spec.n_heads, w.k_head_dim, w.v_head_dim, w.conv_kernel)


def gdn_core_flops(n_heads: int, dk: int, dv: int, batch: int, tokens: int, phase: str, chunk: int = CHUNK) -> int:
    """Chunked prefill (per value head and chunk of C: 4 C^2 d_k + 2 C^2 d_v + 6 C d_k d_v in matmuls, and
    C^2 (d_k + d_v) for the two triangular solves of the chunk's UT transform), or one recurrent step (7 d_k d_v: the
    decay, S^T k, the rank-one update and S^T q)."""
    if phase == "decode":
        return 7 * batch * n_heads * dk * dv
    chunks = -(-tokens // chunk)  # the last chunk is padded to C, as the chunked forms do
    C = chunk
    return batch * n_heads * chunks * (5 * C * C * dk + 3 * C * C * dv + 6 * C * dk * dv)


class GatedDeltaNetKind(MixerKind):
    name = "gated_deltanet"
    short = "GDN"
    title = "Gated DeltaNet"
    picker = "Gated DeltaNet: delta-rule state (Qwen3-Next)"
    about = ("Gated DeltaNet (Qwen3-Next, Qwen3.5): a linear-attention layer whose state, d_k x d_v per value head, is "
             "corrected toward each new value (the delta rule) and decayed by a learned gate; no KV cache, a fixed "
             "state whatever the context.")
    projection_rows = (("in_proj_qkvz", "in_proj_qkvz"), ("in_proj_ba", "in_proj_ba"), ("conv1d", "conv1d"),
                       ("dt_bias", "dt_bias"), ("a_log", "A_log"), ("norm", "norm"), ("out_proj", "out_proj"))
    widths_type = GDNWidths
    colour = "#16a34a"
    timing_forms_key = "gdn_forms"
    timing_form_names = ("prefill_ms", "decode_ms", "softmax_prefill_ms", "softmax_decode_ms")
    forms_tip = ("A Gated DeltaNet layer: prefill in the chunked form (chunks of 64, a triangular solve each), decode as "
                 "one recurrent step of its state; beside them the softmax layer of the same heads and width, in the "
                 "same run.")
    chunk = CHUNK
    cli_help = "Gated DeltaNet, Qwen3-Next's linear layers: --heads value heads, --kv-heads key heads"

    def counts(self, d: int, spec: LayerSpec) -> GDNParams:
        return gdn_params(shape(d, spec))

    def part_formulas(self, d: int, spec: LayerSpec) -> dict[str, str]:
        s = shape(d, spec)
        return {"in_proj_qkvz": f"d x (2 H_k d_k + 2 H_v d_v) = {d} x (2 x {s.n_k_heads} x {s.k_head_dim} + 2 x "
                                f"{s.n_v_heads} x {s.v_head_dim}): q, k, v and the output gate z",
                "in_proj_ba": f"d x 2 H_v = {d} x 2 x {s.n_v_heads}: the gates b (beta) and a (decay)",
                "conv1d": f"conv_dim x k = {s.conv_dim} x {s.conv_kernel}: depthwise over q, k and v",
                "dt_bias": f"H_v = {s.n_v_heads}", "a_log": f"H_v = {s.n_v_heads}",
                "norm": f"d_v = {s.v_head_dim}: the gated RMSNorm",
                "out_proj": f"H_v d_v x d = {s.value_dim} x {d}"}

    def matmul_weights(self, d: int, spec: LayerSpec) -> int:
        p = self.counts(d, spec)
        return p.in_proj_qkvz + p.in_proj_ba + p.out_proj + p.conv1d

    def recurrent_values(self, spec: LayerSpec) -> int:
        return recurrent_state_values(shape(1, spec))

    def conv_values(self, spec: LayerSpec, full_kernel: bool = False) -> int:
        return conv_state_values(shape(1, spec), full_kernel)

    def core_flops(self, spec: LayerSpec, batch: int, tokens: int, phase: str) -> int:
        w = widths_of(spec, GDNWidths)
        return gdn_core_flops(spec.n_heads, w.k_head_dim, w.v_head_dim, batch, tokens, phase)

    def core_formula(self, spec: LayerSpec, phase: str) -> str:
        if phase == "decode":
            return "one recurrent step: 7 x B x H_v x d_k x d_v (decay, S^T k, the rank-one update, S^T q), whatever T"
        return ("the chunked form: B x H_v x ceil(T / 64) chunks x (5 C^2 d_k + 3 C^2 d_v + 6 C d_k d_v), C = 64 (the "
                "matmuls and the UT transform's two triangular solves): linear in T")

    def state_shape(self, spec: LayerSpec) -> str:
        w = widths_of(spec, GDNWidths)
        return f"{spec.n_heads} value heads x {w.k_head_dim} x {w.v_head_dim}"


GATED_DELTANET = GatedDeltaNetKind()
