"""Which preset a configuration is, remembered per configuration: applying 24 presets at every slider tick
cost 2 ms of a drag step, and still did at each configuration a drag reached first; a preset whose d_model or
n_heads differs cannot be it (apply sets them) and is passed over without applying it."""

from __future__ import annotations

from typing import Any

from core.arch.config import AttentionConfig


class PresetMatch:
    def __init__(self, presets: list[Any]) -> None:
        """presets: in the combo's order after "Custom"; each has apply(cfg) -> cfg."""
        self._presets = presets
        self._seen: dict[AttentionConfig, int] = {}

    def index(self, cfg: AttentionConfig) -> int:
        """The combo index of the preset cfg is (1..), or 0: Custom."""
        match = self._seen.get(cfg)
        if match is None:
            match = next((i for i, p in enumerate(self._presets, 1) if could_be(p, cfg) and p.apply(cfg) == cfg), 0)
            if len(self._seen) > 4096:
                self._seen.clear()
            self._seen[cfg] = match
        return match


def could_be(preset: Any, cfg: AttentionConfig) -> bool:
    """False when the preset's d_model or n_heads is not cfg's: apply(cfg) would differ from cfg."""
    fields = getattr(preset, "fields", {})
    return all(fields[k] == getattr(cfg, k) for k in ("d_model", "n_heads") if k in fields)
