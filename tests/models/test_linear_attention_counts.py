"""KDA's and lightning attention's counts against transformers' KimiLinearDeltaAttention and MiniMaxLightningAttention
built on the meta device."""

import pytest
import torch

from core.kinds.kda.counts import KDAShape, conv_state_values, kda_params
from core.kinds.kda.counts import recurrent_state_values as kda_state
from core.kinds.lightning.counts import LightningShape, lightning_params
from core.kinds.lightning.counts import recurrent_state_values as lightning_state

transformers = pytest.importorskip("transformers")
kimi = pytest.importorskip("transformers.models.kimi_linear.modeling_kimi_linear")
minimax = pytest.importorskip("transformers.models.minimax.modeling_minimax")


def by_part(module, names):
    counted: dict[str, int] = {}
    for name, p in module.named_parameters():
        part = names[name.split(".")[0]]
        counted[part] = counted.get(part, 0) + p.numel()
    return counted


@pytest.mark.parametrize("fields", [{}, {"hidden_size": 1024, "linear_num_heads": 6, "linear_head_dim": 96,
                                         "linear_conv_kernel_dim": 3}])
def test_kda_parameters_by_projection_are_the_meta_module_s(fields):
    config = transformers.KimiLinearConfig(**fields)
    with torch.device("meta"):
        layer = kimi.KimiLinearDeltaAttention(config, 0)
    shape = KDAShape(config.hidden_size, config.linear_num_heads, config.linear_head_dim, config.linear_conv_kernel_dim)
    names = {"q_proj": "q_proj", "k_proj": "k_proj", "v_proj": "v_proj", "conv1d": "conv1d",
             "forget_gate": "forget_gate", "b_proj": "b_proj", "g_a_proj": "output_gate", "g_b_proj": "output_gate",
             "o_norm": "o_norm", "o_proj": "o_proj"}
    counts = kda_params(shape)
    assert by_part(layer, names) == {k: v for k, v in counts.to_dict().items() if k != "total"}
    assert counts.total == sum(p.numel() for p in layer.parameters())
    assert kda_state(shape) == shape.n_heads * shape.head_dim**2
    assert conv_state_values(shape) == 3 * shape.width * (shape.conv_kernel - 1)


@pytest.mark.parametrize("fields", [{}, {"hidden_size": 1536, "num_attention_heads": 12}])
def test_lightning_parameters_by_projection_are_the_meta_module_s(fields):
    config = transformers.MiniMaxConfig(**fields)
    with torch.device("meta"):
        layer = minimax.MiniMaxLightningAttention(config, 0)
    h = config.head_dim or config.hidden_size // config.num_attention_heads
    shape = LightningShape(config.hidden_size, config.num_attention_heads, h)
    names = {"qkv_proj": "qkv_proj", "norm": "norm", "output_gate": "output_gate", "out_proj": "out_proj"}
    counts = lightning_params(shape)
    assert by_part(layer, names) == {k: v for k, v in counts.to_dict().items() if k != "total"}
    assert counts.total == sum(p.numel() for p in layer.parameters())
    assert lightning_state(shape) == config.num_attention_heads * h * h
