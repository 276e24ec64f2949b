"""What the compress protocol measures, as plain data: one point a method and setting (an eviction press at a
ratio or a byte budget, or a layer method at its setting), the unchanged cache's figure beside them, and each
point's kept tokens a layer and head as packed bits (the strip over the text reads them without torch)."""

from __future__ import annotations

import base64
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

PROTOCOL = "compress"


@dataclass
class CompressPoint:
    method: str  # a press's name (streaming, snapkv, ...), a layer method's (heads, window, ...), or "baseline"
    family: str  # "evict", "layer" or "baseline"
    setting: float | int | str | None  # a press's ratio; a layer method's K', r, W or format
    sinks: int
    label: str
    kept_tokens: int  # tokens of the context a layer and head keeps (a layer method: the context's, or its window's)
    kv_bytes: float  # the whole model's cache of one sequence at the context's length, in the served format
    kv_fraction: float  # of the unchanged cache's
    loss: float
    loss_change: float
    seconds: float = 0.0
    kept_bits: str = ""  # base64 of numpy.packbits of (layers, KV heads, C) bools; "" where every token is kept

    @property
    def ratio(self) -> float:
        """The fraction of the context evicted: an eviction's compression ratio as asked (kvpress keeps
        max(1, int(C x (1 - ratio))) tokens), a layer method's share of the cache saved."""
        if self.family == "evict" and isinstance(self.setting, int | float):
            return float(self.setting)
        return 1.0 - self.kv_fraction

    def cost(self) -> float:
        return self.loss_change

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(protocol=PROTOCOL, ratio=self.ratio, cost=self.loss_change, kv_bytes_per_token=None)
        return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in out.items()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CompressPoint:
        return cls(**{f: data[f] for f in cls.__dataclass_fields__})


def pack_kept(kept: np.ndarray) -> str:
    """(layers, K, C) bools -> base64 text."""
    return base64.b64encode(np.packbits(kept.astype(bool), axis=None).tobytes()).decode("ascii")


def unpack_kept(text: str, shape: tuple[int, int, int]) -> np.ndarray:
    """The inverse of pack_kept; a ValueError when the text is not that many bits."""
    raw = np.frombuffer(base64.b64decode(text.encode("ascii"), validate=True), dtype=np.uint8)
    n = shape[0] * shape[1] * shape[2]
    if raw.size != (n + 7) // 8:
        raise ValueError("the kept tokens do not match the model's layers and heads.")
    return np.unpackbits(raw, count=n).astype(bool).reshape(shape)  # (layers, K, C)


@dataclass
class CompressResult:
    model: str
    context: int
    continuation: int
    layers: int
    kv_heads: int
    bytes_per_token: float  # the whole model's cache per token of context, served format
    baseline: CompressPoint
    points: list[CompressPoint] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)  # the context's tokens as text, for the strip
    budget_mib: float | None = None  # the byte budget asked for, if any
    notes: list[str] = field(default_factory=list)  # methods left out, or kept below their own window
    budget_words: str = ""  # the budget as the sentence names it ("20,000 sequences on one NVIDIA H200 (...)")
    seconds: float = 0.0
    complete: bool = True
    kind: str = "causal"

    def to_json(self) -> dict[str, Any]:
        out = {f: getattr(self, f) for f in self.__dataclass_fields__ if f not in ("baseline", "points")}
        out.update(protocol=PROTOCOL, baseline=self.baseline.to_json(), points=[p.to_json() for p in self.points])
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CompressResult:
        fields_ = {f: data[f] for f in cls.__dataclass_fields__ if f not in ("baseline", "points")}
        return cls(baseline=CompressPoint.from_json(data["baseline"]),
                   points=[CompressPoint.from_json(p) for p in data["points"]], **fields_)
