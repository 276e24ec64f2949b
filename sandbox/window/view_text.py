"""The line above the heatmaps: what they show, for which text or probe, and what timing runs."""

from __future__ import annotations

from core.format import format_noun
from core.inputs.tokens import MAX_DISPLAY_TOKENS
from core.kinds.registry import kind_of
from sandbox.jobs.types import HeatmapResult


def describe_view(result: HeatmapResult, model_name: str | None) -> str:
    """One sentence for the heatmaps of `result` (model_name None: random weights)."""
    cfg = result.config
    n, total = len(result.tokens), result.n_text_tokens
    if result.model is not None and model_name is not None:
        changed = result.model.after is not None
        shown = "changed (right) beside as trained (left)" if changed else "as trained"
        where = (f"layer {result.model.layer}, every layer changed" if result.model.all_layers and changed
                 else f"layer {result.model.layer}")
        cut = f" (showing the first {n} of {total})" if total > n else ""
        source = "the induction probe" if result.probe == "induction" else "your text, in its own tokenizer"
        return (f"{model_name}, {where}: {format_noun(cfg.n_heads, 'head')} × {format_noun(total, 'token')} of {source}{cut}, {shown}. "
                "Timing runs these shapes with random weights.")
    source = "the induction probe" if result.probe == "induction" else "your text"
    spec = result.layer_spec
    maps = format_noun(len(result.probs), "head")  # the maps drawn: a stack's layer has heads of its own
    if spec is not None and kind_of(spec).has_state:
        maps = f"layer {result.view_layer}, {kind_of(spec).short}: {format_noun(len(result.probs), 'map')}"
    elif cfg.stack is not None:  # the shown layer's own label where it is not the configuration's own
        label = kind_of(spec).label(spec) if spec is not None and spec != cfg.layer_spec() else cfg.mode_label
        maps = f"layer {result.view_layer}, {label}: {maps}"
    parts = [f"{maps} × {format_noun(n, 'token')} of {source}"]
    if spec is not None and kind_of(spec).has_state and cfg.stack is not None:
        parts.append(f"every {kind_of(spec).short} layer of the stack draws these same random weights")
    if total > n:
        limit = "seq_len" if n == cfg.seq_len else f"the {MAX_DISPLAY_TOKENS}-token display limit"
        parts.append(f"showing {n} of {total} tokens ({limit})")
    if cfg.seq_len > n:
        parts.append(f"timing runs the full seq_len {cfg.seq_len:,} on random inputs")
    if spec is not None and spec.window is not None:
        parts.append(f"layer {result.view_layer} is local: each query sees the "
                     f"{spec.window:,} keys up to itself (the band)")
    elif spec is not None and cfg.window is not None and any(cfg.local_layers()):
        parts.append("this layer is global")
    if result.sink_share is not None:
        parts.append(f"sinks take {result.sink_share.mean():.1%} of each row on average (hover a row)")
    if cfg.phase == "decode":
        parts.append("decode: the last row is the new token's attention")
    return " · ".join(parts) + "."


def updating_text(first: bool) -> str:
    """The info line while a request's heatmaps are on their way (first: none has been shown yet)."""
    if first:
        return ("<span style='color:#2563eb'>Computing the first heatmaps…</span> (the compute worker starts with the "
                "app: loading torch takes a few seconds)")
    return ("<span style='color:#2563eb'>Updating the heatmaps for the new settings…</span> (the maps below are the "
            "previous ones)")
