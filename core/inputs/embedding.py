"""Seeded token embeddings for random-weight mode: the same token always gets the same vector."""

from __future__ import annotations

import math
import zlib

import torch

# Embedding scale: large enough that random heads form visible patterns instead of near-uniform rows.
EMBED_STD = 2.0


def token_vector(token: str, d_model: int, seed: int) -> torch.Tensor:
    """A fixed random vector per (token, seed), case-folded so 'The' and 'the' match."""
    key = zlib.crc32(token.casefold().encode("utf-8")) ^ (seed * 0x9E3779B1 & 0xFFFFFFFF)
    gen = torch.Generator().manual_seed(key)
    return torch.randn(d_model, generator=gen) * EMBED_STD  # (d,)


def sinusoidal_positions(n_tokens: int, d_model: int, start: int = 0) -> torch.Tensor:
    """The original transformer's position code of positions start..start + T - 1, (T, d)."""
    pos = torch.arange(start, start + n_tokens, dtype=torch.float32)[:, None]  # (T, 1)
    i = torch.arange(0, d_model, 2, dtype=torch.float32)  # (ceil(d/2),)
    angles = pos / torch.pow(10000.0, i / max(d_model, 1))  # (T, ceil(d/2))
    pe = torch.zeros(n_tokens, d_model)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles[:, : d_model // 2])
    return pe


def embed_tokens(tokens: list[str], d_model: int, seed: int = 0) -> torch.Tensor:
    """tokens -> (1, T, d) float32: token vectors plus positions."""
    if not tokens:
        raise ValueError("there are no tokens to show; type some text.")
    vecs = torch.stack([token_vector(t, d_model, seed) for t in tokens])  # (T, d)
    x = vecs + math.sqrt(2.0) * sinusoidal_positions(len(tokens), d_model)
    return x.unsqueeze(0)  # (1, T, d)
