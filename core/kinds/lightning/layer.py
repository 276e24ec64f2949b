"""A lightning attention layer in plain torch (MiniMax-01's linear layers): blockwise prefill, the recurrent step for
decode, and its exact implicit attention for the maps.

Parameters carry transformers' names (MiniMaxLightningAttention), so a test swaps weights with it. Per head a state
S (h x h): S_t = exp(-lambda) S_{t-1} + k_t^T v_t, o_t = q_t S_t, with q, k, v = silu(x W_qkv) and a fixed rate
lambda a head (Qin et al. 2024, "Lightning Attention-2"; MiniMax 2025). MiniMax scales each layer's rates by its depth
(1 - l / (L - 1)); this layer carries layer 0's, the slowest decay. Written by hand for the reason Gated DeltaNet's is.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from core.arch.layer import LayerSpec
from core.kinds.lightning.kind import BLOCK
from core.kinds.lightning.spec import LightningWidths
from core.kinds.mixer_kind import widths_of


def slope_rates(n_heads: int) -> torch.Tensor:
    """Each head's decay rate at layer 0: (1 / 2^(8 / H))^(h + 1), times MiniMax's layer factor 1 + 1e-5 (H,)."""
    base = 1 / (2 ** (8 / n_heads))
    return base ** (torch.arange(n_heads, dtype=torch.float32) + 1) * (1 + 1e-5)


class LightningLayer(nn.Module):
    def __init__(self, d_model: int, spec: LayerSpec, device: torch.device | str = "cpu",
                 dtype: torch.dtype = torch.float32, seed: int = 0) -> None:
        super().__init__()
        w = widths_of(spec, LightningWidths)
        self.spec, self.d_model = spec, d_model
        self.H, self.h = spec.n_heads, w.head_dim
        self.width = self.H * self.h
        kw = {"device": device, "dtype": dtype}
        self.qkv_proj = nn.Linear(d_model, 3 * self.width, bias=False, **kw)
        self.norm = nn.RMSNorm(self.width, eps=1e-6, **kw)
        self.output_gate = nn.Linear(d_model, self.width, bias=False, **kw)
        self.out_proj = nn.Linear(self.width, d_model, bias=False, **kw)
        self.register_buffer("rates", slope_rates(self.H).to(device), persistent=False)
        self.reset_parameters(seed)

    @torch.no_grad()
    def reset_parameters(self, seed: int) -> None:
        gen = torch.Generator(device="cpu").manual_seed(seed)
        for lin in (self.qkv_proj, self.output_gate, self.out_proj):
            lin.weight.copy_((torch.rand(lin.weight.shape, generator=gen) * 2 - 1) / math.sqrt(lin.in_features))

    def mixing_inputs(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x (B, T, d) -> q, k, v (B, H, T, h) float32 (silu of the projection; no normalisation)."""
        Bsz, T, _ = x.shape
        qkv = F.silu(self.qkv_proj(x)).view(Bsz, T, self.H, 3 * self.h)  # (B, T, H, 3h): per head q, k, v
        q, k, v = torch.split(qkv, self.h, dim=-1)
        return tuple(t.transpose(1, 2).float() for t in (q, k, v))  # type: ignore[return-value]

    def finish(self, o: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """o (B, H, T, h) -> out_proj(sigmoid(x W_gate) x norm(o)) (B, T, d)."""
        Bsz, _, T, _ = o.shape
        o = self.norm(o.transpose(1, 2).reshape(Bsz, T, self.width).to(x.dtype))  # (B, H, T, h) -> (B, T, H h)
        return self.out_proj(torch.sigmoid(self.output_gate(x)) * o)

    def forward(self, x: torch.Tensor, form: str = "chunked") -> torch.Tensor:
        q, k, v = self.mixing_inputs(x)
        o = (lightning_blocks(q, k, v, self.rates)[0] if form == "chunked"
             else lightning_recurrent(q, k, v, self.rates)[0])
        return self.finish(o, x)

    def empty_state(self, batch: int, device: torch.device | str) -> tuple[torch.Tensor]:
        """The state (B, H, h, h), float32 (no convolution)."""
        return (torch.zeros(batch, self.H, self.h, self.h, device=device),)

    def decode_step(self, x_new: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        q, k, v = self.mixing_inputs(x_new)
        o, new = lightning_recurrent(q, k, v, self.rates, state)
        state.copy_(new)
        return self.finish(o, x_new)

    def core_call(self, x: torch.Tensor, phase: str) -> Callable[[], object]:
        q, k, v = self.mixing_inputs(x)
        if phase == "prefill":
            return lambda: lightning_blocks(q, k, v, self.rates)
        state = torch.zeros(x.shape[0], self.H, self.h, self.h, device=x.device)
        return lambda: lightning_recurrent(q[:, :, -1:], k[:, :, -1:], v[:, :, -1:], self.rates, state)

    def probs_and_sinks(self, x: torch.Tensor) -> tuple[torch.Tensor, None]:
        """M (B, H, T, T): M[t, s] = exp(-lambda (t - s)) q_t . k_s for s <= t."""
        q, k, _ = self.mixing_inputs(x.float())
        return decayed_scores(q, k, self.rates), None


def decay_mask(rates: torch.Tensor, T: int) -> torch.Tensor:
    """(H, T, T): exp(-lambda (t - s)) for s <= t, 0 above the diagonal."""
    pos = torch.arange(T, device=rates.device, dtype=torch.float32)
    gap = pos[:, None] - pos[None, :]  # (T, T)
    return torch.where(gap >= 0, torch.exp(-rates[:, None, None] * gap), torch.zeros((), device=rates.device))


def decayed_scores(q: torch.Tensor, k: torch.Tensor, rates: torch.Tensor) -> torch.Tensor:
    return ((q.double() @ k.double().transpose(-1, -2)) * decay_mask(rates, q.shape[-2]).double()).float()


def lightning_blocks(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, rates: torch.Tensor,
                     state: torch.Tensor | None = None, block: int = BLOCK) -> tuple[torch.Tensor, torch.Tensor]:
    """Blockwise: within a block the decayed scores times v, across blocks the decayed state. q, k, v (B, H, T, h) ->
    o (B, H, T, h) and the final state (B, H, h, h)."""
    B, H, T, h = q.shape
    S = torch.zeros(B, H, h, v.shape[-1], device=q.device) if state is None else state.float()
    out = torch.empty_like(v)
    for start in range(0, T, block):
        qb, kb, vb = (t[:, :, start:start + block] for t in (q, k, v))
        C = qb.shape[-2]
        steps = torch.arange(1, C + 1, device=q.device, dtype=torch.float32)
        q_decay = torch.exp(-rates[:, None] * steps)[..., None]  # (H, C, 1): the state's age at each query
        k_decay = torch.exp(-rates[:, None] * (C - steps))[..., None]  # (H, C, 1): each key's age at the block's end
        intra = ((qb @ kb.transpose(-1, -2)) * decay_mask(rates, C)) @ vb
        out[:, :, start:start + C] = intra + (qb * q_decay) @ S
        S = S * torch.exp(-rates * C)[:, None, None] + (kb * k_decay).transpose(-1, -2) @ vb
    return out, S


def lightning_recurrent(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, rates: torch.Tensor,
                        state: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """One token at a time: S = exp(-lambda) S + k^T v, o = q S."""
    B, H, T, h = q.shape
    S = torch.zeros(B, H, h, v.shape[-1], device=q.device) if state is None else state.float()
    ratio = torch.exp(-rates)[:, None, None]  # (H, 1, 1)
    out = torch.empty_like(v)
    for t in range(T):
        S = ratio * S + k[:, :, t].unsqueeze(-1) @ v[:, :, t].unsqueeze(-2)
        out[:, :, t] = (q[:, :, t].unsqueeze(-2) @ S).squeeze(-2)
    return out, S
