"""The seeds' three lessons as one-click sweeps, each with a caption computed from its numbers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.arch.config import AttentionConfig
from core.arch.presets import find_preset
from core.counts import kv_cache_bytes
from core.format import format_bytes, format_count
from core.kinds.registry import KINDS
from core.study.sweep import SweepResult, fitted_exponent
from core.timing.change import change, ms


def _spread(values: list[float]) -> float:
    return (max(values) - min(values)) / max(values) if values and max(values) else 0.0


def caption_heads(result: SweepResult) -> str:
    rows = result.ok_rows()
    if not rows:
        return "No point finished."
    heads = [r.value for r in rows]
    params = [r.report["params"]["total"] for r in rows]
    flops = [r.report["flops"]["total"] for r in rows]
    text = (f"n_heads {heads[0]}→{heads[-1]} at d_model {rows[0].report['config']['d_model']}: parameters "
            f"{format_count(params[0])} at every point (spread {_spread(params):.1%}), FLOPs {format_count(flops[0])} "
            f"(spread {_spread(flops):.1%})")
    times = [r.report["timing"]["median_ms"] for r in rows if r.report["timing"]]
    if times:
        fastest, slowest = min(times), max(times)
        text += f"; measured time {ms(fastest)} to {ms(slowest)} (x{slowest / fastest:.2f} between extremes)"
    return text + "."


def caption_kv(result: SweepResult) -> str:
    rows = sorted(result.ok_rows(), key=lambda r: -r.value)
    if len(rows) < 2:
        return "Too few points finished to compare."
    first, last = rows[0].report, rows[-1].report
    kv0, kv1 = first["kv_cache"]["bytes_total"], last["kv_cache"]["bytes_total"]
    per_head = {r.report["kv_cache"]["bytes_total"] / r.value for r in rows}
    linear = "exactly linear in n_kv_heads" if len(per_head) == 1 else "not linear"
    text = (f"n_kv_heads {rows[0].value}→{rows[-1].value}: KV cache {format_bytes(kv0)}→{format_bytes(kv1)} "
            f"(x{kv1 / kv0:.3g}, {linear}); core FLOPs unchanged at {format_count(first['flops']['attention'])}")
    t0, t1 = first["timing"], last["timing"]
    if t0 and t1:
        text += (f"; prefill {ms(t0['prefill_ms'])}→{ms(t1['prefill_ms'])} ({change(last, first, 'prefill_ms')}), "
                 f"decode {ms(t0['decode_ms'])}→{ms(t1['decode_ms'])} ({change(last, first, 'decode_ms')})")
    return text + "."


def caption_seq(result: SweepResult) -> str:
    rows = result.ok_rows()
    if len(rows) < 2:
        return "Too few points finished to compare."
    xs = [float(r.value) for r in rows]
    core = [float(r.report["flops"]["attention"]) for r in rows]
    proj = [float(r.report["flops"]["projections"]) for r in rows]
    text = (f"seq_len {rows[0].value}→{rows[-1].value} (x{xs[-1] / xs[0]:.0f}): core FLOPs x{core[-1] / core[0]:,.0f} "
            f"(grows as T^{fitted_exponent(xs, core):.2f}), projections x{proj[-1] / proj[0]:,.0f} "
            f"(T^{fitted_exponent(xs, proj):.2f})")
    times = [(float(r.value), r.report["timing"]["core_median_ms"]) for r in rows if r.report["timing"]]
    if len(times) >= 2:
        text += f"; measured core time grows as T^{fitted_exponent([t[0] for t in times], [t[1] for t in times]):.2f}"
    return text + "."


def caption_windows(result: SweepResult) -> str:
    """The windowed model's KV cache against the same model with every layer global, and its two parts."""
    rows = result.ok_rows()
    if len(rows) < 2:
        return "Too few points finished to compare."
    first, last = rows[0].report, rows[-1].report
    kinds = {k["kind"]: k for k in last.get("layer_kinds", [])}
    local = next((k for name, k in kinds.items() if name.startswith("local")), None)
    glob = kinds.get("global")
    if local is None or glob is None:
        return "This model has no local and global layers to compare; the lesson sets Gemma 3 27B."
    cfg = AttentionConfig(**{k: v for k, v in LESSON_WINDOWS_BASE.items()}, seq_len=rows[-1].value)
    all_global = kv_cache_bytes(cfg.with_(layer_pattern="global")).bytes_total
    kv = last["kv_cache"]["bytes_total"]
    flat = {next(k for k in r.report["layer_kinds"] if k["window"])["kv_bytes_total"]
            for r in rows if r.value >= local["window"]}
    return (f"seq_len {rows[0].value:,}→{rows[-1].value:,}: KV cache {format_bytes(first['kv_cache']['bytes_total'])}"
            f"→{format_bytes(kv)} with {local['n_layers']} local layers (W {local['window']:,}) and "
            f"{glob['n_layers']} global, against {format_bytes(all_global)} with every layer global "
            f"(x{all_global / kv:.1f}). The local part stays at {format_bytes(local['kv_bytes_total'])} once "
            f"seq_len passes W ({'flat' if len(flat) == 1 else 'not flat'}); the global part grows linearly, to "
            f"{format_bytes(glob['kv_bytes_total'])}.")


STANDARD = {"widths": None, "explicit_head_dim": None}  # the seeds' lessons are about standard layers, tied widths
LESSON_WINDOWS_BASE = {**find_preset("Gemma 3 27B").fields, "dtype": "bfloat16", "batch_size": 1,
                       "phase": "prefill"}


@dataclass(frozen=True)
class Lesson:
    key: str
    title: str
    knob: str
    values: list[Any]
    base: dict[str, object]  # fields set on the current configuration before sweeping
    timed: bool
    caption: Callable[[SweepResult], str]
    tip: str

    def base_config(self, current: AttentionConfig) -> AttentionConfig:
        return current.with_(**self.base)


def kind_caption(caption: Callable[[dict[Any, dict[str, Any]]], str]) -> Callable[[SweepResult], str]:
    """A kind's caption, which reads the finished points' reports by value, as a caption of a sweep's result."""
    return lambda result: caption({r.value: r.report for r in result.ok_rows() if r.report is not None})


LESSONS = [
    Lesson("heads", "Heads at fixed width", "n_heads", [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64],
           {"d_model": 768, "n_heads": 12, "n_kv_heads": 12, "seq_len": 512, "batch_size": 1, "phase": "prefill",
            **STANDARD},
           True, caption_heads,
           "n_heads 1 to 64 at d_model 768 (MHA): parameters and FLOPs stay flat; the split into heads is a reshape."),
    Lesson("kv", "Sharing KV heads", "n_kv_heads", [32, 16, 8, 4, 2, 1],
           {"d_model": 4096, "n_heads": 32, "n_kv_heads": 32, "seq_len": 512, "batch_size": 1, "phase": "prefill",
            **STANDARD},
           True, caption_kv,
           "n_kv_heads 32 down to 1 at d_model 4096: the KV cache falls linearly, prefill barely moves, decode speeds up."),
    Lesson("seq", "Sequence length", "seq_len", [128, 256, 512, 1024, 2048, 4096, 8192, 16384],
           {"phase": "prefill"}, False, caption_seq,
           "seq_len 128 to 16384: core FLOPs grow quadratically, projections linearly (counts only: timing 16k tokens "
           "takes minutes on a CPU; run a seq_len sweep with 'measure time' for measured points)."),
    Lesson("windows", "Sliding windows", "seq_len", [1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072],
           LESSON_WINDOWS_BASE, False, caption_windows,
           "Gemma 3 27B (52 local layers with W 1024, 10 global) from 1k to 128k tokens: the local layers' KV cache "
           "stops growing at W, the global layers' cache grows linearly; the caption compares the same model with every "
           "layer global (counts only)."),
]
LESSONS += [Lesson(k.key, k.title, k.knob, k.values, k.base, k.timed, kind_caption(k.caption), k.tip)
            for kind in KINDS.values() for k in kind.lessons()]  # each layer kind's own (MLA: Latent vs grouped)


def find_lesson(key: str) -> Lesson:
    for lesson in LESSONS:
        if lesson.key == key:
            return lesson
    raise ValueError(f"unknown lesson {key!r}; choose one of {', '.join(x.key for x in LESSONS)}.")
