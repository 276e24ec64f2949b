"""The Plan tab: the issue's question answered in the window with the CLI's bytes, TP degrees the heads
allow, this machine measured, the app's own timing on the roofline, and bad input said in a sentence."""

import os

import pytest

from core.arch.config import AttentionConfig
from core.arch.presets import find_preset
from core.models.source import shipped_unavailable_reason
from sandbox.tabs.plan import tp_degrees
from sandbox.tabs.plan_roofs import roofs as plan_roofs

needs_models = pytest.mark.skipif(bool(shipped_unavailable_reason("smollm2-135m")), reason="the [models] extra is missing")


def open_plan(w, preset):
    cp = w.config_panel
    cp._on_preset_activated(cp.preset.findText(preset))  # as a click in the preset list does
    w.tabs.setCurrentWidget(w.plan.panel)
    return w.plan.panel


def test_llama_3_70b_on_8_and_16_h100s_as_the_cli_counts_it(make_window):
    w = make_window()
    p = open_plan(w, "Llama 3 70B")
    assert p.params.text() == f"{find_preset('llama-3-70b').params:,}" and "counted from its config" in p.params_source.text()
    assert [p.tp.itemData(i) for i in range(p.tp.count())] == [1]  # one GPU: no TP group to split over
    p.n_gpus.setValue(64)
    assert [p.tp.itemData(i) for i in range(p.tp.count())] == [1, 2, 4, 8, 16, 32, 64]
    p.n_gpus.setValue(12)  # degrees of 64 heads that make whole groups of 12 GPUs
    assert [p.tp.itemData(i) for i in range(p.tp.count())] == [1, 2, 4]
    p.n_gpus.setValue(8)
    p.tp.setCurrentIndex(p.tp.findData(8))
    p.kv.setCurrentText("fp8")
    p.batch.setValue(8)
    p.context.setValue(131072)
    j = w.plan.last
    assert j["per_gpu"]["weights"] == 17_638_426_624 and j["per_gpu"]["kv_cache"] == 21_474_836_480
    assert j["fits"] and "Fits on 8 x NVIDIA H100 SXM" in p.verdict.text() and "TP 8: 1 KV head a GPU" in p.details.text()
    p.n_gpus.setValue(16)
    p.tp.setCurrentIndex(p.tp.findData(16))
    assert w.plan.last["kv_replication"] == 2 and "replicated on 2 GPUs" in p.details.text()
    assert w.plan.last["per_gpu"]["kv_cache"] == 21_474_836_480  # no smaller than at TP 8
    p.n_gpus.setValue(12)  # TP 16 no longer makes whole groups: the largest degree that does, 4
    assert p.tp.currentData() == 4 and w.plan.last["inputs"]["pp"] == 3
    p.params.setText("seventy billion")
    p.params.editingFinished.emit()
    assert "type the model's parameter count" in p.verdict.text()


def test_tp_degrees_are_those_the_heads_can_share_out():
    cfg = AttentionConfig(d_model=768, n_heads=12, n_kv_heads=4)
    assert tp_degrees(cfg) == [1, 2, 4, 12]  # 3 and 6 neither divide 4 KV heads nor are multiples of 4


def test_the_roofline_draws_the_apps_own_timing_and_this_machine_measured(make_window):
    w = make_window(config=AttentionConfig(d_model=256, n_heads=4, n_kv_heads=2, seq_len=64, causal=True))
    w.request(force_timing=True)
    t = w.current_timing()
    assert t is not None
    p = open_plan(w, "Custom")
    p.params.setText("10M")
    p.params.editingFinished.emit()
    roofs, note = plan_roofs(w.plan.last, w.current_timing(), None)
    timed = {pt["label"].split(",")[0]: pt for pt in roofs[1]["points"]}
    r = t.result
    # the prefill point is the timing panel's own figure: the layer's FLOPs over its median
    assert timed["timed prefill"]["flops_s"] == pytest.approx(r.tflops * 1e12, rel=1e-9)
    assert f"prefill {r.prefill.median_ms:.4g} ms" in note and roofs[1]["peak_flops"] is None
    p.gpu.setCurrentIndex(p.gpu.findData("this-machine"))
    assert "not measured yet" in p.verdict.text() and not p.measure.isHidden()
    p.measure.click()  # the sync runner measures at once
    m = w.plan.machine
    assert m["memory_bytes"] == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") and m["peak_flops"] > 1e8
    j = w.plan.last
    assert j["gpu"]["id"] == "this-machine" and j["per_gpu"]["capacity"] == m["memory_bytes"]
    roofs, _note = plan_roofs(j, w.current_timing(), w.plan.gpu("this-machine"))
    timed = [pt for pt in roofs[0]["points"] if pt["label"].startswith("timed")]  # on the chosen roof: this machine
    assert len(roofs) == 1 and roofs[0]["peak_flops"] == pytest.approx(m["peak_flops"])
    assert timed[0]["label"].endswith("%")
    assert p.measure.text() == "Measure again"


def test_a_pin_keeps_the_plan_shows_it_in_compare_and_puts_it_back(make_window):
    w = make_window()
    assert w.pins.pin_current().plan is None  # the Plan tab never shown: pins as before
    p = open_plan(w, "Llama 3 8B")
    p.n_gpus.setValue(2)
    p.tp.setCurrentIndex(p.tp.findData(2))
    p.context.setValue(32768)
    w.tabs.setCurrentIndex(0)
    pin = w.pins.pin_current()
    assert pin.plan == {"gpu": "h100-sxm", "n_gpus": 2, "tp": 2, "weights_dtype": "bf16", "kv_dtype": "bf16",
                        "batch": 1, "context": 32768, "params": 8_030_261_248, "reserve": 0.1}
    # 8,030,261,248 x 2 / 2 + 4 KV heads a GPU: 2 x 4 x 128 x 2 bytes x 32 layers x 32,768 tokens, + 10% of the
    # H100's 81,559 MiB (as nvidia-smi reports it), rounded up
    assert pin.report["plan"]["memory_per_gpu"] == 8_030_261_248 + 2 * 4 * 128 * 2 * 32 * 32768 + 8_552_080_999
    labels = [w.pins.table.table.verticalHeaderItem(i).text().replace("\n", " ") for i in range(w.pins.table.table.rowCount())]  # wrapped names read whole
    assert "plan: memory a GPU (weights + KV + allowance)" in labels and "plan: longest context" in labels
    p.n_gpus.setValue(1)
    p.tp.setCurrentIndex(p.tp.findData(1))
    w.pins.load_on_sliders(len(w.pins.pins) - 1)
    assert (p.n_gpus.value(), p.tp.currentData(), p.context.value()) == (2, 2, 32768)


@needs_models
def test_a_real_model_changed_in_one_layer_is_planned_with_that_layer_alone_and_its_trained_context(make_window):
    """SmolLM2 with layer 0 pooled to one KV head: the plan counts 1 + 29 x 3 KV heads (it once pooled every layer:
    29 x 1), and says when the context is beyond the 8,192 tokens the model reads."""
    w = make_window()
    w.models.load("smollm2-135m")
    w.models.picker.layer.setValue(0)
    w.config_panel.n_kv_heads.slider.setValue(0)  # 1 KV head, layer 0 only
    assert w.models.shape.max_tokens == 8192
    w.tabs.setCurrentWidget(w.plan.panel)
    p = w.plan.panel
    p.kv.setCurrentText("bf16")
    p.batch.setValue(1)
    p.context.setValue(4096)
    j = w.plan.last
    per_token = 2 * 64 * (1 + 29 * 3) * 2  # K and V, head_dim 64, layer 0's one KV head and 29 layers' three, bf16
    assert j["per_gpu"]["kv_cache"] == 4096 * per_token
    assert j["max_context"] > 8192 and "beyond SmolLM2-135M's 8,192-token context" in p.verdict.text()
    p.context.setValue(16384)
    assert "the context asked (16,384 tokens)" in p.verdict.text().lower()


def test_a_parameter_count_kept_from_a_preset_is_said_in_the_verdict(make_window):
    w = make_window()
    p = open_plan(w, "DeepSeek-V3")
    assert "are DeepSeek-V3's" not in p.verdict.text()
    w.config_panel.d_model.slider.setValue(w.config_panel.d_model.slider.value() - 4)  # another model now
    assert w.config_panel.preset.currentData() is None
    assert "The parameters (671B) are DeepSeek-V3's, kept after the sliders changed the model" in p.verdict.text()
    p.params.setText("7,000,000,000")
    p.params.editingFinished.emit()  # the user's own count: nothing to warn of
    assert "are DeepSeek-V3's" not in p.verdict.text()


def test_a_kept_count_keeps_its_model_s_kind_and_active_parameters(make_window):
    """After gpt-oss-20b (a mixture of experts) and a slider move, its 20.9B kept in the box was read as dense (decode
    452 -> 80 tok/s); after all-MiniLM-L6-v2 (an encoder) a cache of millions of tokens was planned."""
    w = make_window()
    for name, check in (("gpt-oss-20b", "active"), ("all-MiniLM-L6-v2", "encoder")):
        p = open_plan(w, name)
        before = w.plan.last
        cp = w.config_panel
        cp.n_layers.slider.setValue(cp.n_layers.slider.value() - 1)
        after = w.plan.last
        assert cp.preset.currentData() is None and "kept after the sliders changed the model" in p.verdict.text()
        if check == "active":
            assert after["inputs"]["active_params"] == before["inputs"]["active_params"] is not None
        else:
            assert after["max_batch"] is None and "an encoder keeps no KV cache" in p.verdict.text()


def test_the_memory_is_the_driver_s_and_the_user_can_type_their_card_s(make_window):
    """An "80 GB" H100 is planned as 81,559 MiB (79.65 GiB), as nvidia-smi and vLLM see it; a typed figure is the
    plan's capacity, kept by a pin and put back with it; another card brings its own figure back."""
    w = make_window()
    p = open_plan(w, "Llama 3 8B")
    assert p.memory.value() == 79.65 and p.memory.isEnabled()
    assert w.plan.last["per_gpu"]["capacity"] == 81_559 * 2**20 and "81559MiB" in p.gpu_source.text()
    assert "80 GB on the datasheet" in p.gpu_source.text()
    p.gpu.setCurrentIndex(p.gpu.findData("rtx-4090"))
    assert p.memory.value() == 23.99  # 24,564 MiB
    p.memory.setValue(23.58)  # what vLLM's log says of this card
    assert w.plan.last["per_gpu"]["capacity"] == round(23.58 * 2**30) and "typed by the user" in p.gpu_source.text()
    pin = w.pins.pin_current()
    assert pin.plan["memory_gib"] == 23.58 and pin.plan["gpu"] == "rtx-4090"
    p.gpu.setCurrentIndex(p.gpu.findData("h200"))
    assert p.memory.value() == 140.40 and "memory_gib" not in p.inputs()  # 143,771 MiB: the catalogue's own
    assert w.plan.last["per_gpu"]["capacity"] == 143_771 * 2**20  # planned with the new card's, not the typed one
    w.pins.load_on_sliders(len(w.pins.pins) - 1)
    assert p.gpu.currentData() == "rtx-4090" and p.memory.value() == 23.58
    assert w.plan.last["per_gpu"]["capacity"] == round(23.58 * 2**30)


def test_a_checkpoint_s_formats_plan_its_weights_by_part(make_window):
    """gpt-oss-120b is planned as its checkpoint loads (MXFP4 experts, bf16 elsewhere: 60.7 GiB, beside the published
    60.8 GiB), a pin keeps its parts, and a model without known formats goes back to bf16."""
    w = make_window()
    p = open_plan(w, "gpt-oss-120b")
    assert p.weights.currentData() == "checkpoint"
    j = w.plan.last
    assert j["per_gpu"]["weights"] == 65_190_340_224 and j["weights"]["parts"]["experts"]["format"] == "mxfp4"
    assert "Weights, as the checkpoint stores them: " in p.details.text() and "routed experts 56.8 GiB mxfp4" in p.details.text()
    assert "(the published checkpoint: 60.8 GiB)" in p.details.text()
    pin = w.pins.pin_current()
    assert pin.plan["weights_dtype"] == "checkpoint" and pin.plan["weights"]["formats"]["experts"] == "mxfp4"
    assert pin.report["plan"]["memory_per_gpu"] == j["per_gpu"]["weights"] + j["per_gpu"]["kv_cache"] + j["per_gpu"]["reserve"]
    p.weights.setCurrentIndex(p.weights.findData("bf16"))
    assert w.plan.last["per_gpu"]["weights"] == 2 * find_preset("gpt-oss-120b").params and not w.plan.last["fits"]
    open_plan(w, "Llama 3 8B")
    assert p.weights.currentData() == "bf16" and w.plan.last["weights"] is None
    open_plan(w, "gpt-oss-120b")
    assert p.weights.currentData() == "checkpoint"
    p.weights.setCurrentIndex(p.weights.findData("checkpoint"))
    p.params.setText("100B")
    p.params.editingFinished.emit()  # a typed count is not the checkpoint's: said, not planned wrong
    assert w.plan.last is None and "the checkpoint's parts hold 116,829,156,672 parameters, not the 100,000,000,000" in (
        p.verdict.text())


def test_the_plan_as_an_engine_allocates_it_with_the_command_that_serves_it(make_window):
    from PySide6.QtWidgets import QApplication

    w = make_window()
    p = open_plan(w, "gpt-oss-120b")
    p.context.setValue(131072)
    assert not p.engine_text.isVisible() and "As the model needs it" not in p.verdict.text()
    p.engine.setCurrentIndex(p.engine.findData("vllm"))
    e = w.plan.last["engine"]
    assert "As the model needs it: Fits on one NVIDIA H100 SXM" in p.verdict.text()
    assert f"As vLLM allocates it (90% of each GPU, less the weights and 2.0 GiB of overhead): {e['tokens']:,} " \
           "tokens of KV cache" in p.verdict.text()
    assert f"GPU KV cache size: {e['tokens']:,} tokens" in p.engine_text.text()
    p.copy_command.click()
    assert QApplication.clipboard().text() == ("vllm serve openai/gpt-oss-120b --tensor-parallel-size 1 "
                                               "--max-model-len 131072 --gpu-memory-utilization 0.9")
    p.engine.setCurrentIndex(p.engine.findData("llama.cpp"))
    assert "llama_kv_cache: size =" in p.engine_text.text() and p.command_line.text().startswith(
        "llama-server -m gpt-oss-120b.gguf")
    p.kv.setCurrentText("fp8")
    assert "llama.cpp cannot serve this plan: llama.cpp keeps no fp8_e4m3 cache" in p.verdict.text()
    assert w.plan.last is not None and not p.copy_command.isVisible()  # the model's plan stands; no command to copy


def test_each_engine_s_own_knob(make_window):
    """vLLM's memory use, SGLang's static fraction (its TP default at the lowest), llama.cpp's n_ubatch: each changes
    the engine's figures and its command."""
    w = make_window()
    p = open_plan(w, "Gemma 3 27B")
    p.context.setValue(131072)
    p.engine.setCurrentIndex(p.engine.findData("vllm"))
    assert p.engine_setting_label.text() == "memory use" and p.engine_setting.value() == 0.9
    tokens = w.plan.last["engine"]["tokens"]
    p.engine_setting.setValue(0.95)
    assert w.plan.last["engine"]["tokens"] > tokens and "--gpu-memory-utilization 0.95" in p.command
    p.engine.setCurrentIndex(p.engine.findData("sglang"))
    assert p.engine_setting.specialValueText() == "by TP" and p.engine_setting.value() == 0.04  # its lowest: SGLang's own by TP
    assert w.plan.last["engine"]["mem_fraction_static"] == 0.88
    p.engine_setting.setValue(0.8)
    assert "SGLang's pool of" in p.verdict.text() and "cannot hold one request of 131,072 tokens" in p.verdict.text()
    assert p.command == ""  # a pool too small for one request: no command to copy
    assert "sliding-window pool is not modelled" in p.engine_text.text()  # Gemma 3's local layers
    p.context.setValue(16384)
    assert "--mem-fraction-static 0.8" in p.command
    p.context.setValue(131072)
    p.engine.setCurrentIndex(p.engine.findData("llama.cpp"))
    assert p.engine_setting.value() == 512
    p.engine_setting.setValue(2000)  # a local layer keeps pad(1,024 + 2,000, 256) = 3,072 cells
    assert [c["cells"] for c in w.plan.last["engine"]["caches"]] == [131072, 3072] and "-ub 2000" in p.command
    p.engine.setCurrentIndex(p.engine.findData(""))
    assert not p.engine_setting.isVisible() and w.plan.last.get("engine") is None


def test_a_plan_the_engine_would_not_start_is_said_in_orange_with_no_command(make_window):
    """Typed down to 74 GiB, gpt-oss-120b's vLLM cache holds fewer tokens than one request of 131,072: vLLM would stop
    at start-up, so the verdict says so in orange and there is no command to copy."""
    w = make_window()
    p = open_plan(w, "gpt-oss-120b")
    p.context.setValue(131072)
    p.engine.setCurrentIndex(p.engine.findData("vllm"))
    assert 'color:#009E73' in p.verdict.text() and p.copy_command.isVisible()
    p.copy_command.click()
    assert p.copy_command.text() == "Copied"
    p.memory.setValue(74)
    assert "vLLM would stop at start-up: its cache of" in p.verdict.text() and 'color:#D55E00' in p.verdict.text()
    assert not p.copy_command.isVisible() and not p.command_line.isVisible()
    assert "cannot hold one request of 131,072 tokens" in p.engine_text.text()
