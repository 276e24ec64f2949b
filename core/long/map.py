"""A layer's attention over a long input without its T x T matrix.

Queries are taken a chunk of rows at a time; each row's softmax runs over every key it may read (so the
probabilities are exact, not an approximation), then the chunk is pooled into blocks of `block` x `block`
tokens (the max, or the mean, of the probabilities in each block) and dropped. A one-token-wide sink column
or a window's band survives max pooling at any zoom. The same pass sums, per head, the attention given to the
first token (the sink), to the keys within a band of W tokens, to those beyond it, to a learned sink logit
(gpt-oss), and the mean distance from query to key.

Memory: the chunk's scores, H x rows x keys floats, are sized to `chunk_bytes`; the output is H x (T/block)^2.
Hand-written because no library pools a softmax blockwise: SDPA and flex_attention return outputs, not
probabilities, and FlashAttention's kernels keep theirs in registers.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from core.arch.config import short_int
from core.long.budget import CHUNK_BYTES, DEFAULT_BAND, MAX_TOKENS, POOLS

__all__ = ["CHUNK_BYTES", "DEFAULT_BAND", "MAX_TOKENS", "POOLS", "LongMap", "Rule", "Stopped", "long_map"]


class Stopped(Exception):
    """The caller asked the map to stop (a newer request, or Cancel)."""


@dataclass(frozen=True)
class Rule:
    """Which keys a query reads and how its row is normalised: the layer's own rule (core/kinds/standard/masking.py's
    convention: query i reads key j when j <= i under a causal mask, and i - W < j with a window W)."""

    scale: float
    causal: bool = True
    window: int | None = None
    sinks: torch.Tensor | None = None  # (H,) learned sink logits, one per head, joining every row's softmax

    def key_range(self, r0: int, r1: int, n_keys: int) -> tuple[int, int]:
        """The keys rows r0..r1-1 may read: [lo, hi)."""
        hi = min(r1, n_keys) if self.causal else n_keys
        lo = max(0, r0 - self.window + 1) if (self.window is not None and self.causal) else 0
        if self.window is not None and not self.causal:
            lo, hi = max(0, r0 - self.window + 1), min(n_keys, r1 + self.window - 1)
        return lo, hi


@dataclass
class HeadStats:
    """Per head, averaged over the queries (the first query of a causal layer left out: it reads only itself)."""

    sink: np.ndarray  # (H,) attention on the first token
    band: np.ndarray  # (H,) on the keys within the band (i - W < j <= i; |i - j| < W without a causal mask), token 0 not
    beyond: np.ndarray  # (H,) on the keys further away, token 0 not
    learned_sink: np.ndarray  # (H,) the share a learned sink logit takes (0 without one)
    distance: np.ndarray  # (H,) mean |i - j| weighted by the probabilities, in tokens
    top_key: np.ndarray  # (H,) the key position that takes the most attention (a sink need not be the first token)
    top_mass: np.ndarray  # (H,) the attention it takes, averaged over the queries
    band_width: int  # W of the band
    n_queries: int

    def to_json(self) -> dict[str, object]:
        return {"band_width": self.band_width, "n_queries": self.n_queries,
                **{k: [round(float(x), 6) for x in getattr(self, k)] for k in
                   ("sink", "band", "beyond", "learned_sink", "distance", "top_mass")},
                "top_key": [int(x) for x in self.top_key]}


@dataclass
class LongMap:
    pooled: np.ndarray  # (H, R, C) float32: the pooled probabilities of rows x columns blocks
    block: int  # tokens a side of one pooled cell
    rows: tuple[int, int]  # the query positions covered [r0, r1)
    cols: tuple[int, int]  # the key positions covered [c0, c1)
    n_tokens: int
    pool: str
    stats: HeadStats | None  # for a whole map (every row)
    seconds: float = 0.0
    peak_chunk_bytes: int = 0  # the largest chunk's working set
    notes: list[str] = field(default_factory=list)


def block_for(n_tokens: int, pixels: int) -> int:
    """Tokens a side of one cell so that n_tokens fit in `pixels` cells."""
    if isinstance(pixels, bool) or not isinstance(pixels, int) or not 16 <= pixels <= 4096:
        raise ValueError(f"the overview is 16 to 4,096 pixels a side, not {short_int(pixels)}.")
    return max(1, math.ceil(n_tokens / pixels))


def _grouped_scores(q: torch.Tensor, k: torch.Tensor, scale: float) -> torch.Tensor:
    """q (H, R, h), k (K, C, h) -> scores (H, R, C): each KV head's keys scored by its group's queries at once."""
    H, R, h = q.shape
    K = k.shape[0]
    g = H // K
    qg = q.reshape(K, g * R, h)  # (K, g*R, h): a group's query heads stacked as rows
    s = torch.matmul(qg, k.transpose(1, 2))  # (K, g*R, C)
    return s.reshape(H, R, -1).mul_(scale)  # (H, R, C)


def _chunk_rows(n_heads: int, n_keys: int, block: int, chunk_bytes: int, window: int | None = None) -> int:
    """Rows a chunk takes: the scores and two temporaries within chunk_bytes; a multiple of the block when a block of
    rows fits, else fewer rows than a cell holds (their cells are then pooled a part at a time). A windowed chunk's rows
    read their W keys and the chunk's own span, not every key: R rows score R + W keys, so R stays near W / 8."""
    rows = chunk_bytes // max(1, n_heads * n_keys * 12)
    if window is not None and window < n_keys:
        rows = min(chunk_bytes // max(1, n_heads * (window + window // 8) * 12), max(1, window // 8))
    return rows // block * block if rows >= block else max(1, rows)


def long_map(q: torch.Tensor, k: torch.Tensor, rule: Rule, block: int, pool: str = "max",
             rows: tuple[int, int] | None = None, cols: tuple[int, int] | None = None, band: int | None = None,
             chunk_bytes: int = CHUNK_BYTES, should_stop: Callable[[], bool] | None = None,
             progress: Callable[[float], None] | None = None) -> LongMap:
    """q (H, T, h) and k (K, T, h) as the layer's attention sees them (after RoPE and q/k norm) -> the pooled map
    of query rows `rows` against keys `cols` (default: all), each cell the max or mean of its block's
    probabilities; with every row, also the per-head statistics (band: the layer's window, else `band`)."""
    if pool not in POOLS:
        raise ValueError(f"pool {pool!r} is not known; choose max or mean.")
    H, T, _ = q.shape
    if k.shape[1] != T or H % k.shape[0]:
        raise ValueError(f"queries {tuple(q.shape)} and keys {tuple(k.shape)} do not pair as a layer's heads.")
    if isinstance(block, bool) or not isinstance(block, int) or block < 1:
        raise ValueError(f"a block is a whole number of tokens, at least 1, not {block!r}.")
    r0, r1 = rows or (0, T)
    c0, c1 = cols or (0, T)
    if not (0 <= r0 < r1 <= T and 0 <= c0 < c1 <= T):
        raise ValueError(f"rows {r0}..{r1} and columns {c0}..{c1} must lie within the {T:,} tokens.")
    whole = (r0, r1) == (0, T) and (c0, c1) == (0, T)
    W = rule.window if rule.window is not None else (band or DEFAULT_BAND)
    n_rows, n_cols = math.ceil((r1 - r0) / block), math.ceil((c1 - c0) / block)
    out = torch.zeros(H, n_rows, n_cols, dtype=torch.float32)
    counts = None  # a mean's divisor: the real cells of each block (a last block may be partial)
    stat = {name: torch.zeros(H, dtype=torch.float64) for name in ("sink", "band", "beyond", "learned", "distance")}
    columns = torch.zeros(H, T, dtype=torch.float64) if whole else None  # each key's attention, summed over queries
    step = _chunk_rows(H, T, block, chunk_bytes, rule.window)
    peak = 0
    t0 = time.perf_counter()
    device = q.device
    sinks = rule.sinks.to(device=device, dtype=torch.float32) if rule.sinks is not None else None
    a = r0
    while a < r1:
        if should_stop is not None and should_stop():
            raise Stopped
        b = min(a + step, r1)
        if step < block:  # part of one row of cells: never across two
            b = min(b, r0 + ((a - r0) // block + 1) * block)
        lo, hi = rule.key_range(a, b, T)  # every key these rows read: their softmax is over all of them
        qc = q[:, a:b].float()  # (H, R, h)
        kc = k[:, lo:hi].float()  # (K, C, h)
        scores = _grouped_scores(qc, kc, rule.scale)  # (H, R, C)
        i = torch.arange(a, b, device=device).view(-1, 1)  # (R, 1) query positions
        j = torch.arange(lo, hi, device=device).view(1, -1)  # (1, C) key positions
        _mask(scores, i, j, rule)
        top = scores.amax(dim=-1, keepdim=True)  # (H, R, 1): every row reads at least one key
        if sinks is not None:
            top = torch.maximum(top, sinks.view(H, 1, 1))
        probs = scores.sub_(top).exp_()  # (H, R, C), in place: masked cells are exp(-inf) = 0
        total = probs.sum(-1, keepdim=True)  # (H, R, 1)
        if sinks is not None:
            total += torch.exp(sinks.view(H, 1, 1) - top)
        probs.div_(total)
        lse = top + total.log()  # (H, R, 1): the row's log-normaliser, its sink logit included
        peak = max(peak, probs.numel() * 4 * 3)
        if whole:
            _accumulate(stat, probs, lse, sinks, i, j, W, rule, first_query=a == 0, has_first_key=lo == 0)
            first = 1 if (a == 0 and rule.causal) else 0
            columns[:, lo:hi] += probs[:, first:].sum(1).double().cpu()  # type: ignore[index]
        _pool_into(out, probs, a - r0, lo, c0, c1, block, pool, partial=step < block)
        if pool == "mean" and counts is None:
            counts = _cell_counts(r1 - r0, c1 - c0, block)
        if progress is not None:
            progress((b - r0) / (r1 - r0))
        del scores, probs
        a = b
    if pool == "mean":
        out /= counts if counts is not None else _cell_counts(r1 - r0, c1 - c0, block)
    stats = None
    if whole:
        n = T - 1 if (rule.causal and T > 1) else T
        assert columns is not None
        top_mass, top_key = columns.div(max(n, 1)).max(dim=-1)
        stat["beyond"].clamp_(min=0.0)  # a difference of sums: rounding must not make it -0.0
        stats = HeadStats(*(stat[k].div(max(n, 1)).numpy() for k in ("sink", "band", "beyond", "learned", "distance")),
                          top_key=top_key.numpy(), top_mass=top_mass.numpy(), band_width=W, n_queries=n)
    return LongMap(out.numpy(), block, (r0, r1), (c0, c1), T, pool, stats, time.perf_counter() - t0, peak)


def _mask(scores: torch.Tensor, i: torch.Tensor, j: torch.Tensor, rule: Rule) -> None:
    """-inf where query i may not read key j. Only the chunk's first and last R columns can hold such cells (the
    keys before its first query's band, and those after each query), so only they are looked at."""
    if not rule.causal and rule.window is None:
        return
    R, C = i.shape[0], j.shape[1]
    spans = [(0, C)] if C <= 2 * R else [(0, R), (C - R, C)]
    for c0, c1 in spans:
        jj = j[:, c0:c1]
        allowed = torch.ones(R, c1 - c0, dtype=torch.bool, device=scores.device)
        if rule.causal:
            allowed &= jj <= i
        if rule.window is not None:
            allowed &= (jj > i - rule.window) if rule.causal else ((i - jj).abs() < rule.window)
        scores[:, :, c0:c1].masked_fill_(~allowed, float("-inf"))


def _accumulate(stat: dict[str, torch.Tensor], probs: torch.Tensor, lse: torch.Tensor, sinks: torch.Tensor | None,
                i: torch.Tensor, j: torch.Tensor, W: int, rule: Rule, first_query: bool, has_first_key: bool) -> None:
    """Add one chunk's rows to the per-head sums (the first query of a causal layer left out)."""
    skip = first_query and rule.causal
    p = probs[:, 1:] if skip else probs  # (H, R', C)
    ii = i[1:] if skip else i  # (R', 1)
    if p.shape[1] == 0:
        return
    near = ((ii - j).abs() < W) if not rule.causal else None  # (R', C)
    if near is not None and has_first_key:
        near[:, 0] = False  # the first token is the sink, counted on its own
    sink = p[..., 0].sum(-1) if has_first_key else p.new_zeros(p.shape[0])  # (H,)
    rowsum = p.sum(-1)  # (H, R'): 1 a row, less a learned sink's share
    total = rowsum.sum(-1)  # (H,)
    if rule.window is not None and rule.window == W and rule.causal:
        band = total - sink  # a local layer's band is every key it reads
    elif rule.causal:  # beyond the band: keys 0 < j <= i - W; those before the first row's band need no mask
        lo, first_row = int(j[0, 0]), int(ii[0, 0])
        whole_end = max(lo, first_row - W + 1)  # keys < this are beyond the band for every row
        start = max(lo, 1)
        far = p[..., start - lo:whole_end - lo].sum((-1, -2)) if whole_end > start else p.new_zeros(p.shape[0])
        edge = slice(max(whole_end, start) - lo, min(int(ii[-1, 0]) - W + 1, lo + p.shape[-1]) - lo)
        if edge.stop > edge.start:  # the last R keys: beyond the band for the later rows only
            jj = j[:, edge]
            far = far + torch.where(jj <= ii - W, p[..., edge], 0.0).sum((-1, -2))
        band = total - sink - far
    else:
        band = torch.where(near, p, 0.0).sum((-1, -2))  # (H,)
    if rule.causal:  # sum_j p_ij (i - j) = i * sum_j p_ij - sum_j p_ij j: a matmul, not another pass
        jf = j.view(-1).to(p.dtype)  # (C,)
        distance = (ii.view(1, -1).to(p.dtype) * rowsum - p @ jf).sum(-1)  # (H,)
    else:
        distance = (p * (ii - j).abs().to(p.dtype)).sum((-1, -2))
    stat["sink"] += sink.double().cpu()
    stat["band"] += band.double().cpu()
    stat["beyond"] += (total - band - sink).double().cpu()
    stat["distance"] += distance.double().cpu()
    if sinks is not None:
        share = torch.exp(sinks.view(-1, 1) - lse[..., 0])  # (H, R)
        stat["learned"] += (share[:, 1:] if (first_query and rule.causal) else share).sum(-1).double().cpu()


def _pool_into(out: torch.Tensor, probs: torch.Tensor, row_offset: int, lo: int, c0: int, c1: int, block: int,
               pool: str, partial: bool = False) -> None:
    """Pool one chunk (H, R, C) of keys lo.. into out's cells: rows from row_offset, a multiple of block; or, partial,
    some rows of one row of cells, combined with what earlier parts of that row left there."""
    H, R, _ = probs.shape
    a, b = max(lo, c0), min(lo + probs.shape[2], c1)  # the columns of this chunk the map shows
    if a >= b:
        return
    first, last = (a - c0) // block, (b - 1 - c0) // block + 1  # the map's column cells these keys fall in
    start = c0 + first * block  # the first cell's first key
    width = (last - first) * block
    if partial:  # (H, R, C) -> (H, 1, cols): over all R rows and each cell's keys, then into the cell row
        padded = probs.new_zeros(H, R, width)
        padded[:, :, a - start:b - start] = probs[:, :, a - lo:b - lo]
        cells = padded.reshape(H, R, last - first, block)
        part = (cells.amax(dim=(1, 3)) if pool == "max" else cells.sum(dim=(1, 3))).cpu()  # (H, cols)
        r = row_offset // block
        held = out[:, r, first:last]
        out[:, r, first:last] = torch.maximum(held, part) if pool == "max" else held + part
        return
    if R % block == 0 and a == start and b - start == width:  # whole cells: pooled where they lie
        padded = probs[:, :, a - lo:b - lo]
    else:
        padded = probs.new_zeros(H, math.ceil(R / block) * block, width)  # (H, R', cells*block)
        padded[:, :R, a - start:b - start] = probs[:, :, a - lo:b - lo]
    cells = padded.reshape(H, -1, block, last - first, block)  # (H, rows, block, cols, block)
    pooled = cells.amax(dim=(2, 4)) if pool == "max" else cells.sum(dim=(2, 4))  # (H, rows, cols)
    r = row_offset // block  # chunks are whole rows of cells, and hold every key of their rows: one write a cell
    out[:, r:r + pooled.shape[1], first:last] = pooled.cpu()


def _cell_counts(n_rows: int, n_cols: int, block: int) -> torch.Tensor:
    """(rows, cols) how many (query, key) pairs of the covered range each cell holds."""
    rs = torch.full((math.ceil(n_rows / block),), block, dtype=torch.float32)
    cs = torch.full((math.ceil(n_cols / block),), block, dtype=torch.float32)
    rs[-1] = n_rows - block * (len(rs) - 1)
    cs[-1] = n_cols - block * (len(cs) - 1)
    return rs.view(-1, 1) * cs.view(1, -1)


def pool_full(probs: np.ndarray, block: int, pool: str) -> np.ndarray:
    """The reference: pool a whole (H, T, T) probability matrix into blocks (max, or mean over the real cells)."""
    H, R, C = probs.shape
    pr, pc = math.ceil(R / block) * block, math.ceil(C / block) * block
    padded = np.zeros((H, pr, pc), dtype=np.float64)
    padded[:, :R, :C] = probs
    cells = padded.reshape(H, pr // block, block, pc // block, block)
    if pool == "max":
        return cells.max(axis=(2, 4)).astype(np.float32)
    return (cells.sum(axis=(2, 4)) / _cell_counts(R, C, block).numpy()).astype(np.float32)


def full_probs(q: torch.Tensor, k: torch.Tensor, rule: Rule) -> torch.Tensor:
    """The reference: the whole (H, T, T) probability matrix at once (small T only)."""
    from core.kinds.standard.masking import allowed_keys, softmax_with_sinks

    H, T, _ = q.shape
    kk = k.float().repeat_interleave(H // k.shape[0], dim=0)  # (H, T, h)
    scores = (q.float() @ kk.transpose(1, 2) * rule.scale).unsqueeze(0)  # (1, H, T, T)
    allowed = allowed_keys(T, T, rule.causal, rule.window) if rule.causal else (
        None if rule.window is None else (torch.arange(T).view(-1, 1) - torch.arange(T).view(1, -1)).abs() < rule.window)
    probs, _ = softmax_with_sinks(scores, allowed, rule.sinks)
    return probs[0]
