"""How long timing a standard layer takes, estimated from its counts before it runs (torch-free)."""

from __future__ import annotations

from dataclasses import replace

from core.arch.config import AttentionConfig
from core.kinds.standard.counts import standard_flops
from core.timing.rates import ASSUMED_FLOPS_PER_S

# Score elements (one a query-key pair of a head) a second: what bounds many narrow heads, whose FLOPs are few but
# whose T x T maps are as many as a wide head's: their FLOPs alone underestimate them many times over (SDPA on a
# 2-core CPU scores about 1e9 elements a second at any head width).
ASSUMED_SCORES_PER_S = {"cpu": 1.5e9, "mps": 2.0e10, "cuda": 2.0e11}


def estimate_standard_timing_s(cfg: AttentionConfig, device_type: str, budget_s: float = 0.3,
                               include_qkv: bool = True) -> float:
    """About how long measure_standard_layer takes: each of its measurements runs at least 2 warm-ups and 5
    repeats (more when the budget allows); the prefill forward dominates. A core behind a T x T mask
    (a window with W < T < 2W, or sinks) scores every pair, about 3x slower than full causal SDPA here;
    a local layer past its window is also timed as full causal attention, for comparison."""
    rate = ASSUMED_FLOPS_PER_S.get(device_type, 1.0e11)
    prefill = standard_flops(cfg.d_model, cfg.layer_spec(), cfg.with_(phase="prefill"))
    full = standard_flops(cfg.d_model, replace(cfg.layer_spec(), window=None), cfg.with_(phase="prefill"))  # any global layer
    spec, T = cfg.layer_spec(), cfg.seq_len
    masked = device_type != "cuda" and (spec.sinks or (spec.window is not None and cfg.causal
                                                       and spec.window < T < 2 * spec.window))
    core = 3 * full.attention if masked else max(prefill.attention, full.attention)
    scores = cfg.batch_size * cfg.n_heads * T * T * (0.5 if cfg.causal else 1.0)  # every head's map
    core_s = max(core / rate, scores / ASSUMED_SCORES_PER_S.get(device_type, 1.5e9))
    per_call = prefill.projections / rate + core_s
    calls = 2 if include_qkv else 1  # the prefill layer, plus its core or the QKV projections
    seconds = max(budget_s, 7 * per_call) * (2 + calls)
    if spec.window is not None and cfg.causal and T > spec.window:
        seconds += max(budget_s, 7 * full.attention / rate)  # the full causal core, for comparison
    return seconds
