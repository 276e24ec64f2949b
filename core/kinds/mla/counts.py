"""Exact counts of one multi-head latent attention layer (DeepSeek-V2/V3, Kimi K2), both execution forms.

Symbols (../shared/REFERENCE.md, "Multi-head latent attention"): d = d_model, H = n_heads, r_q = q_lora_rank
(0: a plain W_q), r_kv = kv_lora_rank, n = qk_nope_head_dim, r = qk_rope_head_dim, v = v_head_dim.
Projections as transformers' DeepseekV3Attention holds them: q_a d x r_q, q_a_layernorm r_q, q_b r_q x H(n+r)
(or q_proj d x H(n+r)), kv_a_proj_with_mqa d x (r_kv + r), kv_a_layernorm r_kv, kv_b r_kv x H(n+v), o H*v x d.

Two forms run the same layer:
- naive: decompress every key and value with kv_b, then per-head attention of query/key width n + r and
  value width v (the usual prefill; its decode reads a decompressed per-head cache);
- absorbed (DeepSeek's inference code): fold kv_b's key half into each query (n -> r_kv), score against the
  cached latent and the shared RoPE key (width r_kv + r, one key "head" for all H queries), sum latents
  (width r_kv), then apply kv_b's value half (r_kv -> v) per head: the usual decode, against the latent cache.
Torch-free: the GUI thread calls these on every slider tick.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.arch.formats import kv_format_bytes
from core.arch.layer import LayerSpec
from core.kinds.kind import FlopCounts, Workload
from core.kinds.mla.spec import MLADims
from core.kinds.standard.band import causal_pairs_x2

if TYPE_CHECKING:
    from core.arch.config import AttentionConfig

FORMS_KEY = "mla_forms"  # the timing JSON's key of both forms' medians (README: JSON keys)
FORM_MS = ("naive_prefill_ms", "absorbed_prefill_ms", "naive_decode_ms", "absorbed_decode_ms")  # the medians under it
FORMS = ("naive", "absorbed")
MEMORY_HINT = "the MLA ranks and head widths"  # what else to lower when a run or its display does not fit


@dataclass(frozen=True)
class MLAParamCounts:
    q_a: int  # d x r_q (0 without the low-rank query)
    q_a_norm: int  # r_q RMSNorm weights
    q_b: int  # r_q x H(n + r)
    q: int  # a plain q_proj d x H(n + r) when r_q = 0, else 0
    kv_a: int  # kv_a_proj_with_mqa: d x (r_kv + r)
    kv_a_norm: int  # r_kv RMSNorm weights
    kv_b: int  # r_kv x H(n + v)
    o: int  # H*v x d
    total: int
    total_mha: int  # the reference: the MHA layer of H heads of width v (spec.mha())
    qk_norm = 0  # none of the standard layer's extras (the costs panel reads them of every layer)
    sinks = 0

    def to_dict(self) -> dict[str, int]:
        """Every projection transformers builds (q_a, q_a_norm and q_b, or q), then the totals."""
        names = ("q",) if self.q else ("q_a", "q_a_norm", "q_b")
        return {**{k: getattr(self, k) for k in names}, "kv_a": self.kv_a, "kv_a_norm": self.kv_a_norm,
                "kv_b": self.kv_b, "o": self.o, "total": self.total, "total_mha": self.total_mha}

    def formula(self, d: int, spec: LayerSpec) -> str:
        """The total's formula, as the costs panel's tooltip gives it."""
        return ("d r_q + r_q + r_q H (n + r) + d (r_kv + r) + r_kv + r_kv H (n + v) + H v d, as transformers' "
                f"DeepseekV3Attention holds them; the MHA layer of {spec.n_heads} heads of width v: {self.total_mha:,}")

    def rows(self, d: int, spec: LayerSpec) -> list[tuple[str, str, int, str]]:
        """(key, name, count, formula) of each projection, as the costs panel lists them."""
        m, H = _dims(spec), spec.n_heads
        qk = f"{H} x ({m.qk_nope_head_dim} + {m.qk_rope_head_dim})"
        rows = [("q", "q_proj", self.q, f"q_proj = d_model x H x (nope + rope) = {d} x {qk} (q_lora_rank 0)")] if self.q \
            else [("q_a", "q_a_proj", self.q_a, f"q_a_proj = d_model x q_lora_rank = {d} x {m.q_lora_rank}"),
                  ("q_a_norm", "q_a_layernorm", self.q_a_norm, f"RMSNorm weights over q_lora_rank = {m.q_lora_rank}"),
                  ("q_b", "q_b_proj", self.q_b, f"q_b_proj = q_lora_rank x H x (nope + rope) = {m.q_lora_rank} x {qk}")]
        return rows + [
            ("kv_a", "kv_a_proj_with_mqa", self.kv_a, f"kv_a_proj_with_mqa = d_model x (kv_lora_rank + rope) = {d} x "
             f"({m.kv_lora_rank} + {m.qk_rope_head_dim}): the latent and the one shared RoPE key"),
            ("kv_a_norm", "kv_a_layernorm", self.kv_a_norm, f"RMSNorm weights over kv_lora_rank = {m.kv_lora_rank}"),
            ("kv_b", "kv_b_proj", self.kv_b, f"kv_b_proj = kv_lora_rank x H x (nope + v) = {m.kv_lora_rank} x {H} x "
             f"({m.qk_nope_head_dim} + {m.v_head_dim}): every head's key (nope part) and value from the latent"),
            ("o", "o_proj", self.o, f"o_proj = H x v_head_dim x d_model = {H} x {m.v_head_dim} x {d}"),
        ]


def _dims(spec: LayerSpec) -> MLADims:
    if spec.widths is None:
        raise ValueError("this layer is not an MLA layer.")
    return spec.widths


def mla_param_counts(d: int, spec: LayerSpec, total_mha: int) -> MLAParamCounts:
    """params = d r_q + r_q + r_q H (n + r) + d (r_kv + r) + r_kv + r_kv H (n + v) + H v d (no biases)."""
    m, H = _dims(spec), spec.n_heads
    r_q, qk = m.q_lora_rank, H * m.qk_head_dim
    q_a, q_a_norm, q_b = d * r_q, r_q, r_q * qk
    q = 0 if r_q else d * qk
    kv_a, kv_a_norm = d * m.latent_width, m.kv_lora_rank
    kv_b = m.kv_lora_rank * H * (m.qk_nope_head_dim + m.v_head_dim)
    o = H * m.v_head_dim * d
    total = q_a + q_a_norm + q_b + q + kv_a + kv_a_norm + kv_b + o
    return MLAParamCounts(q_a, q_a_norm, q_b, q, kv_a, kv_a_norm, kv_b, o, total, total_mha)


def usual_form(phase: str) -> str:
    """The form engines run in each phase: naive for prefill (compute-bound anyway), absorbed for decode."""
    return "naive" if phase == "prefill" else "absorbed"


def mla_flops(d: int, spec: LayerSpec, B: int, Tq: int, pairs_x2: int, form: str) -> tuple[int, int]:
    """(projections, core) FLOPs of one forward: Tq new tokens per sequence, pairs_x2 = twice the (query, key)
    pairs scored per head (causal prefill about T^2, decode 2 x keys). A matmul m x k by k x n is 2 m k n.

    Both forms: the query path, kv_a on the new tokens, o_proj. Naive adds kv_b on the new tokens (a decode
    step's cache is already decompressed) and a core of 2 (n + r) + 2 v per pair; absorbed adds W_uk folded
    into each query (2 H n r_kv per token) and W_uv after (2 H r_kv v), and a core of 2 (r_kv + r) + 2 r_kv."""
    m, H = _dims(spec), spec.n_heads
    if form not in FORMS:
        raise ValueError(f"MLA form {form!r} is not known; choose naive or absorbed.")
    qk = H * m.qk_head_dim
    query = 2 * (d * m.q_lora_rank + m.q_lora_rank * qk) if m.q_lora_rank else 2 * d * qk
    shared = query + 2 * d * m.latent_width + 2 * H * m.v_head_dim * d  # per new token
    if form == "naive":
        per_token = shared + 2 * m.kv_lora_rank * H * (m.qk_nope_head_dim + m.v_head_dim)
        per_pair = m.qk_head_dim + m.v_head_dim  # x 2 FLOPs, x pairs_x2 / 2 pairs
    else:
        per_token = shared + 2 * H * m.qk_nope_head_dim * m.kv_lora_rank + 2 * H * m.kv_lora_rank * m.v_head_dim
        per_pair = m.latent_width + m.kv_lora_rank
    return B * Tq * per_token, B * H * per_pair * pairs_x2


def mla_layer_flops(d: int, spec: LayerSpec, work: Workload, form: str | None = None) -> FlopCounts:
    """One layer's forward FLOPs under work (seq_len, batch, phase, causal), in form (by default the one engines run
    in work's phase): a causal prefill scores about T^2 / 2 pairs a head, a decode step its T keys."""
    T = work.seq_len
    prefill = work.phase == "prefill"
    pairs_x2 = (causal_pairs_x2(T, None) if work.causal else 2 * T * T) if prefill else 2 * T
    projections, attention = mla_flops(d, spec, work.batch_size, T if prefill else 1, pairs_x2,
                                       form or usual_form(work.phase))
    return FlopCounts(projections=projections, attention=attention, total=projections + attention)


def latent_bytes_per_token(spec: LayerSpec, kv_format: str | int) -> int:
    """The latent cache: r_kv + r values per token per layer (DeepSeek-V3 in bf16: 576 x 2 = 1,152 B); what
    DeepSeek's inference code, vLLM, SGLang, FlashMLA and transformers 5 keep."""
    return _bytes(_dims(spec).latent_width, kv_format)


def decompressed_bytes_per_token(spec: LayerSpec, kv_format: str | int) -> int:
    """The same cache decompressed: per-head keys H (n + r) and values H v per token per layer (V3 in bf16:
    81,920 B); what an engine without MLA kernels keeps (and transformers 4 did)."""
    return _bytes(_dims(spec).decompressed_width(spec.n_heads), kv_format)


def _bytes(values: int, kv_format: str | int) -> int:
    return values * kv_format if isinstance(kv_format, int) else kv_format_bytes(values, kv_format)


def equivalent_gqa_heads(spec: LayerSpec) -> float:
    """The latent's values as GQA KV heads of width v_head_dim (each K + V = 2 v): DeepSeek-V2's 2.25 groups."""
    m = _dims(spec)
    return m.latent_width / (2 * m.v_head_dim)


def decode_bytes_read(spec: LayerSpec, keys: int, B: int, kv_format: str | int, form: str) -> int:
    """Cache bytes one decode step reads: the decompressed K and V (naive) or the latent (absorbed)."""
    per_token = decompressed_bytes_per_token(spec, kv_format) if form == "naive" else latent_bytes_per_token(spec, kv_format)
    return B * keys * per_token


def decode_intensity(spec: LayerSpec, keys: int, B: int, kv_format: str | int, form: str) -> float:
    """Core FLOPs of one decode step over the cache bytes it reads (naive about 1 FLOP/B in bf16, absorbed
    about H (2 r_kv + r) / (r_kv + r): 242 for V3, above an H200's ridge point of about 206)."""
    _, core = mla_flops(1, spec, B, 1, 2 * keys, form)
    return core / decode_bytes_read(spec, keys, B, kv_format, form)


def forms_summary(forms: dict[str, float]) -> str:
    """'prefill: naive 12.1 ms, absorbed 15.3 ms (naive x1.26); decode: ...': the faster form of each phase and by
    how much, for a panel or the CLI."""
    parts = []
    for phase in ("prefill", "decode"):
        naive, absorbed = forms[f"naive_{phase}_ms"], forms[f"absorbed_{phase}_ms"]
        if min(naive, absorbed) <= 0:  # not a measurement: say the figures, compare nothing
            parts.append(f"{phase}: naive {_ms(naive)}, absorbed {_ms(absorbed)}")
            continue
        win, ratio = ("naive", absorbed / naive) if naive <= absorbed else ("absorbed", naive / absorbed)
        parts.append(f"{phase}: naive {_ms(naive)}, absorbed {_ms(absorbed)} ({win} x{ratio:.2f})")
    return "; ".join(parts)



def _ms(value: float) -> str:
    return f"{value:,.0f} ms" if value >= 100 else f"{value:.3g} ms"


def mla_timing_bytes(cfg: AttentionConfig, materialises_scores: bool) -> int:
    """An MLA timing's peak (core/kinds/mla/timing.py): the weights; what it keeps (the input, the query, the latent cache
    and the decompressed per-head cache); one forward's temporaries: the low-rank query and the latent with their
    RMSNorms (four copies each: the projection, its square, the result, a spare), then the larger of the naive form's
    (kv_b's output, the concatenated keys and queries, the output and its reshape) and the absorbed form's (the
    absorbed query, its concatenation, the latent outputs, the values and their reshape, the key [c | k_pe]); and
    the T x T scores and mask on the math path (tests/core/test_mla_timing.py holds it above a run's growth)."""
    m, b = cfg.widths, cfg.dtype_bytes
    assert m is not None
    B, T, H, d = cfg.batch_size, cfg.seq_len, cfg.n_heads, cfg.d_model
    n, r, v, r_kv = m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim, m.kv_lora_rank
    weights = mla_param_counts(cfg.d_model, cfg.layer_spec(), 0).total * b
    kept = d + H * m.qk_head_dim + m.latent_width + m.decompressed_width(H)
    paths = 4 * m.q_lora_rank + H * m.qk_head_dim + 4 * m.latent_width
    naive = H * (n + v) + 2 * H * m.qk_head_dim + 2 * H * v + d
    absorbed = H * (3 * r_kv + r + r_kv + 2 * v) + m.latent_width + d
    # the math path: the scores, their masked copy and the softmax (float32), and a T x T causal mask
    scores = 3 * B * H * T * T * 4 + T * T * 4 if materialises_scores else 0
    return weights + B * T * (kept + paths + max(naive, absorbed)) * b + scores
