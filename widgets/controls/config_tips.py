"""Tooltips of the configuration panel's controls, and why a slider offers the values it does."""

from __future__ import annotations

from collections.abc import Callable

from core.models.choices import ModelShape

TIPS = {
    "d_model": "Width of the residual stream. The four projections are d_model x d_model under MHA.",
    "n_heads": "Query heads. Only values that divide d_model are offered: head_dim = d_model / n_heads.",
    "n_kv_heads": "Key/value heads. Only divisors of n_heads: each KV head serves n_heads / n_kv_heads "
                  "query heads. Equal to n_heads is MHA, 1 is MQA, between is GQA.",
    "seq_len": "Tokens per sequence (prefill), or the keys a decode step reads: seq_len - 1 cached plus the "
                "new token's own. Log-scale slider; type any value in the box.",
    "batch_size": "Sequences processed together.",
    "n_layers": "Layers of the model: the whole-model figures (KV cache, attention parameters) sum them.",
    "dtype": "Element type of weights and activations, and of the KV cache unless the Layout box sets its own.",
    "causal": "Causal mask: each token sees only earlier tokens; halves the prefill core FLOPs.",
    "bias": "Biases on the projections: all four (GPT-2, gpt-oss, BERT) or q, k and v only (Qwen2).",
    "phase": "prefill: all seq_len tokens at once. decode: the new token's query per sequence against seq_len "
             "keys (seq_len - 1 cached plus its own), the memory-bound step where fewer KV heads buy speed.",
    "device": "Where the layer is timed. auto picks CUDA, then MPS, then the CPU.",
    "preset": "Fill the architecture from a known model or the seeds' size table.",
}

# Picking Custom in the Preset list (the layers stay; the list names a preset while they are exactly one's own).
CUSTOM_NOTE = ("Custom: every control is yours to move. The list names a preset while the layers are exactly its own; "
               "change any of them and it says Custom.")

HEAD_NAMES = ("n_heads", "n_kv_heads")


def moves_notice(notes: list[str], now: dict[str, int], intent: dict[str, int],
                 forced: set[str]) -> tuple[set[str], str]:
    """One change's forced moves (notes), named, with the user's values that come back when they fit; with no move,
    that the forced values are back once they are. -> (the names still forced, the sentence or "")."""
    if notes:
        forced = {n for n in HEAD_NAMES if now[n] != intent[n]}
        wanted = " and ".join(f"{intent[n]}" for n in HEAD_NAMES if n in forced)
        tail = f" Your {wanted} come{'s' if len(forced) == 1 else ''} back when it fits." if forced else ""
        return forced, " ".join(notes) + tail
    if forced and all(now[n] == intent[n] for n in forced):
        back = " and ".join(f"{n} {intent[n]}" for n in HEAD_NAMES if n in forced)
        one = " and " not in back
        return set(), f"{back} {'is' if one else 'are'} back, as you chose {'it' if one else 'them'}."
    return forced, ""


def why_choices(name: str, shape: ModelShape | None, d_model: int, heads: int) -> str:
    """Why the n_heads or n_kv_heads slider offers only the values it does (a real model's shape, or divisors)."""
    if name == "n_heads":
        if shape:
            return f"Re-splitting {shape.name}'s width {shape.width}, n_heads must divide it and keep a whole KV sharing."
        return f"n_heads must divide d_model {d_model} (head_dim = d_model / n_heads)."
    if shape:
        return shape.why_kv_choices(heads)
    return f"n_kv_heads must divide n_heads {heads}, so each KV head serves the same number of query heads."


def model_tips(shape: ModelShape | None) -> dict[str, str]:
    """The tooltips of the controls a real model constrains (its own d_model, its KV heads, its query width)."""
    if shape is None:
        return {name: TIPS[name] for name in ("d_model", "n_heads", "n_kv_heads", "phase")}
    return {"d_model": f"d_model is {shape.name}'s own ({shape.d_model}): its trained weights fix it.",
            "n_kv_heads": shape.why_not_more_kv(),
            "n_heads": f"Re-split {shape.name}'s {shape.n_heads} x {shape.head_dim} query width into other head widths: "
                       "merging heads sums their scores under one softmax, splitting gives each part its own. "
                       "Parameters stay the same.",
            "phase": "An encoder reads its whole input at once: it has no decode step and no KV cache."
                     if shape.kind == "encoder" else TIPS["phase"]}


def refresh_choice_tips(controls: dict, why: Callable[[str], str]) -> None:
    """controls: name -> SliderSpin. A slider with a single allowed value is disabled; its tooltip says why."""
    for name, control in controls.items():
        if len(control.choices()) == 1:
            control.slider.setToolTip(f"Only {control.value()} is possible: " + why(name))
        else:
            control.slider.setToolTip(control.spin.toolTip())
