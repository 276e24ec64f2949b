"""Mamba-1's counts against transformers' JambaMambaMixer built on the meta device."""

import pytest
import torch

from core.kinds.mamba1.counts import Mamba1Shape, conv_state_values, mamba1_params, ssm_state_values

transformers = pytest.importorskip("transformers")
jamba = pytest.importorskip("transformers.models.jamba.modeling_jamba")

NAMES = {"in_proj": "in_proj", "conv1d": "conv1d", "x_proj": "x_proj", "dt_proj": "dt_proj", "A_log": "a_log",
         "D": "d_skip", "dt_layernorm": "inner_norms", "b_layernorm": "inner_norms", "c_layernorm": "inner_norms",
         "out_proj": "out_proj"}


@pytest.mark.parametrize("fields", [
    {},  # Jamba-v0.1: d 4096, expand 2, d_state 16, dt rank 256, kernel 4
    {"hidden_size": 1024, "mamba_d_state": 8, "mamba_expand": 3, "mamba_dt_rank": 64, "mamba_d_conv": 2,
     "mamba_conv_bias": False, "mamba_proj_bias": True},
])
def test_parameters_by_projection_are_the_meta_module_s(fields):
    config = transformers.JambaConfig(**fields)
    with torch.device("meta"):
        mixer = jamba.JambaMambaMixer(config, 0)
    shape = Mamba1Shape(config.hidden_size, config.mamba_d_state, config.mamba_expand, config.mamba_dt_rank,
                        config.mamba_d_conv, config.mamba_conv_bias, config.mamba_proj_bias)
    counted: dict[str, int] = {}
    for name, p in mixer.named_parameters():
        part = NAMES[name.split(".")[0]]
        counted[part] = counted.get(part, 0) + p.numel()
    counts = mamba1_params(shape)
    assert counted == {k: v for k, v in counts.to_dict().items() if k != "total"}
    assert counts.total == sum(p.numel() for p in mixer.parameters())


def test_the_state_a_sequence_keeps():
    s = Mamba1Shape(4096)
    assert ssm_state_values(s) == 8192 * 16 and conv_state_values(s) == 8192 * 3
    assert conv_state_values(s, full_kernel=True) == 8192 * 4
