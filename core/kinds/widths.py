"""A layer kind's own widths: the fields a standard layer does not have (MLA's ranks, a state size ...).

A layer spec and the configuration carry one of these or None (a standard layer); everything they ask of it is
below, so core/arch never names a kind. Torch-free and free of core.arch, so the specs can import it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class WidthControl:
    """One of a kind's widths as the controls show it: a spin box per field."""

    field: str  # the widths' field it sets
    label: str  # the form's label
    tip: str  # the tooltip: what it is, and a real model's value
    low: int  # the smallest value allowed
    high: int  # the largest
    step: int  # a wheel notch


class KindWidths(ABC):
    """A frozen dataclass of one kind's widths, validated on construction (subclasses are dataclasses)."""

    kind: ClassVar[str]  # the registry's name of the kind, and the key its widths are saved under
    mode: ClassVar[str]  # the attention mode in a word, as the Compare table and the badge's colour name it
    heads_rule: ClassVar[str]  # how its KV heads and head width follow from the widths, as a clause
    controls: ClassVar[tuple[WidthControl, ...]]  # the spin boxes the controls show for these widths

    @property
    @abstractmethod
    def head_dim(self) -> int:
        """A head's query and key width, as the layer's head_dim (the softmax scale is 1/sqrt of it)."""

    @property
    @abstractmethod
    def baseline_head_dim(self) -> int:
        """The head width of the MHA layer every delta is taken against."""

    @property
    @abstractmethod
    def label(self) -> str:
        """The badge."""

    def warnings(self, d_model: int) -> list[str]:
        """Widths that are allowed but say something a user should know, as sentences."""
        return []

    def kv_heads(self, n_heads: int) -> int:
        """The KV heads a layer of n_heads query heads has under these widths (MLA: one a query head)."""
        return n_heads

    @abstractmethod
    def check_heads(self, n_heads: object, n_kv_heads: object, head_dim: object) -> None:
        """Refuse a configuration's KV heads or head width these widths decide (ValueError with a sentence)."""

    @abstractmethod
    def check_layer(self, n_heads: int, n_kv_heads: int, head_dim: int, extras: list[str]) -> None:
        """Refuse a layer whose heads do not follow these widths, or that has standard extras (extras names those it
        has: the biases, q/k norm, the sliding window, sinks) the kind has none of."""

    @abstractmethod
    def check_kv_format(self, name: str) -> None:
        """Refuse a KV format whose blocks do not fit every width the cache holds (ValueError with a sentence)."""

    @abstractmethod
    def to_dict(self) -> dict[str, Any]: ...

    @classmethod
    @abstractmethod
    def from_dict(cls, data: Any) -> KindWidths: ...
