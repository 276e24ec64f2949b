"""The short causal convolution every recurrent mixer runs over its inputs before mixing (a depthwise Conv1d of a few
taps, then silu): over a sequence, and one token at a time from the last k - 1 inputs an engine keeps."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def causal_conv(conv: nn.Conv1d, x: torch.Tensor) -> torch.Tensor:
    """x (B, T, C) -> silu(conv) (B, T, C); the conv pads k - 1 on both sides, so its first T outputs are causal."""
    T = x.shape[1]
    return F.silu(conv(x.transpose(1, 2))[..., :T]).transpose(1, 2)  # (B, C, T + k - 1) -> (B, T, C)


def conv_step(conv: nn.Conv1d, conv_state: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
    """One token: new (B, 1, C) after the kept last k - 1 inputs conv_state (B, C, k - 1, updated in place) ->
    silu(conv) (B, 1, C)."""
    window = torch.cat([conv_state, new.transpose(1, 2).to(conv_state.dtype)], dim=-1)  # (B, C, k)
    conv_state.copy_(window[..., 1:])
    out = (window * conv.weight[:, 0, :].to(window.dtype)).sum(-1)  # (B, C): the taps of each channel
    if conv.bias is not None:
        out = out + conv.bias.to(window.dtype)
    return F.silu(out).unsqueeze(1).to(new.dtype)  # (B, C) -> (B, 1, C)
