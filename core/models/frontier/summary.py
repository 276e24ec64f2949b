"""The frontier in a sentence: at a KV budget (a fraction of the model's own cache), which method loses
least and by how much. Pure Python on the points' plain numbers (widgets and the CLI read it)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

CSV_KEYS = ("method", "setting", "sinks", "label", "kv_bytes_per_token", "kv_fraction", "loss", "perplexity",
            "loss_change", "embedding_cosine", "cost", "js_mean", "output_rel_error", "seconds")  # README's list
BUDGETS = (1 / 2, 1 / 3, 1 / 4, 1 / 8)
BUDGET_NAMES = {1 / 2: "1/2", 1 / 3: "1/3", 1 / 4: "1/4", 1 / 8: "1/8"}
FAMILY_OF = {"heads": "pooling", "latent_pca": "latent (PCA)", "latent_svd": "latent (SVD)", "window": "window",
             "window_sinks": "window + sinks", "quant": "quantised"}
SLACK = 1 + 1e-9  # inside the budget means at most the budget (q8_0's 34/32 bytes a value is over a half)


def best_under(points: Iterable[dict[str, Any]], budget: float) -> dict[str, dict[str, Any]]:
    """Per method, its least costly measured point whose cache is at most `budget` of the model's own."""
    best: dict[str, dict[str, Any]] = {}
    for p in points:
        cost, fraction = p.get("cost"), p.get("kv_fraction")
        if p.get("method") not in FAMILY_OF or not _finite(cost) or not _finite(fraction) or fraction > budget * SLACK:
            continue  # the unchanged model, and figures that are missing or not finite, take no part
        if p["method"] not in best or cost < best[p["method"]]["cost"]:
            best[p["method"]] = p
    return best


def _finite(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def cost_words(cost: float, kind: str) -> str:
    """'+0.229 loss' (a change may also lower it: '-0.002 loss'); '1−cos = 0.0012' (never below 0)."""
    if kind == "causal":
        return f"{cost:+.3f} loss"
    cost = max(0.0, cost)
    return f"1−cos = {cost:.4f}" if cost >= 1e-3 or cost == 0 else f"1−cos = {cost:.1e}"


def budget_sentence(points: list[dict[str, Any]], budget: float, kind: str, model: str) -> str:
    """'At 1/3 of SmolLM2-135M's KV cache: window + sinks loses least (+0.229 loss, W=256); then quantised
    (+0.093 …)…' computed from the points; says so when no method reaches the budget."""
    name = BUDGET_NAMES.get(budget, f"{budget:.2f}")
    best = best_under(points, budget)
    if not best:
        return f"No measured point fits in {name} of {model}'s KV cache; sweep further (smaller settings)."
    ranked = sorted(best.values(), key=lambda p: p["cost"])
    first, rest = ranked[0], ranked[1:]
    text = (f"At {name} of {model}'s KV cache, {FAMILY_OF[first['method']]} loses least: "
            f"{cost_words(first['cost'], kind)} ({_setting(first)}).")
    if rest:
        text += " Then " + "; ".join(f"{FAMILY_OF[p['method']]} {cost_words(p['cost'], kind)} ({_setting(p)})"
                                     for p in rest) + "."
    missing = sorted(set(FAMILY_OF) - set(best) - {m for m in FAMILY_OF if not any(q.get("method") == m for q in points)})
    if missing:
        names = [FAMILY_OF[m] for m in missing]
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
        text += f" No point of {listed} fits that budget."
    return text


def _setting(p: dict[str, Any]) -> str:
    return f"{p['setting_label']}, {p['kv_fraction']:.3g} of the cache"


CAVEAT = ("Post-hoc conversions of a trained model without fine-tuning: models trained with GQA, MLA or windows "
          "from the start (or uptrained after conversion) lose far less than these lines show.")
