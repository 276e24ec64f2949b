"""DeepSeek sparse attention's widths (DeepSeek-V3.2, GLM-5): MLA's, plus a lightning indexer that scores every
cached token with a few small heads and lets each query attend to its top-k tokens only.

The indexer caches one key of index_head_dim values a token beside MLA's latent; its query comes from MLA's query
latent (q_lora_rank), so a DSA layer always has one. Torch-free, as core/kinds/mla/spec.py.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar

from core.arch.formats import KV_FORMATS
from core.kinds.mla.spec import MLA_MAX, MLADims
from core.kinds.widths import WidthControl

TOPK_MAX = 2**20  # a selection beyond any model's context


@dataclass(frozen=True)
class DSADims(MLADims):
    index_n_heads: int = 64  # H_I: the indexer's heads (DeepSeek-V3.2 64, GLM-5 32)
    index_head_dim: int = 128  # D_I: an index query/key's width, and the index key each token caches
    index_topk: int = 2048  # k: the tokens each query attends to

    def __post_init__(self) -> None:
        super().__post_init__()
        for name, high in (("index_n_heads", MLA_MAX), ("index_head_dim", MLA_MAX), ("index_topk", TOPK_MAX)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
                shown = repr(value) if len(repr(value)) <= 24 else "a huge or odd value"
                raise ValueError(f"the indexer's {name} must be a whole number from 1 to {high:,}, not {shown}.")
        if self.q_lora_rank == 0:
            raise ValueError("a sparse (DSA) layer's indexer reads MLA's query latent, so q_lora_rank must be above 0 "
                             "(DeepSeek-V3.2: 1536).")
        if self.index_head_dim < self.qk_rope_head_dim:
            raise ValueError(f"the indexer rotates the first qk_rope_head_dim ({self.qk_rope_head_dim}) values of its "
                             f"keys, so index_head_dim must be at least that, not {self.index_head_dim}.")

    def check_kv_format(self, name: str) -> None:
        """MLA's widths, and the index key each token caches, must fill whole blocks of a block format."""
        super().check_kv_format(name)
        block = KV_FORMATS[name][1]
        if self.index_head_dim % block:
            raise ValueError(f"the {name} KV format stores blocks of {block} values, and the index key of "
                             f"{self.index_head_dim} values is not a whole number of them; choose another format, or "
                             "an index_head_dim that is.")

    kind: ClassVar[str] = "dsa"
    mode: ClassVar[str] = "DSA"
    controls: ClassVar[tuple[WidthControl, ...]] = (
        *(WidthControl("q_lora_rank", "q_lora_rank", "The low-rank query: d_model -> q_lora_rank -> RMSNorm -> n_heads "
                       "x (nope + rope); the indexer's queries come from it too. DeepSeek-V3.2: 1536.", 1, MLA_MAX, 64)
          if c.field == "q_lora_rank" else c for c in MLADims.controls),
        WidthControl("index_n_heads", "index heads", "The lightning indexer's heads: each scores every cached token "
                     "with ReLU(q . k), weighted per token and summed. DeepSeek-V3.2: 64, GLM-5: 32.", 1, 1024, 8),
        WidthControl("index_head_dim", "index head dim", "An index query's and key's width; each token caches one "
                     "index key of this many values (fp8 in engines). 128.", 1, 1024, 16),
        WidthControl("index_topk", "top-k", "The cached tokens each query attends to, chosen by the indexer's score: "
                     "below the context, attention reads only these. DeepSeek-V3.2: 2048.", 1, TOPK_MAX, 256),
    )

    @property
    def label(self) -> str:
        """The badge: 'DSA (latent 512 + rope 64, top-2048)'."""
        return f"DSA (latent {self.kv_lora_rank} + rope {self.qk_rope_head_dim}, top-{self.index_topk:,})"

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> DSADims:
        if not isinstance(data, dict):
            raise ValueError(f"the DSA widths must be an object of {', '.join(DSA_FIELDS)}, not {data!r:.60}.")
        unknown = sorted(repr(k)[:20] for k in set(data) - set(DSA_FIELDS))
        if unknown:
            raise ValueError(f"unknown DSA field(s): {', '.join(unknown)}; the fields are {', '.join(DSA_FIELDS)}.")
        return cls(**data)


DSA_FIELDS = tuple(f.name for f in fields(DSADims))
