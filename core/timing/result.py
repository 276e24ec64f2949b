"""One configuration's measurements, without torch: the window's process reads them (core/kinds/standard/timing.py
makes them)."""

from __future__ import annotations

from dataclasses import dataclass

from core.timing.noise import SAMPLED
from core.timing.stats import TimingStats


@dataclass(frozen=True)
class TimingResult:
    device: str  # cpu, cuda, mps
    device_name: str
    backend: str  # the SDPA backend pinned for every timed call
    dtype: str
    layer: TimingStats  # the whole layer forward for the configured phase
    core: TimingStats  # the attention core alone (SDPA)
    tflops: float  # flops.total / layer median
    core_tflops: float  # flops.attention / core median
    fused_qkv: TimingStats | None  # one (H+2K)*h projection (None when not asked for)
    separate_qkv: TimingStats | None  # three projections with the same weights
    prefill: TimingStats  # the whole layer, prefill of seq_len tokens
    decode: TimingStats  # the whole layer, one token against seq_len keys (seq_len - 1 cached + its own)
    kernel: str = "SDPA"  # what ran the core: SDPA, or a windowed kernel (window, sinks)
    full_core: TimingStats | None = None  # a local layer: the same core without its window (full causal SDPA)
    band_flop_ratio: float | None = None  # a local layer: its core FLOPs over the full causal core's
    forms: dict[str, float] | None = None  # a kind of several execution forms: each form's medians, by phase
    forms_key: str = ""  # the report's key for forms (the kind's timing_forms_key)
    threads: int | None = None  # CPU: the intra-op threads it ran on (the cores idle at its start)
    other_load: float | None = None  # CPU: cores other processes kept busy during it, on average

    def samples(self) -> dict[str, list[float]]:
        """Each measurement's repeats (ms, 6 significant digits): the confidence of a comparison (core/timing/noise.py)."""
        out = {}
        for name in SAMPLED:
            stats = getattr(self, name)
            if stats is not None and stats.samples_ms:
                out[name] = [float(f"{x:.6g}") for x in stats.samples_ms]
        return out

    def to_report(self) -> dict[str, object]:
        """The report's timing object (README: JSON keys)."""
        return {
            "device": self.device,
            "device_name": self.device_name,
            "backend": self.backend,
            "dtype": self.dtype,
            "median_ms": self.layer.median_ms,
            "p25_ms": self.layer.p25_ms,
            "p75_ms": self.layer.p75_ms,
            "tflops": self.tflops,
            "reps": self.layer.reps,
            "core_median_ms": self.core.median_ms,
            "core_p25_ms": self.core.p25_ms,
            "core_p75_ms": self.core.p75_ms,
            "core_tflops": self.core_tflops,
            "fused_qkv_ms": self.fused_qkv.median_ms if self.fused_qkv else None,
            "separate_qkv_ms": self.separate_qkv.median_ms if self.separate_qkv else None,
            "prefill_ms": self.prefill.median_ms,
            "decode_ms": self.decode.median_ms,
            **({"kernel": self.kernel} if self.kernel != "SDPA" else {}),
            **({"full_core_ms": self.full_core.median_ms, "band_flop_ratio": self.band_flop_ratio}
               if self.full_core is not None else {}),
            **({self.forms_key: dict(self.forms)} if self.forms is not None else {}),
            "samples_ms": self.samples(),
            **({"threads": self.threads} if self.threads is not None else {}),
            **({"other_load": round(self.other_load, 3)} if self.other_load is not None else {}),
        }


def tflops(flops: int, ms: float) -> float:
    """FLOPs done in ms milliseconds, as TFLOP/s (0 for a time that is not one)."""
    return flops / (ms * 1e-3) / 1e12 if ms > 0 else 0.0
