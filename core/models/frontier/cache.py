"""Frontier results kept on disk per model, texts and sweep, so reopening one is instant (a full SmolLM2
frontier takes minutes on a CPU). One JSON file a result under the app's cache folder; a file that does
not parse is ignored and rewritten."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

from core.files.atomic import write_cache_file
from core.files.bounded_read import read_json_bounded
from core.models.catalog import cache_dir
from core.models.frontier.run import FrontierResult
from core.models.kv.methods import KVMethod

VERSION = 2  # bump when a figure's definition changes: older files are then not read


def cache_key(model: str, source: str, eval_text: str, calib_text: str, methods: list[KVMethod],
              n_samples: int | None, context: int | None) -> str:
    spec = json.dumps([VERSION, model, source, eval_text, calib_text, [(m.method, m.setting, m.sinks) for m in methods],
                       n_samples, context])
    return hashlib.sha256(spec.encode()).hexdigest()[:24]


def _path(key: str) -> Path:
    return cache_dir() / "frontier" / f"{key}.json"


MAX_FILE_BYTES = 4 * 2**20  # a frontier is a few kB; anything larger is not one


def load(key: str) -> FrontierResult | None:
    """The cached result, or None when there is none or the file is not one whole, sound result (then the
    frontier is computed again and the file replaced)."""
    try:
        path = _path(key)  # bounded: a FIFO or a link to /dev/zero here would hang the command or fill memory
        result = FrontierResult.from_json(read_json_bounded(path, MAX_FILE_BYTES, "a cached frontier"))
        return result if sound(result) else None
    except Exception:  # noqa: BLE001 (a damaged file of any kind: deep nesting, huge numbers, wrong types)
        return None


def sound(result: FrontierResult) -> bool:
    """Complete, every point of a known method, its label a text and its figures numbers (finite, or None where a
    figure does not apply): anything else (a damaged or hand-edited file) is computed again."""
    if result.complete is not True or not result.points or not isinstance(result.model, str):
        return False
    if result.kind not in ("causal", "encoder") or not _number(result.seconds, required=True):
        return False
    if not all(_whole(getattr(result, n)) for n in ("context", "samples", "eval_tokens", "calib_tokens")):
        return False
    b = result.baseline
    if (b.method, b.setting, b.sinks) != ("baseline", None, 0) or not isinstance(b.label, str):
        return False
    for p in [b, *result.points]:
        if p is not b:
            try:
                if KVMethod(p.method, p.setting, p.sinks).label != p.label:  # the label its settings make
                    return False
            except ValueError:
                return False
        for name in ("kv_bytes_per_token", "kv_fraction", "js_mean", "output_rel_error"):
            if not _number(getattr(p, name), required=True):
                return False
        if not all(_number(getattr(p, n)) for n in ("loss", "loss_change", "embedding_cosine", "seconds")):
            return False
    return True


def _number(x: object, required: bool = False) -> bool:
    if x is None:
        return not required
    if isinstance(x, bool) or not isinstance(x, int | float):
        return False
    return abs(x) < 1e300 if isinstance(x, int) else math.isfinite(x)  # an int past a float's range is no figure


def _whole(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= 2**40


def save(key: str, result: FrontierResult) -> None:
    if result.complete:  # a cancelled run is not the result
        write_cache_file(_path(key), json.dumps(result.to_json()))
