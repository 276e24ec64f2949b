"""A model's weights by part, each part in its own checkpoint format, with the bits a value costs including its
scales: gpt-oss keeps its experts in MXFP4 and everything else in bf16; DeepSeek-V3 and Qwen3's FP8 checkpoints
keep their linear layers in fp8 with one fp32 scale per 128 x 128 block, their embeddings and norms in bf16.

The parts are counted from the model's config (resources/presets.json keeps them; tests/models check each against
a transformers model built on the meta device). Torch-free: the Plan tab counts with it on every change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

PARTS = ("attention", "dense_mlp", "experts", "embeddings", "norms")
PART_NAMES = {"attention": "attention", "dense_mlp": "dense MLP, shared experts and routers",
              "experts": "routed experts", "embeddings": "embeddings and head", "norms": "norms"}


@dataclass(frozen=True)
class WeightFormat:
    name: str
    bits: float  # per value, its scales included
    compute: str  # the dtype its matmuls run in on a GPU that has it (core/plan/gpus.py COMPUTE_DTYPE's keys)
    about: str


WEIGHT_FORMATS: dict[str, WeightFormat] = {f.name: f for f in (
    WeightFormat("fp32", 32, "fp32", "32-bit floats"),
    WeightFormat("bf16", 16, "bf16", "bfloat16"),
    WeightFormat("fp16", 16, "fp16", "float16"),
    WeightFormat("fp8", 8, "fp8", "fp8 e4m3 with one scale a tensor"),
    WeightFormat("fp8_block128", 8 + 32 / (128 * 128), "fp8",
                 "fp8 e4m3 with one fp32 scale per 128 x 128 block (DeepSeek-V3, Qwen3-FP8)"),
    WeightFormat("int8", 8, "bf16", "int8 with one scale a row (dequantised to bf16 to multiply)"),
    WeightFormat("int4_g128", 4 + (16 + 4) / 128, "bf16",
                 "int4 with an fp16 scale and a 4-bit zero point per group of 128 (AWQ, GPTQ)"),
    WeightFormat("mxfp4", 4 + 8 / 32, "bf16", "MXFP4: 4-bit values with one 8-bit scale per 32 (gpt-oss's experts)"),
    WeightFormat("nvfp4", 4 + 8 / 16, "fp8",
                 "NVFP4: 4-bit values with one fp8 scale per 16 and one fp32 scale a tensor"),
)}


def check_format(name: object) -> WeightFormat:
    if not isinstance(name, str) or name not in WEIGHT_FORMATS:
        raise ValueError(f"weight format {name!r:.30} is not known; choose one of {', '.join(WEIGHT_FORMATS)}.")
    return WEIGHT_FORMATS[name]


@dataclass(frozen=True)
class WeightParts:
    """Parameters by part and the format each part is stored in."""

    params: tuple[tuple[str, int], ...]  # (part, parameters), in PARTS' order
    formats: tuple[tuple[str, str], ...]  # (part, format)
    checkpoint_bytes: int | None = None  # the published checkpoint's size, when known
    source: str = ""  # where the counts and the formats come from

    def __post_init__(self) -> None:
        parts = dict(self.params)
        if set(parts) - set(PARTS) or not parts:
            raise ValueError(f"weight parts are {', '.join(PARTS)}, not {', '.join(map(str, parts)):.60}.")
        if set(dict(self.formats)) != set(parts):
            raise ValueError("every weight part needs its format.")
        for part, n in self.params:
            if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= 10**14:
                raise ValueError(f"the {part} part's parameter count must be a whole number from 0 to 10^14.")
        for _part, fmt in self.formats:
            check_format(fmt)

    @property
    def total(self) -> int:
        return sum(n for _p, n in self.params)

    def in_format(self, fmt: str) -> WeightParts:
        """The same parts, every one stored in fmt (a plan's uniform dtype)."""
        check_format(fmt)
        return WeightParts(self.params, tuple((p, fmt) for p, _n in self.params), None, self.source)

    def bytes_by_part(self) -> dict[str, int]:
        formats = dict(self.formats)
        return {p: math.ceil(n * WEIGHT_FORMATS[formats[p]].bits / 8) for p, n in self.params}

    def total_bytes(self) -> int:
        return sum(self.bytes_by_part().values())

    def active_bytes(self, active_params: int | None) -> int:
        """Bytes one token's forward reads: every part but the routed experts whole, and the experts' share that the
        active parameters leave for them (a mixture of experts reads its active experts only)."""
        total = self.total_bytes()
        if active_params is None:
            return total
        parts, by_part = dict(self.params), self.bytes_by_part()
        experts = parts.get("experts", 0)
        others = self.total - experts
        if experts == 0 or active_params >= self.total:
            return total
        share = max(0, active_params - others) / experts
        return total - by_part["experts"] + math.ceil(by_part["experts"] * share)

    def compute_dtype(self) -> str:
        """The dtype the largest part's matmuls run in."""
        formats, parts = dict(self.formats), dict(self.params)
        return WEIGHT_FORMATS[formats[max(parts, key=parts.__getitem__)]].compute

    def to_json(self) -> dict[str, Any]:
        formats, by_part = dict(self.formats), self.bytes_by_part()
        return {"parts": {p: {"params": n, "format": formats[p], "bits": WEIGHT_FORMATS[formats[p]].bits,
                              "bytes": by_part[p]} for p, n in self.params},
                "total_bytes": self.total_bytes(), "checkpoint_bytes": self.checkpoint_bytes, "source": self.source}

    def to_file(self) -> dict[str, Any]:
        """As a preset (and a pin's plan) keeps it: from_json reads it back."""
        return {"params": dict(self.params), "formats": dict(self.formats), "checkpoint_bytes": self.checkpoint_bytes,
                "source": self.source}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WeightParts:
        """A preset's "weights": {"params": {part: n}, "formats": {part: format}, "checkpoint_bytes", "source"}; a
        ValueError that says what is wrong with anything else (a hand-edited pin)."""
        if not isinstance(data, dict) or not isinstance(data.get("params"), dict) or not isinstance(
                data.get("formats"), dict):
            raise ValueError("weights by part need a params object and a formats object, part by part.")
        params, formats = data["params"], data["formats"]
        unknown = sorted(repr(k)[:20] for k in set(params) | set(formats) if k not in PARTS)
        if unknown:
            raise ValueError(f"unknown weight part(s) {', '.join(unknown)}; the parts are {', '.join(PARTS)}.")
        size, source = data.get("checkpoint_bytes"), data.get("source", "")
        if size is not None and (isinstance(size, bool) or not isinstance(size, int) or not 0 < size <= 10**15):
            raise ValueError("a checkpoint's size must be a whole number of bytes, or null.")
        if not isinstance(source, str) or len(source) > 2000:
            raise ValueError("the weights' source must be a text of at most 2,000 characters.")
        return cls(tuple((p, params[p]) for p in PARTS if p in params),
                   tuple((p, formats[p]) for p in PARTS if p in formats), size, source)
