"""A hybrid stack: which of a model's token-mixing layers are the configuration's own layer and which are other layer
specs (Gated DeltaNet, Mamba-2 ..., or another variant of a kind, as DeepSeek-V4's window-only and heavily compressed
layers beside its compressed sparse ones), one letter a layer.

"A" is the configuration's own layer (the one its sliders set: Qwen3-Next's gated attention, Jamba's attention);
every other letter names one mixer layer spec of the stack (by convention its widths' letter: D Gated DeltaNet,
K KDA, L lightning, M Mamba-2, S Mamba-1). A model's MLP-only blocks (Nemotron-H's "-") mix no tokens and are not
layers here. Torch-free: widgets read it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from core.arch.layer import LayerSpec

OWN = "A"  # the configuration's own layer
MAX_STACK = 4096  # as Architecture's MAX_LAYERS
MAX_WIDTH = 2**24  # a layer's n_heads x head_dim, as Architecture's bound
_RATIO = re.compile(r"^\s*(\d+)\s*:\s*1\s*$")
LAYER_TYPE_WORDS = ("linear_attention", "mamba", "full_attention", "attention")


@dataclass(frozen=True)
class Stack:
    pattern: str  # one letter a layer: OWN, or a letter of mixers
    mixers: tuple[tuple[str, LayerSpec], ...]  # (letter, spec), sorted by letter

    def __post_init__(self) -> None:
        if not isinstance(self.pattern, str) or not 1 <= len(self.pattern) <= MAX_STACK:
            raise ValueError(f"a stack lists 1 to {MAX_STACK} layers, one letter each.")
        letters = dict(self.mixers)
        if len(letters) != len(self.mixers) or OWN in letters:
            raise ValueError(f"a stack's mixers need one letter each, other than {OWN} (the configuration's own).")
        if not self.mixers:
            raise ValueError("a stack needs at least one other layer (a recurrent mixer, or another kind's variant) "
                             "beside the configuration's own.")
        for letter, spec in self.mixers:
            if not (isinstance(letter, str) and len(letter) == 1 and "A" <= letter <= "Z"):
                raise ValueError(f"a stack's mixer letter must be one capital letter A to Z, not {letter!r:.20}.")
            if not isinstance(spec, LayerSpec):
                raise ValueError("a stack's mixer must be a layer spec.")
            if spec.widths is None:
                raise ValueError(f"a stack's layer {letter} must be a layer kind's own (a recurrent mixer such as Gated "
                                 "DeltaNet or Mamba-2, or another kind's variant such as DeepSeek-V4's window-only "
                                 "layer, under its kind's key); standard attention layers are the configuration's own "
                                 "(A).")
            if spec.n_heads * spec.head_dim > MAX_WIDTH:
                raise ValueError(f"the stack's mixer {letter} is too wide: n_heads x head_dim ({spec.n_heads:,} x "
                                 f"{spec.head_dim:,}) is at most {MAX_WIDTH:,}.")
        unknown = sorted(set(self.pattern) - set(letters) - {OWN})
        if unknown:
            raise ValueError(f"the stack's pattern has letter(s) {', '.join(map(repr, unknown[:5]))} that name no "
                             f"layer; use {OWN} (this configuration's layer) or {', '.join(letters) or 'a mixer'}.")
        if not set(self.pattern) - {OWN}:
            raise ValueError("the stack's pattern names no mixer layer; give at least one of "
                             f"{', '.join(letters)}, or clear the stack.")
        if OWN not in self.pattern:
            raise ValueError(f"a stack keeps at least one of the configuration's own layers ({OWN}); to make every "
                             "layer a mixer, switch the attention type instead.")
        object.__setattr__(self, "mixers", tuple(sorted(self.mixers)))

    def spec(self, letter: str) -> LayerSpec:
        return dict(self.mixers)[letter]

    @property
    def n_layers(self) -> int:
        return len(self.pattern)

    def to_dict(self) -> dict[str, Any]:
        return {"pattern": self.pattern, "mixers": {k: s.to_dict() for k, s in self.mixers}}

    @classmethod
    def from_dict(cls, data: Any) -> Stack:
        if not isinstance(data, dict) or not isinstance(data.get("mixers"), dict):
            raise ValueError("a stack must be an object of its pattern (one letter a layer) and its mixers by letter.")
        unknown = sorted(repr(k)[:20] for k in set(data) - {"pattern", "mixers"})
        if unknown:
            raise ValueError(f"unknown stack field(s): {', '.join(unknown)}; a stack has a pattern and its mixers.")
        if len(data["mixers"]) > 26:
            raise ValueError("a stack has at most 26 mixers, one a letter.")
        return cls(data.get("pattern"), tuple((k, LayerSpec.from_dict(v)) for k, v in data["mixers"].items()))


def parse_pattern(text: object, letter: str, n_layers: int | None = None) -> str:
    """A stack's pattern in our spelling (one letter a layer) from the spellings model configs use, where letter is
    the one mixer's letter:
    - our own: "DDDA..." (spaces and commas ignored);
    - "N:1": N mixer layers then one of the configuration's own, repeated to n_layers (Qwen3-Next is "3:1");
    - Nemotron-H's hybrid_override_pattern: M a Mamba-2 layer, * attention, - an MLP-only block (dropped, it mixes no
      tokens), E a mixture-of-experts block (dropped);
    - transformers' layer_types, comma-separated: linear_attention / mamba as the mixer, full_attention / attention
      as the configuration's own;
    - the attention layers' indices, "attention at 3, 7, 11" or "@3,7,11" (0-based), with n_layers.
    A ValueError says what to change."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("the stack's pattern is empty; give one letter a layer, N:1, or the config's layer_types.")
    if len(text) > 200_000:
        raise ValueError("the stack's pattern is far longer than any model's; give at most 4,096 layers.")
    raw = text.strip()
    if not raw.isascii():
        raise ValueError("the stack's pattern is plain ASCII: letters, N:1, @ indices or layer_types words.")
    ratio = _RATIO.match(raw)
    if ratio or raw.startswith("@"):
        if isinstance(n_layers, bool) or not isinstance(n_layers, int) or not 1 <= n_layers <= MAX_STACK:
            raise ValueError(f"an N:1 or @ pattern needs the number of layers, a whole number from 1 to {MAX_STACK}; "
                             "set n_layers.")
    if ratio:
        n = int(ratio.group(1)[:6])
        if not 1 <= n < MAX_STACK:
            raise ValueError(f"a pattern N:1 needs N from 1 to {MAX_STACK - 1} mixer layers per own layer.")
        return "".join(OWN if (i + 1) % (n + 1) == 0 else letter for i in range(n_layers))  # type: ignore[arg-type]
    if raw.startswith("@"):
        assert n_layers is not None
        try:
            at = {int(x) for x in re.split(r"[\s,]+", raw[1:].strip()) if x}
        except ValueError:
            raise ValueError("after @ give the attention layers' indices, 0-based, such as @3,7,11.") from None
        if not at or min(at) < 0 or max(at) >= n_layers:
            raise ValueError(f"attention indices must lie from 0 to {n_layers - 1} (0-based).")
        return "".join(OWN if i in at else letter for i in range(n_layers))
    names = [w.strip().lower() for w in raw.split(",") if w.strip()]
    if names and all(re.fullmatch(r"[a-z_]+", w) for w in names) and any("_" in w or w in LAYER_TYPE_WORDS
                                                                        for w in names):
        words = {"linear_attention": letter, "mamba": letter, "full_attention": OWN, "attention": OWN}
        bad = sorted({w for w in names if w not in words})
        if bad:
            raise ValueError(f"layer type(s) {', '.join(map(repr, bad[:4]))} are not known; use linear_attention or "
                             "mamba for the mixer, full_attention or attention for the configuration's own layer.")
        return "".join(words[w] for w in names)
    letters = re.sub(r"[\s,]", "", raw)
    if set(letters) <= set("M*-E") and "*" in letters:  # Nemotron-H's block pattern
        letters = "".join(letter if c == "M" else OWN for c in letters if c in "M*")
    letters = letters.upper()
    bad = sorted(set(letters) - {OWN, letter})
    if bad:
        raise ValueError(f"the stack's pattern has letter(s) {', '.join(map(repr, bad[:5]))} it does not know; use "
                         f"{letter} for the mixer and {OWN} for this configuration's layer (or N:1, or layer_types).")
    if not 1 <= len(letters) <= MAX_STACK:
        raise ValueError(f"a stack lists 1 to {MAX_STACK} layers.")
    return letters
