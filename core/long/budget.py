"""What a long map will cost before it starts: seconds and bytes, from the shapes alone (torch-free: the
window shows it beside the button, the worker refuses what would not fit with the bytes it needs).

The rates are this project's measurements, rounded down: on the 2-core CPU the map scores, normalises and pools
about 1.1e8 query-key pairs a second (9 heads x 8,192 tokens, causal: 2.7 s) and a real model's forward runs at
about 8e10 FLOP/s (SmolLM2-135M, 8,192 tokens through 11 layers: 17.6 s); a GPU is taken as 100 times faster.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.arch.config import short_int
from core.format import format_bytes

POOLS = ("max", "mean")
DEFAULT_BAND = 1024  # the band a global layer's "within" mass counts: Gemma 3's window
CHUNK_BYTES = 256 * 2**20  # one chunk of the map's scores and probabilities (the working set beside q and k)
MAX_TOKENS = 2**15  # 32,768: the longest input the overview takes

PAIRS_PER_S = {"cpu": 1.1e8, "cuda": 1.1e10, "mps": 2e9}
FORWARD_FLOPS_PER_S = {"cpu": 8e10, "cuda": 8e12, "mps": 1e12}


@dataclass(frozen=True)
class Budget:
    seconds: float
    bytes: int

    def text(self) -> str:
        s = self.seconds
        when = "under a second" if s < 1 else f"about {s:.0f} s" if s < 90 else f"about {s / 60:.0f} min"
        return f"{when}, {format_bytes(self.bytes)}"


def pairs(n_tokens: int, causal: bool, window: int | None) -> int:
    """Query-key pairs the map scores (a causal chunk scores its whole key range: T^2/2 at least)."""
    T = n_tokens
    if window is not None:
        return T * min(T, window + 512)  # a chunk's rows read their band and the chunk's own span
    return T * T // 2 if causal else T * T


def overview_budget(n_heads: int, n_kv_heads: int, head_dim: int, n_tokens: int, pixels: int, causal: bool = True,
                    window: int | None = None, device: str = "cpu", model_layers: int = 0, d_model: int = 0) -> Budget:
    """model_layers: the real model's layers run up to the chosen one (0 for random weights); d_model its width."""
    if isinstance(pixels, bool) or not isinstance(pixels, int) or not 16 <= pixels <= 4096:
        raise ValueError(f"the overview is 16 to 4,096 pixels a side, not {short_int(pixels)}.")  # as the map says it
    kind = device if device in PAIRS_PER_S else "cpu"
    seconds = n_heads * pairs(n_tokens, causal, window) / PAIRS_PER_S[kind]
    qk = (n_heads + n_kv_heads) * n_tokens * head_dim * 4
    cells = -(-n_tokens // max(1, -(-n_tokens // pixels)))
    out = n_heads * cells * cells * 4 * 3  # the map, its copy crossing to the window and the window's own
    memory = qk + CHUNK_BYTES + out
    if model_layers:
        per_layer = 12 * d_model * d_model * 2 * n_tokens + 2 * n_heads * head_dim * n_tokens * n_tokens  # matmuls + core
        seconds += model_layers * per_layer / FORWARD_FLOPS_PER_S[kind]
        memory += 40 * n_tokens * d_model  # hidden states, q, k, v and the MLP's widest activation
    return Budget(seconds, int(memory))


def check_fits(budget: Budget, free_bytes: int) -> None:
    """Refuse, before anything is computed, a map that would not fit (a ValueError that says what to change)."""
    limit = int(free_bytes * 0.8)
    if budget.bytes > limit:
        raise ValueError(f"this overview needs about {format_bytes(budget.bytes)}, more than the "
                         f"{format_bytes(limit)} free for it; choose fewer tokens or fewer pixels.")
