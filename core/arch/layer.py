"""One attention layer's shape, validated on construction (torch-free: widgets read it).

A model is a tuple of these (core/arch/model.py), so a real model changed in one layer, and the
layouts of later issues (windows, sinks, latent KV), are lists of layers rather than one triple
repeated n_layers times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from core.kinds.standard.band import check_window
from core.kinds.widths import KindWidths
from core.kinds.widths_types import split_widths

LAYER_MAXIMA = {"n_heads": 2**16, "n_kv_heads": 2**16, "head_dim": 2**20}  # as AttentionConfig's maxima


@dataclass(frozen=True)
class LayerSpec:
    n_heads: int  # query heads
    n_kv_heads: int  # key/value heads (a divisor of n_heads)
    head_dim: int  # width of one head
    bias: bool | str = False  # True: all four projections; "qkv": q, k and v only; False: none
    qk_norm: bool = False  # RMSNorm over head_dim on q and on k (Qwen3, Gemma 3): 2 x head_dim weights
    window: int | None = None  # sliding window W (keys a query sees, itself included); None: global
    sinks: bool = False  # one learned logit per head joins every softmax row, then is dropped (gpt-oss)
    scale: float | None = None  # softmax scale; None: 1 / sqrt(head_dim)
    widths: KindWidths | None = None  # a layer kind's own widths (MLA's ranks ...); None: a standard (MHA/GQA/MQA) layer
    output_gate: bool = False  # q_proj also makes a per-channel gate, sigmoid(gate) x attention output (Qwen3-Next)

    def __post_init__(self) -> None:
        # bias keeps its old spelling (True/False) so old files and reports read the same; "all" and
        # "none" are folded into it and only "qkv" stays a word.
        object.__setattr__(self, "bias", normalise_bias(self.bias))
        for name in ("n_heads", "n_kv_heads", "head_dim"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= LAYER_MAXIMA[name]:
                shown = repr(value) if len(repr(value)) <= 24 else "a huge or odd value"
                raise ValueError(f"a layer's {name} must be a whole number from 1 to {LAYER_MAXIMA[name]:,}, "
                                 f"not {shown}.")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"a layer's n_kv_heads={self.n_kv_heads} does not divide its n_heads={self.n_heads}; "
                             "choose a divisor.")
        for name in ("qk_norm", "sinks", "output_gate"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"a layer's {name} must be true or false, not {getattr(self, name)!r:.30}.")
        check_window(self.window)
        if self.scale is not None and not scale_ok(self.scale):
            shown = repr(self.scale) if len(repr(self.scale)) <= 30 else "a huge or odd value"
            raise ValueError(f"a layer's softmax scale must be a positive number from {MIN_SCALE:g} to {MAX_SCALE:g} "
                             f"(1 / sqrt(head_dim) is usual), not {shown}.")
        if self.widths is not None:
            if not isinstance(self.widths, KindWidths):
                raise ValueError(f"a layer's widths must be a layer kind's widths, or none, not {self.widths!r:.40}.")
            self.widths.check_layer(self.n_heads, self.n_kv_heads, self.head_dim, [
                name for name, on in (("the biases", self.bias is not False), ("q/k norm", self.qk_norm),
                                      ("the sliding window", self.window is not None), ("sinks", self.sinks),
                                      ("the output gate", self.output_gate)) if on])

    @property
    def kind(self) -> str:
        """The name of the layer kind that counts, caches, runs and draws it (core/kinds/registry.py)."""
        return "standard" if self.widths is None else self.widths.kind

    @property
    def biases(self) -> str:
        """"none", "qkv" or "all"."""
        return "all" if self.bias is True else "none" if self.bias is False else "qkv"

    @property
    def softmax_scale(self) -> float:
        return self.scale if self.scale is not None else 1.0 / math.sqrt(self.head_dim)

    @property
    def group_size(self) -> int:
        return self.n_heads // self.n_kv_heads

    @property
    def kind_label(self) -> str:
        """"global" or "local W=1024": the name a layer kind goes by in the costs panel and the JSON."""
        return "global" if self.window is None else f"local W={self.window}"

    @property
    def kv_width(self) -> int:
        """Values cached per token for K (and as many for V): n_kv_heads x head_dim."""
        return self.n_kv_heads * self.head_dim

    def to_dict(self) -> dict[str, Any]:
        """n_heads, n_kv_heads, head_dim and bias, then only the 2026 fields a layer sets (older files read the same)."""
        base = ("n_heads", "n_kv_heads", "head_dim", "bias")
        defaults = {f.name: f.default for f in fields(self)}
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "widths"}
        out = {k: v for k, v in out.items() if k in base or v != defaults[k]}
        if self.widths is not None:  # under the kind's name, as files have always kept them
            out[self.widths.kind] = self.widths.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Any) -> LayerSpec:
        if not isinstance(data, dict):
            raise ValueError(f"a layer must be an object of n_heads, n_kv_heads, head_dim, bias, not {data!r:.60}.")
        data, widths = split_widths(data)
        unknown = sorted(repr(k)[:20] for k in set(data) - ({f.name for f in fields(cls)} - {"widths"}))
        if unknown:
            raise ValueError(f"unknown layer field(s): {', '.join(unknown)}.")
        missing = [k for k in ("n_heads", "n_kv_heads", "head_dim") if k not in data]
        if missing:
            raise ValueError(f"a layer needs n_heads, n_kv_heads and head_dim; this one lacks {', '.join(missing)}.")
        return cls(**data, widths=widths)


MIN_SCALE, MAX_SCALE = 1e-6, 1e3  # beyond these, float32 scores underflow to a uniform row or overflow to NaN


def scale_ok(scale: object) -> bool:
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        return False
    try:
        value = float(scale)
    except OverflowError:  # an int of hundreds of digits
        return False
    return math.isfinite(value) and MIN_SCALE <= value <= MAX_SCALE


def normalise_bias(bias: object) -> bool | str:
    """True/"all" -> True, False/"none" -> False, "qkv" -> "qkv"; anything else a ValueError."""
    if isinstance(bias, bool):
        return bias
    if bias == "all":
        return True
    if bias == "none":
        return False
    if bias == "qkv":
        return "qkv"
    shown = repr(bias) if len(repr(bias)) <= 30 else "that value"
    raise ValueError(f"bias {shown} is not known; choose none, qkv (q, k and v only) or all (all four projections).")
