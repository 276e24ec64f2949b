"""One attention layer's shape, validated on construction (torch-free: widgets read it).

A model is a tuple of these (core/arch/model.py), so a real model changed in one layer, and the
layouts of later issues (windows, sinks, latent KV), are lists of layers rather than one triple
repeated n_layers times.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from core.kinds.mla.spec import MLADims
from core.kinds.standard.band import check_window

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
    mla: MLADims | None = None  # multi-head latent attention's widths; None: a standard (MHA/GQA/MQA) layer

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
        for name in ("qk_norm", "sinks"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"a layer's {name} must be true or false, not {getattr(self, name)!r:.30}.")
        check_window(self.window)
        if self.scale is not None and not scale_ok(self.scale):
            shown = repr(self.scale) if len(repr(self.scale)) <= 30 else "a huge or odd value"
            raise ValueError(f"a layer's softmax scale must be a positive number from {MIN_SCALE:g} to {MAX_SCALE:g} "
                             f"(1 / sqrt(head_dim) is usual), not {shown}.")
        if self.mla is not None:
            check_mla_layer(self)

    @property
    def kind(self) -> str:
        """"standard" (MHA/GQA/MQA) or "mla": which module of core/ counts and runs the layer."""
        return "standard" if self.mla is None else "mla"

    def mha(self) -> LayerSpec:
        """The layer every delta is taken against: the MHA layer of the same heads. For MLA, the MHA layer of
        its n_heads with head_dim v_head_dim (DeepSeek-V2's comparison: d_h = 128), no latent."""
        if self.mla is not None:
            return LayerSpec(self.n_heads, self.n_heads, self.mla.v_head_dim, scale=self.scale)
        return replace(self, n_kv_heads=self.n_heads)

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
    def mode(self) -> str:
        if self.mla is not None:
            return "MLA"
        if self.n_kv_heads == self.n_heads:
            return "MHA"
        return "MQA" if self.n_kv_heads == 1 else "GQA"

    @property
    def label(self) -> str:
        """MHA, GQA-8 (group 4), MQA or MLA (latent 512 + rope 64), as the badge shows it."""
        if self.mla is not None:
            return self.mla.label
        return f"GQA-{self.n_kv_heads} (group {self.group_size})" if self.mode == "GQA" else self.mode

    @property
    def kind_label(self) -> str:
        """"global" or "local W=1024": the name a layer kind goes by in the costs panel and the JSON."""
        return "global" if self.window is None else f"local W={self.window}"

    @property
    def kv_sharing(self) -> str:
        """How heads get their keys and values, when not from KV heads of their own or in groups (the heatmaps'
        legend): '' for a standard layer."""
        if self.mla is None:
            return ""
        heads = f"{self.n_heads} head{'s' if self.n_heads != 1 else ''}"  # core.kinds.standard.counts.format_noun imports this module
        return (f"{heads}, each key and value rebuilt from one shared latent of {self.mla.latent_width} values a "
                "token (MLA): grey frames, no groups.")

    @property
    def kv_width(self) -> int:
        """Values cached per token for K (and as many for V): n_kv_heads x head_dim."""
        return self.n_kv_heads * self.head_dim

    def to_dict(self) -> dict[str, Any]:
        """n_heads, n_kv_heads, head_dim and bias, then only the 2026 fields a layer sets (older files read the same)."""
        base = ("n_heads", "n_kv_heads", "head_dim", "bias")
        defaults = {f.name: f.default for f in fields(self)}
        return {k: v for k, v in asdict(self).items() if k in base or v != defaults[k]}

    @classmethod
    def from_dict(cls, data: Any) -> LayerSpec:
        if not isinstance(data, dict):
            raise ValueError(f"a layer must be an object of n_heads, n_kv_heads, head_dim, bias, not {data!r:.60}.")
        unknown = sorted(repr(k)[:20] for k in set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"unknown layer field(s): {', '.join(unknown)}.")
        missing = [k for k in ("n_heads", "n_kv_heads", "head_dim") if k not in data]
        if missing:
            raise ValueError(f"a layer needs n_heads, n_kv_heads and head_dim; this one lacks {', '.join(missing)}.")
        if isinstance(data.get("mla"), dict):
            data = {**data, "mla": MLADims.from_dict(data["mla"])}
        return cls(**data)


def check_mla_layer(spec: LayerSpec) -> None:
    """An MLA layer's heads are rebuilt from its latent: n_kv_heads = n_heads, head_dim = nope + rope, and none of
    the standard layer's extras (DeepSeek's layers have no biases, no q/k norm, no window, no sinks)."""
    mla = spec.mla
    if not isinstance(mla, MLADims):
        raise ValueError("a layer's mla must be the MLA widths (q_lora_rank, kv_lora_rank, ...), or none.")
    if spec.n_kv_heads != spec.n_heads or spec.head_dim != mla.qk_head_dim:
        raise ValueError(f"an MLA layer has n_kv_heads = n_heads and head_dim = qk_nope + qk_rope = {mla.qk_head_dim}; "
                         f"this one has {spec.n_kv_heads} KV heads of width {spec.head_dim}.")
    widest = max(mla.qk_head_dim, mla.v_head_dim, mla.qk_nope_head_dim + mla.v_head_dim)
    if spec.n_heads * widest > 2**24:  # q_b's, kv_b's and o_proj's widths
        raise ValueError(f"an MLA layer's n_heads x its widest head ({spec.n_heads:,} x {widest:,}: qk_nope + v_head_dim "
                         "or nope + rope) is too wide; at most 16,777,216: lower n_heads or the head widths.")
    extras = [name for name, on in (("the biases", spec.bias is not False), ("q/k norm", spec.qk_norm),
                                    ("the sliding window", spec.window is not None), ("sinks", spec.sinks)) if on]
    if extras:
        raise ValueError(f"an MLA layer here has none of the standard layer's extras (DeepSeek's have none); turn off "
                         f"{' and '.join(extras)}, or choose standard attention.")


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
