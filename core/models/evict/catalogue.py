"""The eviction methods as the app names and explains them, without torch (the widgets read this; the presses that
score, in core/models/evict/presses/, take their names from here). Each follows a kvpress file, cited here."""

from __future__ import annotations

from dataclasses import dataclass

RATIOS = (0.25, 0.5, 0.75, 0.875)  # the chart's default: a quarter of the cache evicted, up to seven eighths


@dataclass(frozen=True)
class PressInfo:
    name: str  # the CLI's
    label: str  # the chart's, with its settings
    short: str  # a sentence's
    source: str  # the kvpress file it follows (0.5.5)
    per_head: bool  # False: every KV head of a layer keeps the same tokens
    tip: str


PRESS_INFO = {p.name: p for p in (
    PressInfo("streaming", "StreamingLLM (4 sinks + recent)", "StreamingLLM", "kvpress/presses/streaming_llm_press.py",
              False, "Keeps the first 4 tokens (attention sinks) and the most recent ones; drops the middle."),
    PressInfo("snapkv", "SnapKV (window 64, pool 5)", "SnapKV", "kvpress/presses/snapkv_press.py", True,
              "Keeps what the last 64 tokens attend to (their attention averaged, pooled over 5 neighbours), and "
              "those 64 tokens."),
    PressInfo("h2o", "H2O (observed attention)", "H2O", "kvpress/presses/observed_attention_press.py", True,
              "Keeps the keys the context's own queries attended to most, on average over the queries that saw them."),
    PressInfo("tova", "TOVA (last query)", "TOVA", "kvpress/presses/tova_press.py", False,
              "Keeps what the last token attends to, averaged over the layer's heads (one choice a layer)."),
    PressInfo("knorm", "Knorm (smallest keys)", "Knorm", "kvpress/presses/knorm_press.py", True,
              "Keeps the keys of smallest norm, which draw the most attention; reads no query at all."),
    PressInfo("expected", "Expected Attention", "Expected Attention", "kvpress/presses/expected_attention_press.py",
              True, "Keeps the keys the next 512 queries are expected to attend to (the context's queries as a "
                    "Gaussian, rotated ahead), weighted by the value's norm; and the first 4 tokens."),
)}


def press_info(name: str) -> PressInfo:
    if name not in PRESS_INFO:
        shown = repr(name) if len(repr(name)) <= 30 else "that name"
        raise ValueError(f"eviction method {shown} is not known; choose from {', '.join(PRESS_INFO)}.")
    return PRESS_INFO[name]
