"""Mamba-2 (SSD) as a layer kind (Nemotron-H, Granite 4.0-H, Falcon-H1, Bamba): per head a P x N state decayed by a
scalar a step, written with dt x B^T and read with C; no KV cache."""

from __future__ import annotations

from core.arch.layer import LayerSpec
from core.kinds.mamba2.counts import (
    Mamba2Params,
    Mamba2Shape,
    conv_state_values,
    mamba2_params,
    ssm_state_values,
)
from core.kinds.mamba2.spec import Mamba2Widths
from core.kinds.mixer_kind import MixerKind, widths_of

CHUNK = 128  # transformers' NemotronHConfig.chunk_size (Granite 4.0-H and Bamba use 256)


def shape(d: int, spec: LayerSpec) -> Mamba2Shape:
    w = widths_of(spec, Mamba2Widths)
    return Mamba2Shape(d, spec.n_heads, w.head_dim, w.state_size, spec.n_kv_heads, w.conv_kernel)


def ssd_core_flops(n_heads: int, P: int, N: int, batch: int, tokens: int, phase: str, chunk: int = CHUNK) -> int:
    """Chunked SSD (per head and chunk of C: C B^T 2 C^2 N, its product with x 2 C^2 P, the chunk's state 2 C P N and
    the earlier chunks' read 2 C N P), or one recurrent step (5 P N: decay, the dt x B^T write, the C read)."""
    if phase == "decode":
        return 5 * batch * n_heads * P * N
    chunks = -(-tokens // chunk)
    C = chunk
    return batch * n_heads * chunks * (2 * C * C * (N + P) + 4 * C * P * N)


class Mamba2Kind(MixerKind):
    name = "mamba2"
    short = "Mamba-2"
    title = "Mamba-2"
    picker = "Mamba-2: state-space layer (Nemotron-H)"
    about = ("Mamba-2 (Nemotron-H, Granite 4.0-H, Falcon-H1): a selective state-space layer; each head keeps a P x N "
             "state, decayed a step and written with the token's B and read with its C; no KV cache.")
    projection_rows = (("in_proj", "in_proj"), ("conv1d", "conv1d"), ("dt_bias", "dt_bias"), ("a_log", "A_log"),
                       ("d_skip", "D"), ("norm", "norm"), ("out_proj", "out_proj"))
    widths_type = Mamba2Widths
    colour = "#7c3aed"
    timing_forms_key = "mamba2_forms"
    timing_form_names = ("prefill_ms", "decode_ms", "softmax_prefill_ms", "softmax_decode_ms")
    forms_tip = ("A Mamba-2 layer: prefill in the chunked SSD form (chunks of 128), decode as one recurrent step of its "
                 "state; beside them the softmax layer of the same heads and width, in the same run.")
    chunk = CHUNK
    cli_help = "Mamba-2 (SSD), Nemotron-H's mixers: --heads SSM heads, --kv-heads groups"

    def counts(self, d: int, spec: LayerSpec) -> Mamba2Params:
        return mamba2_params(shape(d, spec))

    def part_formulas(self, d: int, spec: LayerSpec) -> dict[str, str]:
        s = shape(d, spec)
        return {"in_proj": f"d x (2 d_inner + 2 G N + H) = {d} x (2 x {s.d_inner} + 2 x {s.n_groups} x {s.state_size} "
                           f"+ {s.n_heads}): z, x, B, C and dt",
                "conv1d": f"conv_dim x (k + 1) = {s.conv_dim} x ({s.conv_kernel} + 1): depthwise over x, B and C, "
                          "with its bias",
                "dt_bias": f"H = {s.n_heads}", "a_log": f"H = {s.n_heads}", "d_skip": f"H = {s.n_heads}",
                "norm": f"d_inner = {s.d_inner}: the gated RMSNorm", "out_proj": f"d_inner x d = {s.d_inner} x {d}"}

    def matmul_weights(self, d: int, spec: LayerSpec) -> int:
        s = shape(d, spec)
        return d * (2 * s.d_inner + 2 * s.n_groups * s.state_size + s.n_heads) + s.d_inner * d + s.conv_dim * s.conv_kernel

    def recurrent_values(self, spec: LayerSpec) -> int:
        return ssm_state_values(shape(1, spec))

    def conv_values(self, spec: LayerSpec, full_kernel: bool = False) -> int:
        return conv_state_values(shape(1, spec), full_kernel)

    def engine_conv_values(self, spec: LayerSpec, tp: int) -> int:
        """Engines count G groups that t does not divide as t groups (vLLM's mamba2_state_shape with
        extra_groups_for_head_shards, G + t - G; SGLang's Mamba2StateShape.create the same), each GPU then keeping
        (d_inner + 2 G' N) / t channels of k - 1 inputs."""
        s = shape(1, spec)
        groups = s.n_groups if s.n_groups % tp == 0 else tp
        return -(-(s.d_inner + 2 * groups * s.state_size) // tp) * (s.conv_kernel - 1)

    def core_flops(self, spec: LayerSpec, batch: int, tokens: int, phase: str) -> int:
        w = widths_of(spec, Mamba2Widths)
        return ssd_core_flops(spec.n_heads, w.head_dim, w.state_size, batch, tokens, phase)

    def core_formula(self, spec: LayerSpec, phase: str) -> str:
        if phase == "decode":
            return "one recurrent step: 5 x B x H x P x N (decay, the dt x B^T write, the C read), whatever T"
        return "the chunked SSD form: B x H x ceil(T / 128) chunks x (2 C^2 (N + P) + 4 C P N), C = 128: linear in T"

    def state_shape(self, spec: LayerSpec) -> str:
        w = widths_of(spec, Mamba2Widths)
        return f"{spec.n_heads} heads x {w.head_dim} x {w.state_size}"


MAMBA2 = Mamba2Kind()
