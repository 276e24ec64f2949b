"""DeepSeek-V4's attention widths (V4-Flash, V4-Pro), validated on construction.

Every layer has H query heads over one shared KV head of width D (K = V, its last r values rotated), per-head sinks,
a grouped low-rank output (o_groups groups of H D / g values, each to o_lora_rank, then one projection to d_model),
and a window of the last W tokens. Beyond the window a layer reads, by its compressor:
- none: nothing (window only);
- csa (compressed sparse): every m = 4 tokens merged into one entry (overlapping windows of 2m), of which a
  lightning indexer picks each query's top-k;
- hca (heavily compressed): every m = 128 tokens merged into one entry, all of them read.
Names follow transformers' DeepseekV4Config. Torch-free: widgets read it to build their controls.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar

from core.arch.formats import KV_FORMATS, check_kv_format
from core.kinds.widths import KindWidths, WidthControl

V4_MAX = 2**16
COMPRESSORS = ("none", "csa", "hca")


@dataclass(frozen=True)
class V4Dims(KindWidths):
    q_lora_rank: int = 1024  # r_q: the low-rank query (V4-Flash 1024, V4-Pro 1536)
    kv_head_dim: int = 512  # D: the one shared KV head's width (K = V)
    qk_rope_head_dim: int = 64  # r: its rotated part, the last r values of a head
    o_groups: int = 8  # g: the grouped output's groups of heads
    o_lora_rank: int = 1024  # r_o: each group's output width before o_b
    window: int = 128  # W: the recent tokens every layer reads
    compressor: str = "csa"  # none (window only), csa (compressed sparse), hca (heavily compressed)
    compress_ratio: int = 4  # m: tokens merged into one entry (csa 4, hca 128; 0 without a compressor)
    index_n_heads: int = 64  # H_I: a csa layer's indexer heads
    index_head_dim: int = 128  # D_I: an index key's width (cached a compressed entry)
    index_topk: int = 512  # k: the compressed entries a csa query reads (V4-Flash 512, V4-Pro 1024)

    def __post_init__(self) -> None:
        for f in fields(self):
            if f.name == "compressor":
                continue
            value = getattr(self, f.name)
            low = 0 if f.name == "compress_ratio" else 1
            high = 2**20 if f.name in ("index_topk", "window") else V4_MAX
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                shown = repr(value) if len(repr(value)) <= 24 else "a huge or odd value"
                raise ValueError(f"DeepSeek-V4's {f.name} must be a whole number from {low} to {high:,}, not {shown}.")
        if self.compressor not in COMPRESSORS:
            raise ValueError(f"DeepSeek-V4's compressor is one of {', '.join(COMPRESSORS)}, not "
                             f"{self.compressor!r:.30}.")
        if (self.compressor == "none") != (self.compress_ratio == 0):
            raise ValueError("a DeepSeek-V4 layer without a compressor has compress_ratio 0, and one with a compressor "
                             f"merges 2 or more tokens an entry; this one is {self.compressor} with ratio "
                             f"{self.compress_ratio}.")
        if self.compressor != "none" and self.compress_ratio < 2:
            raise ValueError(f"a compressor merges 2 or more tokens an entry, not {self.compress_ratio}.")
        if self.qk_rope_head_dim % 2 or self.qk_rope_head_dim > self.kv_head_dim:
            raise ValueError(f"DeepSeek-V4's qk_rope_head_dim must be even and at most kv_head_dim "
                             f"({self.kv_head_dim}), not {self.qk_rope_head_dim}.")
        if self.compressor == "csa" and self.qk_rope_head_dim > self.index_head_dim:
            raise ValueError(f"the indexer rotates the last qk_rope_head_dim ({self.qk_rope_head_dim}) values of its "
                             f"keys, so index_head_dim must be at least that, not {self.index_head_dim}.")

    kind: ClassVar[str] = "dsv4"
    mode: ClassVar[str] = "V4"
    heads_rule: ClassVar[str] = "a DeepSeek-V4 layer's heads share one KV head of kv_head_dim values"
    controls: ClassVar[tuple[WidthControl, ...]] = (
        WidthControl("q_lora_rank", "q_lora_rank", "The low-rank query: d_model -> q_lora_rank -> RMSNorm -> n_heads x "
                     "kv_head_dim; a csa layer's indexer reads it too. V4-Flash 1024, V4-Pro 1536.", 1, V4_MAX, 64),
        WidthControl("kv_head_dim", "KV head", "The one KV head every query head shares (K = V), cached a token in "
                     "the window and an entry beyond it. 512.", 8, V4_MAX, 64),
        WidthControl("o_groups", "o_groups", "The grouped output: heads in g groups, each group's H x D / g values "
                     "projected to o_lora_rank, then all to d_model. V4-Flash 8, V4-Pro 16.", 1, 1024, 1),
        WidthControl("o_lora_rank", "o_lora_rank", "Each output group's width before the last projection. 1024.",
                     1, V4_MAX, 64),
        WidthControl("window", "window", "The recent tokens every layer reads (and caches). 128.", 1, 2**20, 16),
        WidthControl("index_topk", "top-k", "The compressed entries a compressed-sparse query reads. V4-Flash 512, "
                     "V4-Pro 1024.", 1, 2**20, 128),
    )

    @property
    def head_dim(self) -> int:
        return self.kv_head_dim

    @property
    def baseline_head_dim(self) -> int:
        return self.kv_head_dim

    @property
    def label(self) -> str:
        """The badge: 'V4 CSA 1/4 top-512 + W128', 'V4 HCA 1/128 + W128', 'V4 window 128'."""
        if self.compressor == "none":
            return f"V4 window {self.window:,}"
        sparse = f" top-{self.index_topk:,}" if self.compressor == "csa" else ""
        return f"V4 {self.compressor.upper()} 1/{self.compress_ratio}{sparse} + W{self.window:,}"

    def kv_heads(self, n_heads: int) -> int:
        return 1

    def check_heads(self, n_heads: object, n_kv_heads: object, head_dim: object) -> None:
        if n_kv_heads is not None and (isinstance(n_kv_heads, bool) or n_kv_heads != 1):
            raise ValueError(f"a DeepSeek-V4 layer's heads share one KV head, so n_kv_heads is 1, not "
                             f"{n_kv_heads!r:.20}; leave it unset.")
        if head_dim is not None and (isinstance(head_dim, bool) or head_dim != self.kv_head_dim):
            raise ValueError(f"a DeepSeek-V4 layer's head_dim is its kv_head_dim ({self.kv_head_dim}), not "
                             f"{head_dim!r:.20}; set kv_head_dim instead.")
        if isinstance(n_heads, int) and not isinstance(n_heads, bool) and n_heads % self.o_groups:
            raise ValueError(f"the grouped output splits the {n_heads} heads into o_groups = {self.o_groups} groups: "
                             "choose a number of heads it divides, or other groups.")

    def check_layer(self, n_heads: int, n_kv_heads: int, head_dim: int, extras: list[str]) -> None:
        self.check_heads(n_heads, n_kv_heads, head_dim)
        if extras:
            raise ValueError(f"a DeepSeek-V4 layer has its own window and sinks and no other extras; turn off "
                             f"{' and '.join(extras)}.")

    def check_kv_format(self, name: str) -> None:
        check_kv_format(name, 32)
        block = KV_FORMATS[name][1]
        widths = [("kv_head_dim", self.kv_head_dim)] + ([("index_head_dim", self.index_head_dim)]
                                                        if self.compressor == "csa" else [])  # only csa caches index keys
        for field, width in widths:
            if width % block:
                raise ValueError(f"the {name} KV format stores blocks of {block} values, and DeepSeek-V4's {field} "
                                 f"{width} is not a multiple of {block}; choose another format.")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> V4Dims:
        if not isinstance(data, dict):
            raise ValueError(f"DeepSeek-V4's widths must be an object of {', '.join(V4_FIELDS)}, not {data!r:.60}.")
        unknown = sorted(repr(k)[:20] for k in set(data) - set(V4_FIELDS))
        if unknown:
            raise ValueError(f"unknown DeepSeek-V4 field(s): {', '.join(unknown)}; the fields are "
                             f"{', '.join(V4_FIELDS)}.")
        return cls(**data)


V4_FIELDS = tuple(f.name for f in fields(V4Dims))
