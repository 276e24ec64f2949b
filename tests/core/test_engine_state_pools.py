"""A hybrid stack's recurrent state as each engine allocates it, against the engines' own rules written out by hand
from their source (vLLM's MambaSpec pages and HybridAttentionMambaModelConfig, SGLang v0.5.9's handle_max_mamba_cache,
llama.cpp's llama_memory_recurrent) and against a llama-server log of a real model."""

import argparse

import pytest

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.arch.presets import find_preset
from core.arch.stack import Stack, parse_pattern
from core.kinds.gated_deltanet.spec import GDNWidths
from core.plan.engines.engine_plan import LLAMACPP_ARGS, SGLANG_ARGS, engine_plan
from core.plan.engines.vllm_plan import SERVE_ARGS
from core.plan.fit import PlanInput, weight_bytes
from core.plan.gpus import find_gpu

GIB, MIB = 2**30, 2**20


def cdiv(a, b):
    return -(-a // b)


def plan_of(key, tp=1, context=32768, batch=1, state="float32", kv="bfloat16"):
    preset = find_preset(key)
    arch = preset.apply(AttentionConfig(dtype="bfloat16", kv_dtype=kv)).architecture()
    return PlanInput(arch, preset.params, find_gpu("h200"), n_gpus=tp, tp=tp, batch=batch, context=context,
                     kv_dtype=kv, state_dtype=state)


def args_of(command, spec, positionals=()):
    p = argparse.ArgumentParser(exit_on_error=False, allow_abbrev=False)
    for name in positionals:
        p.add_argument(name)
    for flag, (kind, choices) in spec.items():
        p.add_argument(flag, type=kind, choices=choices or None)
    return p.parse_args(command)


# Qwen3-Next-80B-A3B: 36 Gated DeltaNet layers (32 value heads, 16 key heads, 128 wide, kernel 4) and 12 attention
# layers (2 KV heads of 256). Its convolution runs over conv_dim = 2 x 16 x 128 + 32 x 128 = 8,192 channels.
CONV_DIM, GDN_LAYERS, ATTN_LAYERS = 8192, 36, 12


@pytest.mark.parametrize(("state", "bytes_per_value", "block"), [("bfloat16", 2, 272), ("float32", 4, 528)])
def test_vllm_grows_the_attention_block_until_its_page_holds_a_gdn_state(state, bytes_per_value, block):
    p = plan_of("Qwen3-Next-80B-A3B", tp=4, state=state)
    e = engine_plan("vllm", p)
    # gated_delta_net_state_shape at TP 4: conv (k - 1, 8,192 / 4) in bf16, state (32 / 4, 128, 128) in the state dtype
    page = 3 * CONV_DIM // 4 * 2 + 8 * 128 * 128 * bytes_per_value
    one_token = 1 * (256 + 256) * 2  # one KV head a GPU (2 over TP 4 replicate), K and V in bf16
    assert e["state"]["layer_bytes"] == page
    assert e["block_size"] == 16 * cdiv(page, 16 * one_token) == block
    assert e["page_bytes"] == block * one_token and e["padding_percent"] == pytest.approx(
        100 * (block * one_token - page) / page)
    # 12 attention and 36 recurrent layers: groups of 12 (36 >= 1.5 x 12), 1 attention group and 3 recurrent ones
    assert (e["group_size"], e["groups"]) == (12, 4)
    available = int(p.gpu.memory_bytes * 0.9) - weight_bytes(p) - 2 * GIB
    assert e["available_bytes"] == available
    assert e["num_blocks"] == available // (block * one_token) // 12
    assert e["tokens"] == e["num_blocks"] // 4 * block  # _report_kv_cache_config: blocks // groups x the least block
    assert e["blocks_per_request"] == cdiv(32768, block) + 3  # one block of each recurrent group
    assert f"Setting attention block size to {block} tokens" in e["log"][0]
    args = args_of(e["command"][1:], SERVE_ARGS, ["serve", "model"])
    assert args.mamba_ssm_cache_dtype == ("float32" if state == "float32" else None)  # "auto" keeps the model's bf16


def test_vllm_keeps_kda_s_state_in_float32_whatever_it_is_told():
    e = engine_plan("vllm", plan_of("Kimi-Linear-48B-A3B", state="bfloat16"))
    assert e["state"]["state_format"] == "float32" and "keeps this model's recurrent state in float32" in e["note"]


def test_sglang_gives_the_state_pool_r_over_1_plus_r_of_what_the_weights_leave():
    from core.plan.engines.state import engine_state

    whole = engine_state(plan_of("Qwen3-Next-80B-A3B").arch, 1, "sglang", "float32")
    assert whole.sequence_bytes == GDN_LAYERS * (CONV_DIM * 3 * 2 + 32 * 128 * 128 * 4) == 77_266_944  # 73.7 MiB
    p = plan_of("Qwen3-Next-80B-A3B", tp=4)
    e = engine_plan("sglang", p)
    per_request = GDN_LAYERS * (CONV_DIM // 4 * 3 * 2 + 8 * 128 * 128 * 4)  # bf16 conv, float32 state, over TP 4
    assert e["state"]["sequence_bytes"] == per_request
    rest = p.gpu.memory_bytes - weight_bytes(p) - p.gpu.memory_bytes * (1 - 0.85)  # mem_fraction_static 0.85 at TP 4
    slots = int(rest * 0.9 / 1.9 // per_request)
    cell = ATTN_LAYERS * 1 * (256 + 256) * 2  # the attention layers only, one KV head a GPU
    assert (e["mamba_slots"], e["cell_bytes"]) == (slots, cell)
    assert e["tokens"] == int(rest - slots * per_request) // cell
    assert e["max_running_requests"] == min(max(int(e["tokens"] / 32768 * 512), 2048), 4096, slots // 3)
    assert e["log"][0].startswith(f"Mamba Cache is allocated. max_mamba_cache_size: {slots}, conv_state size: "
                                  f"{GDN_LAYERS * (slots + 1) * CONV_DIM // 4 * 3 * 2 / GIB:.2f}GB")
    args = args_of(e["command"][3:], SGLANG_ARGS)
    assert args.mamba_ssm_dtype == "float32"


def test_sglang_refuses_a_state_it_cannot_hold_and_layers_it_does_not_serve():
    with pytest.raises(ValueError, match="SGLang serves no model with Mamba-1 layers; plan this model with vLLM or "
                                         "llama.cpp"):
        engine_plan("sglang", plan_of("Jamba-v0.1", tp=4))
    with pytest.raises(ValueError, match="keeps a recurrent state in float32 or bfloat16, not fp8_e4m3"):
        engine_plan("sglang", plan_of("Qwen3-Next-80B-A3B", tp=4, state="fp8_e4m3"))
    with pytest.raises(ValueError, match="llama.cpp serves no model with Lightning attention layers"):
        engine_plan("llama.cpp", plan_of("MiniMax-Text-01", tp=8))


def qwen35_27b():
    """Qwen3.5-27B's layer stack: 64 layers, every 4th attention; its linear layers 48 value heads and 16 key heads
    of 128, kernel 4 (its config.json)."""
    gdn = LayerSpec(48, 16, 128, widths=GDNWidths(k_head_dim=128, v_head_dim=128, conv_kernel=4))
    stack = Stack(parse_pattern("3:1", "D", 64), (("D", gdn),))
    cfg = AttentionConfig(d_model=5120, n_heads=24, n_kv_heads=4, explicit_head_dim=256, n_layers=64, stack=stack, causal=True,
                          dtype="bfloat16")
    return cfg.architecture()


def test_llama_cpp_s_recurrent_memory_matches_a_llama_server_log():
    # ggml-org/llama.cpp PR #23792, Qwen3.5-27B with -np 2:
    # "llama_memory_recurrent: size =  299.25 MiB (     2 cells,  64 layers,  2 seqs  0 rs_seq), R (f32):   11.25 MiB,
    #  S (f32):  288.00 MiB"
    p = PlanInput(qwen35_27b(), 27 * 10**9, find_gpu("h200"), batch=2, context=8192)
    e = engine_plan("llama.cpp", p, "Qwen3.5-27B")
    assert e["recurrent"]["r_bytes"] == round(11.25 * MIB) and e["recurrent"]["s_bytes"] == 288 * MIB
    assert e["log"][-1] == ("llama_memory_recurrent: size =  299.25 MiB (     2 cells,  64 layers,  2 seqs  0 rs_seq), "
                            "R (f32):   11.25 MiB, S (f32):  288.00 MiB")
    assert e["caches"][0]["layers"] == 16  # the KV cache holds the attention layers only


def test_llama_cpp_keeps_f32_state_names_its_sequences_and_counts_no_kv_for_recurrent_layers():
    e = engine_plan("llama.cpp", plan_of("Qwen3-Next-80B-A3B", state="bfloat16"), "Qwen3-Next")
    # n_embd_r = (k - 1) x (d_inner + 2 G N) = 3 x 8,192; n_embd_s = N x d_inner = 128 x 4,096; f32; 36 layers
    assert e["recurrent"]["bytes"] == 36 * (3 * 8192 + 128 * 4096) * 4 == round(75.375 * MIB)
    assert "keeps this model's recurrent state in float32, not the bfloat16" in e["note"]
    assert e["bytes"] == 12 * 2 * 2 * 256 * 2 * 32768 + e["recurrent"]["bytes"]  # pad(32,768) cells, 12 layers
    args = args_of(e["command"][1:], LLAMACPP_ARGS)
    assert args.np == 1  # named: llama-server would otherwise keep 4 sequences' state


def test_mamba2_groups_that_tp_does_not_divide_are_counted_as_tp_groups():
    # Nemotron-H-8B: 128 heads of 64, 8 groups, state 128, kernel 4; at TP 16, vLLM's extra_groups_for_head_shards
    # makes 8 groups 16: conv (k - 1, (8,192 + 2 x 16 x 128) / 16) in bf16, state (128 / 16, 64, 128) in float32
    e = engine_plan("vllm", plan_of("Nemotron-H-8B", tp=16))
    assert e["state"]["conv_bytes"] == 3 * (8192 + 2 * 16 * 128) // 16 * 2
    assert e["state"]["recurrent_bytes"] == 8 * 64 * 128 * 4


def test_a_pipeline_is_planned_on_the_stage_that_holds_least():
    """Qwen3-Next over 8 pipeline stages of 6 layers: stages hold 1 or 2 attention layers (every 4th layer is
    attention), and the engine serves what its tightest stage's GPUs hold, as the model's own plan counts it."""
    from core.plan.engines.sglang import sglang_pool
    from core.plan.engines.state import engine_state
    from core.plan.fit import stages

    p = plan_of("Qwen3-Next-80B-A3B", tp=1)
    p = PlanInput(p.arch, p.params, p.gpu, n_gpus=8, tp=1, context=32768, state_dtype="float32")
    e = engine_plan("sglang", p)
    per_stage = []
    for r in stages(48, 8):
        stage = type(p.arch)(p.arch.d_model, tuple(p.arch.layers[i] for i in r), p.arch.kind)
        pool = sglang_pool(stage, 1, "bfloat16", p.gpu.memory_bytes, weight_bytes(p), None,
                           engine_state(stage, 1, "sglang", "float32"), 32768)
        per_stage.append(pool)
    assert sorted({pool.cell_bytes for pool in per_stage}) == [2 * 2 * 512 * 2 // 2, 2 * 2 * 512 * 2]
    tightest = min(per_stage, key=lambda pool: pool.max_concurrency(32768))
    assert e["cell_bytes"] == tightest.cell_bytes == 2 * 2 * 512 * 2  # two attention layers of 2 KV heads of 256
    assert e["max_concurrency"] == tightest.max_concurrency(32768)


def test_a_stack_of_recurrent_layers_only_needs_no_token_pool():
    from core.arch.model import Architecture

    qwen = plan_of("Qwen3-Next-80B-A3B").arch
    arch = Architecture(qwen.d_model, tuple(s for s in qwen.layers if s.kind != "standard"), qwen.kind)
    e = engine_plan("sglang", PlanInput(arch, 8 * 10**9, find_gpu("h200"), context=4096))
    assert e["cell_bytes"] == 0 and not e["refusal"]
    assert e["max_concurrency"] == e["max_running_requests"] == min(2048, e["mamba_slots"] // 3)


def test_vllm_keeps_deepseek_v3_2_s_index_keys_as_fp8_records_beside_its_latent():
    """vLLM: the latent in the KV format (fp8: FlashMLA's sparse fp8_ds_mla record, 656 B) and the index key
    always as 128 fp8 values and an fp32 scale (DeepseekV32IndexerCache, 132 B), in blocks of 64 tokens."""
    for kv, latent in (("bfloat16", 576 * 2), ("fp8_e4m3", 656)):
        p = plan_of("DeepSeek-V3.2", tp=8, kv=kv)
        e = engine_plan("vllm", PlanInput(p.arch, p.params, p.gpu, n_gpus=8, tp=8, kv_dtype=kv,
                                          weights_dtype="fp8", context=32768))
        assert (e["block_size"], e["page_bytes"]) == (64, 64 * (latent + 132))
        assert e["num_blocks"] == e["available_bytes"] // (64 * (latent + 132)) // 61


def test_a_decode_step_of_a_sparse_model_reads_its_selection_not_its_whole_cache():
    """DeepSeek-V3.2 at 1M tokens on 8 pipeline stages (61 layers: 8 in the first): one step reads each layer's top
    2,048 latents (1,152 B in bf16) and every index key (256 B), besides the active weights' share."""
    from core.plan.fit import active_weight_bytes, decode_bounds

    p = plan_of("DeepSeek-V3.2", context=2**20)
    p = PlanInput(p.arch, p.params, p.gpu, n_gpus=8, tp=1, context=2**20, active_params=p.active_params)
    read = 8 * (2048 * 1152 + 2**20 * 256)
    assert decode_bounds(p).bytes_per_gpu == -(-active_weight_bytes(p) // 8) + read
