"""What every recurrent token mixer (Gated DeltaNet, KDA, lightning attention, Mamba-2, Mamba-1) answers the same
way: no KV cache, a fixed state a sequence keeps, parameters by projection, FLOPs of a chunked prefill and one decode
step. A mixer's package supplies its shape, its counts and its core's FLOPs; this base turns them into a LayerKind.

Torch-free, as core/kinds/kind.py.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

from core.arch.layer import LayerSpec
from core.format import format_bytes, format_count, format_noun, table_row
from core.kinds.kind import CostRow, FlopCounts, LayerKind, Workload, values_bytes
from core.kinds.mixer_widths import MixerWidths
from core.kinds.projections import ByProjection, NamedParts
from core.kinds.standard.counts import standard_params
from core.timing.rates import ASSUMED_FLOPS_PER_S

if TYPE_CHECKING:
    from core.arch.config import AttentionConfig

STATE_NOTE = ("Engines keep a recurrent state in float32 by default (vLLM's mamba_ssm_cache_dtype, transformers' "
              "mamba_ssm_cache_dtype); bfloat16 and fp8 halve and quarter it, and whether a state survives that is an "
              "open question (MiniMax-M2's team named low-precision state as one reason to go back to full attention).")


def widths_of(spec: LayerSpec, kind: type[MixerWidths]) -> Any:
    if not isinstance(spec.widths, kind):
        raise ValueError(f"this layer is not a {kind.title} layer.")
    return spec.widths


class MixerKind(LayerKind):
    """Base of the recurrent mixers' kinds. Subclasses set the class attributes LayerKind names and supply the
    abstract methods below."""

    cache_name = "state"
    has_state = True
    # the engines whose model files serve a layer of this kind (vLLM's, SGLang's, llama.cpp's hybrid model lists)
    engines: tuple[str, ...] = ("vllm", "sglang", "llama.cpp")
    engine_state_formats: ClassVar[dict[str, str]] = {}  # an engine that keeps this kind's state in one format whatever it is told
    sglang_slots_per_request = 3  # SGLang's state slots a running request takes with its radix cache on
    signed_maps = ("Implicit attention (Zimerman et al. 2024, 'Explaining modern gated-linear RNNs via a unified "
                   "implicit attention formulation'): M[t, s] is the exact weight of token s's value in output t, "
                   "o = M v. No softmax: rows need not sum to one and weights can be negative, so the map is "
                   "diverging (colour-blind safe: blue negative, yellow positive, grey at 0) on a shared symmetric "
                   "scale.")
    chunk: int = 64  # the chunked form's chunk length (fla's and transformers' default for the kind)

    # --- what a mixer's package supplies -------------------------------------------------------------------------
    @abstractmethod
    def counts(self, d: int, spec: LayerSpec) -> ByProjection:
        """Parameters by projection (the kind's counts module)."""

    @abstractmethod
    def part_formulas(self, d: int, spec: LayerSpec) -> dict[str, str]:
        """Each projection's formula with its inputs, by the counts' field names."""

    @abstractmethod
    def matmul_weights(self, d: int, spec: LayerSpec) -> int:
        """Weights a token multiplies by (the projections' matrices; a depthwise convolution's taps count too)."""

    @abstractmethod
    def recurrent_values(self, spec: LayerSpec) -> int:
        """The recurrent (or SSM) state a sequence keeps, in values."""

    @abstractmethod
    def conv_values(self, spec: LayerSpec, full_kernel: bool = False) -> int:
        """The short convolution's state in values: k - 1 inputs as engines keep it, k as transformers' cache does."""

    @abstractmethod
    def core_flops(self, spec: LayerSpec, batch: int, tokens: int, phase: str) -> int:
        """The mixing core's FLOPs: the chunked form over tokens (prefill), or one recurrent step (decode)."""

    @abstractmethod
    def core_formula(self, spec: LayerSpec, phase: str) -> str:
        """core_flops' formula, as the Costs panel's tooltip says it."""

    @abstractmethod
    def state_shape(self, spec: LayerSpec) -> str:
        """The state's shape in words: "32 heads x 128 x 128"."""

    # --- LayerKind, answered once for every mixer ---------------------------------------------------------------
    @property
    def group_tag(self) -> str:  # type: ignore[override]
        """'k3': the key head a value head reads (Gated DeltaNet), 'g3': the group of B and C (Mamba-2)."""
        name = self.widths_type.kv_name if self.widths_type is not None else ""  # type: ignore[attr-defined]
        return {"key heads": "k", "groups": "g"}.get(name, "kv")

    def widths(self, spec: LayerSpec) -> Any:
        assert self.widths_type is not None
        return widths_of(spec, self.widths_type)  # type: ignore[arg-type]

    def mode(self, spec: LayerSpec) -> str:
        return self.widths(spec).mode

    def label(self, spec: LayerSpec) -> str:
        return self.widths(spec).label

    def baseline(self, spec: LayerSpec) -> LayerSpec:
        """The MHA layer of the same heads and head width: what a softmax layer in its place would cost."""
        return LayerSpec(spec.n_heads, spec.n_heads, self.widths(spec).baseline_head_dim)

    def badge_tip(self, spec: LayerSpec) -> str:
        return (f"{self.title}: {format_noun(spec.n_heads, 'head')}, no KV cache; each keeps a state of "
                f"{self.state_shape(spec)} values a sequence, whatever its length.")

    def kv_sharing(self, spec: LayerSpec) -> str:
        return (f"{self.title}: implicit attention, the exact weight of each earlier token's value in each output "
                "(rows need not sum to one, and can be negative).")

    def params(self, d: int, spec: LayerSpec) -> NamedParts:
        parts = self.counts(d, spec).to_dict()
        parts.pop("total")
        names = dict(self.projection_rows)
        return NamedParts(parts, {k: names.get(k, k) for k in parts}, self.part_formulas(d, spec),
                           standard_params(d, self.baseline(spec)).total)

    def flops(self, d: int, spec: LayerSpec, work: Workload, form: str | None = None) -> FlopCounts:
        tokens = work.seq_len if work.phase == "prefill" else 1
        proj = 2 * work.batch_size * tokens * self.matmul_weights(d, spec)
        core = self.core_flops(spec, work.batch_size, work.seq_len, work.phase)
        return FlopCounts(proj, core, proj + core)

    def cache_values_per_token(self, spec: LayerSpec) -> int:
        return 0

    def cached_tokens(self, spec: LayerSpec, seq_len: int) -> int:
        return 0

    def state_values(self, spec: LayerSpec) -> int:
        return self.recurrent_values(spec) + self.conv_values(spec)

    def state_bytes(self, spec: LayerSpec, kv_format: str | int, conv_format: str | int | None = None) -> int:
        """The recurrent state in kv_format (the state format) and the convolution's k - 1 inputs in conv_format
        (the compute dtype, as vLLM keeps it; None: kv_format)."""
        conv = conv_format if conv_format is not None else kv_format
        return values_bytes(self.recurrent_values(spec), kv_format) + values_bytes(self.conv_values(spec), conv)

    def check_tp(self, spec: LayerSpec, tp: int) -> None:
        """Engines shard a mixer's heads (and their states) over the TP group: the heads must divide evenly."""
        if spec.n_heads % tp:
            raise ValueError(f"a TP degree of {tp} does not divide the {self.title} layer's {spec.n_heads} heads, so "
                             f"its states cannot be shared out evenly; choose a degree that divides {spec.n_heads}.")

    def replication(self, spec: LayerSpec, tp: int) -> int:
        """Its state is shared out by heads, never copied: one GPU holds each value."""
        return 1

    def gpu_state_bytes(self, spec: LayerSpec, tp: int, state_format: str, conv_format: str) -> int:
        """Its state shared out by heads: a TP group of t GPUs keeps 1/t of it each."""
        return -(-self.state_bytes(spec, state_format, conv_format) // tp)

    def engine_conv_values(self, spec: LayerSpec, tp: int) -> int:
        """The convolution's k - 1 inputs one GPU of a TP group keeps, its channels shared out evenly (vLLM's
        MambaStateShapeCalculator, SGLang's state shapes)."""
        return -(-self.conv_values(spec) // tp)

    def engine_recurrent_values(self, spec: LayerSpec, tp: int) -> int:
        """The recurrent state one GPU of a TP group keeps: its heads' share."""
        return -(-self.recurrent_values(spec) // tp)

    def decode_core_flops(self, d: int, spec: LayerSpec, batch: int, keys: int) -> int:
        return self.core_flops(spec, batch, keys, "decode")

    def timing_bytes(self, cfg: AttentionConfig, materialises_scores: bool) -> int:
        """The input, its projections and the output for the batch in the compute dtype, the state in float32, and
        the softmax layer of the same width timed beside it (its Q, K, V and output; its scores when materialised)."""
        spec, B, T, d, b = cfg.layer_spec(), cfg.batch_size, cfg.seq_len, cfg.d_model, cfg.dtype_bytes
        weights = self.params(d, spec).total * b
        acts = B * T * (2 * d + 4 * self.matmul_weights(d, spec) // max(d, 1)) * b
        state = B * self.state_values(spec) * 4 * 2
        softmax = 4 * B * T * spec.n_heads * spec.head_dim * b
        scores = B * spec.n_heads * T * T * 4 if materialises_scores else 0
        return weights + acts + state + softmax + scores + self.work_bytes(spec, B, T)

    def work_bytes(self, spec: LayerSpec, batch: int, tokens: int) -> int:
        """What the torch forms hold beyond the activations: the chunked form's float32 q, k, v and gates per head and
        its C x C decay, system and scores for every chunk at once (the scan over chunks runs after)."""
        chunks = -(-tokens // self.chunk)
        C, H = self.chunk, spec.n_heads
        return batch * H * chunks * (3 * C * C + 6 * C * spec.head_dim) * 4

    def display_work_bytes(self, spec: LayerSpec, tokens: int) -> int:
        """What computing its implicit attention holds at once for tokens, in float64: a few T x T maps a head."""
        return 4 * spec.n_heads * tokens * tokens * 8

    def estimate_timing_s(self, cfg: AttentionConfig, device_type: str, budget_s: float, include_qkv: bool) -> float:
        """Prefill and decode of the mixer and of the softmax layer beside it, each at least 7 calls or the budget;
        the torch forms run far below a GEMM's rate on a CPU (a python loop a chunk), so 4x is allowed for them."""
        rate = ASSUMED_FLOPS_PER_S.get(device_type, 1.0e11) / (4 if device_type == "cpu" else 1)
        prefill = self.flops(cfg.d_model, cfg.layer_spec(), cfg.with_(phase="prefill")).total
        per_call = prefill / rate + cfg.seq_len / self.chunk * 2e-4
        return 4 * max(budget_s, 7 * per_call) + max(budget_s, 7 * 4 * cfg.batch_size * cfg.n_heads * cfg.head_dim
                                                      * cfg.seq_len ** 2 / rate)

    def display_bytes(self, cfg: AttentionConfig) -> int:
        return self.params(cfg.d_model, cfg.layer_spec()).total * 4

    def hides(self) -> frozenset[str]:
        """No window, sinks, biases, q/k norm or KV format of the standard layer's; its head width is a width of its
        own (its spin box), so head_dim's slider hides too."""
        return frozenset({"bias", "head_dim", "qk_norm", "window", "sinks"})

    def refuse_knob(self, knob: str) -> str:
        if knob in ("window", "sinks", "kv_dtype", "head_dim"):
            return f"{knob} does not apply to a {self.title} layer (it keeps a state, not a KV cache)."
        return ""

    # --- the report and the Costs panel ---------------------------------------------------------------------------
    def report_sections(self, cfg: AttentionConfig, kv: dict[str, Any]) -> dict[str, Any]:
        spec = cfg.layer_spec()
        section = {**self.widths(spec).to_dict(), "state_values": self.recurrent_values(spec),
                   "conv_state_values": self.conv_values(spec),
                   "conv_state_values_transformers": self.conv_values(spec, full_kernel=True),
                   "state_format": cfg.state_format,
                   "state_bytes_per_sequence": self.state_bytes(spec, cfg.state_format, cfg.dtype),
                   "decode_core_flops": self.core_flops(spec, cfg.batch_size, cfg.seq_len, "decode"),
                   "prefill_core_flops": self.core_flops(spec, cfg.batch_size, cfg.seq_len, "prefill")}
        return {"mixer": section}

    def report_header(self, report: dict[str, Any]) -> str:
        c = report["config"]
        return (f"{self.title} layer: d_model {c['d_model']}, {c['n_heads']} heads x {c['head_dim']}, "
                f"{c['n_kv_heads']} {self.widths_type.kv_name if self.widths_type else 'KV heads'}")  # type: ignore[attr-defined]

    def report_lines(self, report: dict[str, Any]) -> list[str]:
        m = report["mixer"]
        return [table_row("state / sequence / layer", f"{m['state_bytes_per_sequence']:,}",
                          f"{format_bytes(m['state_bytes_per_sequence'])}: {m['state_values']:,} values in "
                          f"{m['state_format']} + conv {m['conv_state_values']:,}"),
                table_row("decode core FLOPs", format_count(m["decode_core_flops"]), "one step, whatever T")]

    @property
    def own_cost_rows(self) -> tuple[tuple[str, str], ...]:  # type: ignore[override]
        return ((f"{self.name}_state", f"{self.short} state / sequence"),)

    def cost_rows(self, cfg: AttentionConfig, spec: LayerSpec, d: int, where: str) -> list[CostRow]:
        """Its state a sequence (this layer), and the shared rows' formulas said for a layer that caches no token."""
        B = cfg.batch_size
        state = self.state_bytes(spec, cfg.state_format, cfg.dtype)
        rec, conv = self.recurrent_values(spec), self.conv_values(spec)
        tq = "T" if cfg.phase == "prefill" else "1"
        w = self.widths(spec)
        return [
            CostRow("head_dim", str(spec.head_dim), w.head_field,
                    f"This {self.title} layer's head width is its {w.head_field} = {spec.head_dim}; "
                    f"{format_noun(spec.n_heads, 'head')}, {spec.n_kv_heads} {w.kv_name}. The configuration's own "
                    "layer (the sliders') keeps its head_dim."),
            CostRow(f"{self.name}_state", f"{state:,} B", format_bytes(state),
                    f"This {self.title} layer caches nothing a token: it keeps a state of {self.state_shape(spec)} = "
                    f"{rec:,} values in {cfg.state_format}, plus its convolution's last k - 1 inputs ({conv:,} values "
                    f"in {cfg.dtype}; transformers' cache keeps k: {self.conv_values(spec, True):,}), whatever the "
                    f"context: {format_bytes(state)} a sequence, {format_bytes(state * B)} for the batch of {B}. "
                    f"{STATE_NOTE}"),
            CostRow("kv_token", "", "", "K and V a token of every attention layer, summed; a recurrent layer adds "
                    "nothing a token (its state is fixed: the state row)"),
            CostRow("kv_total", "", "", "every attention layer's K and V at batch x tokens, plus every recurrent "
                    f"layer's fixed state x batch (in {cfg.state_format}; the conv's inputs in {cfg.dtype})"),
            CostRow("flops_proj", "", "", f"the projections' matmuls and the convolution, {tq} tokens"),
            CostRow("flops_core", "", "", self.core_formula(spec, cfg.phase)),
            CostRow("intensity", "", "", "core FLOPs over the bytes of q, k, v and output this layer moves (its state "
                    "is read and written once a chunk, not counted)"),
        ]

    def timing_forms(self, timing: dict[str, Any]) -> str:
        forms = timing.get(self.timing_forms_key) if self.timing_forms_key else None
        if not forms:
            return ""
        out = [f"{self.short} prefill {ms(forms['prefill_ms'])}, decode step {ms(forms['decode_ms'])}"]
        if forms.get("softmax_prefill_ms"):
            out.append(f"the softmax layer of the same width: prefill {ms(forms['softmax_prefill_ms'])} ({self.short} / "
                       f"softmax = {forms['prefill_ms'] / forms['softmax_prefill_ms']:.2g}x), decode step "
                       f"{ms(forms['softmax_decode_ms'])} ({self.short} / softmax = "
                       f"{forms['decode_ms'] / forms['softmax_decode_ms']:.2g}x)")
        return "; ".join(out)


def ms(value: float) -> str:
    """1632.4 -> '1,632 ms', 14.31 -> '14.3 ms', 0.697 -> '0.697 ms'."""
    return f"{value:,.0f} ms" if value >= 100 else f"{value:.3g} ms"
