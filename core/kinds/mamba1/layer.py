"""A Mamba-1 layer in plain torch (Jamba's mixers): the selective scan for prefill and decode, and the implicit
attention of a few of its channels for the maps.

Parameters carry transformers' names (JambaMambaMixer), so a test swaps weights with it. Per channel c a state h
(N): h_t = exp(dt_t A_c) h_{t-1} + dt_t B_t x_t, y_t = C_t . h_t + D_c x_t, then y times silu(z) (Gu and Dao 2023,
"Mamba"; Jamba's RMSNorms on dt, B and C). The CPU has no chunked form of the selective scan (the field's is a
parallel scan kernel on a GPU), so prefill scans token by token, as transformers' torch path does.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from core.arch.layer import LayerSpec
from core.kinds.mamba1.kind import MAPS
from core.kinds.mamba1.spec import Mamba1Widths
from core.kinds.mixer_kind import widths_of
from core.kinds.short_conv import causal_conv, conv_step


class Mamba1Layer(nn.Module):
    def __init__(self, d_model: int, spec: LayerSpec, device: torch.device | str = "cpu",
                 dtype: torch.dtype = torch.float32, seed: int = 0) -> None:
        super().__init__()
        w = widths_of(spec, Mamba1Widths)
        self.spec, self.d_model = spec, d_model
        self.D, self.N, self.R, self.kernel = w.d_inner, w.state_size, w.dt_rank, w.conv_kernel
        kw = {"device": device, "dtype": dtype}
        self.in_proj = nn.Linear(d_model, 2 * self.D, bias=False, **kw)
        self.conv1d = nn.Conv1d(self.D, self.D, self.kernel, groups=self.D, padding=self.kernel - 1, bias=True, **kw)
        self.x_proj = nn.Linear(self.D, self.R + 2 * self.N, bias=False, **kw)
        self.dt_proj = nn.Linear(self.R, self.D, bias=True, **kw)
        self.A_log = nn.Parameter(torch.log(torch.arange(1, self.N + 1, **kw)).expand(self.D, -1).contiguous())
        self.D_skip = nn.Parameter(torch.ones(self.D, **kw))
        self.dt_layernorm, self.b_layernorm, self.c_layernorm = (nn.RMSNorm(n, eps=1e-6, **kw)
                                                                  for n in (self.R, self.N, self.N))
        self.out_proj = nn.Linear(self.D, d_model, bias=False, **kw)
        self.reset_parameters(seed)

    def transformers_state_dict(self) -> dict[str, torch.Tensor]:
        """The weights under transformers' names (its D is our D_skip: D is our d_inner)."""
        sd = self.state_dict()
        sd["D"] = sd.pop("D_skip")
        return sd

    @torch.no_grad()
    def reset_parameters(self, seed: int) -> None:
        """Weights in nn.Linear's range from a seeded generator; A_log = log(1 .. N) a channel and D = 1, as Jamba
        initialises them; dt log-uniform in [0.001, 0.1] through dt_proj's bias (mamba_ssm's draw)."""
        gen = torch.Generator(device="cpu").manual_seed(seed)

        def uniform(t: torch.Tensor, bound: float) -> None:
            t.copy_((torch.rand(t.shape, generator=gen) * 2 - 1) * bound)

        for lin in (self.in_proj, self.x_proj, self.dt_proj, self.out_proj):
            uniform(lin.weight, 1 / math.sqrt(lin.in_features))
        uniform(self.conv1d.weight, 1 / math.sqrt(self.kernel))
        uniform(self.conv1d.bias, 1 / math.sqrt(self.kernel))
        dt = torch.exp(torch.rand(self.D, generator=gen) * (math.log(0.1) - math.log(0.001)) + math.log(0.001))
        self.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))

    def selective(self, xc: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The conv's output (B, T, D) -> dt (B, T, D) after softplus, B and C (B, T, N), float32."""
        dt, b, c = torch.split(self.x_proj(xc), [self.R, self.N, self.N], dim=-1)
        dt = self.dt_proj(self.dt_layernorm(dt))  # (B, T, D), with dt_proj's bias
        return F.softplus(dt.float()), self.b_layernorm(b).float(), self.c_layernorm(c).float()

    def mixing_inputs(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """x (B, T, d) -> the scan's input xc (B, T, D), dt (B, T, D), B and C (B, T, N), and the gate z (B, T, D)."""
        xs, z = self.in_proj(x).chunk(2, dim=-1)  # (B, T, D) each
        xc = causal_conv(self.conv1d, xs)  # (B, T, D)
        return (xc, *self.selective(xc), z)

    def finish(self, y: torch.Tensor, xc: torch.Tensor, z: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        y = (y + xc.float() * self.D_skip.float()) * F.silu(z.float())
        return self.out_proj(y.to(dtype))

    def forward(self, x: torch.Tensor, form: str = "scan") -> torch.Tensor:
        xc, dt, b, c, z = self.mixing_inputs(x)
        return self.finish(selective_scan(xc.float(), dt, b, c, -self.A_log.float().exp())[0], xc, z, x.dtype)

    def empty_state(self, batch: int, device: torch.device | str) -> tuple[torch.Tensor, torch.Tensor]:
        """The conv's last k - 1 inputs (B, D, k - 1) and the SSM state (B, D, N), float32."""
        return (torch.zeros(batch, self.D, self.kernel - 1, device=device),
                torch.zeros(batch, self.D, self.N, device=device))

    def decode_step(self, x_new: torch.Tensor, conv_state: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        xs, z = self.in_proj(x_new).chunk(2, dim=-1)  # (B, 1, D) each
        xc = conv_step(self.conv1d, conv_state, xs)  # (B, 1, D)
        dt, b, c = self.selective(xc)
        y, new = selective_scan(xc.float(), dt, b, c, -self.A_log.float().exp(), state)
        state.copy_(new)
        return self.finish(y, xc, z, x_new.dtype)

    def core_call(self, x: torch.Tensor, phase: str) -> Callable[[], object]:
        xc, dt, b, c, _ = self.mixing_inputs(x)
        A = -self.A_log.float().exp()
        if phase == "prefill":
            return lambda: selective_scan(xc.float(), dt, b, c, A)
        state = torch.zeros(x.shape[0], self.D, self.N, device=x.device)
        return lambda: selective_scan(xc[:, -1:].float(), dt[:, -1:], b[:, -1:], c[:, -1:], A, state)

    def channels(self) -> list[int]:
        """The channels the maps draw: MAPS of them, evenly spaced from channel 0."""
        return [i * self.D // MAPS for i in range(min(MAPS, self.D))]

    def probs_and_sinks(self, x: torch.Tensor) -> tuple[torch.Tensor, None]:
        """(B, MAPS, T, T): for each drawn channel c, M_c[t, s] = sum_n C_t[n] B_s[n] dt_s exp(A_cn (dt_{s+1} + ... +
        dt_t)), the weight of x_s in y_t before the D skip."""
        xc, dt, b, c, _ = self.mixing_inputs(x.float())
        A = -self.A_log.double().exp()
        maps = [channel_matrix(dt[..., ch].double(), b.double(), c.double(), A[ch]) for ch in self.channels()]
        return torch.stack(maps, dim=1).float(), None


def selective_scan(x: torch.Tensor, dt: torch.Tensor, b: torch.Tensor, c: torch.Tensor, A: torch.Tensor,
                   state: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """x and dt (B, T, D), b and c (B, T, N), A (D, N) -> y (B, T, D) before the D skip, and the state (B, D, N)."""
    Bsz, T, D = x.shape
    h = torch.zeros(Bsz, D, A.shape[-1], device=x.device) if state is None else state.float()
    y = torch.empty_like(x)
    for t in range(T):
        h = torch.exp(dt[:, t, :, None] * A) * h + (dt[:, t] * x[:, t])[..., None] * b[:, t, None, :]
        y[:, t] = (h @ c[:, t, :, None]).squeeze(-1)
    return y, h


def channel_matrix(dt: torch.Tensor, b: torch.Tensor, c: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    """One channel's mixing matrix (B, T, T) from its dt (B, T), the shared B and C (B, T, N) and its A (N)."""
    T = dt.shape[-1]
    cum = dt.cumsum(-1)
    gap = cum.unsqueeze(-1) - cum.unsqueeze(-2)  # (B, T, T): dt_{s+1} + ... + dt_t for s <= t
    upper = torch.ones(T, T, dtype=torch.bool, device=dt.device).triu(1)
    decay = torch.exp(gap.masked_fill(upper, 0.0).unsqueeze(-1) * A)  # (B, T, T, N)
    M = (c.unsqueeze(-2) * b.unsqueeze(-3) * decay).sum(-1) * dt.unsqueeze(-2)  # (B, T, T)
    return M.masked_fill(upper, 0.0)
