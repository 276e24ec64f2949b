"""MLA in the studies: its sweep knobs, the Latent vs grouped lesson, its Compare rows and its timed forms.

Plain data and functions of reports: core/study asks the registry for them, so the sweeps, lessons and the Compare
table name no kind.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from core.arch.config import AttentionConfig
from core.arch.presets import find_preset
from core.format import format_count
from core.kinds.kind import CompareRow, KindKnob, KindLesson
from core.kinds.mla.counts import FORMS_KEY
from core.kinds.mla.latent_vs_grouped import equal_kv_gqa
from core.kinds.standard.kind import STANDARD
from core.timing.change import change, ms


def with_rank(base: AttentionConfig, rank: Any) -> AttentionConfig:
    if base.widths is None:
        raise ValueError("kv_lora_rank sweeps an MLA layer; choose attention MLA (a DeepSeek preset) first.")
    return base.with_(widths=replace(base.widths, kv_lora_rank=rank))


KNOBS = (
    KindKnob("kv_lora_rank", with_rank, lambda cfg: cfg.widths.kv_lora_rank if cfg.widths is not None else "none",
             "64,128,256,512,1024"),
    KindKnob("attention", lambda base, v: base if v == "mla" else equal_kv_gqa(base),
             lambda cfg: "mla" if cfg.widths is not None else "gqa", "mla,gqa", names=("mla", "gqa"),
             axis="attention: MLA, and GQA of the nearest KV bytes", joined=False),
)
REFUSED_KNOBS = ("n_kv_heads", "head_dim", "window")  # its heads' keys and values come from the latent

COMPARE_ROWS: tuple[CompareRow, ...] = (
    ("MLA latent / token / layer", "kv_cache", "bytes_per_token_per_layer_latent", "bytes", True),
    ("MLA decompressed / token / layer", "kv_cache", "bytes_per_token_per_layer_decompressed", "bytes", True),
    ("MLA decode: naive | absorbed", "timing", "mla_decode", "text", None),
)


def compare_value(report: dict[str, Any], section: str, key: str, value: Any) -> Any:
    """An MLA pin's own cells: its forms' decode times, no KV heads of its own, its widths as its layout."""
    if section == "timing" and key == "mla_decode":
        forms = (report.get("timing") or {}).get(FORMS_KEY)
        return f"{forms['naive_decode_ms']:.4g} | {forms['absorbed_decode_ms']:.4g} ms" if forms else None
    if section == "config" and key == "n_kv_heads":
        return "– (latent)"  # an MLA layer's keys and values are rebuilt per head from one latent
    if section == "layout" and key == "summary":
        m, lay = report["mla"], report.get("layout")
        return (f"latent {m['kv_lora_rank']} + rope {m['qk_rope_head_dim']}, q/k {m['qk_head_dim']}, v {m['v_head_dim']}"
                f", q_lora_rank {m['q_lora_rank'] or 'none'}" + (f", KV {lay['kv_dtype']}" if lay else ""))
    return value


def compare_why(section: str, key: str, own: bool) -> str:
    if own and section == "params" and key == "kv":
        return "An MLA layer has no W_k or W_v: its keys and values are rebuilt from one latent (kv_b)."
    if not own and key == "mla_decode":
        return "Only an MLA layer has two decode forms (naive and absorbed) to time."
    if not own and any(key == row[2] for row in COMPARE_ROWS):
        return "Only an MLA layer has this figure."
    return ""


def timing_series(timings: list[dict[str, Any] | None]) -> list[tuple[str, list[float | None], str]]:
    """A timed sweep of an MLA layer: the other form of each phase (the prefill line is the naive form's, the decode
    line the absorbed form's), so a seq_len sweep shows where the forms cross; none for other layers."""
    forms = [t.get(FORMS_KEY) if t else None for t in timings]
    if not any(forms):
        return []
    return [("prefill, absorbed (MLA)", [f["absorbed_prefill_ms"] if f else None for f in forms], "d"),
            ("decode, naive (MLA)", [f["naive_decode_ms"] if f else None for f in forms], "e")]


def caption_latent(rows: dict[Any, dict[str, Any]]) -> str:
    """MLA against the GQA layer of (nearly) equal KV bytes: parameters, FLOPs, KV bytes, measured times."""
    mla, gqa = rows.get("mla"), rows.get("gqa")
    if mla is None or gqa is None:
        return "Both layers must finish to compare; the lesson sets DeepSeek-V3's width."
    m = mla["mla"]
    kv_m, kv_g = mla["kv_cache"]["bytes_per_token_per_layer"], gqa["kv_cache"]["bytes_per_token_per_layer"]
    c = gqa["config"]
    partner = equal_kv_gqa(AttentionConfig(**latent_base())).with_(phase="decode")
    partner_decode = STANDARD.flops(partner.d_model, partner.layer_spec(), partner).total
    text = (f"At DeepSeek-V3's width ({c['d_model']:,}, {c['n_heads']} heads), MLA caches {kv_m:,} B a token a layer "
            f"(latent {m['kv_lora_rank']} + rope {m['qk_rope_head_dim']}: {m['equivalent_gqa_heads']:.3g} GQA heads' "
            f"worth); GQA-{c['n_kv_heads']} of width {c['head_dim']} caches {kv_g:,} B. Parameters "
            f"{format_count(mla['params']['total'])} vs {format_count(gqa['params']['total'])}; prefill FLOPs "
            f"{format_count(mla['flops']['total'])} vs {format_count(gqa['flops']['total'])}; decode FLOPs "
            f"{format_count(m['forms']['absorbed']['decode_flops'])} (absorbed) vs {format_count(partner_decode)}"
            f" at {c['seq_len']:,} tokens. The latent buys GQA-{c['n_kv_heads']}'s cache with every head's own key and "
            "value")
    tm, tg = mla["timing"], gqa["timing"]
    if tm and tg:
        forms = tm[FORMS_KEY]
        text += (f"; measured prefill {ms(tm['prefill_ms'])} vs {ms(tg['prefill_ms'])} "
                 f"({change(mla, gqa, 'prefill_ms')}), decode {ms(forms['absorbed_decode_ms'])} absorbed / "
                 f"{ms(forms['naive_decode_ms'])} naive vs {ms(tg['decode_ms'])} "
                 f"(absorbed {change(mla, gqa, 'decode_ms')}) ({tm['device']})")
    return text + "."


def latent_base() -> dict[str, object]:
    """The lesson's layer: DeepSeek-V3's, 512 tokens of prefill."""
    return {**find_preset("DeepSeek-V3").fields, "seq_len": 512, "batch_size": 1, "phase": "prefill"}


def lessons() -> tuple[KindLesson, ...]:
    return (KindLesson("latent", "Latent vs grouped", "attention", ["mla", "gqa"], latent_base(), True, caption_latent,
                       "DeepSeek-V3's MLA layer against the GQA layer of the nearest KV bytes (2 KV heads of 128), 512 "
                       "tokens: parameters, FLOPs, KV bytes and measured prefill and decode (on a CPU about two "
                       "minutes)."),)
