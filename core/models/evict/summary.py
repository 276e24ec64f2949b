"""The compress protocol in a sentence: at a cache budget, which method loses least and by how much. Pure Python
on the points' plain numbers (widgets and the CLI read it)."""

from __future__ import annotations

import math
from typing import Any

from core.models.evict.budget import mib_words
from core.models.evict.catalogue import PRESS_INFO
from core.models.kv.methods import METHOD_NAMES

CSV_KEYS = ("method", "family", "label", "ratio", "kept_tokens", "kv_bytes", "kv_fraction", "loss", "loss_change",
            "seconds")  # a row a point, the CLI's and the Frontier tab's export
NAMES = {**{p.name: p.short for p in PRESS_INFO.values()}, **METHOD_NAMES}
SLACK = 1 + 1e-9


def _finite(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def best_within(points: list[dict[str, Any]], kv_bytes: float) -> list[dict[str, Any]]:
    """Per method, its point of least loss change whose cache is within kv_bytes, best first."""
    best: dict[str, dict[str, Any]] = {}
    for p in points:
        if p.get("family") not in ("evict", "layer") or not _finite(p.get("loss_change")) or not _finite(p.get("kv_bytes")):
            continue
        if p["kv_bytes"] > kv_bytes * SLACK:
            continue
        if p["method"] not in best or p["loss_change"] < best[p["method"]]["loss_change"]:
            best[p["method"]] = p
    return sorted(best.values(), key=lambda p: p["loss_change"])


def point_name(p: dict[str, Any]) -> str:
    """'SnapKV, 256 tokens kept'; 'sliding window, W=128'."""
    return f"{NAMES.get(p['method'], p['method'])}, {_setting(p)}"


def _setting(p: dict[str, Any]) -> str:
    if p["family"] == "baseline":
        return "nothing evicted"
    if p["family"] == "evict":
        return f"{p['kept_tokens']:,} token{'' if p['kept_tokens'] == 1 else 's'} kept"
    return p["label"].split(", ", 1)[-1]


def compress_sentence(points: list[dict[str, Any]], kv_bytes: float, what: str, show_bytes: bool = True) -> str:
    """'At 1/4 of SmolLM2-135M's cache (5.62 MiB a sequence), H2O loses least: +0.001 nats a token (256 tokens
    kept). Then ...' `what` names the budget ("1/4 of SmolLM2-135M's cache", "5 MiB")."""
    ranked = best_within(points, kv_bytes)
    where = f"{what} ({mib_words(kv_bytes)} a sequence)" if show_bytes else what
    if not ranked:
        return f"No measured point fits in {where}; evict more (a higher ratio) or give a larger budget."
    first, rest = ranked[0], ranked[1:]
    text = (f"At {where}, {NAMES[first['method']]} loses least: "
            f"{first['loss_change']:+.3f} nats a token ({_setting(first)}, {mib_words(first['kv_bytes'])}).")
    if rest:  # a size where it is not the first's: a layer method's settings come in steps, a press's in tokens
        text += " Then " + "; ".join(f"{NAMES[p['method']]} {p['loss_change']:+.3f}"
                                     + (f" ({mib_words(p['kv_bytes'])})" if p["kv_bytes"] != first["kv_bytes"] else "")
                                     for p in rest) + "."
    return text


CAVEAT = ("Compress protocol (kvpress's): the context's cache scored once after its prefill and shrunk, then the "
          "next tokens read against it; loss change in nats a token of those.")
