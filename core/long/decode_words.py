"""What a random-weight layer's decode curve says, in words (torch-free: the Long tab and the CLI both say it)."""

from __future__ import annotations

import numpy as np


def curve_sentence(curve: dict, meta: dict, cached: np.ndarray) -> str:
    """What a random-weight layer's decode curve says, in words."""
    slope, icpt, bw = curve.get("slope_ms_per_1k_tokens"), curve.get("intercept_ms"), curve.get("bandwidth_gbs")
    what = meta.get("label", "")
    head = f"Layer {meta.get('layer', 0)} ({what}), {meta.get('dtype', '')} on {meta.get('device', 'the CPU')}: "
    capped = what.startswith("local") and len(set(cached.tolist())) < len(cached)
    window = (f" Past its window the step reads {int(cached.max()):,} tokens whatever the context, and its time stops "
              "growing." if capped else "")
    if slope is None or icpt is None:
        return head + "one length of cache only: no slope to fit." + window
    r2 = curve.get("r2")
    span = int(cached.max() - cached.min()) if len(cached) else 0
    if slope <= 0:
        return (head + f"no measurable growth with the cache ({slope:+.3f} ms per 1,000 tokens read): at these lengths "
                f"the step's projections and overhead ({icpt:.2f} ms) outweigh reading the cache." + window)
    if bw is None:
        why = (f"the step reads only {span:,} tokens more at the longest context than at the shortest" if span < 512
               else f"the points scatter about the line (R² {r2:.2f}; the machine may have been busy)")
        return (head + f"{slope:.3f} ms per 1,000 tokens read by least squares, but {why}: too little to call it a "
                "bandwidth." + window)
    return (head + f"each 1,000 tokens the step reads add {slope:.3f} ms (least squares; {icpt:.3f} ms with nothing "
            f"cached, R² {r2:.2f}): a cache read at about {bw:.1f} GB/s. The step's time follows the bytes it reads, "
            "as a memory-bound step does." + window)
