"""A pin keeps the Plan tab's inputs: its Compare rows are the plan recounted (never read from the file),
a workspace round trip keeps the plan, and a plan that does not fit its pin's configuration is refused."""

import json

import pytest

from core.arch.config import AttentionConfig
from core.plan.fit import PlanInput, plan
from core.plan.gpus import find_gpu
from core.study.compare import comparison
from core.study.workspace import Pin, load_workspace, pin_report, save_workspace

LLAMA = AttentionConfig(d_model=8192, n_heads=64, n_kv_heads=8, n_layers=80, seq_len=1024, causal=True)
PLAN = {"gpu": "h100-sxm", "n_gpus": 8, "tp": 8, "weights_dtype": "bf16", "kv_dtype": "fp8", "batch": 8,
        "context": 131072, "params": 70_553_706_496, "reserve": 0.1}


def pinned(name, cfg, plan_inputs):
    pin = Pin(name=name, config=cfg, report={}, tokens=["x"], plan=plan_inputs)
    pin.report = pin_report(pin, None)
    return pin


def test_the_compare_table_shows_each_pins_plan_as_core_plan_counts_it():
    a, b = pinned("A", LLAMA, PLAN), pinned("B", LLAMA, {**PLAN, "n_gpus": 16, "tp": 16})
    rows = {r.label: r for r in comparison([a.report, b.report], 0)}
    ref = plan(PlanInput(LLAMA.architecture(), PLAN["params"], find_gpu("h100-sxm"), 8, 8, "bf16", "fp8", 8, 131072))
    assert a.report["plan"]["memory_per_gpu"] == ref.weights + ref.kv_cache + ref.reserve
    assert rows["plan: KV cache a GPU"].cells[1].relation == "="  # TP 16 replicates the 8 KV heads
    assert rows["plan: memory a GPU (weights + KV + allowance)"].cells[1].better is True and rows["plan: fits"].cells[0].text == "yes"
    assert rows["plan"].cells[1].text.startswith("16 x NVIDIA H100 SXM (79.65 GiB), TP 16")
    plain = [pinned("C", LLAMA, None).report, pinned("D", LLAMA, None).report]
    assert not [r for r in comparison(plain, 0) if r.label.startswith("plan")]  # no plan: no plan rows


def test_a_workspace_keeps_the_plan_and_recounts_it(tmp_path):
    path = tmp_path / "ws.json"
    save_workspace(path, [pinned("A", LLAMA, PLAN), pinned("B", LLAMA, None)])
    a, b = load_workspace(path)
    assert a.plan == PLAN and b.plan is None and a.report["plan"]["fits"] == "yes"
    data = json.loads(path.read_text())
    assert "plan" not in data["pins"][1]  # a pin without a plan is written as before
    data["pins"][0]["report"]["plan"]["fits"] = "no"  # an edited figure is recounted, not believed
    path.write_text(json.dumps(data))
    assert load_workspace(path)[0].report["plan"]["fits"] == "yes"


@pytest.mark.parametrize("change, words", [
    ({"tp": 3, "n_gpus": 3}, "does not fit its configuration: a TP degree of 3 does not divide 64"),
    ({"gpu": "h300"}, "plan.gpu must be one of"),
    ({"batch": 0}, "plan.batch must be from 1"),
    ({"reserve": 2}, "plan.reserve must be a finite number from 0 to 0.99"),
    ({"kv_dtype": "int3"}, "KV dtype 'int3' is not known"),
    ({"extra": 1}, "needs exactly the fields"),
    ({"context": 2**31}, "plan.context must be from 1 to 1,073,741,824"),
    ({"gpu": "this-machine", "machine": {"name": "x", "memory_bytes": 2**34, "peak_flops": 1e-320,
                                         "bandwidth_bytes_s": 1e10, "dtype": "fp32", "how": ""}},
     "plan.machine.peak_flops must be a finite number from 1e\\+06"),
    ({"gpu": "this-machine", "machine": {"name": "x", "memory_bytes": 2**60, "peak_flops": 1e10,
                                         "bandwidth_bytes_s": 1e10, "dtype": "fp32", "how": ""}},
     "plan.machine.memory_bytes must be from"),
    ({"memory_gib": "80"}, "plan.memory_gib must be a number"),
    ({"memory_gib": float("nan")}, "plan.memory_gib must be a finite number"),
    ({"memory_gib": 0.1}, "plan.memory_gib must be a finite number from 0.25"),
    ({"weights_dtype": "checkpoint"}, "checkpoint formats are not known"),
    ({"weights_dtype": "checkpoint", "weights": {"params": {"experts": 7}}}, "a params object and a formats object"),
    ({"weights_dtype": "checkpoint", "weights": {"params": {"gills": 7}, "formats": {"gills": "bf16"}}},
     "unknown weight part"),
    ({"weights_dtype": "checkpoint", "weights": {"params": {"experts": "7"}, "formats": {"experts": "bf16"}}},
     "parameter count must be a whole number"),
    ({"weights_dtype": "checkpoint", "weights": {"params": {"experts": 7}, "formats": {"experts": "fp3"}}},
     "weight format 'fp3' is not known"),
    ({"weights_dtype": "checkpoint", "weights": {"params": {"experts": 7}, "formats": {"experts": "bf16"}}},
     "parts hold 7 parameters"),
])
def test_a_bad_plan_in_a_file_is_refused_with_what_is_wrong(tmp_path, change, words):
    path = tmp_path / "ws.json"
    save_workspace(path, [pinned("A", LLAMA, PLAN)])
    data = json.loads(path.read_text())
    data["pins"][0]["plan"].update(change)
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=words):
        load_workspace(path)


def test_a_mixture_of_experts_pin_decodes_its_active_parameters():
    moe = pinned("M", LLAMA, {**PLAN, "params": 600_000_000_000, "active_params": 37_000_000_000})
    dense = pinned("D", LLAMA, {**PLAN, "params": 600_000_000_000})
    ref = plan(PlanInput(LLAMA.architecture(), 600_000_000_000, find_gpu("h100-sxm"), 8, 8, "bf16", "fp8", 8, 131072))
    # a step reads the active weights' share and the cache: 37e9 x 2 / 8 + the cache, against 600e9 x 2 / 8
    bw = find_gpu("h100-sxm").bandwidth_bytes_s
    assert moe.report["plan"]["decode_tokens_s"] == pytest.approx(8 * bw / (37e9 * 2 / 8 + ref.kv_cache))
    assert dense.report["plan"]["decode_tokens_s"] == pytest.approx(8 * bw / (600e9 * 2 / 8 + ref.kv_cache))


def test_this_machine_s_memory_is_measured_never_typed(tmp_path):
    machine = {"name": "x", "memory_bytes": 2**34, "peak_flops": 1e12, "bandwidth_bytes_s": 1e10, "dtype": "fp32",
               "how": "measured"}
    path = tmp_path / "ws.json"
    save_workspace(path, [pinned("A", LLAMA, PLAN)])
    data = json.loads(path.read_text())
    data["pins"][0]["plan"].update({"gpu": "this-machine", "machine": machine, "memory_gib": 3.0})
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="this machine's is measured"):
        load_workspace(path)
