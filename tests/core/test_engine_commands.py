"""The commands that serve a plan parse with each engine's own argument names and choices (kept as data), and carry
the plan's parallelism, context and cache format."""

import argparse

import pytest

from core.arch.config import AttentionConfig
from core.arch.presets import find_preset
from core.plan.engines.engine_plan import LLAMACPP_ARGS, SGLANG_ARGS, engine_plan
from core.plan.engines.vllm_plan import SERVE_ARGS
from core.plan.gpus import find_gpu
from core.plan.report import plan_inputs


def parser(positionals, args):
    p = argparse.ArgumentParser(exit_on_error=False, allow_abbrev=False)
    for name in positionals:
        p.add_argument(name)
    for flag, (kind, choices) in args.items():
        p.add_argument(flag, type=kind, choices=choices or None)
    return p


def plan_of(key, gpus, tp, kv, context, batch=1):
    preset = find_preset(key)
    cfg = preset.apply(AttentionConfig(dtype="bfloat16", kv_dtype=kv))
    return plan_inputs(cfg, preset.params, find_gpu("h200"), gpus, tp, "fp8", kv, batch, context, 0.1,
                       preset.kind), preset


@pytest.mark.parametrize(("engine", "kv"), [("vllm", "fp8_e4m3"), ("sglang", "fp8_e5m2"), ("sglang", "bfloat16"),
                                            ("vllm", "bfloat16")])
def test_server_commands_parse_with_the_engine_s_arguments(engine, kv):
    p, preset = plan_of("llama-3-70b", 16, 8, kv, 32768)
    e = engine_plan(engine, p, preset.repo)
    if engine == "vllm":
        args = parser(["serve", "model"], SERVE_ARGS).parse_args(e["command"][1:])
        assert (args.tensor_parallel_size, args.pipeline_parallel_size, args.max_model_len) == (8, 2, 32768)
    else:
        assert e["command"][:3] == ["python", "-m", "sglang.launch_server"]
        args = parser([], SGLANG_ARGS).parse_args(e["command"][3:])
        assert (args.model_path, args.tp_size, args.pp_size, args.context_length) == (preset.repo, 8, 2, 32768)
        assert args.mem_fraction_static == 0.81  # SGLang's default at TP 8
        assert args.kv_cache_dtype == (None if kv == "bfloat16" else kv)


@pytest.mark.parametrize("kv", ["float16", "q8_0", "q4_0"])
def test_llama_server_commands_parse_with_llama_cpp_s_arguments(kv):
    p, preset = plan_of("gemma-3-27b", 1, 1, kv, 65536, batch=2)
    e = engine_plan("llama.cpp", p, preset.repo, n_ubatch=256)
    assert e["command"][0] == "llama-server"
    args = parser([], LLAMACPP_ARGS).parse_args(e["command"][1:])
    assert (args.m, args.c, args.ub, args.np) == ("gemma-3-27b-it.gguf", 131072, 256, 2)
    short = {"float16": "f16", "q8_0": "q8_0", "q4_0": "q4_0"}[kv]
    assert args.ctk == args.ctv == short and args.fa == ("on" if kv != "float16" else None)
    # two sequences: the global layers keep 131,072 cells, the local ones pad(1,024 x 2 + 256)
    assert [c["cells"] for c in e["caches"]] == [131072, 2304]


def test_what_no_engine_would_serve_is_said():
    """An encoder has no cache; fp32 and fp16 caches are not vLLM's or SGLang's; llama.cpp's limits; a cache that
    cannot hold one request (or no memory at all) is vLLM's start-up refusal, in a sentence."""
    enc, preset = plan_of("all-minilm-l6-v2", 1, 1, "bfloat16", 256)
    with pytest.raises(ValueError, match="an encoder keeps no KV cache"):
        engine_plan("vllm", enc, preset.repo)
    for engine, kv in (("vllm", "float32"), ("vllm", "float16"), ("sglang", "float32")):
        p, preset = plan_of("llama-3-8b", 1, 1, kv, 8192)
        with pytest.raises(ValueError, match=f"keeps no {kv} cache"):
            engine_plan(engine, p, preset.repo)
    p, preset = plan_of("llama-3-8b", 1, 1, "bfloat16", 8192, batch=257)
    with pytest.raises(ValueError, match="at most 256 sequences"):
        engine_plan("llama.cpp", p, preset.repo)
    p, preset = plan_of("mistral-7b-v0-1", 1, 1, "bfloat16", 32768)
    e = engine_plan("llama.cpp", p, preset.repo, n_ubatch=4096)
    assert ["-b", "4096"] == e["command"][e["command"].index("-b"):][:2]  # or llama.cpp caps -ub at its -b of 2,048
    p, preset = plan_of("llama-3-8b", 1, 1, "bfloat16", 8192)
    starved = engine_plan("vllm", p, preset.repo, utilization=0.05)
    assert starved["refusal"].startswith("vLLM would stop at start-up: the weights and 2.0 GiB of overhead leave no")
    p, preset = plan_of("llama-3-70b", 8, 8, "bfloat16", 10_000_000)
    long = engine_plan("vllm", p, preset.repo)
    assert long["tokens"] < 10_000_000 and "cannot hold one request of 10,000,000 tokens" in long["refusal"]
    assert engine_plan("vllm", plan_of("llama-3-8b", 1, 1, "bfloat16", 8192)[0], "-rf /")["command"][2] == "MODEL"
