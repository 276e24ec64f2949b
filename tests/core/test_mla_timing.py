"""MLA timing: both forms measured, the result's figures consistent with the counts, its report read back by the
workspace check, and the memory guard's figure covering what the run allocates."""

from __future__ import annotations

import pytest
import torch

from core.arch.config import AttentionConfig
from core.counts import layer_flop_counts, timing_bytes
from core.kinds.mla.counts import forms_summary
from core.kinds.mla.layer import MLALayer
from core.kinds.mla.spec import MLADims
from core.report import build_report, format_report
from core.study.workspace import check_timing
from core.timing.layer import run_timing

CPU = torch.device("cpu")
CFG = AttentionConfig(d_model=64, n_heads=4, widths=MLADims(24, 32, 8, 4, 6), seq_len=48, causal=True)


@pytest.mark.parametrize("phase", ["prefill", "decode"])
def test_mla_timing_measures_four_forms_and_its_throughputs_follow_the_counts(phase):
    cfg = CFG.with_(phase=phase)
    steps: list[str] = []
    res = run_timing(cfg, CPU, budget_s=0.01, progress=steps.append)
    assert len(steps) == 7 and steps[-1].endswith("(7/7)")
    forms = res.forms
    assert forms is not None and set(forms) == {"naive_prefill_ms", "absorbed_prefill_ms", "naive_decode_ms",
                                                "absorbed_decode_ms"}
    assert res.prefill.median_ms == forms["naive_prefill_ms"] and res.decode.median_ms == forms["absorbed_decode_ms"]
    usual = "naive" if phase == "prefill" else "absorbed"
    flops = layer_flop_counts(cfg.d_model, cfg.layer_spec(), cfg, usual)
    assert res.tflops == pytest.approx(flops.total / (res.layer.median_ms * 1e-3) / 1e12)
    assert res.core_tflops == pytest.approx(flops.attention / (res.core.median_ms * 1e-3) / 1e12)
    report = build_report(cfg, res.to_report())
    assert check_timing(report["timing"], "timing") == report["timing"]  # a pin of it reads back
    assert "measured forms: prefill: naive" in format_report(report)


def test_the_workspace_check_refuses_damaged_mla_forms():
    res = run_timing(CFG, CPU, budget_s=0.0).to_report()
    with pytest.raises(ValueError, match="mla_forms must hold"):
        check_timing({**res, "mla_forms": {"naive_prefill_ms": 1.0}}, "timing")
    with pytest.raises(ValueError, match="mla_forms.naive_decode_ms"):
        check_timing({**res, "mla_forms": {**res["mla_forms"], "naive_decode_ms": "fast"}}, "timing")


def test_forms_summary_names_the_faster_form_of_each_phase():
    text = forms_summary({"naive_prefill_ms": 2.0, "absorbed_prefill_ms": 3.0, "naive_decode_ms": 4.0,
                          "absorbed_decode_ms": 1.0})
    assert text == ("prefill: naive 2 ms, absorbed 3 ms (naive x1.50); "
                    "decode: naive 4 ms, absorbed 1 ms (absorbed x4.00)")
    zero = forms_summary({"naive_prefill_ms": 0.0, "absorbed_prefill_ms": 3.0, "naive_decode_ms": 4.0,
                          "absorbed_decode_ms": 1.0})
    assert zero.startswith("prefill: naive 0 ms, absorbed 3 ms; decode")  # nothing divided by zero


def test_timing_bytes_cover_what_an_mla_run_keeps():
    cfg = CFG.with_(batch_size=2)
    layer = MLALayer(cfg)
    x = torch.randn(2, cfg.seq_len, cfg.d_model)
    with torch.inference_mode():
        q = layer.query(x)
        c, pe = layer.latent(x)
        k, v = layer.decompress(c, pe)
    kept = [x, *q, c, pe, k, v, *layer.parameters()]
    assert sum(t.numel() * t.element_size() for t in kept) <= timing_bytes(cfg)


def test_the_heatmaps_layer_without_o_proj_draws_the_timed_layers_weights():
    from core.display import display_bytes, display_layer

    cfg = CFG.with_(seq_len=16)
    shown, full = display_layer(cfg, seed=3), MLALayer(cfg, seed=3)
    x = torch.randn(1, 16, cfg.d_model)
    with torch.inference_mode():
        probs, sinks = shown.probs_and_sinks(x)
        torch.testing.assert_close(probs, full.attention_probs(x, "absorbed"))
    assert sinks is None and probs.shape == (1, 4, 16, 16)
    assert torch.allclose(probs.sum(-1), torch.ones(1, 4, 16)) and probs[0, :, 0, 1:].abs().max() == 0  # causal
    assert display_bytes(cfg) == 4 * sum(p.numel() for p in shown.parameters())


def test_a_workspace_with_mla_and_gqa_pins_reads_back_exactly(tmp_path):
    import json

    from core.kinds.mla.latent_vs_grouped import equal_kv_gqa
    from core.study.workspace import load_workspace, save_workspace
    from tests.core.test_compare_workspace import _pin

    mla = CFG.with_(seq_len=16)
    timing = run_timing(mla, CPU, budget_s=0.0).to_report()
    pins = [_pin("A", mla, timing), _pin("B", equal_kv_gqa(mla))]
    path = tmp_path / "w.json"
    save_workspace(path, pins)
    back = load_workspace(path)
    assert [(p.config, p.report) for p in back] == [(p.config, p.report) for p in pins]
    assert back[0].report["timing"]["mla_forms"] == timing["mla_forms"]
    data = json.loads(path.read_text())  # a pin whose MLA count was edited is refused
    data["pins"][0]["report"]["kv_cache"]["bytes_per_token_per_layer_latent"] += 1
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError):
        load_workspace(path)


def test_timing_bytes_cover_the_low_rank_query_and_a_wide_latent():
    """The intermediates a forward makes (caught by forward hooks on every module): a wide q_lora_rank's and a
    wide kv_lora_rank's outputs are the largest tensors of such layers, and the guard counts them."""
    for dims in (MLADims(4096, 16, 8, 4, 8), MLADims(0, 4096, 8, 4, 8)):
        cfg = AttentionConfig(d_model=64, n_heads=1, widths=dims, seq_len=256, causal=True)
        layer = MLALayer(cfg)
        made: list[int] = []
        for module in layer.modules():
            module.register_forward_hook(lambda _m, _i, out, made=made: made.append(out.numel() * out.element_size()))
        with torch.inference_mode():
            layer(torch.randn(1, 256, 64), form="absorbed")
            layer(torch.randn(1, 256, 64), form="naive")
        weights = sum(p.numel() * p.element_size() for p in layer.parameters())
        assert weights + sum(made) <= timing_bytes(cfg)
