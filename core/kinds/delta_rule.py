"""The gated delta rule one token at a time, shared by the kinds that run it (Gated DeltaNet: a decay per head; KDA: a
decay per key channel): S_t = diag(exp(g_t)) S_{t-1}, then S_t += k_t (beta_t (v_t - S_t^T k_t))^T, o_t = S_t^T q_t."""

from __future__ import annotations

import torch


def delta_recurrent(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor,
                    state: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """q, k (B, H, T, d_k), v (B, H, T, d_v), the log decay g (B, H, T) or (B, H, T, d_k), beta (B, H, T) ->
    o (B, H, T, d_v) and the state (B, H, d_k, d_v): decay, read S^T k, write the correction, read S^T q."""
    B, H, T, dk = k.shape
    S = torch.zeros(B, H, dk, v.shape[-1], device=q.device) if state is None else state.float()
    out = torch.empty_like(v)
    for t in range(T):
        decay = g[:, :, t].exp()  # (B, H) a head, or (B, H, d_k) a key channel
        S = S * (decay[..., None, None] if decay.dim() == 2 else decay.unsqueeze(-1))
        kt = k[:, :, t].unsqueeze(-2)  # (B, H, 1, d_k)
        delta = (v[:, :, t].unsqueeze(-2) - kt @ S) * beta[:, :, t][..., None, None]  # (B, H, 1, d_v)
        S = S + kt.transpose(-1, -2) @ delta
        out[:, :, t] = (q[:, :, t].unsqueeze(-2) @ S).squeeze(-2)
    return out, S
