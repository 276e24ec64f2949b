"""The KV frontier on the shipped models: identity settings change nothing, the unchanged loss is
transformers' own, windows are the masked attention they claim, latent fits behave as PCA says, and every
point's bytes are the app's counts."""

from pathlib import Path

import pytest
import torch

from core.arch.config import AttentionConfig
from core.counts import kv_cache_bytes
from core.models.frontier import run as F
from core.models.kv.latent import predicted_error, reconstruct
from core.models.kv.methods import SINKS, KVMethod, default_sweep, kv_bytes_per_token

TEXTS = Path(__file__).resolve().parents[2] / "resources" / "texts"
EVAL = (TEXTS / "eval_alice.txt").read_text()
CALIB = (TEXTS / "calib_declaration.txt").read_text()
CONTEXT = 96  # short samples keep each run a fraction of a second


def identity_methods(m):
    width = 2 * m.n_kv_heads * m.head_dim
    return [KVMethod("heads", m.n_kv_heads), KVMethod("latent_pca", width), KVMethod("latent_svd", width),
            KVMethod("window", CONTEXT), KVMethod("window_sinks", CONTEXT, SINKS), KVMethod("quant", "float32"),
            KVMethod("quant", "float16")]


def test_identity_settings_reproduce_the_unchanged_model(model):
    r = F.run_frontier(model, EVAL, CALIB, identity_methods(model), n_samples=1, context=CONTEXT)
    for p in r.points:
        exact = p.setting != "float16"
        if model.kind == "causal":
            assert abs(p.loss_change) < 1e-4, p.label
        else:
            assert p.embedding_cosine > 1 - 1e-6, p.label
        if exact:
            assert p.js_mean == 0.0 and p.output_rel_error < 1e-6, p.label  # the same attention, row for row
        else:
            assert p.js_mean < 1e-6, p.label


def test_the_unchanged_loss_is_transformers_own_labels_loss(smollm2):
    ids = F.samples_of(smollm2, EVAL, 2, 128)
    r = F.run_frontier(smollm2, EVAL, CALIB, [], n_samples=2, context=128)
    assert smollm2.model.config._attn_implementation == "eager"  # put back after the run
    with torch.inference_mode():
        own = [float(smollm2.model(input_ids=x, labels=x).loss) for x in ids]
    assert r.baseline.loss == pytest.approx(sum(own) / 2, abs=1e-4)
    assert r.eval_tokens == 256 and r.samples == 2


def test_a_windowed_layer_is_the_hand_masked_attention_and_sinks_are_always_seen(smollm2):
    W, S, layer = 8, SINKS, 5
    seen = {}

    class Spy(F._Attend):
        def __call__(self, module, query, key, value, attention_mask, scaling=None, **kwargs):
            out = super().__call__(module, query, key, value, attention_mask, scaling, **kwargs)
            if self.index[id(module)] == layer:
                seen.update(q=query, k=key, v=value, out=out[0], scaling=scaling)
            return out

    ids = F.samples_of(smollm2, EVAL, 1, 40)[0]
    F._forward(smollm2, ids, Spy(smollm2, KVMethod("window_sinks", W, S)))
    q, k, v = seen["q"], seen["k"].repeat_interleave(3, 1), seen["v"].repeat_interleave(3, 1)
    T = q.shape[2]
    allowed = torch.tensor([[j <= i and (i - j < W or j < S) for j in range(T)] for i in range(T)])
    scores = (q @ k.transpose(-2, -1)) * seen["scaling"]
    probs = scores.masked_fill(~allowed, float("-inf")).softmax(-1)  # (1, H, T, T)
    hand = (probs @ v).transpose(1, 2)
    assert torch.allclose(seen["out"], hand, atol=1e-5)
    assert (probs[0, :, S:, :S] > 0).all()  # every later query gives each sink some weight
    assert (probs[0, :, W + S + 1:, S: S + 1] == 0).all()  # an old token outside the window: none


def test_pca_reconstructs_the_real_calibration_keys_as_its_spectrum_predicts(smollm2):
    calib = F.samples_of(smollm2, CALIB, 1, 512)  # more tokens than the rows are wide
    pca, svd = F.fit_bases(smollm2, calib)
    attend = F._Attend(smollm2, None, capture_rows=True)
    F._forward(smollm2, calib[0], attend)
    rows = attend.kv[3]  # (T, 384): layer 3's keys before RoPE, and values
    for rank in (32, 128):
        err = float(((reconstruct(rows, pca[3], rank) - rows) ** 2).sum())
        assert err == pytest.approx(predicted_error(pca[3], rank, rows.shape[0]), rel=1e-6)
        svd_err = float(((reconstruct(rows, svd[3], rank) - rows) ** 2).sum())
        assert svd_err > err  # the data-free fit loses more on the data
    # the keys the hook un-rotated are k_proj's own output: RoPE was undone exactly
    mod = smollm2.model.model.layers[3].self_attn
    hidden = {}
    def keep(_module, _args, kwargs):
        hidden["x"] = kwargs["hidden_states"]  # returns None: the input stays

    handle = mod.register_forward_pre_hook(keep, with_kwargs=True)
    try:
        F._forward(smollm2, calib[0], F._Attend(smollm2, None))
    finally:
        handle.remove()
    k_pre = mod.k_proj(hidden["x"])[0].double()  # (T, K*h)
    assert torch.allclose(rows[:, : k_pre.shape[1]], k_pre, atol=1e-4)


def test_every_points_bytes_are_the_geometry_counts(model):
    shape = F.shape_of(model)
    T = 1024
    base = AttentionConfig(d_model=model.d_model, n_heads=model.n_heads, n_kv_heads=model.n_kv_heads, seq_len=T,
                           n_layers=model.n_layers, causal=True, explicit_head_dim=model.head_dim, kv_dtype="bfloat16")
    assert kv_bytes_per_token(shape, None, T) == kv_cache_bytes(base).bytes_per_token
    assert kv_bytes_per_token(shape, None, T) == 2 * model.n_layers * model.n_kv_heads * model.head_dim * 2
    for p in default_sweep(shape, T):
        got = kv_bytes_per_token(shape, p, T)
        if p.method == "heads":
            want = kv_cache_bytes(base.with_(n_kv_heads=p.setting)).bytes_per_token
        elif p.method == "quant":
            want = kv_cache_bytes(base.with_(kv_dtype=p.setting)).bytes_per_token
        elif p.method.startswith("latent"):
            want = model.n_layers * p.setting * 2
        else:  # a local layer caches min(T, W) tokens, and the S sinks beside them
            windowed = kv_cache_bytes(base.with_(window=p.setting, layer_pattern="local")).bytes_total
            want = (windowed + kv_cache_bytes(base).bytes_per_token * p.sinks) / T
        assert got == pytest.approx(want), p.label


def test_the_sinks_result_of_streaming_llm_holds_on_smollm2(smollm2):
    """Window attention without its first tokens degrades far more than the same window with 4 sinks."""
    methods = [KVMethod("window", 16), KVMethod("window_sinks", 16, SINKS)]
    r = F.run_frontier(smollm2, EVAL, CALIB, methods, n_samples=1, context=256)
    plain, sinks = r.points
    assert plain.loss_change > 3 * sinks.loss_change > 0
