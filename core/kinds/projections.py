"""A layer's parameters by projection, as the counts modules of the kinds return them: one field a projection, and
their total."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from core.arch.layer import LayerSpec


class ByProjection:
    """Base of a frozen dataclass of parameter counts, one int field a projection."""

    @property
    def total(self) -> int:
        return sum(asdict(self).values())  # type: ignore[call-overload]

    def to_dict(self) -> dict[str, int]:
        return {**asdict(self), "total": self.total}  # type: ignore[call-overload]


@dataclass(frozen=True)
class NamedParts:
    """A layer's parameters by projection, each with its module's name and its formula (the LayerParams a kind's
    count returns: a recurrent mixer's, DeepSeek-V4's)."""

    parts: dict[str, int]  # by projection, in the layer's order
    names: dict[str, str]  # each part's name as the module calls it
    formulas: dict[str, str]  # each part's formula with its inputs
    total_mha: int  # the MHA layer of the same heads and head width
    qk_norm: int = 0
    sinks: int = 0

    @property
    def total(self) -> int:
        return sum(self.parts.values())

    def to_dict(self) -> dict[str, int]:
        return {**self.parts, "total": self.total, "total_mha": self.total_mha}

    def formula(self, d: int, spec: LayerSpec) -> str:
        return (" + ".join(self.names[k] for k in self.parts) + f"; an MHA layer of the same {spec.n_heads} heads x "
                f"{spec.head_dim}: {self.total_mha:,}")

    def rows(self, d: int, spec: LayerSpec) -> list[tuple[str, str, int, str]]:
        return [(k, self.names[k], n, self.formulas[k]) for k, n in self.parts.items()]
