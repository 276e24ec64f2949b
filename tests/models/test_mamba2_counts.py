"""Mamba-2's counts against transformers' NemotronHMamba2Mixer built on the meta device."""

import pytest
import torch

from core.kinds.mamba2.counts import Mamba2Shape, conv_state_values, mamba2_params, ssm_state_values

transformers = pytest.importorskip("transformers")
nemotron_h = pytest.importorskip("transformers.models.nemotron_h.modeling_nemotron_h")

NAMES = {"in_proj.weight": "in_proj", "in_proj.bias": "in_proj", "conv1d.weight": "conv1d", "conv1d.bias": "conv1d",
         "dt_bias": "dt_bias", "A_log": "a_log", "D": "d_skip", "norm.weight": "norm", "out_proj.weight": "out_proj",
         "out_proj.bias": "out_proj"}


@pytest.mark.parametrize("fields", [
    {},  # transformers' NemotronHConfig defaults: d 4096, 128 heads of 64, state 128, 8 groups, kernel 4
    {"hidden_size": 1024, "mamba_num_heads": 24, "mamba_head_dim": 48, "ssm_state_size": 64, "n_groups": 3,
     "conv_kernel": 3, "use_conv_bias": False, "use_bias": True},
])
def test_parameters_by_projection_are_the_meta_module_s(fields):
    config = transformers.NemotronHConfig(**fields)
    with torch.device("meta"):
        mixer = nemotron_h.NemotronHMamba2Mixer(config, 0)
    shape = Mamba2Shape(config.hidden_size, config.mamba_num_heads, config.mamba_head_dim, config.ssm_state_size,
                        config.n_groups, config.conv_kernel, config.use_conv_bias, config.use_bias)
    counted: dict[str, int] = {}
    for name, p in mixer.named_parameters():
        counted[NAMES[name]] = counted.get(NAMES[name], 0) + p.numel()
    counts = mamba2_params(shape)
    assert counted == {k: v for k, v in counts.to_dict().items() if k != "total"}
    assert counts.total == sum(p.numel() for p in mixer.parameters()) and mixer.conv_dim == shape.conv_dim


def test_the_state_a_sequence_keeps():
    s = Mamba2Shape(4096, 128, 64, 128, 8, 4)
    assert ssm_state_values(s) == 128 * 64 * 128 == 1_048_576
    assert conv_state_values(s) == (8192 + 2 * 8 * 128) * 3 and conv_state_values(s, full_kernel=True) == 10240 * 4
    with pytest.raises(ValueError, match="3 groups must divide its 128 heads"):
        Mamba2Shape(4096, 128, 64, 128, 3)
