"""What the window shows, as one frozen value (Qt-free: tests and the request builder read it without a window):
the architecture and workload, the text, the device, the model and its layer, the probe, the KV point."""

from __future__ import annotations

from dataclasses import dataclass

from core.arch.config import AttentionConfig
from core.inputs.tokens import DEFAULT_TEXT

MAX_TEXT_CHARS = 32767  # what the window's text box holds (Qt's QLineEdit): a longer text is cut to it here, so the
# View and the box always hold the same text


@dataclass(frozen=True)
class View:
    config: AttentionConfig  # the architecture and the workload the controls show
    text: str = DEFAULT_TEXT  # the input whose attention the heatmaps show
    device: str = "auto"  # auto, cpu, cuda, mps: where timing runs
    model: str | None = None  # a loaded real model's key (None: random weights)
    layer: int = 0  # the layer shown (a real model's, or a design's local or global layer)
    all_layers: bool = False  # a real model's head change applies to every layer, not only `layer`
    probe: str = "text"  # text: the user's text; induction: a seeded random sequence repeated twice
    kv_method: tuple[str, int | str, int] | None = None  # a real model's KV point (method, setting, sinks)

    def __post_init__(self) -> None:
        if len(self.text) > MAX_TEXT_CHARS:
            object.__setattr__(self, "text", self.text[:MAX_TEXT_CHARS])
