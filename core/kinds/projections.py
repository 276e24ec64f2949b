"""A layer's parameters by projection, as the counts modules of the kinds return them: one field a projection, and
their total."""

from __future__ import annotations

from dataclasses import asdict


class ByProjection:
    """Base of a frozen dataclass of parameter counts, one int field a projection."""

    @property
    def total(self) -> int:
        return sum(asdict(self).values())  # type: ignore[call-overload]

    def to_dict(self) -> dict[str, int]:
        return {**asdict(self), "total": self.total}  # type: ignore[call-overload]
