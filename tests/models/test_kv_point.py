"""A frontier point shown in the Heatmaps tab (core/models/inspect.py with HeadChange(kv=...)): its maps
are the layer's attention over the changed keys, values or mask, its loss is the frontier's loss of the
same tokens, its KV bytes are the frontier's, and what cannot be shown says why."""

from pathlib import Path

import pytest
import torch

from core.models.frontier import run as F
from core.models.inspect import HeadChange, inspect, recompute_attention
from core.models.kv.methods import SINKS, KVMethod, kv_bytes_per_token
from core.models.kv.quant import quant_dequant
from core.models.kv.window import window_keep

TEXTS = Path(__file__).resolve().parents[2] / "resources" / "texts"
EVAL = (TEXTS / "eval_alice.txt").read_text()
CALIB = (TEXTS / "calib_declaration.txt").read_text()
T = 48


def ids_of(m):
    return F.samples_of(m, EVAL, 1, context=T)[0]  # (1, T): the frontier's own sample


@pytest.mark.parametrize("kv", [KVMethod("quant", "q4_0"), KVMethod("window_sinks", 8, SINKS),
                                KVMethod("quant", "fp8_e5m2")], ids=lambda k: k.label)
def test_a_point_in_the_heatmaps_is_the_frontiers_point(model, kv):
    ids = ids_of(model)
    r = inspect(model, "", 0, HeadChange(kv=kv), ids=ids[0].tolist())
    point = F.run_frontier(model, EVAL, CALIB, [kv], n_samples=1, context=T).points[0]
    assert r.all_layers and r.kv_method == kv.label
    if model.kind == "causal":
        assert r.loss_after == pytest.approx(point.loss, abs=1e-6)  # both through one SDPA call
    # the cache the chart counts (an encoder's K and V as a cache would hold them), for these T tokens
    assert r.kv_cache_bytes_after == round(kv_bytes_per_token(F.shape_of(model), kv, T) * T) == round(
        point.kv_bytes_per_token * T)
    assert r.kv_cache_bytes_after < r.kv_cache_bytes_before
    if model.kind == "encoder":
        assert r.embedding_cosine == pytest.approx(point.embedding_cosine, abs=1e-5)
    # Layer 0 reads the same input before and after: its changed map is softmax over the changed keys.
    c = inspect(model, "", 0, ids=ids[0].tolist()).before.capture
    assert c is not None
    if kv.method == "quant":
        c.key = quant_dequant(c.key, str(kv.setting))
    else:
        keep = window_keep(T, T, int(kv.setting), kv.sinks, model.kind == "causal")
        blocked = torch.zeros(keep.shape).masked_fill(~keep, torch.finfo(torch.float32).min)[None, None]
        c.mask = blocked if c.mask is None else torch.maximum(c.mask + blocked, torch.tensor(torch.finfo(torch.float32).min))
    expected = recompute_attention(c, model.n_heads)[0].numpy()  # (H, T, T)
    assert abs(r.after.attentions[0] - expected).max() < 1e-5
    if kv.method.startswith("window"):
        got = torch.from_numpy(r.after.attentions[0])
        assert (got[:, ~keep] == 0).all()  # nothing outside the window and the sinks
        assert (got[:, 40, :SINKS] > 0).all()  # the sinks are always attended


def test_a_latent_point_at_full_rank_changes_nothing_and_below_it_does(smollm2):
    ids = ids_of(smollm2)[0].tolist()
    pca, _svd = F.calibration_bases(smollm2, CALIB, context=T)
    width = 2 * smollm2.n_kv_heads * smollm2.head_dim
    full = inspect(smollm2, "", 3, HeadChange(kv=KVMethod("latent_pca", width)), ids=ids, bases=pca)
    assert full.loss_after == pytest.approx(full.loss_before, abs=1e-4)
    assert abs(full.after.attentions[3] - full.before.attentions[3]).max() < 1e-4
    low = inspect(smollm2, "", 3, HeadChange(kv=KVMethod("latent_pca", 48)), ids=ids, bases=pca)
    assert low.loss_after > low.loss_before + 0.05
    assert low.kv_cache_bytes_after == smollm2.n_layers * 48 * 2 * T  # r bf16 values a token a layer


def test_what_cannot_be_shown_says_why(smollm2):
    ids = ids_of(smollm2)[0].tolist()
    with pytest.raises(ValueError, match="fitted basis"):
        inspect(smollm2, "", 0, HeadChange(kv=KVMethod("latent_svd", 64)), ids=ids)
    with pytest.raises(ValueError, match="n_kv_heads"):
        inspect(smollm2, "", 0, HeadChange(kv=KVMethod("heads", 1)), ids=ids)
    with pytest.raises(ValueError, match="cannot be shown together"):
        HeadChange(n_kv_heads=1, kv=KVMethod("quant", "q8_0"))
    with pytest.raises(ValueError, match="not known"):
        inspect(smollm2, "", 0, HeadChange(kv=KVMethod("quant", "int3")), ids=ids)


@pytest.mark.parametrize("method, setting, sinks, words", [
    ("window", 2**70, 0, "a window must be a whole number from 1 to 1,048,576"),
    ("window_sinks", 4, "4", "the sinks of a window must be a whole number"),
    ("window_sinks", 4, 2.5, "the sinks of a window must be a whole number"),
    ("window", True, 0, "a window must be a whole number"),
    ("latent_pca", True, 0, "a latent rank must be a whole number"),
    ("window", 4, 4, "only window_sinks keeps sink tokens"),
    ("quant", "q", 0, "KV format 'q' is not known"),
    ("quant", "q4_0", 7, "only window_sinks keeps sink tokens"),
])
def test_a_kv_method_refuses_a_knob_of_the_wrong_kind(method, setting, sinks, words):
    with pytest.raises(ValueError, match=words):
        KVMethod(method, setting, sinks)
    assert KVMethod("window_sinks", 8, 16).label == "window + 16 sinks, W=8"  # the label names its sinks


def test_latent_bases_of_other_layers_are_refused(smollm2):
    ids = ids_of(smollm2)[0].tolist()
    pca, _svd = F.calibration_bases(smollm2, CALIB, context=T)
    shifted = {i + 100: b for i, b in pca.items()}  # as many bases, none of these layers'
    with pytest.raises(ValueError, match="fitted basis"):
        inspect(smollm2, "", 0, HeadChange(kv=KVMethod("latent_pca", 64)), ids=ids, bases=shifted)
