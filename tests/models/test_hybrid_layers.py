"""The hybrid mixers run as transformers runs them: our torch layers against transformers' modules (their torch
fallbacks) with the same weights, the chunked form against the recurrent one, the decode step against the prefill, the
drawn implicit attention against one-hot values fed through a recurrence, and the state against transformers' cache."""

import pytest
import torch

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.kinds.gated_deltanet.layer import GDNLayer, chunked, recurrent
from core.kinds.gated_deltanet.spec import GDNWidths
from core.kinds.kda.layer import KDALayer, kda_chunked, kda_recurrent
from core.kinds.kda.spec import KDAWidths
from core.kinds.lightning.layer import LightningLayer, lightning_blocks, lightning_recurrent
from core.kinds.lightning.spec import LightningWidths
from core.kinds.mamba1.layer import Mamba1Layer, selective_scan
from core.kinds.mamba1.spec import Mamba1Widths
from core.kinds.mamba2.layer import Mamba2Layer, ssd_chunked, ssd_recurrent
from core.kinds.mamba2.spec import Mamba2Widths
from core.kinds.registry import kind_of

transformers = pytest.importorskip("transformers")
qwen3_next = pytest.importorskip("transformers.models.qwen3_next.modeling_qwen3_next")
nemotron_h = pytest.importorskip("transformers.models.nemotron_h.modeling_nemotron_h")
kimi = pytest.importorskip("transformers.models.kimi_linear.modeling_kimi_linear")
minimax = pytest.importorskip("transformers.models.minimax.modeling_minimax")
jamba = pytest.importorskip("transformers.models.jamba.modeling_jamba")

GDN_SHAPES = [  # (d, value heads, key heads, d_k, d_v, kernel)
    (64, 4, 2, 16, 24, 4),
    (48, 3, 3, 8, 8, 3),
]
M2_SHAPES = [  # (d, heads, groups, P, N, kernel)
    (64, 8, 2, 12, 16, 4),
    (40, 4, 1, 10, 8, 2),
]


def gdn(d, hv, hk, dk, dv, k, seed=3):
    spec = LayerSpec(hv, hk, dk, widths=GDNWidths(dk, dv, k))
    config = transformers.Qwen3NextConfig(hidden_size=d, linear_num_key_heads=hk, linear_num_value_heads=hv,
                                          linear_key_head_dim=dk, linear_value_head_dim=dv, linear_conv_kernel_dim=k,
                                          num_hidden_layers=1, layer_types=["linear_attention"])
    ref = qwen3_next.Qwen3NextGatedDeltaNet(config, 0).eval()
    ours = GDNLayer(d, spec, seed=seed).eval()
    ref.load_state_dict(ours.state_dict())
    return ours, ref


def mamba2(d, h, g, p, n, k, seed=3):
    spec = LayerSpec(h, g, p, widths=Mamba2Widths(p, n, k))
    config = transformers.NemotronHConfig(hidden_size=d, mamba_num_heads=h, mamba_head_dim=p, n_groups=g,
                                          ssm_state_size=n, conv_kernel=k, layers_block_type=["mamba"], chunk_size=32)
    ref = nemotron_h.NemotronHMamba2Mixer(config, 0).eval()
    ours = Mamba2Layer(d, spec, seed=seed).eval()
    ref.load_state_dict(ours.state_dict())
    return ours, ref


@pytest.mark.parametrize("shape", GDN_SHAPES)
@torch.inference_mode()
def test_gated_deltanet_runs_as_transformers_torch_reference(shape):
    ours, ref = gdn(*shape)
    x = torch.randn(2, 150, shape[0], generator=torch.Generator().manual_seed(0))  # more than two chunks of 64
    want = ref(x)
    assert torch.allclose(ours(x), want, atol=1e-5)
    assert torch.allclose(ours(x, form="recurrent"), want, atol=1e-5)
    conv, state = ours.empty_state(2, "cpu")
    steps = torch.cat([ours.decode_step(x[:, t:t + 1], conv, state) for t in range(x.shape[1])], dim=1)
    assert torch.allclose(steps, want, atol=1e-5)  # one token at a time, from the kept states


@pytest.mark.parametrize("shape", M2_SHAPES)
@torch.inference_mode()
def test_mamba2_runs_as_transformers_torch_reference(shape):
    ours, ref = mamba2(*shape)
    x = torch.randn(2, 100, shape[0], generator=torch.Generator().manual_seed(0))
    want = ref(x)
    assert torch.allclose(ours(x), want, atol=1e-5)
    assert torch.allclose(ours(x, form="recurrent"), want, atol=1e-5)
    conv, state = ours.empty_state(2, "cpu")
    steps = torch.cat([ours.decode_step(x[:, t:t + 1], conv, state) for t in range(x.shape[1])], dim=1)
    assert torch.allclose(steps, want, atol=1e-5)


@torch.inference_mode()
def test_the_chunked_forms_agree_with_the_recurrences_from_a_kept_state():
    g = torch.Generator().manual_seed(1)
    B, H, T = 2, 3, 97
    q, k = (torch.nn.functional.normalize(torch.randn(B, H, T, 8, generator=g), dim=-1) for _ in range(2))
    v = torch.randn(B, H, T, 5, generator=g)
    decay, beta = -torch.rand(B, H, T, generator=g), torch.rand(B, H, T, generator=g)
    s0 = torch.randn(B, H, 8, 5, generator=g)
    a, b = chunked(q, k, v, decay, beta, s0, chunk=16), recurrent(q, k, v, decay, beta, s0)
    assert torch.allclose(a[0], b[0], atol=1e-5) and torch.allclose(a[1], b[1], atol=1e-5)
    x, bb, c = torch.randn(B, H, T, 6, generator=g), torch.randn(B, H, T, 4, generator=g), torch.randn(B, H, T, 4, generator=g)
    dt = torch.rand(B, H, T, generator=g)
    s1 = torch.randn(B, H, 6, 4, generator=g)
    a, b = ssd_chunked(x, bb, c, dt, -dt, s1, chunk=16), ssd_recurrent(x, bb, c, dt, -dt, s1)
    assert torch.allclose(a[0], b[0], atol=1e-5) and torch.allclose(a[1], b[1], atol=1e-5)


@torch.inference_mode()
def test_the_drawn_gdn_map_is_one_hot_values_fed_through_transformers_recurrence():
    ours, _ = gdn(*GDN_SHAPES[0])
    x = torch.randn(1, 40, 64, generator=torch.Generator().manual_seed(2))
    q, k, v, g, beta, _ = ours.mixing_inputs(x)
    drawn, sinks = ours.probs_and_sinks(x)
    assert sinks is None and drawn.shape == (1, 4, 40, 40)
    T = 40
    one_hot = torch.eye(T).expand(1, 4, T, T)  # value s is e_s: o_t's coordinate s is the weight of token s
    out, _ = qwen3_next.torch_recurrent_gated_delta_rule(
        (q * 16 ** 0.5).transpose(1, 2), k.transpose(1, 2), one_hot.transpose(1, 2).contiguous(), g.transpose(1, 2),
        beta.transpose(1, 2), use_qk_l2norm_in_kernel=False)  # q and k come normalised; it scales q by 1/sqrt(d_k)
    assert torch.allclose(out.transpose(1, 2), drawn, atol=1e-5)
    assert torch.allclose(drawn @ v, chunked(q, k, v, g, beta)[0], atol=1e-5)  # the layer's core output is M V
    assert drawn.min() < 0  # signed: why the maps of these kinds use a diverging colour map
    assert torch.count_nonzero(torch.triu(drawn, 1)) == 0  # causal


@torch.inference_mode()
def test_the_drawn_mamba2_map_is_one_hot_inputs_fed_through_the_recurrence():
    ours, _ = mamba2(*M2_SHAPES[0])
    x = torch.randn(1, 30, 64, generator=torch.Generator().manual_seed(2))
    xs, b, c, dt, la, _ = ours.mixing_inputs(x)
    drawn = ours.probs_and_sinks(x)[0]
    T = 30
    one_hot = torch.eye(T).expand(1, 8, T, T)  # each head's channel s carries token s alone
    y, _ = ssd_recurrent(one_hot, b, c, dt, la)
    assert torch.allclose(y, drawn, atol=1e-5)
    assert torch.allclose(drawn @ xs, ssd_chunked(xs, b, c, dt, la)[0], atol=1e-5)


def tiny_qwen3_next():
    return transformers.Qwen3NextConfig(
        hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=8,
        num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, shared_expert_intermediate_size=32,
        vocab_size=100, intermediate_size=64)


def cache_bytes(layer_cache):
    return {name: sum(t.numel() * t.element_size() for t in getattr(layer_cache, name).values())
            for name in ("recurrent_states", "conv_states")}


@torch.inference_mode()
def test_state_bytes_are_the_tensors_transformers_cache_keeps_after_a_prefill():
    """transformers keeps the conv state k wide, vLLM-style engines k - 1: our state counts k - 1 and names both."""
    config = tiny_qwen3_next()
    model = transformers.Qwen3NextForCausalLM(config).eval()
    B = 2
    cache = model(torch.randint(0, 100, (B, 10)), use_cache=True).past_key_values
    kept = cache_bytes(cache.layers[0])
    spec = LayerSpec(4, 2, 16, widths=GDNWidths(16, 8, 4))
    kind = kind_of(spec)
    assert kept["recurrent_states"] == B * kind.recurrent_values(spec) * 4
    assert kept["conv_states"] == B * kind.conv_values(spec, full_kernel=True) * 4
    assert kind.conv_values(spec) * 4 == kind.conv_values(spec, full_kernel=True) * 3
    assert kind.state_bytes(spec, "float32") == (kind.recurrent_values(spec) + kind.conv_values(spec)) * 4

    nconfig = transformers.NemotronHConfig(
        hidden_size=64, hybrid_override_pattern="M*M-", mamba_num_heads=8, mamba_head_dim=8, n_groups=2,
        ssm_state_size=16, num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=100,
        intermediate_size=64)
    ncache = transformers.NemotronHForCausalLM(nconfig).eval()(torch.randint(0, 100, (B, 10)), use_cache=True)
    kept = cache_bytes(ncache.past_key_values.layers[0])
    spec = LayerSpec(8, 2, 8, widths=Mamba2Widths(8, 16, 4))
    kind = kind_of(spec)
    assert kept["recurrent_states"] == B * kind.recurrent_values(spec) * 4 == B * 8 * 8 * 16 * 4
    assert kept["conv_states"] == B * kind.conv_values(spec, full_kernel=True) * 4


def test_state_bytes_follow_the_state_format_and_not_the_context():
    cfg = AttentionConfig(d_model=2048, n_heads=32, n_kv_heads=16, widths=GDNWidths(), causal=True)
    kind, spec = kind_of(cfg.layer_spec()), cfg.layer_spec()
    rec, conv = 32 * 128 * 128, (2 * 16 * 128 + 32 * 128) * 3
    for fmt, b in (("float32", 4), ("bfloat16", 2), ("fp8_e4m3", 1)):
        c = cfg.with_(state_dtype=fmt)
        assert kind.state_bytes(spec, c.state_format, c.dtype) == rec * b + conv * 4  # the conv in the compute dtype
    from core.counts import layer_kv_bytes
    assert layer_kv_bytes(spec, cfg.with_(seq_len=10)) == layer_kv_bytes(spec, cfg.with_(seq_len=1_000_000))


def kda(d, h, dk, k, seed=3):
    config = transformers.KimiLinearConfig(hidden_size=d, linear_num_heads=h, linear_head_dim=dk,
                                           linear_conv_kernel_dim=k, num_hidden_layers=1,
                                           layer_types=["linear_attention"])
    ref = kimi.KimiLinearDeltaAttention(config, 0).eval()
    ours = KDALayer(d, LayerSpec(h, h, dk, widths=KDAWidths(dk, k)), seed=seed).eval()
    ref.load_state_dict(ours.state_dict())
    return ours, ref


def lightning(d, h, dh, seed=3):
    config = transformers.MiniMaxConfig(hidden_size=d, num_attention_heads=h, head_dim=dh, num_hidden_layers=2,
                                        layer_types=["linear_attention", "full_attention"], block_size=32)
    ref = minimax.MiniMaxLightningAttention(config, 0).eval()
    ours = LightningLayer(d, LayerSpec(h, h, dh, widths=LightningWidths(dh)), seed=seed).eval()
    ref.load_state_dict(ours.state_dict(), strict=False)  # its decay buffers are its own (the same rates: below)
    assert torch.allclose(ref.slope_rate.flatten(), ours.rates)
    return ours, ref


def mamba1(d, inner, n, r, k, seed=3):
    config = transformers.JambaConfig(hidden_size=d, mamba_d_state=n, mamba_expand=inner // d, mamba_dt_rank=r,
                                      mamba_d_conv=k, num_hidden_layers=1)
    ref = jamba.JambaMambaMixer(config, 0).eval()
    ours = Mamba1Layer(d, LayerSpec(1, 1, inner, widths=Mamba1Widths(inner, n, r, k)), seed=seed).eval()
    ref.load_state_dict(ours.transformers_state_dict())
    return ours, ref


@pytest.mark.parametrize("make, shape, call", [
    (kda, (64, 4, 16, 4), lambda ref, x: ref(x)),
    (kda, (48, 2, 24, 3), lambda ref, x: ref(x)),
    (lightning, (64, 4, 16), lambda ref, x: ref(x, None, None)[0]),
    (lightning, (48, 3, 8), lambda ref, x: ref(x, None, None)[0]),
    (mamba1, (32, 64, 8, 6, 4), lambda ref, x: ref(x)),
    (mamba1, (24, 72, 4, 3, 2), lambda ref, x: ref(x)),
])
@torch.inference_mode()
def test_kda_lightning_and_mamba1_run_as_transformers_torch_reference(make, shape, call):
    ours, ref = make(*shape)
    x = torch.randn(2, 80, shape[0], generator=torch.Generator().manual_seed(0))  # more than one chunk of 64, 32
    want = call(ref, x)
    assert torch.allclose(ours(x), want, atol=1e-5)
    state = ours.empty_state(2, "cpu")
    steps = torch.cat([ours.decode_step(x[:, t:t + 1], *state) for t in range(x.shape[1])], dim=1)
    assert torch.allclose(steps, want, atol=1e-5)


@torch.inference_mode()
def test_kda_s_and_lightning_s_chunked_forms_agree_with_their_recurrences():
    g = torch.Generator().manual_seed(1)
    B, H, T, d = 2, 3, 90, 8
    q, k = (torch.nn.functional.normalize(torch.randn(B, H, T, d, generator=g), dim=-1) for _ in range(2))
    v = torch.randn(B, H, T, d, generator=g)
    decay, beta = -torch.rand(B, H, T, d, generator=g), torch.rand(B, H, T, generator=g)
    s0 = torch.randn(B, H, d, d, generator=g)
    a, b = kda_chunked(q, k, v, decay, beta, s0, chunk=16), kda_recurrent(q, k, v, decay, beta, s0)
    assert torch.allclose(a[0], b[0], atol=1e-5) and torch.allclose(a[1], b[1], atol=1e-5)
    rates = torch.rand(H, generator=g)
    a, b = lightning_blocks(q, k, v, rates, s0, block=16), lightning_recurrent(q, k, v, rates, s0)
    assert torch.allclose(a[0], b[0], atol=1e-4) and torch.allclose(a[1], b[1], atol=1e-4)


@torch.inference_mode()
def test_the_drawn_maps_of_kda_lightning_and_mamba1_are_one_hot_values_through_their_recurrences():
    T = 24
    ours, _ = kda(64, 4, 16, 4)
    x = torch.randn(1, T, 64, generator=torch.Generator().manual_seed(2))
    q, k, v, g, beta = ours.mixing_inputs(x)
    drawn = ours.probs_and_sinks(x)[0]
    out, _ = kimi.recurrent_kimi_delta_attention(  # transformers' own recurrence, value s = e_s
        (q * 4).transpose(1, 2), k.transpose(1, 2), torch.eye(T).expand(1, 4, T, T).transpose(1, 2).contiguous(),
        g.transpose(1, 2), beta.transpose(1, 2), None, False)  # q and k come normalised; it scales q by 1/sqrt(16)
    assert torch.allclose(out.transpose(1, 2), drawn, atol=1e-5)
    assert torch.allclose(drawn @ v, kda_chunked(q, k, v, g, beta)[0], atol=1e-5)

    light, _ = lightning(64, 4, 16)
    q, k, v = light.mixing_inputs(x)
    drawn = light.probs_and_sinks(x)[0]
    assert torch.allclose(lightning_recurrent(q, k, torch.eye(T).expand(1, 4, T, T), light.rates)[0], drawn, atol=1e-5)
    assert torch.allclose(drawn @ v, lightning_blocks(q, k, v, light.rates)[0], atol=1e-4)

    m1, _ = mamba1(32, 64, 8, 6, 4)
    x = torch.randn(1, T, 32, generator=torch.Generator().manual_seed(2))
    xc, dt, b, c, _ = m1.mixing_inputs(x)
    drawn = m1.probs_and_sinks(x)[0]
    assert drawn.shape == (1, 8, T, T) and m1.channels() == [0, 8, 16, 24, 32, 40, 48, 56]
    A = -m1.A_log.float().exp()
    for i, ch in enumerate(m1.channels()):  # one-hot inputs on one channel: its scan's output is its map's rows
        xs = torch.zeros(T, T, 64)
        xs[torch.arange(T), torch.arange(T), ch] = 1.0  # sequence s carries 1 at token s on channel ch
        y, _ = selective_scan(xs, dt.expand(T, -1, -1), b.expand(T, -1, -1), c.expand(T, -1, -1), A)
        assert torch.allclose(y[:, :, ch].T, drawn[0, i], atol=1e-5)
    y = selective_scan(xc, dt, b, c, A)[0]
    assert torch.allclose(torch.stack([drawn[0, i] @ xc[0, :, ch] for i, ch in enumerate(m1.channels())]),
                          y[0, :, m1.channels()].T, atol=1e-5)


@torch.inference_mode()
def test_kimi_minimax_and_jamba_caches_keep_the_state_we_count():
    B = 2
    kconfig = transformers.KimiLinearConfig(
        hidden_size=64, num_hidden_layers=2, layer_types=["linear_attention", "full_attention"], num_attention_heads=4,
        num_key_value_heads=4, linear_num_heads=4, linear_head_dim=16, kv_lora_rank=32, qk_nope_head_dim=16,
        qk_rope_head_dim=8, v_head_dim=16, q_lora_rank=None, num_experts=4, num_experts_per_token=2,
        moe_intermediate_size=32, intermediate_size=64, mlp_layer_types=["dense", "dense"])
    cache = transformers.KimiLinearForCausalLM(kconfig).eval()(torch.randint(0, 100, (B, 10)), use_cache=True)
    kept = cache_bytes(cache.past_key_values.layers[0])
    spec = LayerSpec(4, 4, 16, widths=KDAWidths(16, 4))
    kind = kind_of(spec)
    assert kept["recurrent_states"] == B * kind.recurrent_values(spec) * 4 == B * 4 * 16 * 16 * 4
    assert kept["conv_states"] == B * kind.conv_values(spec, full_kernel=True) * 4

    mconfig = transformers.MiniMaxConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                         num_key_value_heads=2, head_dim=16, intermediate_size=64,
                                         layer_types=["linear_attention", "full_attention"], num_local_experts=2,
                                         vocab_size=100, block_size=4)
    cache = transformers.MiniMaxForCausalLM(mconfig).eval()(torch.randint(0, 100, (B, 10)), use_cache=True)
    state = cache.past_key_values.get_linear_cache(0)
    spec = LayerSpec(4, 4, 16, widths=LightningWidths(16))
    assert state.numel() * state.element_size() == B * kind_of(spec).recurrent_values(spec) * 4
    assert kind_of(spec).conv_values(spec) == 0

    jconfig = transformers.JambaConfig(hidden_size=32, num_hidden_layers=2, attn_layer_period=2, attn_layer_offset=1,
                                       num_attention_heads=4, num_key_value_heads=2, mamba_d_state=8, mamba_dt_rank=6,
                                       num_experts=1, intermediate_size=64, vocab_size=100)
    cache = transformers.JambaForCausalLM(jconfig).eval()(torch.randint(0, 100, (B, 10)), use_cache=True)
    kept = cache_bytes(cache.past_key_values.layers[0])
    spec = LayerSpec(1, 1, 64, widths=Mamba1Widths(64, 8, 6, 4))
    kind = kind_of(spec)
    assert kept["recurrent_states"] == B * kind.recurrent_values(spec) * 4 == B * 64 * 8 * 4
    assert kept["conv_states"] == B * kind.conv_values(spec, full_kernel=True) * 4
