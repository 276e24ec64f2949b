"""Any text through the tokenizers and the heatmap path: a clear message or a correct view."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.arch.config import AttentionConfig
from core.inputs.tokens import simple_tokenize
from core.kinds.standard.layer import MAX_DISPLAY_TOKENS
from core.models.source import shipped_unavailable_reason
from sandbox.jobs.compute import ComputeRequest, compute_heatmaps

CFG = AttentionConfig(d_model=64, n_heads=4, n_kv_heads=2, seq_len=512, causal=True)
texts = st.one_of(
    st.text(),  # every unicode category, control characters and surrogate-free emoji included
    st.text(alphabet=st.characters(whitelist_categories=["So", "Cc", "Zs"])),
    st.sampled_from(["", " ", "a", "😀", "\x00", "word " * 10_000, "\u202e reversed", "e\u0301"]),
)


@given(texts)
def test_heatmap_path_gives_a_view_or_a_sentence(text):
    try:
        hm = compute_heatmaps(ComputeRequest(CFG, text, want_timing=False), 1)
    except ValueError as exc:
        assert simple_tokenize(text) == [] and "type a few words" in str(exc)
        return
    n = min(len(simple_tokenize(text)), MAX_DISPLAY_TOKENS)
    assert hm.probs.shape == (4, n, n) and len(hm.tokens) == n
    np.testing.assert_allclose(hm.probs.sum(-1), 1.0, rtol=1e-5)
    assert all(tok and not any(ch.isspace() for ch in tok) for tok in hm.tokens)


@pytest.fixture(scope="module")
def minilm():
    if shipped_unavailable_reason("minilm-l6"):
        pytest.skip("the [models] extra is missing")
    from core.models.source import load_model

    return load_model("minilm-l6")


@given(texts)
def test_a_real_tokenizer_gives_tokens_or_a_sentence(minilm, text):
    from core.models.inspect import encode

    try:
        enc = encode(minilm, text)
    except ValueError as exc:
        assert "empty" in str(exc) or "Shorten it" in str(exc)
        return
    assert enc["input_ids"].shape[1] >= 2  # [CLS] ... [SEP]
