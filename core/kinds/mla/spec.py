"""Multi-head latent attention's widths (DeepSeek-V2/V3, Kimi K2), validated on construction.

An MLA layer caches one latent of kv_lora_rank values and one shared RoPE key of qk_rope_head_dim
values per token, and rebuilds each head's key (qk_nope_head_dim + qk_rope_head_dim wide) and value
(v_head_dim wide) from them. Torch-free: widgets read it to build their controls.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar

from core.arch.formats import KV_FORMATS, check_kv_format
from core.kinds.widths import KindWidths, WidthControl

MLA_MAX = 2**16  # a rank or head width beyond any model; larger is refused before any count


@dataclass(frozen=True)
class MLADims(KindWidths):
    q_lora_rank: int = 1536  # r_q; 0: a plain q_proj (d_model x H*(nope + rope)), as DeepSeek-V2-Lite
    kv_lora_rank: int = 512  # r_kv: the cached latent's width
    qk_nope_head_dim: int = 128  # n: each head's key/query width without position
    qk_rope_head_dim: int = 64  # r: the RoPE part of each query, and the one shared RoPE key
    v_head_dim: int = 128  # v: each head's value width

    def __post_init__(self) -> None:
        for f in fields(MLADims):  # MLA's own widths (a kind that extends them checks its own)
            value = getattr(self, f.name)
            low = 0 if f.name == "q_lora_rank" else 1
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MLA_MAX:
                shown = repr(value) if len(repr(value)) <= 24 else "a huge or odd value"
                why = " (0: a plain W_q without the low-rank query)" if low == 0 else ""
                raise ValueError(f"MLA's {f.name} must be a whole number from {low} to {MLA_MAX:,}{why}, "
                                 f"not {shown}.")
        if self.qk_rope_head_dim % 2:
            raise ValueError(f"MLA's qk_rope_head_dim must be even (RoPE rotates pairs of dimensions), not "
                             f"{self.qk_rope_head_dim}; choose {self.qk_rope_head_dim + 1}.")

    kind: ClassVar[str] = "mla"  # the registry's name, and the key a file keeps these widths under
    mode: ClassVar[str] = "MLA"
    heads_rule: ClassVar[str] = "an MLA layer rebuilds one key and value per query head from its latent"
    controls: ClassVar[tuple[WidthControl, ...]] = (
        WidthControl("q_lora_rank", "q_lora_rank", "The low-rank query: d_model -> q_lora_rank -> RMSNorm -> n_heads x "
                     "(nope + rope). 0 builds a plain W_q (DeepSeek-V2-Lite). DeepSeek-V3: 1536.", 0, MLA_MAX, 64),
        WidthControl("kv_lora_rank", "kv_lora_rank", "The latent every token caches: d_model -> kv_lora_rank (then "
                     "RMSNorm); each head's key and value are rebuilt from it by kv_b. DeepSeek-V3: 512.", 1, MLA_MAX, 64),
        WidthControl("qk_nope_head_dim", "qk_nope", "Each head's query/key width without position, rebuilt from the "
                     "latent. 128.", 1, MLA_MAX, 16),
        WidthControl("qk_rope_head_dim", "qk_rope", "The RoPE part of each query, and of the one key all heads share "
                     "(cached beside the latent). Even: RoPE rotates pairs. 64.", 2, MLA_MAX, 2),
        WidthControl("v_head_dim", "v_head_dim", "Each head's value width, rebuilt from the latent. 128.", 1, MLA_MAX, 16),
    )

    @property
    def head_dim(self) -> int:
        return self.qk_head_dim

    @property
    def baseline_head_dim(self) -> int:
        """DeepSeek-V2's comparison: the MHA layer of head_dim v_head_dim."""
        return self.v_head_dim

    def check_heads(self, n_heads: object, n_kv_heads: object, head_dim: object) -> None:
        """An MLA layer has one key and value per query head, nope + rope wide: n_kv_heads and head_dim are not its
        own to set (None, or the values they must be)."""
        if n_kv_heads is not None and (isinstance(n_kv_heads, bool) or n_kv_heads != n_heads):
            raise ValueError(f"an MLA layer rebuilds one key and value per query head from its latent, so n_kv_heads "
                             f"is n_heads ({short(n_heads)}), not {short(n_kv_heads)}; leave n_kv_heads unset.")
        if head_dim is not None and (isinstance(head_dim, bool) or head_dim != self.qk_head_dim):
            raise ValueError(f"an MLA layer's head_dim is qk_nope + qk_rope = {self.qk_head_dim}, not "
                             f"{short(head_dim)}; set the MLA widths instead of head_dim.")

    def check_kv_format(self, name: str) -> None:
        """A block KV format (q8_0, q4_0) must fit every width the MLA caches hold: the latent, the rope key, and the
        decompressed per-head key (nope + rope) and value."""
        check_kv_format(name, 32)  # the name itself (32 values fill a block of every format)
        for field, width in (("kv_lora_rank", self.kv_lora_rank), ("qk_rope_head_dim", self.qk_rope_head_dim),
                             ("qk_nope + qk_rope", self.qk_head_dim), ("v_head_dim", self.v_head_dim)):
            try:
                check_kv_format(name, width)
            except ValueError:
                block = KV_FORMATS[name][1]
                raise ValueError(f"the {name} KV format stores blocks of {block} values, and MLA's {field} {width} is "
                                 f"not a multiple of {block}; choose MLA widths that are, or another KV format.") from None

    @property
    def qk_head_dim(self) -> int:
        """A head's query and key width: nope + rope (DeepSeek-V3: 192); the softmax scale is 1/sqrt of it."""
        return self.qk_nope_head_dim + self.qk_rope_head_dim

    @property
    def latent_width(self) -> int:
        """Values cached per token: the latent plus the shared RoPE key (DeepSeek-V3: 512 + 64 = 576)."""
        return self.kv_lora_rank + self.qk_rope_head_dim

    def decompressed_width(self, n_heads: int) -> int:
        """Values per token of the same cache decompressed into per-head keys and values: H x (nope + rope + v)."""
        return n_heads * (self.qk_head_dim + self.v_head_dim)

    @property
    def label(self) -> str:
        """The badge: 'MLA (latent 512 + rope 64)'."""
        return f"MLA (latent {self.kv_lora_rank} + rope {self.qk_rope_head_dim})"

    def warnings(self, d_model: int) -> list[str]:
        """Ranks that compress nothing: allowed (a user may explore them), said in a sentence."""
        notes = []
        for name in ("q_lora_rank", "kv_lora_rank"):
            rank = getattr(self, name)
            if rank >= d_model:
                notes.append(f"{name} {rank} is not below d_model {d_model}: the low-rank projection compresses "
                             "nothing; real models use a rank several times smaller.")
        return notes

    def check_layer(self, n_heads: int, n_kv_heads: int, head_dim: int, extras: list[str]) -> None:
        """An MLA layer's heads are rebuilt from its latent: n_kv_heads = n_heads, head_dim = nope + rope, and none of
        the standard layer's extras (DeepSeek's layers have no biases, no q/k norm, no window, no sinks): extras names
        those a layer has."""
        if n_kv_heads != n_heads or head_dim != self.qk_head_dim:
            raise ValueError(f"an MLA layer has n_kv_heads = n_heads and head_dim = qk_nope + qk_rope = {self.qk_head_dim}; "
                             f"this one has {n_kv_heads} KV heads of width {head_dim}.")
        widest = max(self.qk_head_dim, self.v_head_dim, self.qk_nope_head_dim + self.v_head_dim)
        if n_heads * widest > 2**24:  # q_b's, kv_b's and o_proj's widths
            raise ValueError(f"an MLA layer's n_heads x its widest head ({n_heads:,} x {widest:,}: qk_nope + v_head_dim "
                             "or nope + rope) is too wide; at most 16,777,216: lower n_heads or the head widths.")
        if extras:
            raise ValueError(f"an MLA layer here has none of the standard layer's extras (DeepSeek's have none); turn off "
                             f"{' and '.join(extras)}, or choose standard attention.")

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> MLADims:
        if not isinstance(data, dict):
            raise ValueError(f"the MLA widths must be an object of {', '.join(MLA_FIELDS)}, not {data!r:.60}.")
        unknown = sorted(repr(k)[:20] for k in set(data) - set(MLA_FIELDS))
        if unknown:
            raise ValueError(f"unknown MLA field(s): {', '.join(unknown)}; the fields are {', '.join(MLA_FIELDS)}.")
        return cls(**data)


MLA_FIELDS = tuple(f.name for f in fields(MLADims))


def short(value: Any) -> str:
    """A value as the user gave it, cut short when long."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
