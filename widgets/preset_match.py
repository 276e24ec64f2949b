"""Which preset a configuration is, remembered per configuration: applying 24 presets at every slider tick
cost 2 ms of a drag step."""

from __future__ import annotations

from typing import Any

from core.config import AttentionConfig


class PresetMatch:
    def __init__(self, presets: list[Any]) -> None:
        """presets: in the combo's order after "Custom"; each has apply(cfg) -> cfg."""
        self._presets = presets
        self._seen: dict[AttentionConfig, int] = {}

    def index(self, cfg: AttentionConfig) -> int:
        """The combo index of the preset cfg is (1..), or 0: Custom."""
        match = self._seen.get(cfg)
        if match is None:
            match = next((i for i, p in enumerate(self._presets, 1) if p.apply(cfg) == cfg), 0)
            if len(self._seen) > 4096:
                self._seen.clear()
            self._seen[cfg] = match
        return match
