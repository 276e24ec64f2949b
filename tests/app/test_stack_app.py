"""Hybrid stacks in the window: the Layers strip picks the layer the maps show, a recurrent layer's maps are its
implicit attention on the diverging scale, the costs split state and KV, and the Memory tab reads core's curve;
each figure against an independent reference (the display layer's own matrix, the counts, the curve)."""

from __future__ import annotations

import numpy as np
import torch

from core.arch.config import AttentionConfig
from core.arch.presets import find_preset
from core.counts import kind_counts
from core.format import format_bytes
from core.inputs.embedding import embed_tokens
from core.kinds.kernels import kernels_of
from core.long.memory_curve import memory_curve
from tests.app.test_mla_app import pick_preset

TEXT = "one two three four five six seven eight"
START = AttentionConfig(d_model=64, n_heads=4, seq_len=64, n_layers=2, causal=True, dtype="bfloat16")


def test_the_strip_picks_a_gdn_layer_whose_maps_are_its_implicit_attention(make_window, qtbot):
    w = make_window(text=TEXT, config=START)
    pick_preset(w, "Qwen3-Next-80B-A3B")
    panel, cfg = w.config_panel, w.config()
    assert cfg.n_layers == 48 and not panel.n_layers.isEnabled()
    assert panel.strip.isVisibleTo(panel) and len(panel.strip.cells) == 48
    assert [c.short for c in panel.strip.cells[:4]] == ["GDN", "GDN", "GDN", "global"]
    panel.strip.picked.emit(1)
    qtbot.waitUntil(lambda: w.last_heatmaps is not None and w.last_heatmaps.view_layer == 1
                    and w.last_heatmaps.config == w.config(), timeout=60_000)
    hm = w.last_heatmaps
    spec = cfg.layer_spec(1)
    assert hm.layer_spec == spec and hm.probs.shape[0] == 32  # the value heads
    layer = kernels_of(spec).display_layer(cfg.focus(1), hm.seed, spec)
    with torch.inference_mode():
        want = layer.probs_and_sinks(embed_tokens(hm.tokens, cfg.d_model, hm.seed))[0][0].numpy()
    np.testing.assert_allclose(hm.probs, want, atol=1e-6)
    assert hm.probs.min() < 0 and w.mosaic.diverging and not w.mosaic.colormap.isVisible()
    assert "implicit attention" in w.mosaic.bar_text.toolTip()
    assert w.models.picker.layer.suffix().strip() == "GDN" and "layer 1, GDN: 32 maps" in w.info.text()
    panel.strip.picked.emit(3)  # the attention layer: probabilities again
    qtbot.waitUntil(lambda: w.last_heatmaps.view_layer == 3, timeout=60_000)
    assert not w.mosaic.diverging and w.mosaic.colormap.isVisibleTo(w.mosaic)
    np.testing.assert_allclose(w.last_heatmaps.probs.sum(-1), 1.0, atol=1e-5)


def test_the_costs_split_state_and_kv_and_the_memory_tab_reads_core_s_curve(make_window, qtbot):
    w = make_window(text=TEXT, config=START)
    pick_preset(w, "Nemotron-H-8B")
    cfg = w.config()
    glob, mamba = kind_counts(cfg.architecture(), cfg)
    m = w.metrics
    assert m.values["kv_split"].text() == format_bytes(mamba.state_bytes)
    assert m.shorts["kv_split"].text() == f"| {format_bytes(glob.kv_bytes_total)}"
    assert m.values["layers"].text() == "4 | 24"
    w.tabs.setCurrentWidget(w.memory.panel)
    qtbot.waitUntil(lambda: w.memory.curve is not None and not w.memory.stale, timeout=10_000)
    base = find_preset("Llama 3 8B").apply(AttentionConfig(seq_len=cfg.seq_len, dtype=cfg.dtype, causal=True))
    want = memory_curve(cfg, base, "Llama 3 8B", cfg.seq_len, "this stack")
    assert w.memory.panel.sentence.text() == want.sentence
    assert w.memory.curve.state == mamba.state_bytes // cfg.batch_size
    w.memory.panel.baseline.setCurrentText("Llama 3 70B")
    assert "Llama 3 70B" in w.memory.panel.sentence.text()


def test_the_memory_tab_follows_any_configuration_while_on_screen(make_window, qtbot):
    """An MLA layer of 6 heads on d_model 64 is valid; the tab's baseline is the preset's own layers, never this
    layer's heads without their widths (6 heads do not divide d_model 64)."""
    from core.kinds.mla.spec import MLADims

    w = make_window(text=TEXT, config=START)
    w.tabs.setCurrentWidget(w.memory.panel)
    w.config_panel.set_config(START.with_(n_heads=6, n_kv_heads=6, widths=MLADims(0, 32, 8, 4, 6)))
    qtbot.waitUntil(lambda: not w.memory.stale, timeout=10_000)
    assert "this model caches" in w.memory.panel.sentence.text() and "every byte is KV" in w.memory.panel.sentence.text()


def test_the_plan_tab_shows_each_engine_s_state_pool_for_a_hybrid_stack(make_window):
    """vLLM's grown attention block, SGLang's state slots and llama.cpp's recurrent memory reach the Plan tab from the
    engines' rules (tests/core/test_engine_state_pools.py checks the figures against the engines' source)."""
    from tests.app.test_plan_app import open_plan

    w = make_window()
    p = open_plan(w, "Qwen3-Next-80B-A3B")
    p.gpu.setCurrentIndex(p.gpu.findText("NVIDIA H200 SXM"))
    p.n_gpus.setValue(4)
    p.tp.setCurrentIndex(p.tp.findData(4))
    p.engine.setCurrentIndex(p.engine.findData("vllm"))
    e = w.plan.last["engine"]
    assert e["block_size"] == 528 and e["state"]["layers"] == 36  # at TP 4 (test_engine_state_pools.py)
    assert f"Setting attention block size to {e['block_size']} tokens" in p.engine_text.text()
    assert "one page of each group of recurrent layers, 36 layers' state" in p.verdict.text()
    assert "--mamba-ssm-cache-dtype float32" in p.command
    p.engine.setCurrentIndex(p.engine.findData("sglang"))
    e = w.plan.last["engine"]
    assert f"max_mamba_cache_size: {e['mamba_slots']}" in p.engine_text.text()
    assert f"Its state pool holds {e['mamba_slots']:,} requests' recurrent state" in p.verdict.text()
    p.engine.setCurrentIndex(p.engine.findData("llama.cpp"))
    assert "llama_memory_recurrent: size =   75.38 MiB" in p.engine_text.text() and " -np 1 " in p.command


def test_a_sparse_layer_s_maps_grey_the_keys_its_indexer_skipped_and_show_its_dense_twin(make_window, qtbot):
    """DeepSeek-V3.2 at a width and top-k a CPU draws in a blink: the keys each query read are the display layer's own
    top-k, recomputed here; the grey cells are exactly the causal keys it skipped; the dense toggle shows the layer's
    maps with every causal key read; the hover names a key read or skipped and its index score."""
    import dataclasses

    from widgets.maps.mosaic import SKIPPED_INDEX, render_probs

    w = make_window(text=TEXT, config=START)
    pick_preset(w, "DeepSeek-V3.2")
    cfg = w.config()
    cfg = cfg.with_(d_model=256, n_heads=4, n_kv_heads=None, widths=dataclasses.replace(
        cfg.widths, q_lora_rank=64, kv_lora_rank=64, index_n_heads=8, index_topk=3))
    w.config_panel.set_config(cfg)
    qtbot.waitUntil(lambda: w.last_heatmaps is not None and w.last_heatmaps.config == w.config(), timeout=60_000)
    hm = w.last_heatmaps
    spec = w.config().layer_spec()
    layer = kernels_of(spec).display_layer(w.config(), hm.seed, spec)
    x = embed_tokens(hm.tokens, w.config().d_model, hm.seed)
    with torch.inference_mode():
        read, dense = layer.selected(x)[0].numpy(), layer.dense_probs(x)[0].numpy()
    T = len(hm.tokens)
    assert np.array_equal(hm.selection.read, read) and read.sum(1).tolist() == [min(t + 1, 3) for t in range(T)]
    np.testing.assert_allclose(hm.selection.dense, dense, atol=1e-6)
    skipped = np.tril(np.ones((T, T), dtype=bool)) & ~read
    assert np.array_equal(hm.probs[:, skipped], np.zeros((4, skipped.sum()), np.float32))
    image = w.mosaic.image.image
    lay = w.mosaic.layout_
    assert (image == SKIPPED_INDEX).sum() == skipped.sum() * 4 * lay.upsample ** 2
    q, k = map(int, np.argwhere(skipped)[0])
    assert "skipped: this query does not read it · index score" in w.mosaic.describe(0, q, k)
    assert "Grey: causal keys this layer does not read (each query reads its top 3" in w.mosaic.legend.text()
    head = w.open_head(0)  # the head opened large keeps its grey cells and says so on hover
    assert head is not None and np.array_equal(head.skipped, skipped)
    grey = head.skipped_image.image
    assert (grey[..., 3] == 255).sum() == skipped.sum() and tuple(grey[q, k, :3]) == (118, 118, 118)
    head.close()
    w.mosaic.dense.setChecked(True)
    assert (w.mosaic.image.image == SKIPPED_INDEX).sum() == 0
    assert np.array_equal(w.mosaic.image.image, render_probs(dense, lay)[0])
    assert w.mosaic.describe(0, q, k).startswith(f"head 0 · query #{q}") and "dense weight" in w.mosaic.describe(0, q, k)


def test_deepseek_v4_s_strip_names_its_layer_types_and_each_draws_its_own_maps(make_window, qtbot):
    """V4-Flash's 43 layers: 2 window-only, 21 compressed sparse, 20 heavily compressed, as its config lists them;
    a picked layer's maps are that layer's (weights over the tokens with the sinks' share, rows summing to one)."""
    w = make_window(text=TEXT, config=START)
    pick_preset(w, "DeepSeek-V4-Flash")
    panel, cfg = w.config_panel, w.config()
    shorts = [c.short for c in panel.strip.cells]
    assert shorts[:4] == ["V4 window", "V4 window", "V4 CSA", "V4 HCA"]
    assert (shorts.count("V4 window"), shorts.count("V4 CSA"), shorts.count("V4 HCA")) == (2, 21, 20)
    panel.strip.picked.emit(3)
    qtbot.waitUntil(lambda: w.last_heatmaps is not None and w.last_heatmaps.view_layer == 3
                    and w.last_heatmaps.config == w.config(), timeout=60_000)
    hm = w.last_heatmaps
    spec = cfg.layer_spec(3)
    assert hm.layer_spec == spec and spec.widths.compressor == "hca" and hm.probs.shape[0] == 64
    np.testing.assert_allclose(hm.probs.sum(-1) + hm.sink_share, 1.0, atol=1e-5)
    assert "layer 3, V4 HCA 1/128 + W128: 64 heads" in w.info.text()


def test_the_memory_tab_shows_what_a_sparse_model_s_decode_step_reads(make_window, qtbot):
    """DeepSeek-V3.2 in bf16: a decode step at T reads min(T, 2,048) latents of 1,152 B and all T index keys of
    256 B in each of 61 layers (../shared/REFERENCE.md's widths), against DeepSeek-V3's T latents."""
    from core.long.memory_curve import CONTEXTS

    w = make_window(text=TEXT, config=START)
    pick_preset(w, "DeepSeek-V3.2")
    w.config_panel.set_config(w.config().with_(seq_len=1 << 20, dtype="bfloat16"))
    w.tabs.setCurrentWidget(w.memory.panel)
    w.memory.panel.baseline.setCurrentText("DeepSeek-V3")
    qtbot.waitUntil(lambda: w.memory.curve is not None and not w.memory.stale
                    and w.memory.curve.reads[-1] > 0, timeout=10_000)
    c = w.memory.curve
    assert c.reads == tuple(61 * (min(T, 2048) * 1152 + T * 256) for T in CONTEXTS)
    assert c.baseline_reads == tuple(61 * T * 1152 for T in CONTEXTS)
    read, kept = c.reads[-1], c.kv[-1]
    assert f"A decode step at 1M reads {format_bytes(read)} of it ({read / kept:.0%})" in w.memory.panel.sentence.text()
    w.memory.panel.measure.setCurrentIndex(1)
    assert w.memory.panel.plot.getAxis("left").labelText == "bytes a decode step reads (log)"
    assert len(w.memory.panel.plot.listDataItems()) == 2  # this model's reads and the baseline's


def test_the_memory_tab_draws_the_indexer_passing_the_attention_it_selects_for(make_window, qtbot):
    """DeepSeek-V3.2's decode step: the indexer scores every token (2 x 64 x 128 + 2 x 64 FLOPs each), the absorbed
    attention its top 2,048 (2 x 128 heads x (2 x 512 + 64) each); the first passes the second once
    16,512 T > 278,528 x 2,048, at T = 34,547."""
    from core.long.memory_curve import CONTEXTS

    w = make_window(text=TEXT, config=START)
    pick_preset(w, "DeepSeek-V3.2")
    w.tabs.setCurrentWidget(w.memory.panel)
    qtbot.waitUntil(lambda: w.memory.curve is not None and not w.memory.stale
                    and w.memory.curve.indexer_passes is not None, timeout=10_000)
    c = w.memory.curve
    assert c.flops["indexer"] == tuple(61 * 16_512 * T for T in CONTEXTS)
    assert c.flops["attention"] == tuple(61 * 278_528 * min(T, 2048) for T in CONTEXTS)
    assert c.indexer_passes == 34_547 == 278_528 * 2048 // 16_512 + 1
    assert "Its indexers' FLOPs pass the attention they select for at T = 34,547" in w.memory.panel.sentence.text()
    w.memory.panel.measure.setCurrentIndex(2)
    assert len(w.memory.panel.plot.listDataItems()) == 3  # attention, indexers, the baseline
