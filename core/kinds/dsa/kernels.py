"""A DSA layer on a device: timed beside its dense twin (core/kinds/dsa/timing.py) and drawn by the layer itself."""

from __future__ import annotations

from typing import Any

import torch

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.kinds.display_guard import check_display_bytes
from core.kinds.dsa.kind import DSA
from core.kinds.dsa.layer import DSALayer
from core.kinds.dsa.timing import HINT, run_dsa_timing
from core.kinds.kernel import LayerKernels
from core.kinds.selection import KeySelection
from core.timing.result import TimingResult


class DSAKernels(LayerKernels):
    name = "dsa"

    def run_timing(self, cfg: AttentionConfig, device: torch.device, spec: LayerSpec, **kw: Any) -> TimingResult:
        kw.pop("include_qkv", None)  # no fused QKV to time
        return run_dsa_timing(cfg, device, spec=spec, **kw)

    def display_layer(self, cfg: AttentionConfig, seed: int, spec: LayerSpec) -> DSALayer:
        """The layer in float32 without its o_proj (drawn last, so its other weights are the timed layer's)."""
        check_display_bytes(DSA.display_bytes(cfg), f"a DSA layer of d_model {cfg.d_model} and {cfg.n_heads} heads",
                            HINT)
        return DSALayer(cfg, seed=seed, spec=spec, with_output=False).eval()

    def key_selection(self, layer: DSALayer, x: torch.Tensor) -> KeySelection:
        """The indexer's picks over x (1, T, d), its scores, and the layer's maps with every causal key read."""
        with torch.inference_mode():
            read, scores = layer.selected(x)[0], layer.index_scores(x)[0]  # (T, T) each
            dense = layer.dense_probs(x)[0]  # (H, T, T)
        rule = f"each query reads its top {layer.topk:,} by the lightning indexer's score"
        return KeySelection(read.numpy().copy(), scores.numpy().astype("float32"), "index score", rule,
                            dense.numpy().copy())
