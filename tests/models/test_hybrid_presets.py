"""Every hybrid preset's stack is its real model's: each layer's kind where the model has it, and the token mixers'
parameters summed over the whole stack equal transformers' model built on the meta device with the same config (no
weights downloaded). FLOPs of the torch forms are FlopCounterMode's; bad stacks are refused in a sentence."""

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.arch.presets import find_preset
from core.arch.stack import OWN, Stack, parse_pattern
from core.counts import kind_counts, model_counts
from core.kinds.gated_deltanet.kind import gdn_core_flops
from core.kinds.gated_deltanet.layer import GDNLayer
from core.kinds.gated_deltanet.spec import GDNWidths
from core.kinds.mamba1.spec import Mamba1Widths
from core.kinds.mamba2.kind import ssd_core_flops
from core.kinds.mamba2.layer import Mamba2Layer
from core.kinds.mamba2.spec import Mamba2Widths
from core.kinds.registry import kind_of

transformers = pytest.importorskip("transformers")

NEMOTRON_H_8B = "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"


def meta_model(name):
    """(the transformers model on the meta device, the token mixer of each of its layers in order, None for a block
    that mixes no tokens)."""
    if name == "Qwen3-Next-80B-A3B":
        config = transformers.Qwen3NextConfig(intermediate_size=5120)
        with torch.device("meta"):
            model = transformers.Qwen3NextForCausalLM(config)
        mixers = [getattr(layer, "linear_attn", None) or layer.self_attn for layer in model.model.layers]
    elif name == "Qwen3.5-9B":
        config = transformers.Qwen3_5TextConfig()
        with torch.device("meta"):
            model = transformers.Qwen3_5ForCausalLM(config)
        mixers = [getattr(layer, "linear_attn", None) or layer.self_attn for layer in model.model.layers]
    elif name == "Kimi-Linear-48B-A3B":  # its config.json's full_attn_layers 4, 8, ..., 24, 27 are 1-based
        full = {3, 7, 11, 15, 19, 23, 26}
        config = transformers.KimiLinearConfig(
            layer_types=["full_attention" if i in full else "linear_attention" for i in range(27)])
        with torch.device("meta"):
            model = transformers.KimiLinearForCausalLM(config)
        mixers = [layer.self_attn for layer in model.model.layers]
    elif name == "MiniMax-Text-01":
        config = transformers.MiniMaxConfig(
            hidden_size=6144, num_hidden_layers=80, num_attention_heads=64, num_key_value_heads=8, head_dim=128,
            intermediate_size=9216, num_local_experts=32, num_experts_per_tok=2, vocab_size=200064,
            layer_types=["full_attention" if (i + 1) % 8 == 0 else "linear_attention" for i in range(80)])
        with torch.device("meta"):
            model = transformers.MiniMaxForCausalLM(config)
        mixers = [layer.self_attn for layer in model.model.layers]
    elif name == "Jamba-v0.1":
        with torch.device("meta"):
            model = transformers.JambaForCausalLM(transformers.JambaConfig())
        mixers = [getattr(layer, "mamba", None) or layer.self_attn for layer in model.model.layers]
    else:
        config = transformers.NemotronHConfig(hybrid_override_pattern=NEMOTRON_H_8B, vocab_size=131072)
        with torch.device("meta"):
            model = transformers.NemotronHForCausalLM(config)
        mixers = [layer.mixer if type(layer.mixer).__name__ in ("NemotronHMamba2Mixer", "NemotronHAttention") else None
                  for layer in model.model.layers]
    return model, mixers


@pytest.mark.parametrize("name", ["Qwen3-Next-80B-A3B", "Qwen3.5-9B", "Nemotron-H-8B", "Kimi-Linear-48B-A3B",
                                  "MiniMax-Text-01", "Jamba-v0.1"])
def test_each_preset_s_stack_is_its_model_built_on_the_meta_device(name):
    preset = find_preset(name)
    cfg = preset.apply(AttentionConfig())
    arch = cfg.architecture()
    model, mixers = meta_model(name)
    mixers = [m for m in mixers if m is not None]  # MLP-only blocks mix no tokens and are not layers here
    assert len(mixers) == arch.n_layers == cfg.n_layers
    for i, (module, spec) in enumerate(zip(mixers, arch.layers, strict=True)):
        attention = type(module).__name__ in ("Qwen3NextAttention", "Qwen3_5Attention", "NemotronHAttention",
                                              "KimiLinearAttention", "MiniMaxAttention", "JambaAttention")
        assert (cfg.stack.pattern[i] == OWN) == attention, f"layer {i}"
        assert kind_of(spec).params(arch.d_model, spec).total == sum(p.numel() for p in module.parameters()), f"layer {i}"
    assert model_counts(arch, cfg).params == sum(p.numel() for m in mixers for p in m.parameters())
    assert preset.params == sum(p.numel() for p in model.parameters())
    kinds = kind_counts(arch, cfg)
    assert sum(k.n_layers for k in kinds) == arch.n_layers and len(kinds) == 2


def test_qwen3_next_caches_kv_for_its_12_attention_layers_and_a_fixed_state_for_36():
    cfg = find_preset("Qwen3-Next-80B-A3B").apply(AttentionConfig(dtype="bfloat16", seq_len=32768))
    glob, gdn = kind_counts(cfg.architecture(), cfg)
    assert (glob.n_layers, gdn.n_layers) == (12, 36)
    assert glob.kv_bytes_total == 12 * 2 * 2 * 256 * 2 * 32768  # K and V of 2 KV heads of 256, bf16
    state = 32 * 128 * 128 * 4 + (2 * 16 * 128 + 32 * 128) * 3 * 2  # fp32 state, bf16 conv's last 3 inputs
    assert gdn.state_bytes == gdn.kv_bytes_total == 36 * state


def test_jamba_s_kv_at_256k_tokens_is_the_4_gb_its_paper_gives():
    """Jamba's paper: its KV cache at 256K tokens, 16-bit, is 4GB (4 attention layers of 8 KV heads of 128)."""
    cfg = find_preset("Jamba-v0.1").apply(AttentionConfig(dtype="bfloat16", seq_len=256 * 1024))
    glob, mamba = kind_counts(cfg.architecture(), cfg)
    assert glob.kv_bytes_total == 4 * 2 * 8 * 128 * 2 * 262144 == 4 * 2**30
    assert mamba.state_bytes == 28 * (8192 * 16 * 4 + 8192 * 3 * 2)  # fp32 SSM state, bf16 conv inputs


def matmul_flops(fn):
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


@torch.inference_mode()
def test_the_core_flops_are_flop_counter_mode_s_count_of_the_torch_forms():
    """The matmuls of the chunked and recurrent forms; the UT transform's two triangular solves (C^2 (d_k + d_v) a
    chunk) are not matmuls to FlopCounterMode."""
    spec = LayerSpec(4, 2, 16, widths=GDNWidths(16, 24, 4))
    layer = GDNLayer(64, spec).eval()
    B, T = 2, 150
    x = torch.randn(B, T, 64)
    chunks = -(-T // 64)
    want = gdn_core_flops(4, 16, 24, B, T, "prefill") - B * 4 * chunks * 64 ** 2 * (16 + 24)
    assert matmul_flops(layer.core_call(x, "prefill")) == want
    # one recurrent step: three matmuls (S^T k, the rank-one update, S^T q); the decay is elementwise
    assert matmul_flops(layer.core_call(x, "decode")) == gdn_core_flops(4, 16, 24, B, T, "decode") // 7 * 6
    m2 = Mamba2Layer(64, LayerSpec(8, 2, 12, widths=Mamba2Widths(12, 16, 4))).eval()
    assert matmul_flops(m2.core_call(x, "prefill")) == ssd_core_flops(8, 12, 16, B, T, "prefill")
    assert matmul_flops(m2.core_call(x, "decode")) == ssd_core_flops(8, 12, 16, B, T, "decode") // 5 * 4


@torch.inference_mode()
def test_kda_lightning_and_mamba1_core_flops_are_flop_counter_mode_s_count_of_their_matmuls():
    """KDA's decayed k k^T and q k^T products are elementwise (4 C^2 d a chunk) and its solves C^2 2d: the rest are
    matmuls; lightning's core is all matmuls; Mamba-1's scan reads its state with one (2 N of its 7 N a token)."""
    from core.kinds.kda.kind import kda_core_flops
    from core.kinds.kda.layer import KDALayer
    from core.kinds.kda.spec import KDAWidths
    from core.kinds.lightning.kind import lightning_core_flops
    from core.kinds.lightning.layer import LightningLayer
    from core.kinds.lightning.spec import LightningWidths
    from core.kinds.mamba1.kind import scan_core_flops
    from core.kinds.mamba1.layer import Mamba1Layer
    from core.kinds.mamba1.spec import Mamba1Widths

    B, T = 2, 512
    x = torch.randn(B, T, 64)
    kda = KDALayer(64, LayerSpec(4, 4, 16, widths=KDAWidths(16, 4))).eval()
    chunks = T // 64
    assert matmul_flops(kda.core_call(x, "prefill")) == kda_core_flops(4, 16, B, T, "prefill") - B * 4 * chunks * 6 * 64 * 64 * 16
    assert matmul_flops(kda.core_call(x, "decode")) == kda_core_flops(4, 16, B, T, "decode") // 7 * 6
    light = LightningLayer(64, LayerSpec(4, 4, 16, widths=LightningWidths(16))).eval()
    assert matmul_flops(light.core_call(x, "prefill")) == lightning_core_flops(4, 16, B, T, "prefill")
    assert matmul_flops(light.core_call(x, "decode")) == lightning_core_flops(4, 16, B, T, "decode") // 5 * 4
    m1 = Mamba1Layer(64, LayerSpec(1, 1, 96, widths=Mamba1Widths(96, 8, 4, 4))).eval()
    x = x[:, :40]
    assert matmul_flops(m1.core_call(x, "prefill")) == scan_core_flops(96, 8, B, 40, "prefill") // 7 * 2
    assert matmul_flops(m1.core_call(x, "decode")) == scan_core_flops(96, 8, B, 40, "decode") // 7 * 2


def test_pattern_spellings_of_the_configs():
    assert parse_pattern("3:1", "D", 8) == "DDDADDDA"
    assert parse_pattern("M-M*-M", "M") == "MMAM"
    assert parse_pattern("linear_attention, full_attention, linear_attention", "D") == "DAD"
    assert parse_pattern("@3, 7", "K", 8) == "KKKAKKKA"
    assert parse_pattern("dda", "D") == "DDA"


@pytest.mark.parametrize("text, n, fix", [
    ("DDXQ", None, "'Q', 'X' it does not know"),
    ("3:1", None, "needs the number of layers"),
    ("@9", 8, "from 0 to 7"),
    ("linear_attention, sliding", None, "'sliding' are not known"),
    ("", None, "is empty"),
])
def test_a_bad_pattern_is_refused_in_a_sentence(text, n, fix):
    with pytest.raises(ValueError, match=fix):
        parse_pattern(text, "D", n)


def test_bad_stacks_and_widths_are_refused_in_a_sentence():
    gdn = LayerSpec(32, 16, 128, widths=GDNWidths())
    with pytest.raises(ValueError, match="keeps at least one of the configuration's own layers"):
        Stack("DDD", (("D", gdn),))
    with pytest.raises(ValueError, match="name no layer"):
        Stack("DMA", (("D", gdn),))
    with pytest.raises(ValueError, match="does not divide its n_heads"):
        LayerSpec(32, 12, 128, widths=GDNWidths())  # 12 key heads cannot serve 32 value heads evenly
    with pytest.raises(ValueError, match="head width is its k_head_dim"):
        LayerSpec(32, 16, 64, widths=GDNWidths())
    with pytest.raises(ValueError, match="has none of the standard layer's q/k norm"):
        LayerSpec(32, 16, 128, qk_norm=True, widths=GDNWidths())
    with pytest.raises(ValueError, match="conv_kernel must be a whole number from 2"):
        Mamba2Widths(conv_kernel=1)
    with pytest.raises(ValueError, match="state dtype 'int4' is not known"):
        AttentionConfig(state_dtype="int4")
    stack = Stack("DA", (("D", gdn),))
    with pytest.raises(ValueError, match="turn the causal mask on"):
        AttentionConfig(stack=stack, n_layers=2)
    with pytest.raises(ValueError, match="lists 2 layers, not 12"):  # the stack lists every layer
        AttentionConfig(d_model=4096, n_heads=32, stack=stack, causal=True, n_layers=12)
    cfg = AttentionConfig(d_model=4096, n_heads=32, stack=stack, causal=True, n_layers=2)
    assert AttentionConfig.from_dict(cfg.to_dict()) == cfg


def test_a_state_that_would_not_fit_is_refused_before_allocating():
    from core.kinds.kernels import kernels_of

    cfg = AttentionConfig(d_model=8192, n_heads=4096, n_kv_heads=4096, widths=GDNWidths(256, 256, 4), causal=True,
                          seq_len=1 << 20, batch_size=64)
    with pytest.raises(ValueError, match="lower seq_len, batch_size or d_model, or the heads or their widths"):
        kernels_of(cfg.layer_spec()).run_timing(cfg, torch.device("cpu"), cfg.layer_spec())


def test_the_planner_keeps_each_gpu_s_share_of_the_state_beside_the_kv():
    from core.plan.fit import PlanInput, gpu_kv_bytes, plan, reserve_bytes, weight_bytes
    from core.plan.gpus import find_gpu

    preset = find_preset("Qwen3-Next-80B-A3B")
    arch = preset.apply(AttentionConfig()).architecture()
    p = PlanInput(arch, preset.params, find_gpu("h200"), n_gpus=2, tp=2, batch=64, context=32768)
    r = plan(p)
    per_sequence = 32 * 128 * 128 * 4 + (2 * 16 * 128 + 32 * 128) * 3 * 2  # fp32 state, bf16 conv inputs
    assert r.state == 36 * per_sequence * 64 // 2  # value heads shared out over TP 2
    assert r.kv_cache == 12 * 2 * 1 * 256 * 2 * 32768 * 64 + r.state  # one KV head of 256 a GPU, bf16
    room = p.gpu.memory_bytes - weight_bytes(p) - reserve_bytes(p)
    assert r.max_batch == room // gpu_kv_bytes(p, batch=1)  # a sequence's KV and its state
    fp8_state = plan(PlanInput(arch, preset.params, find_gpu("h200"), n_gpus=2, tp=2, batch=64, context=32768,
                               state_dtype="fp8_e4m3"))
    assert fp8_state.state == 36 * (32 * 128 * 128 + (2 * 16 * 128 + 32 * 128) * 3 * 2) * 64 // 2
    gdn = arch.layers[0]
    with pytest.raises(ValueError, match="does not divide the Gated DeltaNet layer's 32 heads"):
        kind_of(gdn).check_tp(gdn, 3)
    jamba = find_preset("Jamba-v0.1")
    PlanInput(jamba.apply(AttentionConfig()).architecture(), jamba.params, find_gpu("h200"), n_gpus=8, tp=8)
    with pytest.raises(ValueError, match="state dtype 'int4' is not known"):
        PlanInput(arch, preset.params, find_gpu("h200"), state_dtype="int4")


def test_the_compare_table_shows_the_state_beside_the_kv():
    from core.report import build_report
    from core.study.compare import comparison

    hybrid = build_report(find_preset("Qwen3-Next-80B-A3B").apply(AttentionConfig(dtype="bfloat16", seq_len=4096)))
    plain = build_report(find_preset("Llama 3 8B").apply(AttentionConfig(dtype="bfloat16", seq_len=4096)))
    rows = {row.label: row for row in comparison([hybrid, plain], 0)}
    state = 36 * (32 * 128 * 128 * 4 + (2 * 16 * 128 + 32 * 128) * 3 * 2)
    assert hybrid["kv_cache"]["state_bytes"] == state and "state_bytes" not in plain["kv_cache"]
    assert hybrid["kv_cache"]["bytes_total"] == 12 * 2 * 2 * 256 * 2 * 4096 + state
    assert "of which recurrent state" in rows
    assert "of which recurrent state" not in {r.label for r in comparison([plain, plain], 0)}


def test_a_stack_holds_other_kinds_layers_and_refuses_what_it_cannot_describe():
    gdn = LayerSpec(32, 16, 128, widths=GDNWidths())
    from core.kinds.mla.spec import MLADims

    with pytest.raises(ValueError, match="must be a layer kind's own"):  # a standard layer is the configuration's own
        Stack("BA", (("B", LayerSpec(8, 2, 64, window=128)),))
    assert Stack("BA", (("B", LayerSpec(8, 8, 192, widths=MLADims())),)).spec("B").kind == "mla"
    with pytest.raises(ValueError, match="at least one other layer"):
        Stack("AA", ())
    with pytest.raises(ValueError, match="names no mixer layer"):
        Stack("AA", (("D", gdn),))
    with pytest.raises(ValueError, match="one capital letter A to Z"):
        Stack("ΔA", (("Δ", gdn),))
    with pytest.raises(ValueError, match="is too wide"):
        Stack("DA", (("D", LayerSpec(65536, 1, 65536, widths=GDNWidths(65536, 65536, 4))),))
    with pytest.raises(ValueError, match="unknown stack field"):
        Stack.from_dict({"pattern": "DA", "mixers": {"D": gdn.to_dict()}, "foo": 1})
    cfg = find_preset("Qwen3-Next-80B-A3B").apply(AttentionConfig())
    with pytest.raises(ValueError, match="lists 48 layers, not 3"):
        cfg.with_(n_layers=3)
    for bad in (48, -1, True, 1.0, None):
        with pytest.raises(ValueError, match="choose 0 to 47"):
            cfg.focus(bad)
    assert cfg.focus(0).layer_spec() == cfg.layer_spec(0) and cfg.focus(3) is cfg


@pytest.mark.parametrize("args, fix", [
    (("3:1", "D", 0), "a whole number from 1 to 4096"),
    (("3:1", "D", 10**7), "a whole number from 1 to 4096"),
    (("@0", "D", -1), "a whole number from 1 to 4096"),
    (("99999:1", "D", 8), "N from 1 to 4095"),
    (("ß", "D", None), "plain ASCII"),
])
def test_pattern_edges_are_refused_in_a_sentence(args, fix):
    with pytest.raises(ValueError, match=fix):
        parse_pattern(*args)
    assert parse_pattern("linear_attention,full_attention,", "D") == "DA"  # a trailing comma, as a list's


def test_the_memory_curve_is_the_counts_and_its_crossover_is_where_the_kv_passes_the_state():
    from core.long.memory_curve import CONTEXTS, memory_curve

    cfg = find_preset("Jamba-v0.1").apply(AttentionConfig(dtype="bfloat16"))
    base = find_preset("Llama 3 8B").apply(AttentionConfig(dtype="bfloat16"))
    curve = memory_curve(cfg, base, "Llama 3 8B")
    for T, kv in zip(CONTEXTS, curve.kv, strict=True):
        one = cfg.with_(seq_len=T)
        assert kv + curve.state == model_counts(one.architecture(), one).kv_bytes_total
    T = curve.crossover_memory
    kv_at = lambda t: model_counts(cfg.with_(seq_len=t).architecture(), cfg.with_(seq_len=t)).kv_bytes_total - curve.state  # noqa: E731
    assert kv_at(T) > curve.state >= kv_at(T - 1)
    assert kv_at(curve.crossover_read) > 2 * curve.state >= kv_at(curve.crossover_read - 1)
    assert f"below T = {T:,}" in curve.sentence


def test_the_display_refuses_maps_whose_work_would_not_fit_before_computing():
    from sandbox.jobs.compute import ComputeRequest, compute_heatmaps

    cfg = AttentionConfig(d_model=64, n_heads=1, n_kv_heads=1, widths=Mamba1Widths(8, 65536, 4, 4), causal=True,
                          seq_len=256)
    req = ComputeRequest(config=cfg, text=" ".join(["word"] * 256))
    with pytest.raises(ValueError, match="implicit attention over 256 tokens need"):
        compute_heatmaps(req, 1)
    assert kind_of(cfg.layer_spec()).display_maps(cfg.layer_spec()) == 8
