"""The long map of a real model: the queries and keys captured from its SDPA forward give the attention
its own eager path returns, and the blockwise pooled map equals pooling that whole matrix."""

import numpy as np
import pytest
import torch

from core.long.inputs import model_inputs
from core.long.map import full_probs, long_map, pool_full
from core.models.inspect import token_labels
from resources import CALIB_TEXT, EVAL_TEXT


def eager_attention(m, ids, layer):
    with torch.inference_mode():
        enc = {"input_ids": torch.tensor([ids])}
        if m.kind == "encoder":
            enc["attention_mask"] = torch.ones(1, len(ids), dtype=torch.long)
        out = m.model(**enc, output_attentions=True)
    return out.attentions[layer][0].float().numpy()  # (H, T, T)


@pytest.mark.parametrize("pool", ["max", "mean"])
def test_smollm2s_map_equals_pooling_its_own_eager_attention(smollm2, pool):
    ids = smollm2.tokenizer(EVAL_TEXT.read_text(encoding="utf-8"))["input_ids"][:384]
    li = model_inputs(smollm2, ids, 13, token_labels(smollm2, ids))
    eager = eager_attention(smollm2, ids, 13)
    m = long_map(li.q, li.k, li.rule, 4, pool)
    np.testing.assert_allclose(m.pooled, pool_full(eager, 4, pool), atol=3e-5)
    assert li.tokens[0] == "Alice" and "layer 13 of 30 (global)" in li.what
    # a layer past 12 gives the first token most of its attention: the sink column the overview shows
    assert m.stats.sink.mean() > 0.2 and (m.stats.top_key == 0).all()


def test_smollm2s_2048_token_map_equals_the_whole_matrix_pooled(smollm2):
    text = EVAL_TEXT.read_text(encoding="utf-8") + "\n\n" + CALIB_TEXT.read_text(encoding="utf-8")
    ids = smollm2.tokenizer(text)["input_ids"][:2048]
    assert len(ids) == 2048
    li = model_inputs(smollm2, ids, 4, [])
    full = full_probs(li.q, li.k, li.rule).numpy()  # (9, 2048, 2048): 151 MB, once
    for pool in ("max", "mean"):
        m = long_map(li.q, li.k, li.rule, 8, pool, chunk_bytes=32 * 2**20)
        np.testing.assert_allclose(m.pooled, pool_full(full, 8, pool), atol=3e-6)
    row_sums = full.sum(-1)
    np.testing.assert_allclose(row_sums, 1.0, atol=1e-4)


def test_an_encoders_map_reads_every_key_as_its_eager_path_does(minilm):
    ids = minilm.tokenizer(EVAL_TEXT.read_text(encoding="utf-8")[:600])["input_ids"][:128]
    li = model_inputs(minilm, ids, 2, token_labels(minilm, ids))
    assert li.rule.causal is False
    m = long_map(li.q, li.k, li.rule, 1, "max")
    np.testing.assert_allclose(m.pooled, eager_attention(minilm, ids, 2), atol=3e-5)


def test_a_layer_the_model_does_not_have_is_refused(smollm2):
    with pytest.raises(ValueError, match="layers 0 to 29"):
        model_inputs(smollm2, [1, 2, 3], 30, [])
    with pytest.raises(ValueError, match="2 to 8,192 tokens"):
        model_inputs(smollm2, [1] * 9000, 3, [])


def test_every_layers_figures_in_one_forward_are_each_layers_own_map(smollm2):
    from core.long.inputs import model_layer_stats

    ids = smollm2.tokenizer(EVAL_TEXT.read_text(encoding="utf-8"))["input_ids"][:300]
    seen = []
    every = model_layer_stats(smollm2, ids, band=64, progress=seen.append)
    assert seen == list(range(30)) and every["sink"].shape == (30, 9) and every["band_width"] == 64
    for layer in (2, 13):
        li = model_inputs(smollm2, ids, layer, [])
        one = long_map(li.q, li.k, li.rule, 8, "mean", band=64).stats
        for name in ("sink", "band", "beyond", "distance"):
            np.testing.assert_allclose(every[name][layer], getattr(one, name), atol=2e-5, rtol=1e-4)
    assert every["sink"][13:].mean() > 0.2 > every["sink"][:2].mean()  # SmolLM2's sink forms in its later layers
