"""A model's layers as the Architecture box's strip draws them: one cell a layer, its kind's colour and name.

Torch-free: the widgets draw what this computes.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.arch.config import AttentionConfig
from core.kinds.registry import kind_of

ATTENTION_COLOUR = "#2563eb"  # a softmax layer (global); a local one is lighter
LOCAL_COLOUR = "#93c5fd"


@dataclass(frozen=True)
class StripCell:
    short: str  # the kind in a word: "global", "local", "GDN", "Mamba-2"
    colour: str
    tip: str  # the layer's index, kind and badge


def strip_cells(cfg: AttentionConfig) -> list[StripCell]:
    """Every layer of cfg's model, in order."""
    arch = cfg.architecture()
    out = []
    for i, spec in enumerate(arch.layers):
        kind = kind_of(spec)
        if kind.has_state:
            short, colour = kind.short, kind.colour
        elif kind.variant(spec):
            short, colour = kind.variant(spec), kind.variant_colour(spec)
        elif spec.window is not None:
            short, colour = "local", LOCAL_COLOUR
        else:
            short, colour = "global", kind.colour or ATTENTION_COLOUR
        out.append(StripCell(short, colour, f"layer {i}: {kind.label(spec)}"
                                            + (f", window {spec.window}" if spec.window is not None else "")))
    return out


def strip_summary(cells: list[StripCell]) -> str:
    """'36 GDN + 12 global' in order of first appearance."""
    counts: dict[str, int] = {}
    for c in cells:
        counts[c.short] = counts.get(c.short, 0) + 1
    return " + ".join(f"{n} {name}" for name, n in counts.items())
