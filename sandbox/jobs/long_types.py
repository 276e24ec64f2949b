"""What crosses between the Long tab and the compute worker: plain requests and results (numpy and
builtins, no torch: the window's process never loads it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from core.arch.config import AttentionConfig

KINDS = ("overview", "region", "decode", "layers")


@dataclass(frozen=True)
class LongJob:
    job_kind: ClassVar[str] = "long"
    job_id: int
    kind: str  # overview: the whole map; region: a zoom into it; decode: a decode run; layers: every layer's figures
    config: AttentionConfig  # random weights: the layer's shapes (and the seeded inputs' width)
    model: str | None = None  # a loaded real model's key; None: random weights
    layer: int = 0
    text: str = ""  # a real model: the text read (its first n_tokens tokens); decode: the prompt
    n_tokens: int = 4096
    pool: str = "max"
    pixels: int = 512
    band: int | None = None  # the band a global layer's "within" mass counts (None: 1,024)
    seed: int = 0
    device: str = "auto"
    region: tuple[int, int, int, int] | None = None  # (r0, r1, c0, c1): query and key positions of a zoom
    steps: int = 64  # decode: tokens to generate (random weights: context lengths to time)
    kv_format: str = "bfloat16"  # decode: the format the cache is counted in

    def lost(self, progress: list[Any]) -> LongDone:
        """Its end when the worker running it died, said in its tab (it is not rerun)."""
        return LongDone(self.job_id, self.kind, message="the compute worker stopped during this job; run it again (a "
                                                        "model open is loaded again first)")


@dataclass(frozen=True)
class LongView:
    """One overview or zoom, ready to draw."""

    job_id: int
    pooled: np.ndarray  # (H, R, C) float32: the max or mean probability of each block
    block: int  # tokens a side of one cell
    rows: tuple[int, int]  # query positions covered
    cols: tuple[int, int]  # key positions covered
    n_tokens: int  # of the whole input
    pool: str
    what: str  # "SmolLM2-135M, layer 10 of 30 (global), 8,192 tokens"
    n_kv_heads: int
    window: int | None
    stats: dict | None = None  # HeadStats.to_json() of an overview
    labels: list[str] | None = None  # the tokens of rows and columns, when a zoom shows single tokens
    row_labels: list[str] | None = None
    seconds: float = 0.0
    device: str = "cpu"
    text_tokens: int = 0  # tokens the text had (a real model reads at most n_tokens of them); -1: more, uncounted
    manifest: dict = field(default_factory=dict)  # what an export writes beside the map


@dataclass(frozen=True)
class DecodeStepView:
    step: int
    n_cached: int
    kv_bytes: int
    step_ms: float
    token: str
    row: np.ndarray  # (H, n_cached)


@dataclass(frozen=True)
class LongProgress:
    job_id: int
    fraction: float  # 0..1
    text: str  # what runs now
    eta_s: float | None = None
    step: DecodeStepView | None = None  # a decode step, as it is made
    point: dict | None = None  # a random-weight decode curve's point (CurvePoint.to_json)


@dataclass(frozen=True)
class LongDone:
    job_id: int
    kind: str
    view: LongView | None = None
    curve: dict | None = None  # a random-weight decode curve (DecodeCurve.to_json)
    message: str = ""  # why nothing came (cancelled, refused, failed), in a sentence
    decode_meta: dict = field(default_factory=dict)  # a model's decode: its prompt tokens, layer, format
    layers: dict | None = None  # every layer's figures: {sink, band, beyond, distance: (L, H)}, band_width, model
