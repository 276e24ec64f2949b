"""KDA as a layer kind (Kimi Linear): Gated DeltaNet's delta rule with a decay per key channel instead of per head,
from a low-rank forget gate; no KV cache, a d x d state per head."""

from __future__ import annotations

from core.arch.layer import LayerSpec
from core.kinds.kda.counts import (
    KDAParams,
    KDAShape,
    conv_state_values,
    kda_params,
    recurrent_state_values,
)
from core.kinds.kda.spec import KDAWidths
from core.kinds.mixer_kind import MixerKind, widths_of

CHUNK = 64  # transformers' chunk_kimi_delta_attention and fla's chunk_kda


def shape(d: int, spec: LayerSpec) -> KDAShape:
    w = widths_of(spec, KDAWidths)
    return KDAShape(d, spec.n_heads, w.head_dim, w.conv_kernel)


def kda_core_flops(n_heads: int, dk: int, batch: int, tokens: int, phase: str, chunk: int = CHUNK) -> int:
    """Chunked prefill (per head and chunk of C: the per-channel decayed products k k^T and q k^T, 2 C^2 d each, the
    UT transform's solves C^2 (2 d), attn v 2 C^2 d, and the state's three products 6 C d^2), or one recurrent step
    (7 d^2)."""
    if phase == "decode":
        return 7 * batch * n_heads * dk * dk
    C = chunk
    return batch * n_heads * -(-tokens // chunk) * (8 * C * C * dk + 6 * C * dk * dk)


class KDAKind(MixerKind):
    name = "kda"
    short = "KDA"
    title = "KDA (Kimi Delta Attention)"
    picker = "KDA: delta rule, per-channel decay (Kimi Linear)"
    about = ("KDA (Kimi Linear): Gated DeltaNet's delta rule with a forget gate per key channel (fine-grained decay) "
             "from a low-rank projection; no KV cache, a d x d state per head.")
    projection_rows = (("q_proj", "q_proj"), ("k_proj", "k_proj"), ("v_proj", "v_proj"), ("conv1d", "conv1d"),
                       ("forget_gate", "forget_gate"), ("b_proj", "b_proj"), ("output_gate", "g_a + g_b"),
                       ("o_norm", "o_norm"), ("o_proj", "o_proj"))
    widths_type = KDAWidths
    colour = "#0d9488"
    timing_forms_key = "kda_forms"
    timing_form_names = ("prefill_ms", "decode_ms", "softmax_prefill_ms", "softmax_decode_ms")
    forms_tip = ("A KDA layer: prefill in the chunked form (chunks of 64, the decay per channel), decode as one "
                 "recurrent step; beside them the softmax layer of the same heads and width, in the same run.")
    chunk = CHUNK
    # vLLM keeps KDA's recurrent state in float32 whatever --mamba-ssm-cache-dtype says
    # (vllm/model_executor/layers/mamba/mamba_utils.py, MambaStateDtypeCalculator.kda_state_dtype)
    engine_state_formats = {"vllm": "float32"}  # noqa: RUF012 (the base's ClassVar)
    sglang_slots_per_request = 1  # SGLang turns its radix cache off for Kimi Linear (server_args.py): one slot a request
    cli_help = "KDA, Kimi Linear's linear layers: --heads heads"

    def work_bytes(self, spec: LayerSpec, batch: int, tokens: int) -> int:
        """The chunked form's per-channel decay and its two products, C x C x d a head, for one chunk at a time, beside
        the float32 q, k, v and gates of every chunk."""
        C, H, d = CHUNK, spec.n_heads, spec.head_dim
        return 3 * batch * H * C * C * d * 4 + batch * H * -(-tokens // C) * C * 5 * d * 4

    def display_work_bytes(self, spec: LayerSpec, tokens: int) -> int:
        """One head at a time: its T x T x d decay and two products, in float64."""
        return 3 * tokens * tokens * spec.head_dim * 8 + 4 * spec.n_heads * tokens * tokens * 8

    def counts(self, d: int, spec: LayerSpec) -> KDAParams:
        return kda_params(shape(d, spec))

    def part_formulas(self, d: int, spec: LayerSpec) -> dict[str, str]:
        s = shape(d, spec)
        w, r = s.width, s.head_dim
        return {"q_proj": f"d x H d = {d} x {w}", "k_proj": f"d x H d = {d} x {w}", "v_proj": f"d x H d = {d} x {w}",
                "conv1d": f"3 H d x k = {3 * w} x {s.conv_kernel}: depthwise over q, k and v",
                "forget_gate": f"f_a d x d_h + f_b d_h x H d_h + dt_bias H d_h + A_log H = {d} x {r} + {r} x {w} + "
                               f"{w} + {s.n_heads}: the per-channel decay",
                "b_proj": f"d x H = {d} x {s.n_heads}: beta", "output_gate": f"g_a d x d_h + g_b d_h x H d_h = {d} x "
                f"{r} + {r} x {w}", "o_norm": f"d_h = {r}", "o_proj": f"H d x d = {w} x {d}"}

    def matmul_weights(self, d: int, spec: LayerSpec) -> int:
        p = self.counts(d, spec)
        s = shape(d, spec)
        return p.total - (s.width + s.n_heads) - p.o_norm  # less dt_bias, A_log and the norm

    def recurrent_values(self, spec: LayerSpec) -> int:
        return recurrent_state_values(shape(1, spec))

    def conv_values(self, spec: LayerSpec, full_kernel: bool = False) -> int:
        return conv_state_values(shape(1, spec), full_kernel)

    def core_flops(self, spec: LayerSpec, batch: int, tokens: int, phase: str) -> int:
        return kda_core_flops(spec.n_heads, spec.head_dim, batch, tokens, phase)

    def core_formula(self, spec: LayerSpec, phase: str) -> str:
        if phase == "decode":
            return "one recurrent step: 7 x B x H x d^2 (the per-channel decay, S^T k, the rank-one update, S^T q)"
        return "the chunked form: B x H x ceil(T / 64) chunks x (8 C^2 d + 6 C d^2), C = 64: linear in T"

    def state_shape(self, spec: LayerSpec) -> str:
        return f"{spec.n_heads} heads x {spec.head_dim} x {spec.head_dim}"


KDA = KDAKind()
