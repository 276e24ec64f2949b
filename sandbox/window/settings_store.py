"""What the window remembers between runs (QSettings, versioned): the last configuration, device,
text, colormap and geometry. A stored configuration that is no longer valid is ignored."""

from __future__ import annotations

import json
import logging
from typing import Any

from PySide6.QtCore import QByteArray, QSettings

from core.arch.config import AttentionConfig

log = logging.getLogger(__name__)
SETTINGS_VERSION = 1


def load_settings(s: QSettings | None) -> dict[str, Any]:
    if s is None or s.value("version") is None:
        return {}
    out: dict[str, Any] = {}
    try:
        if int(s.value("version")) == SETTINGS_VERSION:
            out["config"] = AttentionConfig.from_dict(json.loads(str(s.value("config"))))
    except (ValueError, TypeError, RecursionError):  # damaged or hand-edited: the defaults, not a window that fails
        log.warning("ignoring a saved configuration that is no longer valid")
    for key in ("device", "text", "colormap"):
        if s.value(key) is not None:
            out[key] = str(s.value(key))
    geometry = s.value("geometry")
    if isinstance(geometry, QByteArray):
        out["geometry"] = geometry
    return out


def save_settings(s: QSettings | None, config: AttentionConfig, device: str, text: str, colormap: str,
                  geometry: QByteArray) -> None:
    if s is None:
        return
    s.setValue("version", SETTINGS_VERSION)
    s.setValue("config", json.dumps(config.to_dict()))
    s.setValue("device", device)
    s.setValue("text", text)
    s.setValue("colormap", colormap)
    s.setValue("geometry", geometry)
    s.sync()
