"""MLA in the window: the attention type, its widths, its costs, its heatmaps, its timing and its pins, each number
against an independent reference (transformers' DeepseekV3Attention, our own naive layer, the check values)."""

from __future__ import annotations

import pytest
import torch
from transformers import DeepseekV3Config
from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3Attention

from core.arch.config import AttentionConfig
from core.arch.presets import find_preset
from core.kinds.mla.layer import MLALayer
from core.kinds.mla.spec import MLADims
from tests.app.conftest import SMALL

TEXT = "one two three four five six seven eight nine ten eleven twelve"
TINY = AttentionConfig(d_model=64, n_heads=4, seq_len=32, n_layers=2, causal=True, widths=MLADims(24, 32, 8, 4, 6))


def pick_preset(w, name):
    combo = w.config_panel.preset
    combo.setCurrentIndex(combo.findText(name))
    combo.activated.emit(combo.currentIndex())


def test_deepseek_v3_preset_shows_its_projections_latent_and_badge(make_window):
    w = make_window(text=TEXT, config=AttentionConfig(d_model=64, n_heads=4, seq_len=64, n_layers=2, causal=True,
                                                      dtype="bfloat16"))
    pick_preset(w, "DeepSeek-V3")
    panel, m = w.config_panel, w.metrics
    with torch.device("meta"):
        ref = DeepseekV3Attention(DeepseekV3Config(num_key_value_heads=128), layer_idx=0)
    assert m.values["params"].text() == f"{sum(p.numel() for p in ref.parameters()):,}" == "187,107,328"
    for key, module in (("q_a", "q_a_proj"), ("q_b", "q_b_proj"), ("kv_a", "kv_a_proj_with_mqa"), ("kv_b", "kv_b_proj"),
                        ("o", "o_proj"), ("kv_a_norm", "kv_a_layernorm")):
        assert m.values[key].text() == f"{getattr(ref, module).weight.numel():,}"
        assert m.values[key].isVisible()
    assert not m.values["k"].isVisible() and not m.values["v"].isVisible()
    assert m.values["mla_kv"].text() == "1,152 B" and m.shorts["mla_kv"].text() == "| 80 KiB"  # 81,920 B
    assert m.shorts["head_dim"].text() == "128 + 64"
    assert m.values["mla_equiv"].text() == "2.25"
    assert m.values["kv_token"].text() == f"{1152 * 61:,} B"
    assert panel.badge.text().strip() == "MLA (latent 512 + rope 64)"
    assert not panel.n_kv_heads.isVisible() and not panel.bias.isVisible() and not panel.bias_which.isVisible()
    assert panel.badge.isVisible()  # it sits beside the biases: it once went with them
    assert panel.kind_controls.rows["mla"].isVisible() and panel.kind_controls.spins["mla"]["kv_lora_rank"].value() == 512
    assert f"; {ref.num_heads} heads of q/k {ref.qk_head_dim}, v {ref.v_head_dim} rebuilt" in panel.kind_controls.notes["mla"].text()
    panel.n_heads.spin.setValue(64)  # the note follows n_heads (it once kept the preset's 128)
    assert "; 64 heads of q/k 192" in panel.kind_controls.notes["mla"].text() and w.config().n_heads == 64


def test_switching_the_type_says_what_moved_and_comes_back(make_window):
    w = make_window(text=TEXT)
    panel = w.config_panel
    kind = panel.kind_controls.kind
    kind.setCurrentIndex(1)  # MLA, widths that fit d_model 64: a latent of 32, no low-rank query
    cfg = w.config()
    assert cfg.widths == MLADims(q_lora_rank=0, kv_lora_rank=32) and cfg.kv_heads == cfg.n_heads and cfg.head_dim == 192
    assert "Attention MLA" in panel.last_notice and "biases, q/k norm, window and sinks are off" in panel.last_notice
    kv_before = 2 * SMALL.kv_heads * SMALL.head_dim * 4  # float32
    assert f"KV cache a token a layer: {kv_before} B -> {(32 + 64) * 4} B." in panel.last_notice
    assert not cfg.head_dim_warnings()  # nothing that compresses nothing
    panel.kind_controls.spins["mla"]["kv_lora_rank"].setValue(64)
    kind.setCurrentIndex(0)
    back = w.config()
    assert back.widths is None and back.mode == "MHA" and back.head_dim_tied
    assert "Attention standard: MHA of 8 heads" in panel.last_notice
    kind.setCurrentIndex(1)
    assert w.config().widths.kv_lora_rank == 64  # the widths it had, not the defaults again


def test_an_odd_rope_width_is_refused_and_nothing_changes(make_window):
    w = make_window(text=TEXT, config=TINY)
    spin = w.config_panel.kind_controls.spins["mla"]["qk_rope_head_dim"]
    spin.setValue(5)
    assert w.config() == TINY and spin.value() == 4
    assert "must be even" in w.config_panel.last_notice and "previous setting is kept" in w.config_panel.last_notice
    w.config_panel.kind_controls.spins["mla"]["kv_lora_rank"].setValue(16)
    assert w.config().widths.kv_lora_rank == 16
    assert w.metrics.values["mla_kv"].text() == f"{(16 + 4) * 4:,} B"  # float32


def test_the_heatmaps_of_an_mla_layer_equal_the_naive_layers_probabilities(make_window):
    w = make_window(text=TEXT, config=TINY)
    probs = w.last_heatmaps.probs  # (H, T, T)
    T = probs.shape[1]
    layer = MLALayer(TINY, seed=w.last_heatmaps.seed)
    from core.inputs.embedding import embed_tokens
    from core.inputs.tokens import simple_tokenize

    x = embed_tokens(simple_tokenize(TEXT)[:T], TINY.d_model, w.last_heatmaps.seed)
    with torch.no_grad():
        ref = layer.attention_probs(x, "naive")[0].numpy()
    assert probs.shape == (4, T, T)
    assert abs(probs - ref).max() < 1e-5


def test_an_mla_timing_shows_both_forms_and_a_pin_beside_a_gqa_pin_dashes_what_does_not_apply(make_window):
    w = make_window(text=TEXT, config=TINY)
    t = w.timing.timing
    assert t is not None and set(t["mla_forms"]) == {"naive_prefill_ms", "absorbed_prefill_ms", "naive_decode_ms",
                                                     "absorbed_decode_ms"}
    forms = w.timing.labels["forms"].text()
    assert forms.startswith("prefill: naive") and f"{t['mla_forms']['naive_decode_ms']:.3g} ms" in forms
    w.pins.pin_current()
    w.config_panel.kind_controls.kind.setCurrentIndex(0)
    w.pins.pin_current()
    table = w.pins.table.table
    labels = [table.verticalHeaderItem(r).text().replace("\n", " ") for r in range(table.rowCount())]
    row = labels.index("MLA latent / token / layer")
    assert table.item(row, 0).text().startswith(f"{(32 + 4) * 4} B")
    assert table.item(row, 1).text() == "–"
    kv_row = labels.index("W_k + W_v parameters")
    assert table.item(kv_row, 0).text() == "–"


def test_kimi_k2_and_v2_lite_presets_follow_their_cards(make_window):
    w = make_window(text=TEXT, config=TINY.with_(widths=None, dtype="bfloat16"))  # bf16: Kimi's timing waits (> 20 s)
    pick_preset(w, "DeepSeek-V2-Lite")
    assert w.metrics.values["q"].isVisible() and not w.metrics.values["q_a"].isVisible()  # a plain q_proj
    assert w.metrics.values["q"].text() == f"{2048 * 16 * 192:,}"
    pick_preset(w, "Kimi K2")
    assert w.config() == find_preset("Kimi K2").apply(w.config()) and w.config().n_heads == 64
    pick_preset(w, "Llama 3 8B")
    assert w.config().widths is None and w.config_panel.n_kv_heads.isVisible()


def test_a_timed_seq_len_sweep_of_an_mla_layer_draws_both_forms_of_each_phase(make_window):
    w = make_window(text=TEXT, config=TINY)
    w.sweeps.run("seq_len", "8,16", timed=True)
    plots = w.sweeps.panel.plots
    rows = plots.result.ok_rows()
    lines = {item.name(): item for item in plots.plots["time"].listDataItems()}
    assert {"prefill (the layer timed)", "decode", "prefill, absorbed (MLA)", "decode, naive (MLA)"} <= set(lines)
    y = lines["decode, naive (MLA)"].yData  # as given (getData() would be log10 on a log axis)
    assert list(y) == pytest.approx([r.report["timing"]["mla_forms"]["naive_decode_ms"] for r in rows])
    names = {item.name() for item in plots.plots["params"].listDataItems()}
    assert names == {"total"}  # no W_k + W_v points: an MLA layer has neither


def test_n_heads_moves_in_mla_without_notices_about_the_hidden_kv_slider(make_window):
    w = make_window(text=TEXT, config=TINY)
    panel = w.config_panel
    panel.n_heads.spin.setValue(6)
    cfg = w.config()
    assert cfg.n_heads == 6 and cfg.kv_heads == 6 and cfg.widths == TINY.widths
    assert "n_kv_heads" not in panel.last_notice
    assert w.metrics.values["params"].text() == f"{sum(n for _, _, n, _ in param_rows(cfg)):,}"


def param_rows(cfg):
    from core.counts import param_counts

    return param_counts(cfg).rows(cfg.d_model, cfg.layer_spec())


def test_the_type_is_locked_while_a_real_model_is_open_and_a_q8_0_switch_is_refused(make_window):
    from core.models.choices import ModelShape

    w = make_window(text=TEXT, config=TINY.with_(widths=MLADims(0, 32, 32, 32, 32)))  # widths q8_0's blocks fit
    panel = w.config_panel
    panel.layout_controls.kv_dtype.setCurrentIndex(panel.layout_controls.kv_dtype.findText("q8_0"))
    cfg = w.config()
    assert cfg.kv_format == "q8_0" and cfg.widths is not None
    panel.kind_controls.kind.setCurrentIndex(0)  # standard: head_dim 64 / 4 = 16 does not fit q8_0's blocks
    assert w.config() == cfg and panel.kind_controls.kind.currentIndex() == 1
    assert "not a multiple of 32" in panel.last_notice and "previous setting is kept" in panel.last_notice
    # a real model's shape (SmolLM2-135M's): the type box is locked to standard, as the model is trained
    panel.set_model_shape(ModelShape("SmolLM2-135M", "causal", 30, 9, 3, 64, 576, False))
    assert not panel.kind_controls.isEnabled() and w.config().widths is None and w.config().kv_heads == 3
    assert panel.kind_controls.kind.currentIndex() == 0


def test_a_failed_timing_after_an_mla_one_leaves_no_mla_forms_row(make_window):
    """MLA timed (its forms row shown), then a standard layer whose timing fails: the row stayed, reading "–"."""
    w = make_window(text=TEXT, config=TINY)
    assert w.timing.labels["forms"].isVisibleTo(w.timing) and w.timing.names["forms"].isVisibleTo(w.timing)
    w.config_panel.kind_controls.kind.setCurrentIndex(0)  # standard
    w.timing.show_error("timing failed: out of memory")
    assert not w.timing.labels["forms"].isVisibleTo(w.timing) and not w.timing.names["forms"].isVisibleTo(w.timing)
