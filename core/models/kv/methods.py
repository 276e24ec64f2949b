"""The four ways of shrinking a trained model's KV cache without training, as one knob each, and what
each costs in cache bytes (counted by core/counts.py).

- heads: K' KV heads, each the mean of its group's K and V heads (the GQA paper's conversion).
- latent_pca / latent_svd: every token's keys (before RoPE) and values rebuilt from r latent values
  (core/models/kv/latent.py).
- window / window_sinks: every layer sees the last W tokens, and the first S=4 too (core/models/kv/window.py).
- quant: K (after RoPE) and V stored in a smaller format (core/models/kv/quant.py).
- evict: an eviction press (core/models/evict/) at a ratio, setting "snapkv@0.75": the Heatmaps tab's view of a
  compress-protocol point, every query reading only the keys the press keeps of the text.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.arch.config import AttentionConfig, divisors
from core.arch.formats import KV_FORMATS, kv_format_bytes
from core.counts import model_counts
from core.kinds.standard.band import cached_tokens
from core.models.evict.catalogue import PRESS_INFO, press_info
from core.models.evict.ratio import n_kept

METHODS = ("heads", "latent_pca", "latent_svd", "window", "window_sinks", "quant", "evict")
FAMILIES = {"heads": ("heads",), "latent": ("latent_pca", "latent_svd"), "window": ("window", "window_sinks"),
            "quant": ("quant",)}  # what --methods names -> the lines drawn
METHOD_NAMES = {"heads": "fewer KV heads (pooled)", "latent_pca": "latent KV (PCA)", "latent_svd": "latent KV (SVD)",
                "window": "sliding window", "window_sinks": "window + 4 sinks", "quant": "quantised KV",
                "evict": "evicted"}
SINKS = 4  # StreamingLLM's choice
SERVED_FORMAT = "bfloat16"  # the unchanged model's cache, as served (its weights run in float32 here)
QUANT_FORMATS = ("float16", "fp8_e4m3", "fp8_e5m2", "q8_0", "q4_0")


@dataclass(frozen=True)
class KVMethod:
    method: str
    setting: int | str  # K', r, W or a format name
    sinks: int = 0

    def __post_init__(self) -> None:
        check_method(self.method, self.setting, self.sinks)

    @property
    def label(self) -> str:
        if self.method == "evict":
            press, ratio = eviction_of(str(self.setting))
            return f"{PRESS_INFO[press].short} evicting {ratio:.4g} of the text"
        name = f"window + {self.sinks} sinks" if self.method == "window_sinks" else METHOD_NAMES[self.method]
        return f"{name}, {setting_label(self.method, self.setting)}"


def _whole(value: object, what: str, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        shown = repr(value) if len(repr(value)) <= 30 else "that value"
        raise ValueError(f"{what} must be a whole number from {lo:,} to {hi:,}, not {shown}.")


def check_method(method: object, setting: object, sinks: object) -> None:
    """A method's knob of the right kind and size (a ValueError that says what to give)."""
    if method not in METHODS:
        shown = repr(method) if len(repr(method)) <= 30 else "that value"
        raise ValueError(f"KV method {shown} is not known; choose one of {', '.join(METHODS)}.")
    if method == "evict":
        eviction_of(setting)
    elif method == "quant":
        if setting not in KV_FORMATS:
            shown = repr(setting) if len(repr(setting)) <= 30 else "that value"
            raise ValueError(f"KV format {shown} is not known; choose one of {', '.join(KV_FORMATS)}.")
    else:
        knob = {"heads": "the number of KV heads", "latent_pca": "a latent rank", "latent_svd": "a latent rank"}
        _whole(setting, knob.get(str(method), "a window"), 1, 2**20)
    if method == "window_sinks":
        _whole(sinks, "the sinks of a window", 1, 4096)
    elif sinks != 0 or isinstance(sinks, bool):
        raise ValueError(f"only window_sinks keeps sink tokens; give {method} 0 sinks, not {sinks!r:.30}.")


def eviction_of(setting: object) -> tuple[str, float]:
    """'snapkv@0.75' -> ('snapkv', 0.75); a ValueError that names the form otherwise. One spelling a ratio (Python's
    shortest repr), from 0 to 0.9999: a cache key and a label each."""
    name, _, ratio = str(setting).partition("@")
    press_info(name)
    try:
        value = float(ratio)
    except ValueError:
        value = -1.0
    if not isinstance(setting, str) or not 0 < value <= 0.9999 or ratio != repr(value):
        raise ValueError(f"an eviction is a press and a ratio, as 'snapkv@0.75' (the ratio above 0 and at most 0.9999, "
                         f"written as a plain number), not {setting!r:.40}.")
    return name, value


def setting_label(method: str, setting: int | str | None) -> str:
    """'K=1', 'r=128', 'W=64', 'q4_0', 'ratio 0.75'; '' for the unchanged model."""
    if setting is None:
        return ""
    if method == "evict":
        return f"ratio {eviction_of(setting)[1]:.4g}"
    knob = {"heads": "K", "latent_pca": "r", "latent_svd": "r", "window": "W", "window_sinks": "W"}.get(method)
    return f"{knob}={setting}" if knob else str(setting)


@dataclass(frozen=True)
class ModelShape:
    """What the counts need of a real model."""

    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_model: int

    @property
    def kv_width(self) -> int:
        """Values per token per layer of the unchanged cache: K and V of every KV head."""
        return 2 * self.n_kv_heads * self.head_dim


def _config(s: ModelShape, context: int, fmt: str, n_kv: int | None = None, window: int | None = None) -> AttentionConfig:
    return AttentionConfig(d_model=s.d_model, n_heads=s.n_heads, n_kv_heads=n_kv or s.n_kv_heads, seq_len=context,
                           n_layers=s.n_layers, causal=True, explicit_head_dim=s.head_dim, kv_dtype=fmt,
                           window=window, layer_pattern="local" if window else "global")


def _per_token(s: ModelShape, context: int, fmt: str = SERVED_FORMAT, n_kv: int | None = None) -> int:
    """The whole-model KV bytes per token (core/counts.py)."""
    cfg = _config(s, context, fmt, n_kv=n_kv)
    return model_counts(cfg.architecture(), cfg).kv_bytes_per_token


def kv_bytes_per_token(s: ModelShape, m: KVMethod | None, context: int) -> float:
    """The whole model's cache per token of context at `context` tokens (an encoder counted as a causal
    model's cache would be: it keeps none between calls). None: the unchanged model."""
    if m is None:
        return _per_token(s, context)
    if m.method == "heads":
        return _per_token(s, context, n_kv=int(m.setting))
    if m.method == "quant":
        return _per_token(s, context, str(m.setting))
    if m.method == "evict":
        return _per_token(s, context) * n_kept(context, eviction_of(m.setting)[1]) / context
    if m.method in ("latent_pca", "latent_svd"):
        if m.setting == s.kv_width:
            return _per_token(s, context)
        return s.n_layers * kv_format_bytes(int(m.setting), SERVED_FORMAT)
    return _per_token(s, context) * cached_tokens(context, int(m.setting) + m.sinks) / context  # window and sinks


def default_sweep(s: ModelShape, context: int, families: tuple[str, ...] = tuple(FAMILIES)) -> list[KVMethod]:
    """Each method's points, from mild to harsh (the identity settings are the unchanged model: left out)."""
    out: list[KVMethod] = []
    if "heads" in families:
        out += [KVMethod("heads", k) for k in sorted(divisors(s.n_kv_heads), reverse=True) if k < s.n_kv_heads]
    if "latent" in families:
        ranks = sorted({max(1, round(s.kv_width * f)) for f in (3 / 4, 1 / 2, 1 / 3, 1 / 4, 1 / 6, 1 / 8)}, reverse=True)
        out += [KVMethod(name, r) for name in ("latent_pca", "latent_svd") for r in ranks]
    if "window" in families:
        windows = [w for w in (context // 2, context // 4, context // 8, context // 16, context // 32, 16)
                   if 4 <= w < context]  # a window of the whole sample changes nothing
        windows = sorted(set(windows), reverse=True)
        # with sinks, W - 4 recent tokens and the 4 first: the same cache as the window W without them
        out += [KVMethod("window", w) for w in windows] + [KVMethod("window_sinks", w - SINKS, SINKS)
                                                           for w in windows if w - SINKS >= 4]
    if "quant" in families:
        out += [KVMethod("quant", f) for f in QUANT_FORMATS if f != SERVED_FORMAT
                and (not f.startswith("q") or s.head_dim % 32 == 0)]
    return out


def parse_families(text: str) -> tuple[str, ...]:
    """'heads,latent' -> ('heads', 'latent'); a ValueError naming the choices otherwise."""
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    bad = [n for n in names if n not in FAMILIES]
    if bad or not names:
        raise ValueError(f"--methods takes a comma-separated list of {', '.join(FAMILIES)}, not {text!r}.")
    return names
