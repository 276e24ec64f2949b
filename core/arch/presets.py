"""Named configurations, read from resources/presets.json (data, not code)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.arch.stack import Stack, parse_pattern
from core.kinds.mixer_widths import MixerWidths
from core.kinds.widths_types import split_widths

# The fields a preset may set; workload fields (seq_len, batch, dtype, KV dtype, phase) stay the user's.
PRESET_FIELDS = ("d_model", "n_heads", "n_kv_heads", "n_layers", "causal", "bias", "qk_norm", "window",
                 "layer_pattern", "sinks", "output_gate")
# The layout knobs a preset resets when it leaves them out, so Llama after Gemma 3 has no window.
LAYOUT_DEFAULTS: dict[str, Any] = {"explicit_head_dim": None, "qk_norm": False, "window": None,
                                   "layer_pattern": "global", "sinks": False, "softmax_scale": None, "widths": None,
                                   "output_gate": False, "stack": None}


@dataclass(frozen=True)
class Preset:
    name: str
    fields: dict[str, Any]
    note: str
    params: int | None = None  # the whole model's parameters (embeddings, MLP, every expert), for the planner
    params_source: str = ""  # where that count comes from
    kind: str = "causal"  # encoder: reads its input at once and keeps no KV cache (the planner plans none)
    active_params: int | None = None  # a mixture of experts: the parameters one token runs (its model card's)
    repo: str = ""  # its checkpoint's Hugging Face repository, as an engine's command names the model
    weights: dict[str, Any] | None = field(default=None, hash=False, compare=False)  # its parts and their checkpoint
    # formats (core/plan/weights.py WeightParts.from_json)

    @property
    def key(self) -> str:
        return preset_key(self.name)

    def apply(self, cfg: AttentionConfig) -> AttentionConfig:
        return cfg.with_(**self.fields)


def preset_key(name: str) -> str:
    """'Llama 3 8B' -> 'llama-3-8b', the spelling the CLI accepts."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


@lru_cache(maxsize=1)
def load_presets() -> tuple[Preset, ...]:
    text = resources.files("resources").joinpath("presets.json").read_text(encoding="utf-8")
    data = json.loads(text)
    out = []
    for entry in data["presets"]:
        fields = {**LAYOUT_DEFAULTS, **{k: entry[k] for k in PRESET_FIELDS if k in entry}}
        if "head_dim" in entry:  # a head width of its own (Qwen3, Gemma, gpt-oss)
            fields["explicit_head_dim"] = entry["head_dim"]
        widths = split_widths(entry)[1]  # a layer kind's own widths, under its name (MLA's: DeepSeek, Kimi K2)
        if widths is not None:
            fields["widths"] = widths
        if "stack" in entry:  # a hybrid model: its mixer layers, and where they sit, as its config spells it
            fields["stack"] = preset_stack(entry["stack"], entry["n_layers"])
            fields["n_layers"] = fields["stack"].n_layers
        if "query_pre_attn_scalar" in entry:  # Gemma's softmax scale, 1 / sqrt(query_pre_attn_scalar)
            fields["softmax_scale"] = entry["query_pre_attn_scalar"] ** -0.5
        out.append(Preset(name=entry["name"], fields=fields, note=entry.get("note", ""), params=entry.get("params"),
                          params_source=entry.get("params_source", ""), kind=entry.get("kind", "causal"),
                          active_params=entry.get("active_params"), repo=entry.get("repo", ""),
                          weights=entry.get("weights")))
    return tuple(out)


def preset_stack(data: dict[str, Any], n_layers: int) -> Stack:
    """A preset's stack: its one mixer (a layer spec with its kind's widths) and its pattern in the config's spelling
    (core/arch/stack.py parse_pattern); or its layers by letter and its pattern in ours (DeepSeek-V4's window-only
    and heavily compressed layers beside its own compressed sparse ones)."""
    if "layers" in data:
        layers = tuple((letter, LayerSpec.from_dict(spec)) for letter, spec in data["layers"].items())
        return Stack(data["pattern"], layers)
    spec = LayerSpec.from_dict(data["mixer"])
    if not isinstance(spec.widths, MixerWidths):
        raise ValueError("a preset's stack mixer must be a recurrent layer, under its kind's key.")
    letter = spec.widths.letter
    return Stack(parse_pattern(data["pattern"], letter, n_layers), ((letter, spec),))


def find_preset(name: str) -> Preset:
    """A preset by its name or key, case and punctuation ignored."""
    wanted = preset_key(name)
    for preset in load_presets():
        if preset.key == wanted:
            return preset
    names = ", ".join(p.key for p in load_presets())
    raise ValueError(f"unknown preset {name!r}; choose one of: {names}.")
