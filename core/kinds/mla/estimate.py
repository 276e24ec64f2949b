"""How long timing an MLA layer in both forms takes, estimated from its counts before it runs (torch-free)."""

from __future__ import annotations

from core.arch.config import AttentionConfig
from core.kinds.mla.counts import mla_layer_flops, mla_param_counts, usual_form
from core.timing.rates import ASSUMED_FLOPS_PER_S

CPU_MLA_FLOPS_PER_S = {"float32": 4e10, "float16": 1.6e10, "bfloat16": 1.6e10}
INIT_VALUES_PER_S = 5e7  # seeded uniform initialisation of the weights (CPU)
BYTES_PER_S = {"cpu": 1e10, "mps": 2e11, "cuda": 3e12}


def estimate_mla_timing_s(cfg: AttentionConfig, device_type: str, budget_s: float) -> float:
    """About how long run_mla_timing takes: the weights' initialisation, then five measurements (naive and absorbed
    prefill, two decode steps, the core) of at least 7 calls each; a call costs its FLOPs at the device's rate plus
    reading the weights (a decode step at short context is nothing else)."""
    rate = CPU_MLA_FLOPS_PER_S[cfg.dtype] if device_type == "cpu" else ASSUMED_FLOPS_PER_S.get(device_type, 1e11)
    weights = mla_param_counts(cfg.d_model, cfg.layer_spec(), 0).total * cfg.dtype_bytes / BYTES_PER_S.get(device_type, 1e10)
    spec, d = cfg.layer_spec(), cfg.d_model
    calls = [mla_layer_flops(d, spec, cfg.with_(phase=phase), form).total / rate + weights
             for phase in ("prefill", "decode") for form in ("naive", "absorbed")]
    calls.append(mla_layer_flops(d, spec, cfg, usual_form(cfg.phase)).attention / rate)
    init = mla_param_counts(cfg.d_model, cfg.layer_spec(), 0).total / INIT_VALUES_PER_S if device_type == "cpu" else 0.0
    return init + sum(max(budget_s, 7 * c) for c in calls)
