"""`attention-sandbox plan`: the issue's question, answered to the byte from the preset's config and
count; the documented JSON keys; the catalogue; bad input refused in one sentence."""

import json

import pytest

from core.arch.presets import find_preset
from sandbox.cli.main import main
from tests.cli.conftest import run_cli

KEYS = {"inputs", "gpu", "per_gpu", "fits", "max_context", "max_batch", "kv_heads_per_gpu", "kv_replication",
        "layers_per_stage", "stage_kv_cache", "memory_curve", "tp_sweep", "decode", "roofline", "roofline_local",
        "weights"}


def plan(capsys, *args):
    assert main(["plan", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_llama_3_70b_with_fp8_kv_at_128k_and_batch_8_on_8_and_16_h100s(capsys):
    args = ["--preset", "llama-3-70b", "--gpu", "h100-sxm", "--batch", "8", "--context", "131072", "--kv-dtype", "fp8"]
    on8 = plan(capsys, *args, "--gpus", "8", "--tp", "8")
    assert set(on8) == KEYS and set(on8["per_gpu"]) == {"weights", "kv_cache", "reserve", "free", "capacity"}
    params = find_preset("llama-3-70b").params
    assert on8["per_gpu"]["weights"] == params * 2 // 8 == 17_638_426_624  # bf16 weights over 8 GPUs
    # 80 layers x 1 KV head a GPU x 128 x (K, V) x 1 byte, x 131,072 tokens x 8 sequences
    assert on8["per_gpu"]["kv_cache"] == 80 * 1 * 128 * 2 * 1 * 131072 * 8 == 21_474_836_480
    assert on8["fits"] is True and on8["per_gpu"]["capacity"] == 81_559 * 2**20  # nvidia-smi's 81,559 MiB
    assert (on8["kv_heads_per_gpu"], on8["kv_replication"]) == (1, 1)
    on16 = plan(capsys, *args, "--gpus", "16", "--tp", "16")
    assert on16["per_gpu"]["kv_cache"] == on8["per_gpu"]["kv_cache"]  # the 8 KV heads are replicated, not split
    assert (on16["kv_heads_per_gpu"], on16["kv_replication"]) == (1, 2)
    assert on16["per_gpu"]["weights"] == params * 2 // 16
    sweep = {r["tp"]: r for r in on8["tp_sweep"]}  # every degree of 64 heads, one pipeline stage
    assert sorted(sweep) == [1, 2, 4, 8, 16, 32, 64] and sweep[16]["kv_cache"] == on16["per_gpu"]["kv_cache"]
    assert sweep[4]["kv_cache"] == 2 * sweep[8]["kv_cache"] and sweep[64]["kv_cache"] == sweep[8]["kv_cache"]
    staged = plan(capsys, *args, "--gpus", "16", "--tp", "8")  # TP 8 x 2 pipeline stages of 40 layers
    assert staged["per_gpu"]["kv_cache"] == on8["per_gpu"]["kv_cache"] // 2 and staged["layers_per_stage"] == 40
    assert staged["stage_kv_cache"] == [on8["per_gpu"]["kv_cache"] // 2] * 2
    fixed = on8["per_gpu"]["weights"] + on8["per_gpu"]["reserve"]
    assert dict(on8["memory_curve"])[131072] == fixed + on8["per_gpu"]["kv_cache"]  # the curve passes the plan
    one = plan(capsys, *args, "--gpus", "1", "--tp", "1")
    assert one["fits"] is False and one["max_batch"] == 0  # 141 GB of weights on one 79.65 GiB GPU


def test_the_decode_bound_and_the_roofline_points_say_which_roof(capsys):
    j = plan(capsys, "--preset", "llama-3-8b", "--gpu", "h200", "--context", "8192")
    d = j["decode"]
    assert d["bound"] == "bandwidth" and d["tokens_per_s"] == pytest.approx(4.8e12 / d["bytes_per_gpu"])
    assert j["roofline"]["decode"]["limit"] == "memory" and j["roofline"]["prefill"]["limit"] == "compute"
    assert j["roofline"]["prefill"]["bound_flops"] == 989.4e12


def test_an_encoder_is_planned_with_no_cache(capsys):
    j = plan(capsys, "--preset", "all-minilm-l6-v2")
    assert j["inputs"]["kind"] == "encoder" and j["per_gpu"]["kv_cache"] == 0
    assert (j["max_batch"], j["decode"], j["max_context"]) == (None, None, None)


def test_the_catalogue_lists_every_gpu_with_its_source(capsys):
    assert main(["plan", "--list-gpus"]) == 0
    out = capsys.readouterr().out
    for gpu in ("h100-sxm", "h200", "b200", "a100-80gb", "l40s", "rtx-4090", "rtx-5090", "mi300x"):
        assert out.count(f"\n{gpu} ") + out.startswith(f"{gpu} ") == 1, gpu
    assert "989.4" in out and "1979 TFLOP" not in out


@pytest.mark.parametrize("args, words", [
    (["--preset", "llama-3-8b", "--tp", "3", "--gpus", "3"], "does not divide 32 query heads"),
    (["--preset", "llama-3-8b", "--gpus", "0"], "number of GPUs must be"),
    (["--preset", "llama-3-8b", "--gpu", "h300"], "not in the catalogue"),
    (["--preset", "llama-3-8b", "--context", "0"], "the context must be"),
    (["--preset", "small-about-125m"], "--params"),
    (["--preset", "llama-3-8b", "--kv-dtype", "int2"], "KV dtype 'int2' is not known"),
    (["--preset", "llama-3-8b", "--reserve", "1.5"], "runtime allowance"),
    (["--preset", "llama-3-8b", "--gpus", "1" + "0" * 30], "not a huge number"),
    (["--preset", "llama-3-8b", "--context", str(2**40)], "the context must be a whole number from 1 to 1,073,741,824"),
    (["--preset", "deepseek-v3", "--kv-lora-rank", "500", "--kv-dtype", "q4_0"], "not a multiple of 32"),
])
def test_bad_input_is_one_sentence(capsys, args, words):
    with pytest.raises(SystemExit) as e:
        main(["plan", *args])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and "Traceback" not in err


def test_a_preset_that_knows_its_checkpoint_is_planned_as_it_loads(capsys):
    """gpt-oss-120b: MXFP4 experts and bf16 elsewhere by default; --weights-dtype bf16 plans every weight in bf16."""
    j = plan(capsys, "--preset", "gpt-oss-120b", "--gpu", "h100-sxm", "--context", "131072")
    w = j["weights"]
    assert j["inputs"]["weights_dtype"] == "checkpoint" and w["mode"] == "checkpoint"
    assert w["parts"]["experts"]["format"] == "mxfp4" and w["parts"]["attention"]["format"] == "bf16"
    assert j["per_gpu"]["weights"] == w["total_bytes"] == 65_190_340_224
    assert w["checkpoint_bytes"] == round(60.8 * 2**30)
    flat = plan(capsys, "--preset", "gpt-oss-120b", "--gpu", "h100-sxm", "--context", "131072", "--weights-dtype", "bf16")
    assert flat["weights"]["mode"] == "bf16" and flat["per_gpu"]["weights"] == 2 * find_preset("gpt-oss-120b").params
    assert flat["fits"] is False
    code, _out, err = run_cli(capsys, "plan", "--preset", "llama-3-8b", "--weights-dtype", "checkpoint")
    assert code == 2 and "checkpoint formats are not known" in err and len(err.strip().splitlines()) == 1


def test_the_plan_as_vllm_allocates_it(capsys):
    """--engine vllm: the memory vLLM gives the cache, the tokens and concurrency it would log, the command."""
    j = plan(capsys, "--preset", "gpt-oss-120b", "--gpu", "h100-sxm", "--context", "131072", "--engine", "vllm")
    e = j["engine"]
    available = int(81_559 * 2**20 * 0.9) - j["per_gpu"]["weights"] - 2 * 2**30
    assert e["available_bytes"] == available and e["block_size"] == 16 and (e["groups"], e["group_size"]) == (2, 18)
    assert e["num_blocks"] == available // 32768 // 18 and e["tokens"] == e["num_blocks"] // 2 * 16
    assert e["log"][1] == f"GPU KV cache size: {e['tokens']:,} tokens"
    assert e["command"] == ["vllm", "serve", "openai/gpt-oss-120b", "--tensor-parallel-size", "1", "--max-model-len",
                            "131072", "--gpu-memory-utilization", "0.9"]
    code, _out, err = run_cli(capsys, "plan", "--preset", "llama-3-8b", "--kv-dtype", "q8_0", "--engine", "vllm")
    assert code == 2 and "vLLM keeps no q8_0 cache" in err
    code, _out, err = run_cli(capsys, "plan", "--preset", "llama-3-8b", "--engine", "vllm", "--engine-overhead-gib", "nan")
    assert code == 2 and "--engine-overhead-gib must be from 0" in err


@pytest.mark.parametrize("preset", ["llama-3-8b", "qwen3-next-80b-a3b"])
def test_the_text_table_prints_every_per_gpu_figure_of_the_json(capsys, preset):
    """A plain model's plan has no state row, a hybrid stack's has one; both print every figure the JSON holds."""
    j = plan(capsys, "--preset", preset, "--gpu", "h200", "--gpus", "4", "--tp", "4")
    assert main(["plan", "--preset", preset, "--gpu", "h200", "--gpus", "4", "--tp", "4"]) == 0
    text = capsys.readouterr().out
    for key, value in j["per_gpu"].items():
        assert f"  {key.replace('_', ' '):<10} {value:>20,} B" in text
    assert ("state" in j["per_gpu"]) == (preset != "llama-3-8b")
