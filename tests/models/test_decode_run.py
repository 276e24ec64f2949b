"""A decode run: the cache counted at every step as the app counts it, each step's attention row the
model's own eager attention for that prefix, and refusals that say what to change."""

import numpy as np
import pytest
import torch

from core.arch.formats import kv_format_bytes
from core.models.decode_run import decode_model

PROMPT = "Alice was beginning to get very tired of sitting by her sister on the bank"


@pytest.mark.parametrize("fmt", ["bfloat16", "q4_0", "fp8_e4m3"])
def test_every_steps_kv_bytes_are_geometrys_count(smollm2, fmt):
    ids = smollm2.tokenizer(PROMPT)["input_ids"]
    steps = list(decode_model(smollm2, ids, 5, 3, fmt))
    assert [s.n_cached for s in steps] == [len(ids) + i for i in range(5)]  # five tokens made, the prefill first
    L, K, h = 30, 3, 64  # SmolLM2-135M's config: 30 layers, 3 KV heads of 64
    for s in steps:  # K and V, every layer's KV heads, every cached token, in the format's bytes
        assert s.kv_bytes == L * kv_format_bytes(2 * K * h, fmt) * s.n_cached
    if fmt == "bfloat16":
        assert steps[-1].kv_bytes == 2 * L * K * h * 2 * steps[-1].n_cached
    assert all(s.step_ms > 0 for s in steps)


def test_each_steps_attention_row_is_the_models_eager_attention_for_its_prefix(smollm2):
    ids = smollm2.tokenizer(PROMPT)["input_ids"]
    steps = list(decode_model(smollm2, ids, 8, 14))
    generated = [s.token_id for s in steps]
    full = ids + generated[:-1]  # the last step's token was made but not read
    with torch.inference_mode():
        out = smollm2.model(input_ids=torch.tensor([full]), output_attentions=True)
    eager = out.attentions[14][0].float().numpy()  # (H, T, T)
    for s in steps:
        np.testing.assert_allclose(s.row, eager[:, s.n_cached - 1, : s.n_cached], atol=2e-5)
        assert s.row.shape == (9, s.n_cached)
    # greedy: each token is the model's argmax after the prefix
    with torch.inference_mode():
        logits = smollm2.model(input_ids=torch.tensor([full])).logits[0]
    assert generated == [int(logits[len(ids) - 1 + i].argmax()) for i in range(len(generated))]


def test_a_decode_run_refuses_what_it_cannot_do(smollm2, minilm):
    with pytest.raises(ValueError, match="encoder"):
        next(decode_model(minilm, [101, 102], 3, 0))
    with pytest.raises(ValueError, match="1 to 256 tokens"):
        next(decode_model(smollm2, [1, 2], 0, 0))
    with pytest.raises(ValueError, match="exceed SmolLM2-135M's 8,192"):
        next(decode_model(smollm2, [1] * 8100, 200, 0))
    with pytest.raises(ValueError, match="layers 0 to 29"):
        next(decode_model(smollm2, [1, 2], 3, 30))
