"""What a layer kind supplies: everything the rest of the app asks of a layer, in one interface.

A kind is one package under core/kinds/ (standard/ and each other kind) whose `kind.py` subclasses LayerKind;
core/kinds/registry.py lists them, and every caller asks `kind_of(spec)` instead of branching on
the kind. What a kind returns is plain data (ints, dataclasses, dicts of the report's JSON), so the
counts, the planner, the report, the CLI and the widgets need no knowledge of kinds.

Torch-free, so the window's process (which never loads torch) can count, plan, estimate and label any layer;
what runs a kind on a device is its `kernels.py`, listed in core/kinds/kernels.py and imported only where torch
is (the worker, the CLI).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Protocol

from core.arch.formats import kv_format_bytes
from core.arch.layer import LayerSpec
from core.format import format_noun
from core.kinds.standard.band import cached_tokens
from core.kinds.widths import KindWidths

if TYPE_CHECKING:
    from core.arch.config import AttentionConfig


@dataclass(frozen=True)
class FlopCounts:
    projections: int  # the layer's matmuls outside its core (QKV, W_o, a latent's up- and down-projections)
    attention: int  # the core: scores and their weighted sum
    total: int

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class CostRow:
    """One row of the Costs panel, as core/costs.py builds it and a kind adds to it."""

    key: str
    value: str  # the exact figure ('': the row only rewrites a shared row's formula for this kind)
    short: str  # its short form ('1.5 KiB', '2.36M')
    tip: str  # the formula with its inputs
    vs: tuple[str, int] | None = None  # the change against the baseline and its sign (-1 lower, 0 equal, 1 higher)
    name: str = ""  # the row's name where it is the kind's own ('q_a_proj params'); '' keeps the panel's title


@dataclass(frozen=True)
class KindKnob:
    """A sweep knob only one kind has: how a value changes a configuration of that kind, and how to read it back."""

    name: str  # as the Sweep tab and --vary name it
    apply: Callable[[AttentionConfig, Any], AttentionConfig]  # base with the value set (ValueError: a skipped point)
    read: Callable[[AttentionConfig], Any]  # the value in a configuration, as a person reads it
    default: str  # the values a sweep of it starts with
    names: tuple[str, ...] = ()  # a knob of names, not numbers: plotted at their places 1, 2, ...
    axis: str = ""  # the plots' x label ('': the name)
    joined: bool = True  # the points make a trend (a line); False: a set of kinds, points only


@dataclass(frozen=True)
class KindLesson:
    """A seed's lesson only one kind has, as the Sweep tab runs it (core/study/lessons.py)."""

    key: str
    title: str
    knob: str
    values: list[Any]
    base: dict[str, object]  # fields set on the current configuration before sweeping
    timed: bool
    caption: Callable[[dict[Any, dict[str, Any]]], str]  # finished points' reports by value -> the caption
    tip: str


@dataclass(frozen=True)
class CliFlag:
    """A command-line flag that sets one of a kind's widths (and implies --attention <kind>)."""

    flag: str  # without the dashes: "kv-lora-rank"
    field: str  # the widths' field it sets
    help: str


CompareRow = tuple[str, str, str, str, bool | None]  # (label, section, key, format, lower is better) as compare.METRICS


class LayerParams(Protocol):
    """A layer's parameters by projection: what every kind's count returns."""

    total: int
    total_mha: int  # the kind's baseline layer (the MHA layer of the same heads)
    qk_norm: int
    sinks: int

    def to_dict(self) -> dict[str, int]: ...

    def formula(self, d: int, spec: LayerSpec) -> str: ...

    def rows(self, d: int, spec: LayerSpec) -> list[tuple[str, str, int, str]]: ...


class Workload(Protocol):
    """What a count needs of the workload (AttentionConfig has it all)."""

    seq_len: int
    batch_size: int
    phase: str
    causal: bool
    dtype: str

    @property
    def kv_format(self) -> str: ...

    @property
    def state_format(self) -> str: ...


def values_bytes(values: int, kv_format: str | int) -> int:
    """values in kv_format (a format name, or bytes per element)."""
    return values * kv_format if isinstance(kv_format, int) else kv_format_bytes(values, kv_format)


class LayerKind(ABC):
    """One kind of attention layer. Subclasses are singletons, listed in core/kinds/registry.py."""

    name: str  # the registry's key, and the kind's name in the report's JSON
    title: str  # as a picker names it: "Standard (MHA / GQA / MQA)"
    short: str  # in a word, as a sentence names it: "standard", "MLA"
    picker: str  # as the attention type picker lists it
    about: str  # what it caches and how it runs, in a sentence or two (the picker's tooltip)
    cache_name: str = "KV cache"  # what its cache is called ("latent cache")
    signed_maps: str = ""  # its maps are signed weights, not probabilities: why, as the legend says it ('': softmax)
    group_tag: str = "kv"  # a head's group as a map's title names it ("kv3": the KV head it shares)
    engine_pages: bool = True  # the engines' page and pool rules here (core/plan/engines/) hold for its cache
    builds_on: tuple[str, ...] = ()  # the kinds whose package this one extends (DSA: MLA's), and may import
    has_state: bool = False  # it keeps a fixed state a sequence instead of a cache that grows (a recurrent mixer)
    vllm_block_size: int | None = None  # vLLM's block for its attention backend (None: vLLM's default of 16)
    projection_rows: tuple[tuple[str, str], ...]  # (key, name) of each projection its params() rows give, in order
    own_cost_rows: tuple[tuple[str, str], ...] = ()  # (key, title) of the Costs rows only this kind shows
    widths_type: type[KindWidths] | None = None  # its own widths (core/kinds/widths.py); None: the standard layer's
    colour: str = ""  # the mode badge's colour ('': the standard modes' own)
    timing_forms_key: str = ""  # the timing JSON's key of its forms' medians ('': one form)
    timing_form_names: tuple[str, ...] = ()  # the medians under it
    forms_tip: str = ""  # what its forms are, for the timing panel's row
    knobs: tuple[KindKnob, ...] = ()  # sweep knobs only this kind has
    compare_rows: tuple[CompareRow, ...] = ()  # Compare rows only this kind fills
    cli_flags: tuple[CliFlag, ...] = ()  # flags that set its widths
    cli_help: str = ""  # what --attention <name> means

    # --- what the layer is called -----------------------------------------------------------------------------
    @abstractmethod
    def mode(self, spec: LayerSpec) -> str:
        """The attention mode in a word: MHA, GQA, MQA, MLA, ..."""

    @abstractmethod
    def label(self, spec: LayerSpec) -> str:
        """The badge: 'GQA-8 (group 4)', 'MLA (latent 512 + rope 64)'."""

    @abstractmethod
    def baseline(self, spec: LayerSpec) -> LayerSpec:
        """The layer every delta is taken against (the MHA layer of the same heads)."""

    def badge_tip(self, spec: LayerSpec) -> str:
        """The mode badge's tooltip: how the heads get their keys and values."""
        H, K, g = spec.n_heads, spec.n_kv_heads, spec.group_size
        share = "shares" if H == 1 else "share"
        return (f"{format_noun(H, 'query head')} {share} {format_noun(K, 'key/value head')}: "
                f"{format_noun(g, 'query head')} per KV head.")

    def kv_sharing(self, spec: LayerSpec) -> str:
        """How heads get their keys and values when not from KV heads of their own or in groups (the heatmaps'
        legend); '' when the KV groups say it."""
        return ""

    def warnings(self, spec: LayerSpec, d_model: int) -> list[str]:
        """Widths that are allowed but say something a user should know, as sentences."""
        return []

    # --- counts -----------------------------------------------------------------------------------------------
    @abstractmethod
    def params(self, d: int, spec: LayerSpec) -> LayerParams:
        """Parameters of one layer of width d, by projection."""

    @abstractmethod
    def flops(self, d: int, spec: LayerSpec, work: Workload, form: str | None = None) -> FlopCounts:
        """Forward FLOPs of one layer for the whole batch (a matmul m x k by k x n is 2mkn); form picks one of the
        kind's execution forms where it has several (None: the one engines run in work's phase)."""

    @abstractmethod
    def cache_values_per_token(self, spec: LayerSpec) -> int:
        """Values one token adds to the layer's cache (K and V together)."""

    def cache_bytes_per_token(self, spec: LayerSpec, kv_format: str | int) -> int:
        return values_bytes(self.cache_values_per_token(spec), kv_format)

    def kv_values_per_token(self, spec: LayerSpec) -> tuple[int, int]:
        """The cache's values a token as an engine keeps them in K and in V (half each for a KV cache)."""
        values = self.cache_values_per_token(spec)
        return values - values // 2, values // 2

    def cached_tokens(self, spec: LayerSpec, seq_len: int) -> int:
        """Tokens the cache holds at seq_len (a sliding window holds at most W)."""
        return cached_tokens(seq_len, spec.window)

    def variant(self, spec: LayerSpec) -> str:
        """A name for this layer among its kind's layers of one model where they differ by more than a window
        (DeepSeek-V4's window-only, compressed sparse and heavily compressed layers); '' where they do not."""
        return ""

    def variant_colour(self, spec: LayerSpec) -> str:
        """Its cell's colour in the layers' strip (a variant's own shade)."""
        return self.colour

    def cache_bytes_at(self, spec: LayerSpec, kv_format: str | int, seq_len: int) -> int:
        """One sequence's cache of this layer at seq_len tokens: what a token adds times the tokens kept (a kind
        whose cache is not one record a token, as DeepSeek-V4's window and compressed entries, says its own)."""
        return self.cache_bytes_per_token(spec, kv_format) * self.cached_tokens(spec, seq_len)

    def decode_read_bytes(self, spec: LayerSpec, kv_format: str | int, seq_len: int) -> int:
        """The cache bytes one decode step of one sequence reads at seq_len tokens (a sparse layer reads fewer than
        it keeps)."""
        return self.cache_bytes_at(spec, kv_format, seq_len)

    def state_bytes(self, spec: LayerSpec, kv_format: str | int, conv_format: str | int | None = None) -> int:
        """Fixed state a sequence keeps whatever its length (linear attention, SSMs), in kv_format (the state's format)
        and conv_format (its convolution's, None: kv_format); 0 for a KV cache."""
        return 0

    def check_kv_format(self, spec: LayerSpec, kv_format: str) -> None:
        """Refuse a KV format whose blocks do not fit the widths this layer caches (ValueError with a sentence)."""
        return None  # any format fits a kind that says nothing

    def decode_core_flops(self, d: int, spec: LayerSpec, batch: int, keys: int) -> int:
        """One decode step's core over keys cached tokens (the form engines run for decode)."""
        return 4 * batch * spec.n_heads * spec.head_dim * keys

    # --- the planner: a layer shared out over a tensor-parallel group ------------------------------------------
    def check_tp(self, spec: LayerSpec, tp: int) -> None:
        """Refuse a TP degree the layer's cache cannot be shared out by (ValueError with a sentence)."""
        return None  # a cache kept whole on every GPU fits any degree

    def kv_heads_per_gpu(self, spec: LayerSpec, tp: int) -> int | None:
        """KV heads one GPU keeps; None when the cache is not split by heads."""
        return None

    def replication(self, spec: LayerSpec, tp: int) -> int:
        """How many GPUs of the group hold a copy of each cached value."""
        return tp

    def gpu_cache_bytes_per_token(self, spec: LayerSpec, tp: int, kv_format: str) -> int:
        """One layer's cache per token on one GPU of the TP group (all of it when it is not split)."""
        return self.cache_bytes_per_token(spec, kv_format)

    def gpu_cache_bytes_at(self, spec: LayerSpec, tp: int, kv_format: str, seq_len: int) -> int:
        """One sequence's cache of this layer at seq_len tokens on one GPU of the TP group."""
        return self.gpu_cache_bytes_per_token(spec, tp, kv_format) * self.cached_tokens(spec, seq_len)

    def decode_core_flops_at(self, d: int, spec: LayerSpec, batch: int, seq_len: int) -> int:
        """One decode step's core at seq_len tokens of context (over the tokens its cache holds)."""
        return self.decode_core_flops(d, spec, batch, self.cached_tokens(spec, seq_len))

    def decode_flops_parts(self, d: int, spec: LayerSpec, seq_len: int) -> dict[str, int]:
        """One decode step's core FLOPs at seq_len tokens by part (a sparse layer's attention over its selection and
        its indexer over every token)."""
        return {"attention": self.decode_core_flops_at(d, spec, 1, seq_len)}

    def engine_cache_bytes_per_token(self, spec: LayerSpec, tp: int, kv_format: str, engine: str) -> int:
        """One layer's cache per token on one GPU as `engine` keeps it (vllm, sglang): the cache in kv_format unless
        the engine keeps records of its own."""
        return self.gpu_cache_bytes_per_token(spec, tp, kv_format)

    def gpu_state_bytes(self, spec: LayerSpec, tp: int, state_format: str, conv_format: str) -> int:
        """One layer's fixed state a sequence on one GPU of the TP group (0 for a KV cache)."""
        return 0

    # --- what running and timing cost (the runs themselves are the kind's kernels: core/kinds/kernels.py) --------
    @abstractmethod
    def timing_bytes(self, cfg: AttentionConfig, materialises_scores: bool) -> int:
        """Peak bytes a timing run allocates on its device, counted before it allocates them."""

    @abstractmethod
    def estimate_timing_s(self, cfg: AttentionConfig, device_type: str, budget_s: float, include_qkv: bool) -> float:
        """About how long run_timing takes, to refuse a run of minutes before it starts."""

    def display_bytes(self, cfg: AttentionConfig) -> int:
        """Float32 bytes of the weights display_layer holds."""
        return (cfg.n_heads + cfg.kv_heads) * cfg.head_dim * (cfg.d_model + 1) * 4

    def display_maps(self, spec: LayerSpec) -> int:
        """The maps its display draws: one a head."""
        return spec.n_heads

    def display_work_bytes(self, spec: LayerSpec, tokens: int) -> int:
        """What computing its maps holds beyond the maps themselves (display_guard counts those); 0: nothing more."""
        return 0

    def memory_hint(self) -> str:
        """What else to lower when a run does not fit, beyond seq_len, batch and d_model ('' for nothing)."""
        return ""

    # --- the report ------------------------------------------------------------------------------------------
    def report_sections(self, cfg: AttentionConfig, kv: dict[str, Any]) -> dict[str, Any]:
        """Sections the report adds for this kind (merged into the report's JSON): e.g. its own widths, or more
        cache figures in kv_cache. Empty for a kind the report's common keys describe."""
        return {}

    def cost_rows(self, cfg: AttentionConfig, spec: LayerSpec, d: int, where: str) -> list[CostRow]:
        """The Costs panel's rows of this kind (own_cost_rows), and its formulas for shared rows (a row whose value
        is '' changes only the tooltip); where: the scope of a real model's change, said in whole-model formulas."""
        return []

    def report_header(self, report: dict[str, Any]) -> str:
        """The text report's first line: the layer's shape and mode."""
        c = report["config"]
        mode = c["mode"] if c["mode"] != "GQA" else f"GQA (group {c['group_size']})"
        return (f"Attention layer: d_model {c['d_model']}, {c['n_heads']} heads x {c['head_dim']}, "
                f"{c['n_kv_heads']} KV heads -> {mode}")

    def baseline_note(self) -> str:
        """What the baseline's name leaves out ('' when 'MHA' says it all)."""
        return ""

    def report_lines(self, report: dict[str, Any]) -> list[str]:
        """The text report's lines for report_sections' figures, after the KV cache's."""
        return []

    def timing_forms(self, timing: dict[str, Any]) -> str:
        """What the kind's timing adds beyond the common figures, in a sentence (its forms' times); '' for none."""
        return ""

    def timing_lines(self, timing: dict[str, Any]) -> list[str]:
        """The text report's lines for timing_forms."""
        forms = self.timing_forms(timing)
        return [f"  measured forms: {forms}"] if forms else []

    # --- the controls: switching a layer to this kind -------------------------------------------------------------
    def default_widths(self, d_model: int) -> KindWidths | None:
        """Widths a first switch to this kind fits to d_model (None for a kind without widths of its own)."""
        return None

    def switch_to(self, cfg: AttentionConfig, widths: KindWidths | None) -> tuple[AttentionConfig, str]:
        """The layer cfg becomes as this kind with widths, and the sentence that says what moved."""
        raise ValueError(f"{self.title} cannot be switched to from the attention type control; choose a preset of it.")

    def widths_note(self, cfg: AttentionConfig) -> str:
        """What the widths make of the layer, under its controls ('' for none)."""
        return ""

    def hides(self) -> frozenset[str]:
        """Controls of the standard layer this kind has no use for: n_kv_heads, bias, head_dim, qk_norm, window,
        sinks (its widths decide them, or it has none)."""
        return frozenset()

    # --- studies: sweeps, lessons, the Compare table -----------------------------------------------------------------
    def refuse_knob(self, knob: str) -> str:
        """Why a general sweep knob does not apply to this kind, as a sentence ('' when it does)."""
        return ""

    def knob_needs(self, knob: str) -> str:
        """What a user must choose before sweeping one of this kind's knobs."""
        return f"{knob} sweeps a {self.title} layer; choose it first."

    def lessons(self) -> tuple[KindLesson, ...]:
        return ()

    def compare_value(self, report: dict[str, Any], section: str, key: str, value: Any) -> Any:
        """A Compare cell of a report of this kind: value as the generic rows read it, or the kind's own."""
        return value

    def compare_why(self, section: str, key: str, own: bool) -> str:
        """Why a report has no figure in a Compare row ('' when this kind has nothing to say): own, a report of this
        kind; otherwise a report of another kind in one of this kind's compare_rows."""
        return ""

    def timing_series(self, timings: list[dict[str, Any] | None]) -> list[tuple[str, list[float | None], str]]:
        """The sweep plots' extra time lines from its timings (name, ms per point, pen key); [] for none."""
        return []
