"""A DeepSeek-V4 layer on a device: timed (core/kinds/dsv4/timing.py) and drawn by the layer itself."""

from __future__ import annotations

from typing import Any

import torch

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.kinds.display_guard import check_display_bytes
from core.kinds.dsv4.kind import DSV4
from core.kinds.dsv4.layer import V4Layer
from core.kinds.dsv4.timing import run_v4_timing
from core.kinds.kernel import LayerKernels
from core.kinds.selection import KeySelection
from core.timing.result import TimingResult


class V4Kernels(LayerKernels):
    name = "dsv4"

    def run_timing(self, cfg: AttentionConfig, device: torch.device, spec: LayerSpec, **kw: Any) -> TimingResult:
        kw.pop("include_qkv", None)  # no fused QKV to time
        return run_v4_timing(cfg, device, spec=spec, **kw)

    def display_layer(self, cfg: AttentionConfig, seed: int, spec: LayerSpec) -> V4Layer:
        check_display_bytes(DSV4.display_bytes(cfg), f"a DeepSeek-V4 layer of d_model {cfg.d_model} and "
                            f"{cfg.n_heads} heads", DSV4.memory_hint())
        layer = V4Layer(cfg.d_model, spec, seed=seed).eval()
        layer.cfg = cfg  # what the display cache sizes it by (sandbox/jobs/compute.py LayerCache)
        return layer

    def key_selection(self, layer: V4Layer, x: torch.Tensor) -> KeySelection | None:
        """The tokens each query reads (its window's, and those its read entries merge), a sparse layer's index
        score of each, and the same layer's maps reading every causal token."""
        m = layer.m
        with torch.inference_mode():
            read, scores = layer.token_reads(x)
            dense = layer.dense_probs(x)[0]  # (H, T, T)
        rule = {"none": f"each query reads its last {m.window} tokens",
                "csa": f"each query reads its last {m.window} tokens and its top {m.index_topk:,} entries of "
                       f"{m.compress_ratio} tokens",
                "hca": f"each query reads its last {m.window} tokens and every complete entry of "
                       f"{m.compress_ratio} tokens"}[m.compressor]
        return KeySelection(read[0].numpy().copy(), scores[0].numpy().astype("float32"),
                            "index score" if m.compressor == "csa" else "", rule, dense.numpy().copy())
