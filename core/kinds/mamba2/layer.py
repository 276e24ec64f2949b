"""A Mamba-2 layer in plain torch: the chunked SSD form for prefill, the recurrent step for decode, and its exact
token-mixing matrix for the maps.

Parameters carry transformers' names and layout (NemotronHMamba2Mixer), so a test loads one module's weights into the
other and compares outputs. Written by hand because transformers' torch path is bound to its cache and config
objects; the algorithm is Dao and Gu 2024 ("Transformers are SSMs"): per head a state S (P x N),
S_t = a_t S_{t-1} + dt_t x_t B_t^T with a_t = exp(dt_t A), y_t = S_t C_t + D x_t.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from core.arch.layer import LayerSpec
from core.kinds.mamba2.kind import CHUNK
from core.kinds.mamba2.spec import Mamba2Widths
from core.kinds.mixer_kind import widths_of
from core.kinds.short_conv import causal_conv, conv_step


class GroupedGatedRMSNorm(nn.Module):
    """x times silu(z), then RMSNorm over each group's d_inner / G channels (transformers' NemotronHRMSNormGated)."""

    def __init__(self, width: int, group: int, eps: float = 1e-5, device: torch.device | str = "cpu",
                 dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width, device=device, dtype=dtype))
        self.group, self.eps = group, eps

    def forward(self, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        h = x.float() * F.silu(z.float())
        shape = h.shape
        h = h.view(*shape[:-1], shape[-1] // self.group, self.group)  # (..., G, d_inner / G)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.view(shape).to(dtype)  # (..., G, d_inner / G) -> (..., d_inner)


class Mamba2Layer(nn.Module):
    def __init__(self, d_model: int, spec: LayerSpec, device: torch.device | str = "cpu",
                 dtype: torch.dtype = torch.float32, seed: int = 0) -> None:
        super().__init__()
        w = widths_of(spec, Mamba2Widths)
        self.spec, self.d_model = spec, d_model
        self.H, self.G, self.P, self.N, self.kernel = spec.n_heads, spec.n_kv_heads, w.head_dim, w.state_size, w.conv_kernel
        self.inner = self.H * self.P
        self.conv_dim = self.inner + 2 * self.G * self.N
        kw = {"device": device, "dtype": dtype}
        self.in_proj = nn.Linear(d_model, self.inner + self.conv_dim + self.H, bias=False, **kw)
        self.conv1d = nn.Conv1d(self.conv_dim, self.conv_dim, self.kernel, groups=self.conv_dim,
                                padding=self.kernel - 1, bias=True, **kw)
        self.dt_bias = nn.Parameter(torch.ones(self.H, **kw))
        self.A_log = nn.Parameter(torch.zeros(self.H, **kw))
        self.D = nn.Parameter(torch.ones(self.H, **kw))
        self.norm = GroupedGatedRMSNorm(self.inner, self.inner // self.G, **kw)
        self.out_proj = nn.Linear(self.inner, d_model, bias=False, **kw)
        self.reset_parameters(seed)

    @torch.no_grad()
    def reset_parameters(self, seed: int) -> None:
        """Weights in nn.Linear's range from a seeded generator; A_log = log(1 .. H) and D = dt_bias = 1, as
        transformers initialises Nemotron-H's mixer, and dt_bias drawn as mamba_ssm does (dt log-uniform in
        [0.001, 0.1]) so the heads' memory spans a token to hundreds."""
        gen = torch.Generator(device="cpu").manual_seed(seed)

        def uniform(t: torch.Tensor, bound: float) -> None:
            t.copy_((torch.rand(t.shape, generator=gen) * 2 - 1) * bound)

        for lin in (self.in_proj, self.out_proj):
            uniform(lin.weight, 1 / math.sqrt(lin.in_features))
        uniform(self.conv1d.weight, 1 / math.sqrt(self.kernel))
        uniform(self.conv1d.bias, 1 / math.sqrt(self.kernel))
        self.A_log.copy_(torch.log(torch.arange(1, self.H + 1, dtype=torch.float32)))
        dt = torch.exp(torch.rand(self.H, generator=gen) * (math.log(0.1) - math.log(0.001)) + math.log(0.001))
        self.dt_bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # softplus(dt_bias) = dt

    def split(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x (B, T, d) -> z (B, T, d_inner), the conv's input (B, T, conv_dim) and dt (B, T, H), before the conv."""
        return torch.split(self.in_proj(x), [self.inner, self.conv_dim, self.H], dim=-1)

    def heads(self, xbc: torch.Tensor, dt: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The conv's output (B, T, conv_dim) and dt (B, T, H) -> x (B, H, T, P), B and C (B, H, T, N) (each group's
        repeated over its heads), dt = softplus(dt + dt_bias) and log a = dt A (B, H, T); all float32."""
        Bsz, T, _ = xbc.shape
        x, b, c = torch.split(xbc.float(), [self.inner, self.G * self.N, self.G * self.N], dim=-1)
        x = x.view(Bsz, T, self.H, self.P).transpose(1, 2)  # (B, H, T, P)
        rep = self.H // self.G
        b, c = (t.view(Bsz, T, self.G, self.N).repeat_interleave(rep, dim=2).transpose(1, 2)
                for t in (b, c))  # (B, T, G N) -> (B, T, G, N) -> (B, T, H, N) -> (B, H, T, N)
        dt = F.softplus(dt.float() + self.dt_bias.float()).transpose(1, 2)  # (B, H, T)
        return x, b, c, dt, dt * -torch.exp(self.A_log.float())[:, None]

    def mixing_inputs(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """x (B, T, d) -> x, B, C, dt, log a as heads() gives them, and z (B, T, d_inner)."""
        z, xbc, dt = self.split(x)
        return (*self.heads(causal_conv(self.conv1d, xbc), dt), z)

    def finish(self, y: torch.Tensor, xs: torch.Tensor, z: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """y (B, H, T, P) plus the D skip of xs, then the gated norm and out_proj -> (B, T, d)."""
        Bsz, _, T, _ = y.shape
        y = y + xs * self.D.float()[:, None, None]
        y = y.transpose(1, 2).reshape(Bsz, T, self.inner)  # (B, H, T, P) -> (B, T, d_inner)
        return self.out_proj(self.norm(y, z).to(dtype))

    def forward(self, x: torch.Tensor, form: str = "chunked") -> torch.Tensor:
        xs, b, c, dt, la, z = self.mixing_inputs(x)
        y = ssd_chunked(xs, b, c, dt, la)[0] if form == "chunked" else ssd_recurrent(xs, b, c, dt, la)[0]
        return self.finish(y, xs, z, x.dtype)

    def empty_state(self, batch: int, device: torch.device | str) -> tuple[torch.Tensor, torch.Tensor]:
        """The conv's last k - 1 inputs (B, conv_dim, k - 1) and the SSM state (B, H, P, N), float32."""
        return (torch.zeros(batch, self.conv_dim, self.kernel - 1, device=device),
                torch.zeros(batch, self.H, self.P, self.N, device=device))

    def decode_step(self, x_new: torch.Tensor, conv_state: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        """One token per sequence: x_new (B, 1, d) against the kept states (updated in place) -> (B, 1, d)."""
        z, xbc, dt = self.split(x_new)
        xs, b, c, dt, la = self.heads(conv_step(self.conv1d, conv_state, xbc), dt)
        y, new = ssd_recurrent(xs, b, c, dt, la, state)
        state.copy_(new)
        return self.finish(y, xs, z, x_new.dtype)

    def core_call(self, x: torch.Tensor, phase: str) -> Callable[[], object]:
        xs, b, c, dt, la, _ = self.mixing_inputs(x)
        if phase == "prefill":
            return lambda: ssd_chunked(xs, b, c, dt, la)
        state = torch.zeros(x.shape[0], self.H, self.P, self.N, device=x.device)
        return lambda: ssd_recurrent(xs[:, :, -1:], b[:, :, -1:], c[:, :, -1:], dt[:, :, -1:], la[:, :, -1:], state)

    def probs_and_sinks(self, x: torch.Tensor) -> tuple[torch.Tensor, None]:
        """The SSD matrix (B, H, T, T) of x (B, T, d): y = M x before the D skip; no sinks."""
        xs, b, c, dt, la, _ = self.mixing_inputs(x.float())
        return ssd_matrix(b, c, dt, la), None


def decay_matrix(la: torch.Tensor) -> torch.Tensor:
    """log a (..., T) -> L (..., T, T) with L[t, s] = prod_{s < r <= t} a_r for s <= t, 0 above the diagonal."""
    T = la.shape[-1]
    A = la.cumsum(-1)
    upper = torch.ones(T, T, dtype=torch.bool, device=la.device).triu(1)
    return (A.unsqueeze(-1) - A.unsqueeze(-2)).masked_fill(upper, float("-inf")).exp()


def ssd_chunked(x: torch.Tensor, b: torch.Tensor, c: torch.Tensor, dt: torch.Tensor, la: torch.Tensor,
                state: torch.Tensor | None = None, chunk: int = CHUNK) -> tuple[torch.Tensor, torch.Tensor]:
    """SSD over chunks: x (B, H, T, P), b and c (B, H, T, N), dt and log a (B, H, T) -> y (B, H, T, P) without the D
    skip, and the final state (B, H, P, N). Within a chunk, (C B^T o L) (dt x); across chunks the state carries."""
    Bsz, H, T, P = x.shape
    N = b.shape[-1]
    pad = (chunk - T % chunk) % chunk
    x, b, c = (F.pad(t, (0, 0, 0, pad)) for t in (x, b, c))
    dt, la = (F.pad(t, (0, pad)) for t in (dt, la))
    n = (T + pad) // chunk
    x, b, c = (t.reshape(Bsz, H, n, chunk, t.shape[-1]) for t in (x, b, c))  # (B, H, n, C, .)
    dt, la = dt.reshape(Bsz, H, n, chunk), la.reshape(Bsz, H, n, chunk)  # (B, H, n, C)
    A = la.cumsum(-1)
    xdt = x * dt.unsqueeze(-1)
    y = ((c @ b.transpose(-1, -2)) * decay_matrix(la)) @ xdt  # within each chunk
    written = (xdt * (A[..., -1:] - A).exp().unsqueeze(-1)).transpose(-1, -2) @ b  # (B, H, n, P, N): each chunk's own
    S = torch.zeros(Bsz, H, P, N, device=x.device) if state is None else state.float()
    for i in range(n):
        y[:, :, i] += (c[:, :, i] * A[:, :, i].exp().unsqueeze(-1)) @ S.transpose(-1, -2)  # the earlier chunks' state
        S = S * A[:, :, i, -1].exp()[..., None, None] + written[:, :, i]
    return y.reshape(Bsz, H, n * chunk, P)[:, :, :T], S  # (B, H, n, C, P) -> (B, H, T, P)


def ssd_recurrent(x: torch.Tensor, b: torch.Tensor, c: torch.Tensor, dt: torch.Tensor, la: torch.Tensor,
                  state: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """SSD one token at a time (shapes as ssd_chunked): S = a S + dt x B^T, y = S C."""
    Bsz, H, T, P = x.shape
    S = torch.zeros(Bsz, H, P, b.shape[-1], device=x.device) if state is None else state.float()
    y = torch.empty_like(x)
    for t in range(T):
        S = S * la[:, :, t].exp()[..., None, None] + (x[:, :, t] * dt[:, :, t, None]).unsqueeze(-1) @ b[:, :, t].unsqueeze(-2)
        y[:, :, t] = (S @ c[:, :, t].unsqueeze(-1)).squeeze(-1)
    return y, S


def ssd_matrix(b: torch.Tensor, c: torch.Tensor, dt: torch.Tensor, la: torch.Tensor) -> torch.Tensor:
    """M (B, H, T, T) with y = M x before the D skip: M[t, s] = (C_t . B_s) dt_s prod_{s < r <= t} a_r (Dao and Gu
    2024's SSD matrix; Zimerman et al. 2024 draw it as attention)."""
    M = (c.double() @ b.double().transpose(-1, -2)) * decay_matrix(la.double()) * dt.double().unsqueeze(-2)
    return M.float()
