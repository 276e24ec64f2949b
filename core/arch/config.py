"""The attention configuration: one frozen dataclass, validated on construction.

Torch-free on purpose: widgets import this module to snap sliders to valid values.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from core.arch.formats import STATE_FORMATS, check_kv_format
from core.arch.layer import LayerSpec, normalise_bias
from core.arch.model import Architecture
from core.arch.pattern import canonical_pattern, local_layers
from core.arch.stack import OWN, Stack
from core.kinds.mixer_widths import MixerWidths
from core.kinds.standard.band import check_window
from core.kinds.widths import KindWidths
from core.kinds.widths_types import split_widths

# Bytes per element of each dtype the app can run and count.
DTYPE_BYTES: dict[str, int] = {"float32": 4, "float16": 2, "bfloat16": 2}
PHASES = ("prefill", "decode")
# Head widths outside this range, or not a multiple of 8, earn a warning (the seeds' rule of thumb).
MIN_GOOD_HEAD_DIM = 32
MAX_GOOD_HEAD_DIM = 256
# The largest value each size may take (README: "Limits"). Checked before anything else, so a huge
# number is refused at once instead of hanging a divisor search or overflowing a float.
MAXIMA: dict[str, int] = {
    "d_model": 2**20,  # 1,048,576: 80x GPT-3's width
    "n_heads": 2**16,
    "n_kv_heads": 2**16,
    "seq_len": 2**30,  # counts only; timing and heatmaps refuse far earlier, with the bytes they need
    "batch_size": 2**20,
    "n_layers": 4096,
}


LAYOUT_FIELDS = ("explicit_head_dim", "qk_norm", "window", "layer_pattern", "sinks", "kv_dtype", "softmax_scale", "widths",
                 "state_dtype", "stack", "output_gate")


@dataclass(frozen=True)
class AttentionConfig:
    """One attention layer of a model, and the workload it runs."""

    d_model: int = 768  # width of the residual stream
    n_heads: int = 12  # query heads
    n_kv_heads: int | None = None  # key/value heads; None means n_heads (MHA)
    seq_len: int = 1024  # tokens per sequence (prefill), or keys a decode step reads (seq_len - 1 cached + its own)
    batch_size: int = 1  # sequences
    n_layers: int = 12  # layers, for the whole-model KV cache
    dtype: str = "float32"  # element type of weights, activations and cache
    causal: bool = False  # causal mask: halves the core FLOPs of prefill
    bias: bool | str = False  # True (or "all"): all four projections; "qkv": q, k, v only; False ("none")
    phase: str = "prefill"  # prefill: T queries; decode: the new token's query against T keys (T - 1 cached + itself)
    explicit_head_dim: int | None = None  # None: head_dim is d_model / n_heads (tied); a width of its own otherwise
    qk_norm: bool = False  # RMSNorm over head_dim on q and k (Qwen3, Gemma 3)
    window: int | None = None  # sliding window W of the local layers (keys a query sees, itself included)
    layer_pattern: str = "global"  # which layers are local: global, local, alternate, N:1 or "LLG..."
    sinks: bool = False  # learned attention sinks, one logit per head (gpt-oss)
    kv_dtype: str | None = None  # the KV cache's element format; None: the compute dtype
    softmax_scale: float | None = None  # None: 1 / sqrt(head_dim)
    widths: KindWidths | None = None  # a layer kind's own widths (core/kinds/widths.py); None: standard attention
    output_gate: bool = False  # q_proj also makes a per-channel output gate (Qwen3-Next's gated attention)
    state_dtype: str | None = None  # how a recurrent layer's state is kept (float32, bfloat16, fp8_e4m3); None: float32
    stack: Stack | None = None  # a hybrid stack: which layers are this layer (A) and which are mixers; None: all this

    def __post_init__(self) -> None:
        if self.stack is not None:
            if not isinstance(self.stack, Stack):
                raise ValueError(f"stack must be a hybrid stack or none, not {short_repr(self.stack)}.")
            if self.n_layers != self.stack.n_layers:
                raise ValueError(f"the hybrid stack lists {self.stack.n_layers} layers, not {short_int(self.n_layers)}; "
                                 "leave n_layers at the stack's length (drop --layers), or clear the stack.")
        if self.state_dtype is not None and self.state_dtype not in STATE_FORMATS:
            raise ValueError(f"state dtype {short_repr(self.state_dtype)} is not known; choose one of "
                             f"{', '.join(STATE_FORMATS)}.")
        if self.widths is not None and not isinstance(self.widths, KindWidths):
            raise ValueError(f"widths must be a layer kind's widths or none, not {short_repr(self.widths)}.")
        if self.widths is not None:  # the kind's widths decide its heads (MLA: one K and V per query head)
            self.widths.check_heads(self.n_heads, self.n_kv_heads, self.explicit_head_dim)
            object.__setattr__(self, "explicit_head_dim", None)  # head_dim is the widths' own
        if self.n_kv_heads is None:  # MHA, or what the kind's widths give (DeepSeek-V4: one shared KV head)
            object.__setattr__(self, "n_kv_heads", self.widths.kv_heads(self.n_heads) if self.widths is not None
                               and isinstance(self.n_heads, int) else self.n_heads)
        for name in ("d_model", "n_heads", "n_kv_heads", "seq_len", "batch_size", "n_layers"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{name} must be a whole number, not {short_repr(value)}.")
            if value < 1:
                raise ValueError(f"{name} must be at least 1, not {short_int(value)}; choose a positive {name}.")
            if value > MAXIMA[name]:
                raise ValueError(f"{name} must be at most {MAXIMA[name]:,}, not {short_int(value)}; "
                                 f"choose a smaller {name}.")
        h = self.explicit_head_dim
        if h is not None and (isinstance(h, bool) or not isinstance(h, int) or not 1 <= h <= 2**20):
            raise ValueError(f"head_dim must be a whole number from 1 to {2**20:,}, not {short_repr(h)}.")
        if h is not None and self.n_heads * h > 2**24:
            raise ValueError(f"n_heads x head_dim ({self.n_heads:,} x {h:,}) is too wide; at most 16,777,216.")
        if h is None and self.widths is None and self.d_model % self.n_heads:
            raise ValueError(
                f"n_heads={self.n_heads} does not divide d_model={self.d_model}; "
                f"choose n_heads from {short_list(valid_n_heads(self.d_model))}."
            )
        if self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"n_kv_heads={self.n_kv_heads} does not divide n_heads={self.n_heads}; "
                f"choose n_kv_heads from {short_list(valid_n_kv_heads(self.n_heads))}."
            )
        if not isinstance(self.dtype, str) or self.dtype not in DTYPE_BYTES:
            raise ValueError(
                f"dtype {short_repr(self.dtype)} is not supported; choose one of {', '.join(DTYPE_BYTES)}."
            )
        if not isinstance(self.phase, str) or self.phase not in PHASES:
            raise ValueError(f"phase {short_repr(self.phase)} is not known; choose prefill or decode.")
        object.__setattr__(self, "bias", normalise_bias(self.bias))
        for name in ("causal", "qk_norm", "sinks", "output_gate"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, not {short_repr(getattr(self, name))}.")
        check_window(self.window)
        object.__setattr__(self, "layer_pattern", canonical_pattern(self.layer_pattern))
        local = local_layers(self.layer_pattern, self.n_layers)
        if any(local) and self.window is None:
            raise ValueError(f"the layer pattern {self.layer_pattern!r} has local layers but no window is set; "
                             "set a window (--window W) or choose the global pattern.")
        if self.stack is not None and self.layer_pattern != "global":
            raise ValueError("a hybrid stack's own layers are all global here; choose the global layer pattern, or "
                             "clear the stack.")
        if self.stack is not None and not self.causal:
            raise ValueError("a hybrid stack's mixers read tokens in order (they are causal); turn the causal mask on.")
        if any(local) and not self.causal:
            raise ValueError("a sliding window needs a causal mask (a query sees the W keys up to itself); "
                             "turn the causal mask on, or the window off.")
        if self.widths is None:
            check_kv_format(self.kv_format, self.head_dim)
        else:
            self.widths.check_kv_format(self.kv_format)
        for _, spec in self.stack.mixers if self.stack is not None else ():  # a stack's other attention layers too
            if spec.widths is not None and not isinstance(spec.widths, MixerWidths):  # a mixer caches no KV
                spec.widths.check_kv_format(self.kv_format)
        self.layer_spec()  # the scale's check, and the kind's own

    @property
    def head_dim(self) -> int:
        """d_model / n_heads (tied), a width of its own, or the one the kind's widths give."""
        if self.widths is not None:
            return self.widths.head_dim
        return self.explicit_head_dim if self.explicit_head_dim is not None else self.d_model // self.n_heads

    @property
    def head_dim_tied(self) -> bool:
        return self.explicit_head_dim is None and self.widths is None

    @property
    def kv_format(self) -> str:
        """The KV cache's element format: kv_dtype, or the compute dtype when none is set."""
        return self.kv_dtype if self.kv_dtype is not None else self.dtype

    def local_layers(self) -> tuple[bool, ...]:
        """For each layer, whether it attends through the window (none without a window)."""
        if self.window is None:
            return (False,) * self.n_layers
        return local_layers(self.layer_pattern, self.n_layers)

    @property
    def state_format(self) -> str:
        """How a recurrent layer keeps its state: state_dtype, or float32 (as engines do) when none is set."""
        return self.state_dtype if self.state_dtype is not None else "float32"

    def layer_spec(self, index: int | None = None) -> LayerSpec:
        """Layer index's spec (a stack's mixer where its pattern says); without index this configuration's own layer
        (the first one: a model's own layers differ only in their window)."""
        if self.stack is not None and index is not None and self.stack.pattern[index] != OWN:
            return self.stack.spec(self.stack.pattern[index])
        local = self.window is not None and self.local_layers()[index or 0]
        return LayerSpec(self.n_heads, self.kv_heads, self.head_dim, self.bias, self.qk_norm,
                         self.window if local else None, self.sinks, self.softmax_scale, self.widths, self.output_gate)

    def architecture(self, kind: str = "causal") -> Architecture:
        """One spec a layer, local or global as the pattern says (n_layers identical layers without a window), or as
        the stack lists them."""
        if self.stack is not None:
            own = self.layer_spec()
            return Architecture(self.d_model, tuple(own if c == OWN else self.stack.spec(c) for c in
                                                    self.stack.pattern), kind)
        local = self.local_layers()
        specs = {flag: self.layer_spec(local.index(flag)) for flag in set(local)}
        return Architecture(self.d_model, tuple(specs[flag] for flag in local), kind)

    @property
    def group_size(self) -> int:
        """Query heads that share one key/value head."""
        return self.n_heads // self.kv_heads

    @property
    def kv_heads(self) -> int:
        """n_kv_heads, typed as int (it is never None after construction)."""
        assert self.n_kv_heads is not None
        return self.n_kv_heads

    @property
    def mode(self) -> str:
        """The attention mode in a word: MHA, GQA, MQA, or the kind's own (its widths' mode)."""
        if self.widths is not None:
            return self.widths.mode
        if self.kv_heads == self.n_heads:
            return "MHA"
        if self.kv_heads == 1:
            return "MQA"
        return "GQA"

    @property
    def mode_label(self) -> str:
        """MHA, GQA-8 (group 4), MQA, or the kind's widths' label, as the badge shows it."""
        if self.widths is not None:
            return self.widths.label
        if self.mode == "GQA":
            return f"GQA-{self.kv_heads} (group {self.group_size})"
        return self.mode

    @property
    def dtype_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def attention(self) -> str:
        """The layer kind's name: "standard" (MHA, GQA, MQA) or the kind's widths' own."""
        return "standard" if self.widths is None else self.widths.kind

    def mha(self) -> AttentionConfig:
        """The multi-head baseline of the same width and query heads (of the kind's baseline head width)."""
        if self.widths is not None:
            return replace(self, widths=None, n_kv_heads=self.n_heads, explicit_head_dim=self.widths.baseline_head_dim)
        return replace(self, n_kv_heads=self.n_heads)

    def focus(self, index: int) -> AttentionConfig:
        """This configuration with layer index as its own layer (a stack's mixer is then the layer its sliders, timing
        and maps describe); itself when index is already its own."""
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < self.n_layers:
            raise ValueError(f"layer {short_repr(index)} is not one of this model's; choose 0 to {self.n_layers - 1}.")
        spec = self.layer_spec(index)
        if self.stack is None or self.stack.pattern[index] == OWN:
            return self
        return replace(self, n_heads=spec.n_heads, n_kv_heads=spec.n_kv_heads, explicit_head_dim=None, bias=False,
                       qk_norm=False, window=None, layer_pattern="global", sinks=False, softmax_scale=None,
                       widths=spec.widths, stack=None, output_gate=False)

    def with_(self, **changes: Any) -> AttentionConfig:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Every field of 2019-2023's layer; the 2026 fields (head_dim of its own, window, ...) only when set,
        so a file of a plain layer reads exactly as before."""
        defaults = {f.name: f.default for f in fields(self)}
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "widths"}
        out = {k: v for k, v in out.items() if k not in LAYOUT_FIELDS or v != defaults[k]}
        if self.widths is not None:  # under the kind's name, as files have always kept them
            out[self.widths.kind] = self.widths.to_dict()
        if self.stack is not None:
            out["stack"] = self.stack.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AttentionConfig:
        """A file's fields; a kind's widths are under the kind's name (MLA's as before)."""
        rest, widths = split_widths(data)
        if rest.get("stack") is not None:
            rest = {**rest, "stack": Stack.from_dict(rest["stack"])}
        known = {f.name for f in fields(cls)} - {"widths"}
        unknown = sorted(repr(k)[:20] for k in set(rest) - known)
        if unknown:
            raise ValueError(f"unknown configuration field(s): {', '.join(unknown)}.")
        return cls(**rest, widths=widths)

    def head_dim_warnings(self) -> list[str]:
        """The seeds' rule of thumb, as sentences a user can act on."""
        h = self.head_dim
        notes = []
        if h < MIN_GOOD_HEAD_DIM:
            notes.append(
                f"head_dim {h} is below {MIN_GOOD_HEAD_DIM}: each head sees too few dimensions "
                "to compare tokens well; use fewer heads."
            )
        if h > MAX_GOOD_HEAD_DIM and self.widths is None:  # a kind's own widths chose it (DeepSeek-V4's one wide KV head)
            notes.append(
                f"head_dim {h} is above {MAX_GOOD_HEAD_DIM}: few wide heads lose the benefit of "
                "many small specialists; use more heads."
            )
        if h % 8:
            notes.append(
                f"head_dim {h} is not a multiple of 8: it misses tensor-core tiles and fused "
                "attention kernels; 64 and 128 are the common widths."
            )
        if self.widths is not None:
            notes += self.widths.warnings(self.d_model)
        return notes


MAX_DIVISOR_SEARCH = 2**40  # trial division up to sqrt(n): about a million steps at this bound


def divisors(n: int) -> list[int]:
    """All positive divisors of n, ascending (n at most MAX_DIVISOR_SEARCH: the search is sqrt(n) steps)."""
    if n < 1:
        return []
    if n > MAX_DIVISOR_SEARCH:
        raise ValueError(f"{short_int(n)} is too large to list its divisors; choose a number below 2^40.")
    small = [i for i in range(1, int(n**0.5) + 1) if n % i == 0]
    return sorted(set(small + [n // i for i in small]))


def valid_n_heads(d_model: int) -> list[int]:
    """Query-head counts that split d_model into equal heads."""
    return divisors(d_model)


def valid_n_kv_heads(n_heads: int) -> list[int]:
    """Key/value-head counts that split n_heads into equal groups."""
    return divisors(n_heads)


def nearest(value: int, allowed: list[int]) -> int:
    """The allowed value closest to value (the larger one on a tie)."""
    if not allowed:
        raise ValueError("there is no valid value to choose from.")
    return min(allowed, key=lambda a: (abs(a - value), -a))


def short_repr(value: Any) -> str:
    """A value as the user gave it, cut short when long (a 1 MB string is not echoed back)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def short_int(n: Any) -> str:
    """A whole number as the user typed it, or its size when it has too many digits to read (a 401-digit value is
    never echoed whole); anything else as a short repr."""
    if not isinstance(n, int) or isinstance(n, bool):
        return short_repr(n)
    text = str(n)
    return text if len(text) <= 24 else f"a {len(text.lstrip('-'))}-digit number"


def short_list(values: list[int], limit: int = 12) -> str:
    if len(values) <= limit:
        return ", ".join(map(str, values))
    return ", ".join(map(str, values[: limit - 1])) + f", ..., {values[-1]}"
