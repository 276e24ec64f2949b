"""A KDA layer in plain torch (Kimi Linear's linear layers): the chunked form for prefill, the recurrent step for
decode, and its exact implicit attention for the maps.

Parameters carry transformers' names and layout (KimiLinearDeltaAttention), so a test swaps weights with it. The
delta rule is Gated DeltaNet's with a decay per key channel: S_t = diag(exp(g_t)) S_{t-1}, then the delta update
S_t += k_t (beta_t (v_t - S_t^T k_t))^T, o_t = S_t^T q_t (Kimi Team 2025, "Kimi Linear"). Written by hand for the
reason Gated DeltaNet's is (core/kinds/gated_deltanet/layer.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from core.arch.layer import LayerSpec
from core.kinds.delta_rule import delta_recurrent
from core.kinds.kda.kind import CHUNK
from core.kinds.kda.spec import KDAWidths
from core.kinds.mixer_kind import widths_of
from core.kinds.short_conv import causal_conv, conv_step


def l2norm(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """x / sqrt(sum x^2 + eps) over the last axis, as fla's KDA kernels normalise q and k."""
    return x / torch.sqrt((x * x).sum(-1, keepdim=True) + eps)


class SigmoidGatedRMSNorm(nn.Module):
    """RMSNorm over a head's width, then times sigmoid(gate) (transformers' KimiLinearRMSNormGated; Kimi Linear's
    rms_norm_eps, 1e-5)."""

    def __init__(self, width: int, eps: float = 1e-5, device: torch.device | str = "cpu",
                 dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width, device=device, dtype=dtype))
        self.eps = eps

    def forward(self, x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        h = x.float()
        h = self.weight.float() * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps))
        return (h * torch.sigmoid(gate.float())).to(dtype)


class ForgetGate(nn.Module):
    """The per-channel decay's log: -exp(A_log) softplus(f_b(f_a(x)) + dt_bias), (B, T, H, d)."""

    def __init__(self, d_model: int, n_heads: int, head_dim: int, **kw: object) -> None:
        super().__init__()
        self.head_dim = head_dim
        self.f_a_proj = nn.Linear(d_model, head_dim, bias=False, **kw)  # type: ignore[arg-type]
        self.f_b_proj = nn.Linear(head_dim, n_heads * head_dim, bias=False, **kw)  # type: ignore[arg-type]
        self.dt_bias = nn.Parameter(torch.zeros(n_heads * head_dim, device=kw.get("device")))  # type: ignore[arg-type]
        self.A_log = nn.Parameter(torch.zeros(1, 1, n_heads, 1, device=kw.get("device")))  # type: ignore[arg-type]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = (self.f_b_proj(self.f_a_proj(x)).float() + self.dt_bias.float()).view(*x.shape[:2], -1, self.head_dim)
        return -self.A_log.float().exp() * F.softplus(g)  # g: (B, T, H*d) viewed as (B, T, H, d)


class KDALayer(nn.Module):
    def __init__(self, d_model: int, spec: LayerSpec, device: torch.device | str = "cpu",
                 dtype: torch.dtype = torch.float32, seed: int = 0) -> None:
        super().__init__()
        w = widths_of(spec, KDAWidths)
        self.spec, self.d_model = spec, d_model
        self.H, self.d, self.kernel = spec.n_heads, w.head_dim, w.conv_kernel
        self.width = self.H * self.d
        self.conv_dim = 3 * self.width
        kw = {"device": device, "dtype": dtype}
        self.q_proj, self.k_proj, self.v_proj = (nn.Linear(d_model, self.width, bias=False, **kw) for _ in range(3))
        self.conv1d = nn.Conv1d(self.conv_dim, self.conv_dim, self.kernel, groups=self.conv_dim,
                                padding=self.kernel - 1, bias=False, **kw)
        self.forget_gate = ForgetGate(d_model, self.H, self.d, **kw)
        self.b_proj = nn.Linear(d_model, self.H, bias=False, **kw)
        self.g_a_proj = nn.Linear(d_model, self.d, bias=False, **kw)
        self.g_b_proj = nn.Linear(self.d, self.width, bias=False, **kw)
        self.o_norm = SigmoidGatedRMSNorm(self.d, **kw)
        self.o_proj = nn.Linear(self.width, d_model, bias=False, **kw)
        self.reset_parameters(seed)

    @torch.no_grad()
    def reset_parameters(self, seed: int) -> None:
        """Weights in nn.Linear's range from a seeded generator; A in [1, 16] a head and dt log-uniform in [0.001, 0.1]
        a channel (dt_bias its inverse softplus), as fla's KDA layer draws them."""
        gen = torch.Generator(device="cpu").manual_seed(seed)

        def uniform(t: torch.Tensor, bound: float) -> None:
            t.copy_((torch.rand(t.shape, generator=gen) * 2 - 1) * bound)

        for lin in (self.q_proj, self.k_proj, self.v_proj, self.forget_gate.f_a_proj, self.forget_gate.f_b_proj,
                    self.b_proj, self.g_a_proj, self.g_b_proj, self.o_proj):
            uniform(lin.weight, 1 / math.sqrt(lin.in_features))
        uniform(self.conv1d.weight, 1 / math.sqrt(self.kernel))
        self.forget_gate.A_log.copy_(torch.log(torch.rand(1, 1, self.H, 1, generator=gen) * 15 + 1))
        dt = torch.exp(torch.rand(self.width, generator=gen) * (math.log(0.1) - math.log(0.001)) + math.log(0.001))
        self.forget_gate.dt_bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # softplus(dt_bias) = dt at f = 0

    def heads(self, conv: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The conv's output (B, T, 3 H d) and the layer's input x (B, T, d_model) -> q (scaled by 1/sqrt(d)), k
        normalised, v (B, H, T, d), the per-channel log decay g (B, H, T, d) and beta (B, H, T); all float32."""
        Bsz, T, _ = conv.shape
        q, k, v = (t.reshape(Bsz, T, self.H, self.d).transpose(1, 2).float()
                   for t in torch.split(conv, [self.width] * 3, dim=-1))  # (B, T, H d) -> (B, H, T, d)
        g = self.forget_gate(x).transpose(1, 2)  # (B, H, T, d)
        beta = torch.sigmoid(self.b_proj(x)).float().transpose(1, 2)  # (B, H, T)
        return l2norm(q) * self.d ** -0.5, l2norm(k), v, g, beta

    def mixing_inputs(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        mixed = torch.cat([self.q_proj(x), self.k_proj(x), self.v_proj(x)], dim=-1)  # (B, T, 3 H d)
        return self.heads(causal_conv(self.conv1d, mixed), x)

    def finish(self, o: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """o (B, H, T, d) -> o_proj(norm(o) x sigmoid(g_b(g_a(x)))) (B, T, d_model)."""
        Bsz, _, T, _ = o.shape
        gate = self.g_b_proj(self.g_a_proj(x)).view(Bsz, T, self.H, self.d)  # (B, T, H, d)
        o = self.o_norm(o.transpose(1, 2).to(x.dtype), gate)  # (B, T, H, d)
        return self.o_proj(o.reshape(Bsz, T, self.width))  # (B, T, H d) -> (B, T, d_model)

    def forward(self, x: torch.Tensor, form: str = "chunked") -> torch.Tensor:
        q, k, v, g, beta = self.mixing_inputs(x)
        o = kda_chunked(q, k, v, g, beta)[0] if form == "chunked" else kda_recurrent(q, k, v, g, beta)[0]
        return self.finish(o, x)

    def empty_state(self, batch: int, device: torch.device | str) -> tuple[torch.Tensor, torch.Tensor]:
        """The conv's last k - 1 inputs (B, 3 H d, k - 1) and the delta rule's state (B, H, d, d), float32."""
        return (torch.zeros(batch, self.conv_dim, self.kernel - 1, device=device),
                torch.zeros(batch, self.H, self.d, self.d, device=device))

    def decode_step(self, x_new: torch.Tensor, conv_state: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        mixed = torch.cat([self.q_proj(x_new), self.k_proj(x_new), self.v_proj(x_new)], dim=-1)  # (B, 1, 3 H d)
        q, k, v, g, beta = self.heads(conv_step(self.conv1d, conv_state, mixed), x_new)
        o, new = kda_recurrent(q, k, v, g, beta, state)
        state.copy_(new)
        return self.finish(o, x_new)

    def core_call(self, x: torch.Tensor, phase: str) -> Callable[[], object]:
        q, k, v, g, beta = self.mixing_inputs(x)
        if phase == "prefill":
            return lambda: kda_chunked(q, k, v, g, beta)
        state = torch.zeros(x.shape[0], self.H, self.d, self.d, device=x.device)
        return lambda: kda_recurrent(q[:, :, -1:], k[:, :, -1:], v[:, :, -1:], g[:, :, -1:], beta[:, :, -1:], state)

    def probs_and_sinks(self, x: torch.Tensor) -> tuple[torch.Tensor, None]:
        q, k, _, g, beta = self.mixing_inputs(x.float())
        return kda_implicit_attention(q, k, g, beta), None


def channel_decay(G: torch.Tensor) -> torch.Tensor:
    """Cumulative log decays G (..., C, d) -> exp(G_i - G_j) (..., C, C, d) for j <= i, 0 above the diagonal."""
    C = G.shape[-2]
    upper = torch.ones(C, C, dtype=torch.bool, device=G.device).triu(1)
    return (G.unsqueeze(-2) - G.unsqueeze(-3)).masked_fill(upper[..., None], float("-inf")).exp()


def kda_chunked(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor,
                state: torch.Tensor | None = None, chunk: int = CHUNK) -> tuple[torch.Tensor, torch.Tensor]:
    """The per-channel delta rule over chunks: q, k, v (B, H, T, d), g (B, H, T, d), beta (B, H, T) -> o (B, H, T, d)
    and the final state (B, H, d, d). A chunk's decayed products are built one chunk at a time (C x C x d each)."""
    B, H, T, dk = k.shape
    dv = v.shape[-1]
    pad = (chunk - T % chunk) % chunk
    q, k, v, g = (F.pad(t, (0, 0, 0, pad)) for t in (q, k, v, g))
    beta = F.pad(beta, (0, pad))
    n = (T + pad) // chunk
    q, k, v, g = (t.reshape(B, H, n, chunk, t.shape[-1]) for t in (q, k, v, g))  # (B, H, n, C, .)
    beta = beta.reshape(B, H, n, chunk)  # (B, H, T') -> (B, H, n, C)
    G = g.cumsum(-2)  # (B, H, n, C, d): the log decay from a chunk's start, a channel
    kb, vb = k * beta.unsqueeze(-1), v * beta.unsqueeze(-1)
    S = torch.zeros(B, H, dk, dv, device=q.device) if state is None else state.float()
    out = torch.empty_like(v)
    for i in range(n):
        D = channel_decay(G[:, :, i])  # (B, H, C, C, d)
        system = (kb[:, :, i].unsqueeze(-2) * k[:, :, i].unsqueeze(-3) * D).sum(-1)  # (B, H, C, C)
        attn = (q[:, :, i].unsqueeze(-2) * k[:, :, i].unsqueeze(-3) * D).sum(-1)  # (B, H, C, C): diagonal kept
        u = torch.linalg.solve_triangular(system, vb[:, :, i], upper=False, unitriangular=True)
        w = torch.linalg.solve_triangular(system, kb[:, :, i] * G[:, :, i].exp(), upper=False, unitriangular=True)
        v_new = u - w @ S  # (B, H, C, d_v)
        out[:, :, i] = (q[:, :, i] * G[:, :, i].exp()) @ S + attn @ v_new
        last = G[:, :, i, -1]  # (B, H, d)
        S = S * last.exp().unsqueeze(-1) + (k[:, :, i] * (last.unsqueeze(-2) - G[:, :, i]).exp()).transpose(-1, -2) @ v_new
    return out.reshape(B, H, n * chunk, dv)[:, :, :T], S  # (B, H, n, C, d_v) -> (B, H, T, d_v)


def kda_recurrent(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor,
                  state: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The delta rule one token at a time (shapes as its chunked form; core/kinds/delta_rule.py)."""
    return delta_recurrent(q, k, v, g, beta, state)


def kda_implicit_attention(q: torch.Tensor, k: torch.Tensor, g: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """M (B, H, T, T) with o = M v from an empty state: the whole sequence as one chunk, per head (a T x T x d decay
    tensor a head), in float64. M = A (I + tril(diag(beta) K-products, -1))^-1 diag(beta), the products decayed
    channel by channel."""
    B, H, T, _ = q.shape
    out = torch.empty(B, H, T, T, dtype=torch.float32, device=q.device)
    eye = torch.eye(T, dtype=torch.float64, device=q.device)
    for h in range(H):
        qh, kh, gh, bh = (t[:, h].double() for t in (q, k, g, beta))  # (B, T, d), (B, T)
        D = channel_decay(gh.cumsum(-2))  # (B, T, T, d)
        system = ((kh * bh.unsqueeze(-1)).unsqueeze(-2) * kh.unsqueeze(-3) * D).sum(-1)
        attn = (qh.unsqueeze(-2) * kh.unsqueeze(-3) * D).sum(-1)  # (B, T, T)
        inverse_beta = torch.linalg.solve_triangular(system, eye * bh.unsqueeze(-2), upper=False, unitriangular=True)
        out[:, h] = (attn @ inverse_beta).float()
    return out
