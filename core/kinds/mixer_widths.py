"""The widths of a recurrent token mixer (linear attention, delta rules, state-space layers): what they share.

A mixer layer keeps no KV cache, so nothing standard attention carries applies to it (biases by projection, q/k
norm, a window, sinks, a KV format's blocks); its heads are the spec's n_heads, its key heads or groups the spec's
n_kv_heads, and its head width is one of its widths. Torch-free and free of core.arch, as core/kinds/widths.py.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar

from core.arch.formats import KV_FORMATS
from core.kinds.widths import KindWidths

MIXER_MAX = 2**16  # a width beyond any model; larger is refused before any count


def short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 24 else "a huge or odd value"


@dataclass(frozen=True)
class MixerWidths(KindWidths):
    """Base of a mixer's widths: every field a whole number from its low bound to MIXER_MAX."""

    title: ClassVar[str]  # as a sentence names the mixer: "Gated DeltaNet"
    letter: ClassVar[str]  # its letter in a stack's pattern (core/arch/stack.py)
    head_field: ClassVar[str]  # the field that is the spec's head_dim
    kv_rule: ClassVar[str]  # "any" (a divisor of n_heads, its key heads or groups) or "equal" (n_kv_heads = n_heads)
    kv_name: ClassVar[str]  # what n_kv_heads means for it: "key heads", "groups"
    lows: ClassVar[dict[str, int]] = {}  # a field's smallest value where it is not 1

    def __post_init__(self) -> None:
        for f in fields(self):
            value, low = getattr(self, f.name), self.lows.get(f.name, 1)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MIXER_MAX:
                raise ValueError(f"{self.title}'s {f.name} must be a whole number from {low} to {MIXER_MAX:,}, "
                                 f"not {short(value)}.")

    @property
    def head_dim(self) -> int:
        return int(getattr(self, self.head_field))

    @property
    def baseline_head_dim(self) -> int:
        return self.head_dim

    def check_heads(self, n_heads: object, n_kv_heads: object, head_dim: object) -> None:
        if head_dim is not None and (isinstance(head_dim, bool) or head_dim != self.head_dim):
            raise ValueError(f"a {self.title} layer's head width is its {self.head_field} ({self.head_dim}), not "
                             f"{short(head_dim)}; set {self.head_field} instead of head_dim.")
        if self.kv_rule == "equal" and n_kv_heads is not None and n_kv_heads != n_heads:
            raise ValueError(f"a {self.title} layer gives every head its own keys, so n_kv_heads is n_heads "
                             f"({short(n_heads)}), not {short(n_kv_heads)}; leave n_kv_heads unset.")

    def check_layer(self, n_heads: int, n_kv_heads: int, head_dim: int, extras: list[str]) -> None:
        self.check_heads(n_heads, n_kv_heads, head_dim)
        if extras:
            raise ValueError(f"a {self.title} layer keeps no KV cache and has none of the standard layer's "
                             f"{' or '.join(extras)}; turn them off for it.")

    def check_kv_format(self, name: str) -> None:
        """It caches no keys or values: any known format is fine (its state has a format of its own)."""
        if not isinstance(name, str) or name not in KV_FORMATS:
            raise ValueError(f"KV-cache dtype {short(name)} is not known; choose one of {', '.join(KV_FORMATS)}.")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> MixerWidths:
        if not isinstance(data, dict):
            raise ValueError(f"{cls.title}'s widths must be an object of {', '.join(f.name for f in fields(cls))}.")
        unknown = sorted(repr(k)[:20] for k in set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"unknown {cls.title} width(s): {', '.join(unknown)}.")
        return cls(**data)
