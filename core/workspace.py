"""Pins and the workspace file that keeps them: JSON with a schema version and a migrate step,
written atomically, refused whole (with a sentence) when damaged, foreign or from a newer version."""

from __future__ import annotations

import base64
import json
import string
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from core.atomic import write_text_atomic
from core.config import AttentionConfig
from core.report import build_report

APP = "attention-sandbox"
SCHEMA = 1


@dataclass(eq=False)  # a pin is itself: compared by identity, never field by field (it holds arrays)
class Pin:
    name: str
    config: AttentionConfig
    report: dict[str, Any]  # build_report(config, timing): exact counts and the timing taken
    text: str = ""
    tokens: list[str] = field(default_factory=list)
    probs: np.ndarray | None = None  # (H, T, T) float32
    seed: int = 0
    device: str = "auto"


def next_pin_name(existing: list[str]) -> str:
    """A, B, ... Z, then A2, B2, ..."""
    taken = set(existing)
    for round_ in range(1, 100):
        for letter in string.ascii_uppercase:
            name = letter if round_ == 1 else f"{letter}{round_}"
            if name not in taken:
                return name
    raise ValueError("too many pins; remove some first.")


def encode_array(a: np.ndarray) -> dict[str, Any]:
    a = np.ascontiguousarray(a, dtype=np.float32)
    return {"dtype": "float32", "shape": list(a.shape),
            "zlib_b64": base64.b64encode(zlib.compress(a.tobytes(), 6)).decode("ascii")}


def decode_array(d: dict[str, Any]) -> np.ndarray:
    shape = [int(n) for n in d["shape"]]
    raw = zlib.decompress(base64.b64decode(d["zlib_b64"]))
    a = np.frombuffer(raw, dtype=np.float32)
    if a.size != int(np.prod(shape)):
        raise ValueError("the stored attention map does not match its shape")
    return a.reshape(shape).copy()


def pin_to_json(pin: Pin) -> dict[str, Any]:
    return {"name": pin.name, "config": pin.config.to_dict(), "report": pin.report, "text": pin.text,
            "tokens": pin.tokens, "seed": pin.seed, "device": pin.device,
            "probs": encode_array(pin.probs) if pin.probs is not None else None}


def pin_from_json(d: dict[str, Any]) -> Pin:
    cfg = AttentionConfig.from_dict(d["config"])
    report = d["report"]
    expected = build_report(cfg, report.get("timing"))
    if report != expected:  # the counts must be the ones this config gives: nothing edited by hand
        raise ValueError(f"its numbers do not match its configuration ({cfg.mode_label}, d_model {cfg.d_model})")
    probs = decode_array(d["probs"]) if d.get("probs") else None
    tokens = [str(t) for t in d.get("tokens", [])]
    if probs is not None and probs.shape != (cfg.n_heads, len(tokens), len(tokens)):
        raise ValueError("its attention maps do not match its heads and tokens")
    return Pin(name=str(d["name"]), config=cfg, report=report, text=str(d.get("text", "")), tokens=tokens,
               probs=probs, seed=int(d.get("seed", 0)), device=str(d.get("device", "auto")))


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    """Bring an older workspace to SCHEMA. Schema 0 (the first drafts) had 'version' and no seeds."""
    schema = int(data.get("schema", data.get("version", 0)))
    if schema == 0:
        data = {"app": APP, "schema": 1,
                "pins": [{**p, "seed": p.get("seed", 0), "device": p.get("device", "auto")} for p in data.get("pins", [])]}
    return data


def workspace_json(pins: list[Pin]) -> str:
    return json.dumps({"app": APP, "schema": SCHEMA, "pins": [pin_to_json(p) for p in pins]}, indent=1)


def save_workspace(path: Path, pins: list[Pin]) -> None:
    """Atomic: the old file stays whole until the new one is complete."""
    write_text_atomic(Path(path), workspace_json(pins))


def load_workspace(path: Path) -> list[Pin]:
    """Every pin, or ValueError with a sentence and nothing loaded."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read {path.name}: {getattr(exc, 'strerror', None) or exc}.") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path.name} is not a workspace: it is not JSON ({exc.msg} at line {exc.lineno}).") from exc
    if not isinstance(data, dict) or data.get("app", APP if "version" in data else None) != APP:
        raise ValueError(f"{path.name} is not an Attention Sandbox workspace.")
    schema = data.get("schema", data.get("version", 0))
    if not isinstance(schema, int) or schema > SCHEMA:
        raise ValueError(f"{path.name} was saved by a newer Attention Sandbox (schema {schema}; this one reads up to "
                         f"{SCHEMA}); update the app to open it.")
    data = migrate(data)
    pins = []
    for i, raw in enumerate(data.get("pins", [])):
        try:
            pins.append(pin_from_json(raw))
        except (KeyError, TypeError, ValueError, zlib.error, base64.binascii.Error) as exc:
            raise ValueError(f"{path.name} is damaged: pin {i + 1} cannot be read ({exc}).") from exc
    return pins

