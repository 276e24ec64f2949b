"""Named configurations, read from resources/presets.json (data, not code)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from core.config import AttentionConfig

# The fields a preset may set; workload fields (seq_len, batch, dtype, phase) stay the user's.
PRESET_FIELDS = ("d_model", "n_heads", "n_kv_heads", "n_layers", "causal", "bias")


@dataclass(frozen=True)
class Preset:
    name: str
    fields: dict[str, Any]
    note: str

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
        fields = {k: entry[k] for k in PRESET_FIELDS if k in entry}
        out.append(Preset(name=entry["name"], fields=fields, note=entry.get("note", "")))
    return tuple(out)


def find_preset(name: str) -> Preset:
    """A preset by its name or key, case and punctuation ignored."""
    wanted = preset_key(name)
    for preset in load_presets():
        if preset.key == wanted:
            return preset
    names = ", ".join(p.key for p in load_presets())
    raise ValueError(f"unknown preset {name!r}; choose one of: {names}.")
