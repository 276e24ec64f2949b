"""What a head change costs a real model: the tradeoff figures beside the KV cache it saves."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QGroupBox, QLabel, QVBoxLayout, QWidget

from core.format import format_bytes, format_count

ROWS = [
    ("change", "Change", "What differs from the trained model."),
    ("js", "JS divergence", "Mean Jensen-Shannon divergence (bits, 0 = identical, 1 = disjoint) between "
                                      "each changed head's attention rows and the original heads it covers."),
    ("err", "Layer output error", "||changed - original|| / ||original|| of the chosen layer's attention output, "
                                  "as a percentage (the CLI's JSON gives the same figure as a fraction). It can "
                                  "exceed 100% while the loss barely moves: the residual stream and the later layers "
                                  "absorb much of one layer's error."),
    ("loss", "Next-token loss", "Cross-entropy of the text's next tokens, as trained -> changed (perplexity in "
                                "brackets)."),
    ("cos", "Embedding cosine", "Cosine similarity of the mean-pooled last hidden state before and after (1 = same)."),
    ("kv", "KV cache", "The KV cache of this text as served in 16-bit floats: 2 x KV heads x head_dim x tokens x 2 "
                       "bytes, summed over the layers, as trained -> changed (a frontier point: in its own format, "
                       "rank or window, counted as the Frontier tab counts it)."),
]


def ppl(value: float) -> str:
    """Perplexity: 12.3, 1,103, or 7.16M when it explodes."""
    if value >= 1e5:
        return format_count(value)
    return f"{value:,.1f}" if value < 1000 else f"{value:,.0f}"


class FidelityPanel(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        box = QGroupBox("What the change costs (real model)")
        grid = QGridLayout(box)
        grid.setVerticalSpacing(2)
        self.values: dict[str, QLabel] = {}
        for r, (key, title, tip) in enumerate(ROWS):
            name, value = QLabel(title), QLabel("–")
            name.setWordWrap(True)
            value.setWordWrap(True)  # long figures wrap rather than widen the window
            name.setToolTip(tip)
            value.setToolTip(tip)
            value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            grid.addWidget(name, r // 2, 2 * (r % 2))
            grid.addWidget(value, r // 2, 2 * (r % 2) + 1)
            self.values[key] = value
        grid.setColumnStretch(1, 1)
        grid.setColumnStretch(3, 1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(box)

    def show_fidelity(self, f: dict[str, Any]) -> None:
        same = f["n_heads"] == f["native_n_heads"] and f["n_kv_heads"] == f["native_n_kv_heads"]
        where = "every layer" if f["all_layers"] else f"layer {f['layer']}"
        kv = f.get("kv_method")
        self.values["change"].setText(
            f"KV cache as {kv} (every layer){'; ' + f['kv_note'] if f.get('kv_note') else ''}" if kv else
            "none: the trained layer" if same else
            f"{f['native_n_heads']}→{f['n_heads']} heads, {f['native_n_kv_heads']}→{f['n_kv_heads']} KV heads ({where})")
        fmt = lambda v, spec=".4f": "–" if v is None else format(v, spec)  # noqa: E731
        js = f["js_divergence_mean"]
        self.values["js"].setText("–" if js is None else f"{js:.4f} bits")
        self.values["err"].setText("–" if f["output_rel_error"] is None else f"{f['output_rel_error']:.2%}")
        if f["loss_before"] is None:
            self.values["loss"].setText("– (encoder)")
        elif f["loss_after"] is None:
            self.values["loss"].setText(f"{f['loss_before']:.4f} (ppl {ppl(f['perplexity_before'])})")
        else:
            self.values["loss"].setText(f"{f['loss_before']:.4f} → {f['loss_after']:.4f} "
                                        f"(ppl {ppl(f['perplexity_before'])} → {ppl(f['perplexity_after'])})")
        self.values["cos"].setText("– (causal model)" if f["loss_before"] is not None else fmt(f["embedding_cosine"]))
        b0, b1 = f["kv_cache_bytes_before"], f["kv_cache_bytes_after"]
        if f.get("kind") == "encoder" and not f.get("kv_method"):
            self.values["kv"].setText("none: an encoder keeps no KV cache")
            return
        saved = f", saves {1 - b1 / b0:.1%}" if b1 != b0 and b0 else ""
        held = " (an encoder's K and V, counted as a cache would hold them)" if f.get("kind") == "encoder" else ""
        self.values["kv"].setText(f"{format_bytes(b0)} → {format_bytes(b1)}{saved}{held}")
