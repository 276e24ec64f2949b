"""Qwen3-Next's two layer kinds, Gated DeltaNet and gated softmax attention, counted against transformers' modules built
on the meta device."""

import pytest
import torch

from core.kinds.gated_deltanet.counts import (
    GDNShape,
    conv_state_values,
    gdn_params,
    recurrent_state_values,
)

transformers = pytest.importorskip("transformers")
qwen3_next = pytest.importorskip("transformers.models.qwen3_next.modeling_qwen3_next")


@pytest.mark.parametrize("fields", [
    {},  # Qwen3-Next-80B-A3B: d 2048, 16 key heads and 32 value heads of 128, kernel 4
    {"hidden_size": 1024, "linear_num_key_heads": 4, "linear_num_value_heads": 12, "linear_key_head_dim": 64,
     "linear_value_head_dim": 96, "linear_conv_kernel_dim": 3},
])
def test_parameters_by_projection_are_the_meta_module_s(fields):
    config = transformers.Qwen3NextConfig(**fields)
    with torch.device("meta"):
        layer = qwen3_next.Qwen3NextGatedDeltaNet(config, 0)
    shape = GDNShape(config.hidden_size, config.linear_num_key_heads, config.linear_num_value_heads,
                     config.linear_key_head_dim, config.linear_value_head_dim, config.linear_conv_kernel_dim)
    counts = gdn_params(shape)
    names = {"in_proj_qkvz.weight": "in_proj_qkvz", "in_proj_ba.weight": "in_proj_ba", "conv1d.weight": "conv1d",
             "dt_bias": "dt_bias", "A_log": "a_log", "norm.weight": "norm", "out_proj.weight": "out_proj"}
    assert {names[n]: p.numel() for n, p in layer.named_parameters()} == {
        k: v for k, v in counts.to_dict().items() if k != "total"}
    assert counts.total == sum(p.numel() for p in layer.parameters())
    assert layer.conv1d.weight.shape[0] == shape.conv_dim


def test_the_state_a_sequence_keeps():
    s = GDNShape(2048, 16, 32, 128, 128, 4)
    assert recurrent_state_values(s) == 32 * 128 * 128 == 524_288
    assert conv_state_values(s) == (2 * 16 * 128 + 32 * 128) * 3 and conv_state_values(s, full_kernel=True) == 8192 * 4
    with pytest.raises(ValueError, match="must be a multiple of its 3 key heads"):
        GDNShape(2048, 3, 32, 128, 128)


@pytest.mark.parametrize("fields", [{}, {"hidden_size": 1024, "num_attention_heads": 8, "num_key_value_heads": 4,
                                         "head_dim": 64, "attention_bias": True}])
def test_qwen3_next_s_gated_full_layers(fields):
    """The standard layer with its output gate: q_proj makes the queries and the gate (2 H h rows)."""
    from core.arch.layer import LayerSpec
    from core.kinds.standard.counts import standard_params

    config = transformers.Qwen3NextConfig(**fields)
    with torch.device("meta"):
        layer = qwen3_next.Qwen3NextAttention(config, 3)
    spec = LayerSpec(config.num_attention_heads, config.num_key_value_heads, config.head_dim,
                     bias=config.attention_bias, qk_norm=True, output_gate=True)  # its bias is on all four
    counts = standard_params(config.hidden_size, spec)
    counted: dict[str, int] = {}
    for name, p in layer.named_parameters():
        part = "qk_norm" if name.split(".")[0] in ("q_norm", "k_norm") else name.split(".")[0]
        counted[part] = counted.get(part, 0) + p.numel()
    assert counted["q_proj"] == counts.q + counts.gate  # queries and the gate
    assert (counted["k_proj"], counted["v_proj"], counted["qk_norm"]) == (counts.k, counts.v, counts.qk_norm)
    assert counted["o_proj"] == counts.o
    assert counts.total == sum(p.numel() for p in layer.parameters())
    assert layer.q_proj.weight.shape[0] == 2 * config.num_attention_heads * config.head_dim
