"""Words and units a new user reads: per-token timing, bits, percentages, what an encoder lacks."""

import numpy as np
import pytest

from core.arch.config import AttentionConfig
from core.arch.presets import load_presets
from core.models.source import shipped_unavailable_reason
from sandbox.jobs.types import HeatmapResult
from sandbox.window.view_text import describe_view
from widgets.costs.timing_panel import ms

TEXT = "The chef who trained in Lucknow cooked biryani"


def test_prefill_and_decode_are_compared_per_token(make_window):
    w = make_window()
    t, c = w.last_timing.result.to_report(), w.config()
    prefill, decode = t["prefill_ms"] / (c.batch_size * c.seq_len), t["decode_ms"] / c.batch_size
    text = w.timing.labels["phases"].text()
    assert text.startswith(f"per token: {ms(prefill)} in prefill, {ms(decode)} in decode (x{decode / prefill:.3g})")
    assert "faster" not in text


def test_no_preset_is_named_after_our_own_jargon():
    names = [p.name for p in load_presets()]
    assert not any("seeds" in n for n in names)
    assert {"Small (about 125M)", "Base (about 350M)", "Large (about 1B)", "Frontier (about 70B)"} <= set(names)


def test_the_all_layers_row_says_it_counts_attention_only(make_window):
    w = make_window()
    name = w.metrics._name_labels["params_model"]
    assert name.text() == "Attention params, all layers" and "no MLP" in name.toolTip()


@pytest.mark.skipif(bool(shipped_unavailable_reason("minilm-l6")), reason="the [models] extra is missing")
def test_an_encoder_says_it_has_no_decode_step(make_window):
    w = make_window(text=TEXT)
    w.models.load("minilm-l6")
    assert "no decode: an encoder reads its input at once" in w.timing.labels["phases"].text()
    assert not w.config_panel.phase.isEnabled() and w.config().phase == "prefill"
    assert "no decode step" in w.config_panel.phase.toolTip()


@pytest.mark.skipif(bool(shipped_unavailable_reason("smollm2-135m")), reason="the [models] extra is missing")
def test_js_divergence_reads_in_bits(make_window):
    w = make_window(text=TEXT)
    w.models.load("smollm2-135m")
    w.config_panel.n_kv_heads.slider.setValue(0)
    js = w.last_heatmaps.model.fidelity["js_divergence_mean"]
    assert w.models.fidelity.values["js"].text() == f"{js:.4f} bits"
    err = w.last_heatmaps.model.fidelity["output_rel_error"]
    assert w.models.fidelity.values["err"].text() == f"{err:.2%}"


def test_random_weights_say_what_they_show_and_offer_the_real_models(make_window):
    w = make_window()
    note = w.weights_note
    assert note.isVisible() and "seeded noise, not learned" in note.text() and "costs are exact" in note.text()
    if shipped_unavailable_reason("minilm-l6"):
        return
    assert "href='minilm-l6'" in note.text()
    note.linkActivated.emit("minilm-l6")  # the user clicks the link
    assert w.models.key == "minilm-l6" and w.last_heatmaps.model is not None and not note.isVisible()
    w.models.use_random()
    assert note.isVisible()


def test_the_view_line_counts_one_head_and_one_token_in_the_singular():
    def line(n_heads: int, n_tokens: int) -> str:
        cfg = AttentionConfig(d_model=64, n_heads=n_heads, n_kv_heads=n_heads, seq_len=n_tokens)
        probs = np.full((n_heads, n_tokens, n_tokens), 1 / n_tokens, dtype=np.float32)
        return describe_view(HeatmapResult(1, cfg, ["t"] * n_tokens, probs, n_tokens), None)

    assert line(1, 1).startswith("1 head × 1 token of your text")
    assert line(2, 3).startswith("2 heads × 3 tokens of your text")
