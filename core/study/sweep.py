"""Sweeps: one knob over a list of values, the other knobs as they are.

Pure functions: parse the user's values, plan the points (an invalid value becomes a skipped point
with its reason, never silently dropped), and run one point at a time so the runner can interleave
sweeps with live requests and cancel between points or between timing repeats.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.arch.config import AttentionConfig
from core.arch.formats import KV_FORMATS, bytes_per_value
from core.kinds.kind import KindKnob, LayerKind
from core.kinds.registry import KINDS, kind_named
from core.report import build_report

KNOBS = {"n_heads": "n_heads", "n_kv_heads": "n_kv_heads", "seq_len": "seq_len", "d_model": "d_model",
         "batch": "batch_size", "batch_size": "batch_size", "head_dim": "explicit_head_dim", "window": "window",
         "kv_dtype": "kv_dtype"}
# Knobs only one layer kind has (MLA's kv_lora_rank ...): the kind says how a value changes a configuration.
KIND_KNOBS: dict[str, tuple[LayerKind, KindKnob]] = {k.name: (kind, k) for kind in KINDS.values() for k in kind.knobs}
ALL_KNOBS = [k for k in KNOBS if k != "batch_size"] + list(KIND_KNOBS)  # as a picker lists them
# Knobs whose values are names, not numbers; plotted at a number each name stands for.
CATEGORICAL: dict[str, tuple[str, ...]] = {"kv_dtype": tuple(KV_FORMATS),
                                           **{n: k.names for n, (_, k) in KIND_KNOBS.items() if k.names}}
AXIS_LABELS = {"kv_dtype": "kv_dtype (bytes per value)", **{n: k.axis for n, (_, k) in KIND_KNOBS.items() if k.axis}}
KNOB_DEFAULTS = {  # the values a sweep of each knob starts with
    "n_heads": "1,2,3,4,6,8,12,16,24,32,48,64",
    "n_kv_heads": "32,16,8,4,2,1",
    "seq_len": "128..16384 log",
    "d_model": "256..8192 log",
    "batch": "1..64 log",
    "head_dim": "32,64,96,128,192,256",
    "window": "128..8192 log",
    "kv_dtype": "float32,bfloat16,fp8_e4m3,q8_0,q4_0",
    **{n: k.default for n, (_, k) in KIND_KNOBS.items()},
}


def knob_help() -> str:
    """Every knob and its values' form, for --vary's help."""
    names = "; ".join(f"{n}: {','.join(k.names)}" for n, (_, k) in KIND_KNOBS.items() if k.names)
    return (f"{', '.join(ALL_KNOBS)}; values like 1,2,4 or 128..16384 log (kv_dtype: names such as "
            f"float16,fp8_e4m3,q8_0,q4_0{'; ' + names if names else ''})")


def joined(knob: str) -> bool:
    """Whether a sweep's points make a trend to draw as a line (a set of layer kinds does not)."""
    own = KIND_KNOBS.get(knob)
    return own is None or own[1].joined


def timing_series(timings: list[dict[str, Any] | None]) -> list[tuple[str, list[float | None], str]]:
    """The extra time lines the layer kinds draw from a timed sweep (each form of a kind with several)."""
    return [line for kind in KINDS.values() for line in kind.timing_series(timings)]


def parse_knob_values(knob: str, text: str) -> list[Any]:
    """parse_values for a numeric knob; for kv_dtype, names like 'float16,fp8_e4m3,q8_0,q4_0'; for a kind's knob of
    names, its names (any case)."""
    names = CATEGORICAL.get(knob.strip())
    if names is None:
        return parse_values(text)
    parts = [p.strip() for p in text.replace(";", ",").split(",") if p.strip()]
    if knob.strip() in KIND_KNOBS:
        parts = [p.lower() for p in parts]  # names in upper case as well as lower
    if not parts:
        raise ValueError(f"enter at least one {knob}, e.g. {','.join(names[1:3] or names)}.")
    unknown = [p for p in parts if p not in names]
    if unknown:
        what = "a KV format" if knob.strip() == "kv_dtype" else f"an {knob.strip()} value"
        raise ValueError(f"{unknown[0][:20]!r} is not {what}; choose from {', '.join(names)}.")
    out = list(dict.fromkeys(parts))
    check_count(out)
    return out


def sweep_x(knob: str, value: Any) -> float:
    """Where a swept value sits on a plot's x axis: the number itself, a KV format's bytes per value, or a name's
    place (1, 2, ...) among a kind's knob's names."""
    if knob in KIND_KNOBS and knob in CATEGORICAL:
        return float(CATEGORICAL[knob].index(value) + 1)
    return bytes_per_value(value) if knob in CATEGORICAL else float(value)


MAX_POINTS = 64
_RANGE = re.compile(r"^\s*(\d+)\s*(?:\.\.|-|:)\s*(\d+)\s*(?:(log)\s*(\d+)?|step\s*(\d+))?\s*$", re.IGNORECASE)


MAX_VALUE = 2**62  # a swept value beyond this is refused before any arithmetic on it


def parse_values(text: str) -> list[int]:
    """'1,2,4,8', '128..16384 log' (doubling), '128..16384 log 5' (5 points, geometric),
    '1..64 step 8' or '1..8' -> ascending-as-written integers, duplicates removed. The number of
    points is checked before any list is built, so '1..2 log 100000000' is refused at once."""
    text = text.strip()
    if not text:
        raise ValueError("enter at least one value, e.g. 1,2,4,8 or 128..16384 log.")
    if len(text) > 10_000:
        raise ValueError("the values are longer than 10,000 characters; give at most 64 values or a range.")
    m = _RANGE.match(text)
    if m:
        lo, hi = _bounded(m.group(1)), _bounded(m.group(2))
        if lo < 1 or hi < lo:
            raise ValueError(f"the range {lo}..{hi} must start at 1 or more and not run backwards.")
        if m.group(3):  # log
            if m.group(4):
                n = _bounded(m.group(4))
                if not 1 <= n <= MAX_POINTS:
                    raise ValueError(f"a log range takes 1 to {MAX_POINTS} points, not {n}.")
                vals = [round(math.exp(math.log(lo) + (math.log(hi) - math.log(lo)) * i / max(1, n - 1)))
                        for i in range(n)]
            else:
                count = (hi // lo).bit_length()  # lo, 2 lo, 4 lo, ... <= hi
                if count > MAX_POINTS:
                    raise ValueError(f"{lo}..{hi} log is {count} doublings; a sweep takes at most {MAX_POINTS}. "
                                     f"Give a number of points: {lo}..{hi} log 16.")
                vals = [lo << i for i in range(count)]
        else:
            step = _bounded(m.group(5) or "1")
            if step < 1:
                raise ValueError("the step must be at least 1.")
            count = (hi - lo) // step + 1
            if count > MAX_POINTS:
                raise ValueError(f"{lo}..{hi} step {step} is {count:,} points; a sweep takes at most {MAX_POINTS}. "
                                 "Use a larger step or 'log'.")
            vals = list(range(lo, hi + 1, step))
    else:
        parts = [p.strip() for p in text.replace(";", ",").split(",") if p.strip()]
        if len(parts) > MAX_POINTS:
            raise ValueError(f"{len(parts)} values is more than a sweep takes ({MAX_POINTS}); use fewer or a log range.")
        vals = []
        for part in parts:
            try:
                vals.append(_bounded(part))
            except ValueError as exc:
                if "at most" in str(exc):
                    raise
                raise ValueError(f"{part[:20]!r} is not a whole number; write values like 1,2,4 or a range 1..64 log.") from None
    out = list(dict.fromkeys(vals))
    check_count(out)
    return out


def _bounded(digits: str) -> int:
    """A whole number from the user's text, at most MAX_VALUE (checked on the digits, before int())."""
    digits = digits.strip()
    body = digits.lstrip("+-")
    if not body.isdigit():
        raise ValueError(f"{digits[:20]!r} is not a whole number")
    if len(body.lstrip("0")) > 19 or int(body) > MAX_VALUE:
        raise ValueError(f"a swept value must be at most {MAX_VALUE:,}, not a {len(body)}-digit number; "
                         "choose smaller values.")
    return int(digits)


def check_count(values: list[Any]) -> None:
    if not values:
        raise ValueError("enter at least one value, e.g. 1,2,4,8 or 128..16384 log.")
    if len(values) > MAX_POINTS:
        raise ValueError(f"{len(values)} values is more than a sweep takes ({MAX_POINTS}); use fewer or a log range.")


@dataclass(frozen=True)
class SweepPoint:
    value: int | str  # a number, or a name for a categorical knob (kv_dtype)
    config: AttentionConfig | None  # None: the value makes an invalid configuration
    reason: str = ""  # why it was skipped


def plan_sweep(base: AttentionConfig, knob: str, values: list[Any]) -> list[SweepPoint]:
    """One point per value. Sweeping n_heads on an MHA base keeps it MHA (n_kv_heads follows)."""
    check_knob(base, knob)
    check_count(values)
    points = []
    for v in values:
        try:  # a bad value is a skipped point with its reason
            points.append(SweepPoint(v, point_config(base, knob, v)))
        except ValueError as exc:
            points.append(SweepPoint(v, None, str(exc)))
    return points


def check_knob(base: AttentionConfig, knob: str) -> None:
    """Refuse a knob that is not one, or that base's layer kind has no use for (ValueError with a sentence)."""
    if knob not in KNOBS and knob not in KIND_KNOBS:
        raise ValueError(f"cannot sweep {knob!r}; choose one of {', '.join(sorted(ALL_KNOBS))}.")
    own = KIND_KNOBS.get(knob)
    if own is not None and own[0].name != base.attention:
        raise ValueError(own[0].knob_needs(knob))
    refusal = kind_named(base.attention).refuse_knob(knob)
    if refusal:
        raise ValueError(refusal)


def point_config(base: AttentionConfig, knob: str, value: Any) -> AttentionConfig:
    """base with knob at value, as a sweep's point has it (ValueError: the value makes no valid layer)."""
    own = KIND_KNOBS.get(knob)
    if own is not None:
        return own[1].apply(base, value)
    changes: dict[str, Any] = {KNOBS[knob]: value}
    if knob == "window" and base.window is None:  # a window swept on a model without one, as --window:
        changes["causal"] = True  # a window is causal
        if base.layer_pattern == "global":
            changes["layer_pattern"] = "local"  # every layer local
    if knob == "n_heads" and base.kv_heads == base.n_heads:  # MHA stays MHA (and a kind whose heads follow)
        changes["n_kv_heads"] = value
    return base.with_(**changes)


@dataclass
class SweepRow:
    value: int | str
    status: str  # ok, skipped (invalid), refused (memory guard), failed
    reason: str = ""
    report: dict[str, Any] | None = None
    seconds: float = 0.0  # wall time of this point


@dataclass
class SweepResult:
    knob: str
    rows: list[SweepRow] = field(default_factory=list)
    timed: bool = False
    partial: bool = False  # cancelled or stopped before the last point
    stopped_reason: str = ""

    def ok_rows(self) -> list[SweepRow]:
        return [r for r in self.rows if r.status == "ok" and r.report is not None]


TimingFn = Callable[[AttentionConfig], dict[str, Any]]


def run_point(point: SweepPoint, timing_fn: TimingFn | None) -> SweepRow:
    """Counts always; timing through timing_fn (which may raise Cancelled or ValueError)."""
    if point.config is None:
        return SweepRow(point.value, "skipped", point.reason)
    timing = None
    if timing_fn is not None:
        try:
            timing = timing_fn(point.config)
        except ValueError as exc:  # the memory guard, before allocating
            return SweepRow(point.value, "refused", str(exc), build_report(point.config, None))
    return SweepRow(point.value, "ok", "", build_report(point.config, timing))


def flatten(report: dict[str, Any]) -> dict[str, Any]:
    """{'config': {'d_model': ..}, ...} -> {'config.d_model': ..., 'timing.median_ms': ...}; nested objects (a kind's
    section of forms) as 'section.forms.naive.prefill_flops'."""
    out: dict[str, Any] = {}
    for section, values in report.items():
        if section == "samples_ms":
            continue  # a timing's repeats: in the JSON, not one column each
        if section == "layer_kinds":  # [{kind: "global", ...}, ...] -> layer_kinds.global.kv_bytes_total, ...
            for kind in values:
                out.update({f"{section}.{kind['kind']}.{k}": v for k, v in kind.items() if k != "kind"})
        elif isinstance(values, dict):
            out.update({f"{section}.{k}": v for k, v in flatten(values).items()})
        elif values is not None:
            out[section] = values
    return out


def knob_value(cfg: AttentionConfig, knob: str) -> Any:
    """The swept knob's value in cfg, as a person reads it (a kind's knob as the kind reads it)."""
    own = KIND_KNOBS.get(knob)
    if own is not None:
        return own[1].read(cfg)
    return getattr(cfg, KNOBS[knob], "?")


def fitted_exponent(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log(y) on log(x): 2 means y grows as x^2."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys, strict=True) if x > 0 and y > 0]
    if len(pts) < 2:
        return float("nan")
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx if sxx else float("nan")
