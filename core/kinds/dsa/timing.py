"""Time a DSA layer beside the dense MLA layer of the same widths and weights, in one run (core/kinds/dsa/layer.py):
the prefill (the naive form under the selection mask, against every causal key) and one decode step (the indexer over
every cached token and the absorbed form over the top-k latents, against the absorbed form over all of them).
Everything is allocated before any timed region."""

from __future__ import annotations

from collections.abc import Callable

import torch

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.device import TORCH_DTYPES, device_name, guard_bytes
from core.kinds.dsa.counts import dsa_dims, dsa_layer_flops
from core.kinds.dsa.kind import FORMS_KEY
from core.kinds.dsa.layer import SCORE_BLOCK_BYTES, DSALayer
from core.kinds.mla.counts import mla_timing_bytes
from core.timing.result import TimingResult, tflops
from core.timing.steps import Steps
from core.timing.timer import measure

STEPS = ("allocating the layer, its latent and index caches", "sparse prefill", "dense prefill",
         "sparse decode (indexer, top-k, absorbed)", "dense decode (absorbed over every latent)")
HINT = "the MLA ranks, the indexer's widths or the context"


def dsa_timing_bytes(cfg: AttentionConfig) -> int:
    """MLA's timing peak with its scores materialised, and the indexer's: its (T, T) float32 scores, their mask and
    the selection, a block of per-head scores, and the index keys."""
    m = dsa_dims(cfg.layer_spec())
    B, T = cfg.batch_size, cfg.seq_len
    return (mla_timing_bytes(cfg, True) + 4 * B * T * T * 4 + SCORE_BLOCK_BYTES
            + B * T * (m.index_n_heads * m.index_head_dim + m.index_head_dim) * 4)


def run_dsa_timing(cfg: AttentionConfig, device: torch.device, *, seed: int = 0, budget_s: float = 0.3,
                   should_stop: Callable[[], bool] | None = None, free_bytes: int | None = None,
                   progress: Callable[[str], None] | None = None, spec: LayerSpec | None = None) -> TimingResult:
    """Measure cfg's DSA layer and its dense twin on device (a TimingResult with forms); a ValueError before
    allocating when it would not fit."""
    guard_bytes(dsa_timing_bytes(cfg), device, free_bytes, hint=HINT)
    kw = {"budget_s": budget_s, "should_stop": should_stop}
    checkpoint = Steps(STEPS, should_stop, progress)

    B, T, d = cfg.batch_size, cfg.seq_len, cfg.d_model
    with torch.inference_mode():
        checkpoint(0)
        layer = DSALayer(cfg, device=device, dtype=TORCH_DTYPES[cfg.dtype], seed=seed, spec=spec).eval()
        gen = torch.Generator(device=device).manual_seed(seed + 1)
        x = torch.randn(B, T, d, generator=gen, device=device, dtype=TORCH_DTYPES[cfg.dtype])  # (B, T, d)
        x_new = torch.randn(B, 1, d, generator=gen, device=device, dtype=x.dtype)  # (B, 1, d)
        c, k_pe = layer.latent(x)  # the latent cache: (B, T, r_kv), (B, T, r)
        index_keys = layer.indexer.keys(x)  # (B, T, D_I)
        checkpoint(1)
        sparse_prefill = measure(lambda: layer(x), device, **kw)
        checkpoint(2)
        dense_prefill = measure(lambda: layer.dense(x), device, **kw)
        checkpoint(3)
        sparse_decode = measure(lambda: layer.decode_sparse(x_new, c, k_pe, index_keys), device, **kw)
        checkpoint(4)
        dense_decode = measure(lambda: layer.decode_absorbed(x_new, c, k_pe), device, **kw)
    is_prefill = cfg.phase == "prefill"
    whole = sparse_prefill if is_prefill else sparse_decode
    flops = dsa_layer_flops(d, layer.spec, cfg)
    forms = {"sparse_prefill_ms": sparse_prefill.median_ms, "dense_prefill_ms": dense_prefill.median_ms,
             "sparse_decode_ms": sparse_decode.median_ms, "dense_decode_ms": dense_decode.median_ms}
    return TimingResult(
        device=device.type, device_name=device_name(device), backend="torch (SDPA under the selection mask)",
        dtype=cfg.dtype, layer=whole, core=whole, tflops=tflops(flops.total, whole.median_ms),
        core_tflops=tflops(flops.attention, whole.median_ms), fused_qkv=None, separate_qkv=None,
        prefill=sparse_prefill, decode=sparse_decode,
        kernel=f"DSA in torch: the indexer's scores, top-{layer.topk:,}, then MLA over the selected tokens (naive "
               "prefill under the selection mask, absorbed decode over the gathered latents)",
        forms=forms, forms_key=FORMS_KEY,
    )
