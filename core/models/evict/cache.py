"""Compress-protocol results kept on disk, like the window protocol's (core/models/frontier/cache.py): one JSON file
a model, text and settings; a file that does not parse, or is not a whole sound result, is computed again (and the
caller checks that the result is its run's: CompressRun.matches)."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

from core.files.atomic import write_cache_file
from core.files.bounded_read import read_json_bounded
from core.models.catalog import cache_dir
from core.models.evict.catalogue import PRESS_INFO
from core.models.evict.points import CompressResult, unpack_kept
from core.models.kv.methods import METHODS, KVMethod

VERSION = 2  # bump when a figure's definition changes: older files are then not read
MAX_FILE_BYTES = 64 * 2**20  # a point is 16 kB at 1,024 tokens, 120 kB at 7,936: 200 points fit


def cache_key(model: str, source: str, text: str, calib_text: str, presses: tuple[str, ...],
              ratios: tuple[float, ...] | None, budget_mib: float | None, families: tuple[str, ...], context: int,
              continuation: int) -> str:
    spec = json.dumps([VERSION, model, source, text, calib_text if "latent" in families else "", list(presses),
                       list(ratios or ()), budget_mib, list(families), context, continuation])
    return hashlib.sha256(spec.encode()).hexdigest()[:24]


def _path(key: str) -> Path:
    return cache_dir() / "compress" / f"{key}.json"


def load(key: str) -> CompressResult | None:
    try:
        result = CompressResult.from_json(read_json_bounded(_path(key), MAX_FILE_BYTES, "a cached compress result"))
        return result if sound(result) else None
    except Exception:  # noqa: BLE001 (a damaged file of any kind is computed again)
        return None


def _number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) and abs(x) < 1e300


def sound(r: CompressResult) -> bool:
    """Complete; every point of a known method with finite figures; its kept bits the right size."""
    if r.complete is not True or not r.points or not isinstance(r.model, str) or r.kind != "causal":
        return False
    if not _number(r.seconds) or not _number(r.bytes_per_token) or not (r.budget_mib is None or _number(r.budget_mib)):
        return False
    if not isinstance(r.notes, list) or not all(isinstance(n, str) for n in r.notes):
        return False
    if not isinstance(r.budget_words, str) or len(r.budget_words) > 200:
        return False
    if not all(isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 2**20
               for v in (r.context, r.continuation, r.layers, r.kv_heads)):
        return False
    if not isinstance(r.tokens, list) or len(r.tokens) != r.context or not all(isinstance(t, str) for t in r.tokens):
        return False
    for p in [r.baseline, *r.points]:
        if not all(_number(getattr(p, f)) for f in ("kv_bytes", "kv_fraction", "loss", "loss_change", "seconds")):
            return False
        if not isinstance(p.label, str) or not isinstance(p.kept_tokens, int) or not 0 < p.kept_tokens <= r.context:
            return False
        if p.family == "evict":
            if p.method not in PRESS_INFO or not _number(p.setting):
                return False
            if unpack_kept(p.kept_bits, (r.layers, r.kv_heads, r.context)).sum() != p.kept_tokens * r.layers * r.kv_heads:
                return False
        elif p.family == "layer":
            if p.method not in METHODS or KVMethod(p.method, p.setting, p.sinks).label != p.label:  # type: ignore[arg-type]
                return False
        elif p is not r.baseline or p.family != "baseline":
            return False
    return True


def save(key: str, result: CompressResult) -> None:
    if result.complete:  # a cancelled run is not the result
        write_cache_file(_path(key), json.dumps(result.to_json()))
