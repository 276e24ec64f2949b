"""Mamba-1 as a layer kind (Jamba): a selective state-space layer, each of its d_inner channels an N-wide state with
its own decay, all written with one B and read with one C a token; no KV cache."""

from __future__ import annotations

from core.arch.layer import LayerSpec
from core.kinds.mamba1.counts import (
    Mamba1Params,
    Mamba1Shape,
    conv_state_values,
    mamba1_params,
    ssm_state_values,
)
from core.kinds.mamba1.spec import Mamba1Widths
from core.kinds.mixer_kind import MixerKind, widths_of

MAPS = 8  # the maps drawn: that many of its channels, evenly spaced (each has its own decay)


def shape(d: int, spec: LayerSpec) -> Mamba1Shape:
    w = widths_of(spec, Mamba1Widths)
    return Mamba1Shape(d, w.state_size, 2, w.dt_rank, w.conv_kernel, inner=w.d_inner)


def scan_core_flops(channels: int, N: int, batch: int, tokens: int, phase: str) -> int:
    """The selective scan, a token and a channel: exp(dt A) and the state's decay, dt B x, the read C h (about 7 N);
    prefill runs it over every token (a scan, not chunks), decode once."""
    return 7 * batch * channels * N * (tokens if phase == "prefill" else 1)


class Mamba1Kind(MixerKind):
    name = "mamba1"
    short = "Mamba-1"
    title = "Mamba-1"
    picker = "Mamba-1: selective scan (Jamba)"
    about = ("Mamba-1 (Jamba): a selective state-space layer; each of its channels keeps an N-wide state with its own "
             "decay, written with the token's B and read with its C; no KV cache.")
    projection_rows = (("in_proj", "in_proj"), ("conv1d", "conv1d"), ("x_proj", "x_proj"), ("dt_proj", "dt_proj"),
                       ("a_log", "A_log"), ("d_skip", "D"), ("inner_norms", "dt/B/C norms"), ("out_proj", "out_proj"))
    widths_type = Mamba1Widths
    colour = "#9333ea"
    timing_forms_key = "mamba1_forms"
    timing_form_names = ("prefill_ms", "decode_ms", "softmax_prefill_ms", "softmax_decode_ms")
    forms_tip = ("A Mamba-1 layer: prefill as a sequential selective scan (the CPU has no chunked form of it), decode "
                 "as one step; beside them the softmax layer of the same width, in the same run.")
    chunk = 1
    engines = ("vllm", "llama.cpp")  # SGLang lists no Mamba-1 model (python/sglang/srt/configs/hybrid_arch.py)
    cli_help = "Mamba-1, Jamba's mixers (no heads)"

    def kv_sharing(self, spec: LayerSpec) -> str:
        return (f"Mamba-1: implicit attention of {MAPS} of its {widths_of(spec, Mamba1Widths).d_inner} channels, evenly "
                "spaced (h0 is channel 0; each has its own decay, all share B and C); rows need not sum to one.")

    def baseline(self, spec: LayerSpec) -> LayerSpec:
        """The MHA layer of d_inner / 128 heads of 128 (no heads of its own to keep)."""
        w = widths_of(spec, Mamba1Widths)
        heads = max(w.d_inner // 128, 1)
        return LayerSpec(heads, heads, 128)

    def check_tp(self, spec: LayerSpec, tp: int) -> None:
        """Engines shard its channels over the TP group: d_inner must divide evenly."""
        inner = widths_of(spec, Mamba1Widths).d_inner
        if inner % tp:
            raise ValueError(f"a TP degree of {tp} does not divide the Mamba-1 layer's {inner} channels; choose a "
                             f"degree that divides {inner}.")

    def display_maps(self, spec: LayerSpec) -> int:
        return min(MAPS, widths_of(spec, Mamba1Widths).d_inner)

    def display_work_bytes(self, spec: LayerSpec, tokens: int) -> int:
        """One channel at a time: its T x T x N decay and products, in float64."""
        return 3 * tokens * tokens * widths_of(spec, Mamba1Widths).state_size * 8

    def work_bytes(self, spec: LayerSpec, batch: int, tokens: int) -> int:
        """The scan's step: exp(dt A), dt B x and the written state, d_inner x N a sequence, with their temporaries."""
        w = widths_of(spec, Mamba1Widths)
        return 6 * batch * w.d_inner * w.state_size * 4

    def counts(self, d: int, spec: LayerSpec) -> Mamba1Params:
        return mamba1_params(shape(d, spec))

    def part_formulas(self, d: int, spec: LayerSpec) -> dict[str, str]:
        s = shape(d, spec)
        D, N, R = s.d_inner, s.state_size, s.dt_rank
        return {"in_proj": f"d x 2 d_inner = {d} x 2 x {D}: x and the gate z",
                "conv1d": f"d_inner x (k + 1) = {D} x ({s.conv_kernel} + 1): depthwise, with its bias",
                "x_proj": f"d_inner x (R + 2 N) = {D} x ({R} + 2 x {N}): dt, B and C",
                "dt_proj": f"R x d_inner + d_inner = {R} x {D} + {D}", "a_log": f"d_inner x N = {D} x {N}",
                "d_skip": f"d_inner = {D}", "inner_norms": f"R + 2 N = {R} + 2 x {N}: Jamba's norms on dt, B and C",
                "out_proj": f"d_inner x d = {D} x {d}"}

    def matmul_weights(self, d: int, spec: LayerSpec) -> int:
        s = shape(d, spec)
        D = s.d_inner
        return d * 2 * D + D * (s.dt_rank + 2 * s.state_size) + s.dt_rank * D + D * d + D * s.conv_kernel

    def recurrent_values(self, spec: LayerSpec) -> int:
        return ssm_state_values(shape(1, spec))

    def conv_values(self, spec: LayerSpec, full_kernel: bool = False) -> int:
        return conv_state_values(shape(1, spec), full_kernel)

    def core_flops(self, spec: LayerSpec, batch: int, tokens: int, phase: str) -> int:
        w = widths_of(spec, Mamba1Widths)
        return scan_core_flops(w.d_inner, w.state_size, batch, tokens, phase)

    def core_formula(self, spec: LayerSpec, phase: str) -> str:
        what = "every token" if phase == "prefill" else "one token"
        return f"the selective scan over {what}: about 7 x B x d_inner x N a token (decay, write, read)"

    def state_shape(self, spec: LayerSpec) -> str:
        w = widths_of(spec, Mamba1Widths)
        return f"{w.d_inner} channels x {w.state_size}"


MAMBA1 = Mamba1Kind()
