"""A Gated DeltaNet layer in plain torch: the chunked form for prefill, the recurrent step for decode, and its exact
implicit attention matrix for the maps.

Parameters carry transformers' names and layout (Qwen3NextGatedDeltaNet), so a test loads one module's weights into
the other and compares outputs. Written by hand because no library runs this layer on a CPU without transformers'
whole model around it; the algorithm is the DeltaNet papers' (Yang et al. 2024, "Parallelizing Linear Transformers
with the Delta Rule over Sequence Length"; "Gated Delta Networks", 2025): per value head a state S (d_k x d_v),
S_t = exp(g_t) S_{t-1} + k_t (beta_t (v_t - exp(g_t) S_{t-1}^T k_t))^T, o_t = S_t^T q_t.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from core.arch.layer import LayerSpec
from core.kinds.delta_rule import delta_recurrent
from core.kinds.gated_deltanet.kind import CHUNK
from core.kinds.gated_deltanet.spec import GDNWidths
from core.kinds.mixer_kind import widths_of
from core.kinds.short_conv import causal_conv, conv_step


def l2norm(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """x / sqrt(sum x^2 + eps) over the last axis, as fla and transformers normalise q and k."""
    return x * torch.rsqrt((x * x).sum(-1, keepdim=True) + eps)


class GatedRMSNorm(nn.Module):
    """RMSNorm over a value head's width, then times silu(z): the layer's output gate."""

    def __init__(self, width: int, eps: float = 1e-6, device: torch.device | str = "cpu",
                 dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width, device=device, dtype=dtype))
        self.eps = eps

    def forward(self, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return (self.weight * h.to(dtype) * F.silu(z.float())).to(dtype)


class GDNLayer(nn.Module):
    def __init__(self, d_model: int, spec: LayerSpec, device: torch.device | str = "cpu",
                 dtype: torch.dtype = torch.float32, seed: int = 0) -> None:
        super().__init__()
        w = widths_of(spec, GDNWidths)
        self.spec, self.d_model = spec, d_model
        self.n_k, self.n_v, self.dk, self.dv, self.kernel = (spec.n_kv_heads, spec.n_heads, w.k_head_dim,
                                                             w.v_head_dim, w.conv_kernel)
        self.key_dim, self.value_dim = self.n_k * self.dk, self.n_v * self.dv
        self.conv_dim = 2 * self.key_dim + self.value_dim
        kw = {"device": device, "dtype": dtype}
        self.in_proj_qkvz = nn.Linear(d_model, 2 * self.key_dim + 2 * self.value_dim, bias=False, **kw)
        self.in_proj_ba = nn.Linear(d_model, 2 * self.n_v, bias=False, **kw)
        self.conv1d = nn.Conv1d(self.conv_dim, self.conv_dim, self.kernel, groups=self.conv_dim,
                                padding=self.kernel - 1, bias=False, **kw)
        self.dt_bias = nn.Parameter(torch.ones(self.n_v, **kw))
        self.A_log = nn.Parameter(torch.zeros(self.n_v, **kw))
        self.norm = GatedRMSNorm(self.dv, **kw)
        self.out_proj = nn.Linear(self.value_dim, d_model, bias=False, **kw)
        self.reset_parameters(seed)

    @torch.no_grad()
    def reset_parameters(self, seed: int) -> None:
        """Linear and conv weights in nn.Linear's range from a seeded generator; A and dt as fla's GatedDeltaNet
        draws them (A ~ U(0, 16), dt log-uniform in [0.001, 0.1], dt_bias its inverse softplus), so the heads' memory
        spans a token to hundreds, as a trained model's do."""
        gen = torch.Generator(device="cpu").manual_seed(seed)

        def uniform(t: torch.Tensor, bound: float) -> None:
            t.copy_((torch.rand(t.shape, generator=gen) * 2 - 1) * bound)

        for lin in (self.in_proj_qkvz, self.in_proj_ba, self.out_proj):
            uniform(lin.weight, 1 / math.sqrt(lin.in_features))
        uniform(self.conv1d.weight, 1 / math.sqrt(self.kernel))
        self.A_log.copy_(torch.log(torch.rand(self.n_v, generator=gen) * 16 + 1e-4))
        dt = torch.exp(torch.rand(self.n_v, generator=gen) * (math.log(0.1) - math.log(0.001)) + math.log(0.001))
        self.dt_bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # softplus(dt_bias) = dt

    # --- the projections ------------------------------------------------------------------------------------------
    def split_projections(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """x (B, T, d) -> the conv's input (B, T, conv_dim) and z (B, T, H_v, d_v), b and a (B, T, H_v), in
        transformers' grouped layout (per key head: its q, k, then its group's v and z)."""
        B, T, _ = x.shape
        g = self.n_v // self.n_k
        qkvz = self.in_proj_qkvz(x).view(B, T, self.n_k, 2 * self.dk + 2 * g * self.dv)  # (B, T, H_k, ...)
        ba = self.in_proj_ba(x).view(B, T, self.n_k, 2 * g)  # (B, T, H_k, 2g)
        q, k, v, z = torch.split(qkvz, [self.dk, self.dk, g * self.dv, g * self.dv], dim=3)
        b, a = torch.split(ba, [g, g], dim=3)
        mixed = torch.cat([q.reshape(B, T, -1), k.reshape(B, T, -1), v.reshape(B, T, -1)], dim=-1)  # (B, T, conv_dim)
        return (mixed, z.reshape(B, T, self.n_v, self.dv), b.reshape(B, T, self.n_v),  # (B, T, H_v, d_v), (B, T, H_v)
                a.reshape(B, T, self.n_v))

    def gates(self, b: torch.Tensor, a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """beta = sigmoid(b); g = -exp(A_log) softplus(a + dt_bias) (log of the decay, <= 0); both (B, T, H_v)."""
        return b.sigmoid(), -self.A_log.float().exp() * F.softplus(a.float() + self.dt_bias)

    def heads(self, mixed: torch.Tensor, b: torch.Tensor, a: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The conv's output (B, T, conv_dim) -> q, k (B, H_v, T, d_k) normalised (q also by 1/sqrt(d_k)), each key
        head repeated over its group; v (B, H_v, T, d_v); g and beta (B, H_v, T); all float32."""
        B, T, _ = mixed.shape
        q, k, v = torch.split(mixed, [self.key_dim, self.key_dim, self.value_dim], dim=-1)
        g = self.n_v // self.n_k
        q = q.reshape(B, T, self.n_k, self.dk).repeat_interleave(g, dim=2)  # (B, T, H_v, d_k)
        k = k.reshape(B, T, self.n_k, self.dk).repeat_interleave(g, dim=2)  # (B, T, H_v, d_k)
        v = v.reshape(B, T, self.n_v, self.dv)  # (B, T, H_v, d_v)
        beta, decay = self.gates(b, a)
        q, k, v = (t.transpose(1, 2).float() for t in (q, k, v))  # (B, H_v, T, .)
        q = l2norm(q) * self.dk ** -0.5
        return q, l2norm(k), v, decay.transpose(1, 2), beta.float().transpose(1, 2)  # gates (B, H_v, T)

    def mixing_inputs(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """x (B, T, d) -> q, k, v, g, beta as heads() gives them, and z (B, T, H_v, d_v)."""
        mixed, z, b, a = self.split_projections(x)
        return (*self.heads(causal_conv(self.conv1d, mixed), b, a), z)

    def finish(self, o: torch.Tensor, z: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """o (B, H_v, T, d_v) and z (B, T, H_v, d_v) -> out_proj(norm(o) x silu(z)) (B, T, d)."""
        B, _, T, _ = o.shape
        o = self.norm(o.transpose(1, 2).to(dtype), z)  # (B, T, H_v, d_v)
        return self.out_proj(o.reshape(B, T, self.value_dim))  # (B, T, H_v d_v) -> (B, T, d)

    # --- the two forms of the delta rule --------------------------------------------------------------------------
    def forward(self, x: torch.Tensor, form: str = "chunked") -> torch.Tensor:
        """x (B, T, d) -> (B, T, d), the delta rule in the chunked form (prefill) or step by step."""
        q, k, v, g, beta, z = self.mixing_inputs(x)
        o = chunked(q, k, v, g, beta)[0] if form == "chunked" else recurrent(q, k, v, g, beta)[0]
        return self.finish(o, z, x.dtype)

    def core_call(self, x: torch.Tensor, phase: str) -> Callable[[], object]:
        """The delta rule alone on x's q, k, v and gates (computed now): the chunked form over x (prefill), or one
        recurrent step from a full state (decode)."""
        q, k, v, g, beta, _ = self.mixing_inputs(x)
        if phase == "prefill":
            return lambda: chunked(q, k, v, g, beta)
        state = torch.zeros(x.shape[0], self.n_v, self.dk, self.dv, device=x.device)
        return lambda: recurrent(q[:, :, -1:], k[:, :, -1:], v[:, :, -1:], g[:, :, -1:], beta[:, :, -1:], state)

    def empty_state(self, batch: int, device: torch.device | str) -> tuple[torch.Tensor, torch.Tensor]:
        """The conv's last k - 1 inputs (B, conv_dim, k - 1) and the delta rule's state (B, H_v, d_k, d_v), float32."""
        return (torch.zeros(batch, self.conv_dim, self.kernel - 1, device=device),
                torch.zeros(batch, self.n_v, self.dk, self.dv, device=device))

    def decode_step(self, x_new: torch.Tensor, conv_state: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        """One token per sequence: x_new (B, 1, d) against the kept states (updated in place) -> (B, 1, d)."""
        mixed, z, b, a = self.split_projections(x_new)  # mixed (B, 1, conv_dim)
        q, k, v, g, beta = self.heads(conv_step(self.conv1d, conv_state, mixed), b, a)
        o, new = recurrent(q, k, v, g, beta, state)
        state.copy_(new)
        return self.finish(o, z, x_new.dtype)

    # --- what the maps draw ---------------------------------------------------------------------------------------
    def probs_and_sinks(self, x: torch.Tensor) -> tuple[torch.Tensor, None]:
        """The implicit attention (B, H_v, T, T) of x (B, T, d): M[t, s], the weight of v_s in o_t; no sinks."""
        q, k, _, g, beta, _ = self.mixing_inputs(x.float())
        return implicit_attention(q, k, g, beta), None


def chunked(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor,
            state: torch.Tensor | None = None, chunk: int = CHUNK) -> tuple[torch.Tensor, torch.Tensor]:
    """The delta rule over chunks of C tokens: q, k (B, H, T, d_k), v (B, H, T, d_v), g and beta (B, H, T) ->
    o (B, H, T, d_v) and the final state (B, H, d_k, d_v). Within a chunk the updates are one triangular solve (the UT
    transform); across chunks the state carries."""
    B, H, T, dk = k.shape
    dv = v.shape[-1]
    pad = (chunk - T % chunk) % chunk
    q, k, v = (F.pad(t, (0, 0, 0, pad)) for t in (q, k, v))
    g, beta = (F.pad(t, (0, pad)) for t in (g, beta))
    n = (T + pad) // chunk
    q, k, v = (t.reshape(B, H, n, chunk, t.shape[-1]) for t in (q, k, v))  # (B, H, n, C, .)
    g, beta = g.reshape(B, H, n, chunk), beta.reshape(B, H, n, chunk)  # (B, H, n, C)
    G = g.cumsum(-1)  # the log decay from a chunk's start to each position
    upper = torch.ones(chunk, chunk, dtype=torch.bool, device=q.device).triu(1)
    D = (G.unsqueeze(-1) - G.unsqueeze(-2)).masked_fill(upper, float("-inf")).exp()  # (B, H, n, C, C): i >= j
    kb, vb = k * beta.unsqueeze(-1), v * beta.unsqueeze(-1)
    system = (kb @ k.transpose(-1, -2)) * D  # its strict lower triangle, with a unit diagonal, is the UT system
    u = torch.linalg.solve_triangular(system, vb, upper=False, unitriangular=True)  # (B, H, n, C, d_v)
    w = torch.linalg.solve_triangular(system, kb * G.exp().unsqueeze(-1), upper=False, unitriangular=True)
    attn = (q @ k.transpose(-1, -2)) * D  # (B, H, n, C, C)
    q_in = q * G.exp().unsqueeze(-1)  # reads the state decayed to each position
    k_out = k * (G[..., -1:] - G).exp().unsqueeze(-1)  # writes decayed to the chunk's end
    S = torch.zeros(B, H, dk, dv, device=q.device) if state is None else state.float()
    out = torch.empty_like(u)
    for i in range(n):
        v_new = u[:, :, i] - w[:, :, i] @ S  # (B, H, C, d_v): the correction the state does not yet predict
        out[:, :, i] = q_in[:, :, i] @ S + attn[:, :, i] @ v_new
        S = S * G[:, :, i, -1].exp()[..., None, None] + k_out[:, :, i].transpose(-1, -2) @ v_new
    return out.reshape(B, H, n * chunk, dv)[:, :, :T], S  # (B, H, n, C, d_v) -> (B, H, T, d_v)


def recurrent(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor,
              state: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The delta rule one token at a time (shapes as its chunked form; core/kinds/delta_rule.py)."""
    return delta_recurrent(q, k, v, g, beta, state)


def implicit_attention(q: torch.Tensor, k: torch.Tensor, g: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """M (B, H, T, T) with o = M v for any v: the whole sequence as one chunk from an empty state,
    M = (Q K^T o D) (I + tril(diag(beta) K K^T o D, -1))^-1 diag(beta), D[t, s] = exp(G_t - G_s) for s <= t
    (Zimerman et al. 2024 draw such matrices as attention maps). Computed in float64: a long decay product is tiny."""
    q, k, g, beta = q.double(), k.double(), g.double(), beta.double()
    T = q.shape[-2]
    G = g.cumsum(-1)
    upper = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    D = (G.unsqueeze(-1) - G.unsqueeze(-2)).masked_fill(upper, float("-inf")).exp()  # (B, H, T, T)
    system = ((k * beta.unsqueeze(-1)) @ k.transpose(-1, -2)) * D
    eye = torch.eye(T, dtype=q.dtype, device=q.device).expand_as(system)
    inverse_beta = torch.linalg.solve_triangular(system, eye * beta.unsqueeze(-2), upper=False, unitriangular=True)
    return ((q @ k.transpose(-1, -2)) * D @ inverse_beta).float()
