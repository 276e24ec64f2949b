"""Lightning attention's widths (MiniMax-01's linear layers), validated on construction.

Every head has its own query, key and value of width h (the spec's head_dim); n_kv_heads equals n_heads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from core.kinds.mixer_widths import MIXER_MAX, MixerWidths
from core.kinds.widths import WidthControl


@dataclass(frozen=True)
class LightningWidths(MixerWidths):
    head_dim: int = 128  # h: a head's query, key and value width

    kind: ClassVar[str] = "lightning"
    mode: ClassVar[str] = "Lightning"
    title: ClassVar[str] = "Lightning attention"
    letter: ClassVar[str] = "L"
    head_field: ClassVar[str] = "head_dim"
    kv_rule: ClassVar[str] = "equal"
    kv_name: ClassVar[str] = "heads"
    heads_rule: ClassVar[str] = "a lightning attention layer gives every head its own query, key and value"
    controls: ClassVar[tuple[WidthControl, ...]] = (
        WidthControl("head_dim", "head_dim (h)", "A head's query, key and value width; each head keeps an h x h "
                     "state, the decayed sum of its k v^T (MiniMax-Text-01: 64 heads of 128).", 1, MIXER_MAX, 16),
    )

    @property
    def label(self) -> str:
        return f"Lightning (state {self.head_dim} x {self.head_dim}, fixed decay)"
