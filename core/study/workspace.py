"""Pins and the workspace file that keeps them: JSON with a schema version and a migrate step,
written atomically, and read only after every field of every pin has been checked: a damaged,
foreign, oversized or newer file is refused whole, with a sentence naming the field, and nothing
the caller holds changes."""

from __future__ import annotations

import base64
import binascii
import json
import string
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from core.arch.config import AttentionConfig, short_int
from core.arch.model import Architecture
from core.files import schema
from core.files.atomic import write_text_atomic
from core.kinds.registry import KINDS, kind_named
from core.plan.pin import check_pin_plan, plan_summary
from core.report import build_report, check_model_context
from core.timing.noise import MAX_SAMPLES, SAMPLED

APP = "attention-sandbox"
SCHEMA = 2  # 2: pins carry their architecture (per layer), a real model's context and the probe
MAX_PINS = 1000
MAX_FILE_BYTES = 2 * 2**30  # a workspace is read whole: refuse a bigger file before reading it
# JSON objects and lists a workspace may hold: 1,000 pins of a few hundred each. Parsed, each costs 50-200 bytes of
# memory however few bytes it takes in the file ("{}," is three): empty pins inflate about 25 times when parsed.
MAX_CONTAINERS = 1_000_000
MAX_MAP_BYTES = 512 * 2**20  # one pin's attention maps, decompressed
MAX_TOTAL_MAP_BYTES = 2 * 2**30  # every pin's maps together: forty pins just under the limit each are refused too
MAX_TOKENS = 4096
MAX_TOKEN_CHARS = 32767  # the text box's own limit: one "word" can be this long
MAX_NAME_CHARS = 200
PROBES = ("text", "induction")
DEVICES = ("auto", "cpu", "cuda", "mps")


@dataclass(eq=False)  # a pin is itself: compared by identity, never field by field (it holds arrays)
class Pin:
    name: str
    config: AttentionConfig
    report: dict[str, Any]  # build_report(config, timing[, arch, model]): exact counts and the timing taken
    text: str = ""
    tokens: list[str] = field(default_factory=list)
    probs: np.ndarray | None = None  # (H, T, T) float32
    seed: int = 0
    device: str = "auto"
    arch: Architecture | None = None  # None: config's n_layers identical layers (random weights)
    model: dict[str, Any] | None = None  # a real model's context (core.report.model_context)
    probe: str = "text"  # what the heads read: the text, or the induction probe
    plan: dict[str, Any] | None = None  # the Plan tab's inputs when it was pinned (core/plan/pin.py)


def pin_report(pin: Pin, timing: dict[str, Any] | None) -> dict[str, Any]:
    """The report a pin shows: its configuration's counts over its layers, with this timing."""
    report = build_report(pin.config, timing, pin.arch, pin.model, pin.model["layer"] if pin.model else 0)
    if pin.plan is not None:
        report["plan"] = plan_summary(pin.plan, pin.config, pin.arch)
    return report


def next_pin_name(existing: list[str]) -> str:
    """A, B, ... Z, then A2, B2, ..."""
    taken = set(existing)
    for round_ in range(1, 100):
        for letter in string.ascii_uppercase:
            name = letter if round_ == 1 else f"{letter}{round_}"
            if name not in taken:
                return name
    raise ValueError("too many pins; remove some first.")


def encode_array(a: np.ndarray) -> dict[str, Any]:
    a = np.ascontiguousarray(a, dtype=np.float32)
    return {"dtype": "float32", "shape": list(a.shape),
            "zlib_b64": base64.b64encode(zlib.compress(a.tobytes(), 6)).decode("ascii")}


def decode_array(d: Any, where: str = "probs") -> np.ndarray:
    """The stored (H, T, T) map. The declared shape is checked, and bounded, before anything is
    decompressed, and decompression stops at the declared size (a zip bomb is refused, not expanded)."""
    d = schema.mapping(d, where)
    if d.get("dtype") != "float32":
        raise ValueError(f"{where}.dtype must be float32")
    shape = schema.sequence(d.get("shape"), f"{where}.shape", 3)
    if len(shape) != 3:
        raise ValueError(f"{where}.shape must have 3 sizes (heads, tokens, tokens)")
    dims = [schema.whole(n, f"{where}.shape", 0, 2**31) for n in shape]
    expected = 4 * dims[0] * dims[1] * dims[2]
    if expected > MAX_MAP_BYTES:
        raise ValueError(f"{where} declares {expected:,} bytes of attention maps, more than a pin may hold")
    packed = schema.text(d.get("zlib_b64"), f"{where}.zlib_b64", 2 * MAX_MAP_BYTES)
    try:
        inflater = zlib.decompressobj()
        raw = inflater.decompress(base64.b64decode(packed, validate=True), expected + 1)
    except (binascii.Error, ValueError, zlib.error) as exc:
        raise ValueError(f"{where} is not valid compressed data ({exc})") from None
    if len(raw) != expected or inflater.unconsumed_tail or not inflater.eof or inflater.unused_data:
        raise ValueError(f"the stored attention map does not match its shape {dims} (or its data is cut short)")
    maps = np.frombuffer(raw, dtype=np.float32).reshape(dims).copy()
    if maps.size and not (np.isfinite(maps).all() and -1.0001 <= maps.min() and maps.max() <= 1.0001):
        raise ValueError(f"{where} holds values that are not attention weights (NaN, infinite, or outside -1..1)")
    return maps


def declared_map_bytes(d: Any) -> int:
    """The bytes a pin's stored maps say they decompress to (0 when they are missing or malformed)."""
    if not isinstance(d, dict) or not isinstance(d.get("probs"), dict):
        return 0
    shape = d["probs"].get("shape")
    if not isinstance(shape, list) or len(shape) != 3 or not all(type(n) is int and 0 <= n <= 2**31 for n in shape):
        return 0
    return 4 * shape[0] * shape[1] * shape[2]


TIMING_TEXT = ("device", "device_name", "backend", "dtype")
TIMING_MS = ("median_ms", "p25_ms", "p75_ms", "tflops", "core_median_ms", "core_p25_ms", "core_p75_ms",
             "core_tflops", "prefill_ms", "decode_ms")
TIMING_OPTIONAL_MS = ("fused_qkv_ms", "separate_qkv_ms")


def check_timing(t: Any, where: str) -> dict[str, Any] | None:
    if t is None:
        return None
    t = schema.mapping(t, where)
    expected = set(TIMING_TEXT) | set(TIMING_MS) | set(TIMING_OPTIONAL_MS) | {"reps"}
    if "kernel" in t:  # a window's or the sinks' core: which kernel ran it
        expected.add("kernel")
        schema.text(t["kernel"], f"{where}.kernel", 400)
    for k in ("full_core_ms", "band_flop_ratio"):  # a local layer's core against full causal attention
        if k in t:
            expected.add(k)
            schema.number(t[k], f"{where}.{k}")
    if "samples_ms" in t:  # each measurement's repeats, for the confidence of comparisons
        expected.add("samples_ms")
        samples = schema.mapping(t["samples_ms"], f"{where}.samples_ms")
        unknown = sorted(repr(k)[:20] for k in set(samples) - set(SAMPLED))
        if unknown:
            raise ValueError(f"{where}.samples_ms has unknown measurement(s): {', '.join(unknown)}")
        for k, values in samples.items():
            for x in schema.sequence(values, f"{where}.samples_ms.{k}", MAX_SAMPLES):
                schema.number(x, f"{where}.samples_ms.{k}")
    if "threads" in t:  # a CPU timing: the threads it ran on, and other processes' load meanwhile
        expected.add("threads")
        schema.whole(t["threads"], f"{where}.threads", 1, 4096)
    if "other_load" in t:
        expected.add("other_load")
        schema.number(t["other_load"], f"{where}.other_load", 0.0, 4096.0)
    for kind in KINDS.values():  # a kind of several forms: each form's medians under the kind's key
        key = kind.timing_forms_key
        if key and key in t:
            expected.add(key)
            forms = schema.mapping(t[key], f"{where}.{key}")
            if set(forms) != set(kind.timing_form_names):
                raise ValueError(f"{where}.{key} must hold {', '.join(kind.timing_form_names)}.")
            for k in kind.timing_form_names:
                schema.number(forms[k], f"{where}.{key}.{k}", 1e-9)  # a measured time is never zero
    if set(t) != expected:
        raise ValueError(f"{where} has the wrong fields (missing: {', '.join(sorted(expected - set(t))) or 'none'}; "
                         f"unknown: {', '.join(sorted(repr(k)[:20] for k in set(t) - expected)) or 'none'})")
    for k in TIMING_TEXT:
        schema.text(t[k], f"{where}.{k}", 200)
    for k in TIMING_MS:
        schema.number(t[k], f"{where}.{k}")
    for k in TIMING_OPTIONAL_MS:
        schema.optional_number(t[k], f"{where}.{k}")
    schema.whole(t["reps"], f"{where}.reps", 1, 10**9)
    return t


def pin_to_json(pin: Pin) -> dict[str, Any]:
    out = {"name": pin.name, "config": pin.config.to_dict(), "report": pin.report, "text": pin.text,
            "tokens": pin.tokens, "seed": pin.seed, "device": pin.device, "probe": pin.probe,
            "architecture": pin.arch.to_dict() if pin.arch is not None else None, "model": pin.model,
            "probs": encode_array(pin.probs) if pin.probs is not None else None}
    if pin.plan is not None:  # a pin without a plan writes the file it always did
        out["plan"] = pin.plan
    return out


def before_layer_flops(report: dict[str, Any]) -> dict[str, Any]:
    """report as files written before each layer's flops_per_layer was counted held it (they open, recounted)."""
    if "layers" not in report:
        return report
    return {**report, "layers": [{k: v for k, v in g.items() if k != "flops_per_layer"} for g in report["layers"]]}


def pin_from_json(d: Any) -> Pin:
    """One pin, every field checked; ValueError names the first field that is wrong."""
    d = schema.mapping(d, "the pin")
    name = schema.text(d.get("name"), "name", MAX_NAME_CHARS)
    if not name.strip():
        raise ValueError("name must not be empty")
    cfg = AttentionConfig.from_dict(schema.mapping(d.get("config"), "config"))
    report = schema.mapping(d.get("report"), "report")
    timing = check_timing(report.get("timing"), "report.timing")
    if timing is not None:
        check_timing_forms(timing, cfg)
    arch = Architecture.from_dict(d["architecture"]) if d.get("architecture") is not None else None
    model = check_model_context(d["model"], "model") if d.get("model") is not None else None
    if model is not None and arch is None:
        raise ValueError("a real model's pin must carry its architecture (its layers as changed)")
    layer = model["layer"] if model is not None else 0
    point = (model or {}).get("kv_point")
    if point is not None and arch is not None and point["method"].startswith("latent"):
        width = max(2 * s.n_kv_heads * s.head_dim for s in arch.layers)
        if point["setting"] > width:
            raise ValueError(f"its frontier point's latent rank {point['setting']:,} is more than the model's "
                             f"{width:,} key and value widths")
    if arch is not None:
        fits = (arch.d_model, arch.n_layers) == (cfg.d_model, cfg.n_layers) and layer < arch.n_layers
        if not fits or arch.layers[layer] != cfg.layer_spec():
            raise ValueError(f"its layers do not match its configuration ({cfg.mode_label}, d_model {cfg.d_model})")
    plan = check_pin_plan(d["plan"], "plan", cfg, arch) if d.get("plan") is not None else None
    report = {k: v for k, v in report.items() if k != "plan"}  # recounted from the plan below, never read
    rebuilt = build_report(cfg, timing, arch, model, layer)
    if report != rebuilt and report != before_layer_flops(rebuilt):  # the counts must be this config's: none edited
        raise ValueError(f"its numbers do not match its configuration ({cfg.mode_label}, d_model {cfg.d_model})")
    report = rebuilt  # equal, and of the right types (4096.0 equals 4096; the pin keeps the integer)
    if plan is not None:
        report["plan"] = plan_summary(plan, cfg, arch)
    tokens = [schema.text(t, "tokens", MAX_TOKEN_CHARS)
              for t in schema.sequence(d.get("tokens", []), "tokens", MAX_TOKENS)]
    probs = decode_array(d["probs"]) if d.get("probs") is not None else None
    if probs is not None and probs.shape != (cfg.n_heads, len(tokens), len(tokens)):
        raise ValueError("its attention maps do not match its heads and tokens")
    return Pin(name=name, config=cfg, report=report, text=schema.text(d.get("text", ""), "text"), tokens=tokens,
               probs=probs, seed=schema.whole(d.get("seed", 0), "seed", 0, 2**63 - 1),
               device=schema.choice(d.get("device", "auto"), "device", DEVICES), arch=arch, model=model,
               probe=schema.choice(d.get("probe", "text"), "probe", PROBES), plan=plan)


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    """Bring an older workspace to SCHEMA. Schema 0 (the first drafts) had 'version' and no seeds;
    schema 1 had no architecture, model context or probe (random weights, read as text)."""
    schema_version = data.get("schema", data.get("version", 0))
    pins = schema.sequence(data.get("pins", []), "pins", MAX_PINS)
    if schema_version == 0:
        pins = [{**schema.mapping(p, f"pin {i + 1}"), "seed": p.get("seed", 0), "device": p.get("device", "auto")}
                for i, p in enumerate(pins)]
    if schema_version <= 1:
        pins = [{**schema.mapping(p, f"pin {i + 1}"), "architecture": None, "model": None, "probe": "text"}
                for i, p in enumerate(pins)]
    return {"app": APP, "schema": SCHEMA, "pins": pins}


def workspace_json(pins: list[Pin]) -> str:
    return json.dumps({"app": APP, "schema": SCHEMA, "pins": [pin_to_json(p) for p in pins]}, indent=1)


def save_workspace(path: Path, pins: list[Pin]) -> None:
    """Atomic: the old file stays whole until the new one is complete."""
    write_text_atomic(Path(path), workspace_json(pins))


def read_json(path: Path, max_bytes: int = MAX_FILE_BYTES) -> Any:
    """A JSON file, or ValueError with a sentence: unreadable, too big, not JSON, nested too deeply."""
    try:
        if not path.is_file():  # a folder, a device such as /dev/zero, a pipe: never read
            raise ValueError(f"{path.name} is not a regular file; choose a workspace file.")
        if path.stat().st_size > max_bytes:  # said before reading: a 3 GB file was read to 2 GiB first
            raise ValueError(f"{path.name} is {path.stat().st_size:,} bytes, larger than a workspace may be "
                             f"({max_bytes:,} bytes); it was not read.")
        with open(path, "rb") as f:
            raw = f.read(max_bytes + 1)  # bounded even if the size on disk lies
        if len(raw) > max_bytes:
            raise ValueError(f"{path.name} is larger than a workspace may be ({max_bytes:,} bytes).")
        containers = raw.count(b"{") + raw.count(b"[")  # an upper bound (braces in texts count too), found in C
        if containers > MAX_CONTAINERS:
            raise ValueError(f"{path.name} holds {containers:,} JSON objects and lists; a workspace holds at most "
                             f"{MAX_CONTAINERS:,} ({MAX_PINS:,} pins); it was not read.")
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read {path.name}: {getattr(exc, 'strerror', None) or exc}.") from exc
    except MemoryError:
        raise ValueError(f"{path.name} is too large for this machine's memory; it was not read.") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path.name} is not a workspace: it is not JSON ({exc.msg} at line {exc.lineno}).") from exc
    except RecursionError:
        raise ValueError(f"{path.name} is not a workspace: its JSON is nested too deeply to read.") from None
    except ValueError:  # Python's own limit on the digits of one number
        raise ValueError(f"{path.name} is not a workspace: it holds a number too long to read.") from None
    except MemoryError:
        raise ValueError(f"{path.name} is too large for this machine's memory; it was not read.") from None


def load_workspace(path: Path) -> list[Pin]:
    """Every pin, or ValueError with a sentence and nothing loaded."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, dict) or data.get("app", APP if "version" in data else None) != APP:
        raise ValueError(f"{path.name} is not an Attention Sandbox workspace.")
    version = data.get("schema", data.get("version", 0))
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise ValueError(f"{path.name} is damaged: its schema must be a whole number, not {version!r:.40}.")
    if version > SCHEMA:
        raise ValueError(f"{path.name} was saved by a newer Attention Sandbox (schema {short_int(version)}; this one reads up "
                         f"to {SCHEMA}); update the app to open it.")
    try:
        data = migrate(data)
    except ValueError as exc:
        raise ValueError(f"{path.name} is damaged: {str(exc).rstrip('.')}.") from None
    total = sum(declared_map_bytes(p) for p in data["pins"])
    if total > MAX_TOTAL_MAP_BYTES:
        raise ValueError(f"{path.name} declares {total:,} bytes of attention maps in all, more than a workspace may "
                         f"hold ({MAX_TOTAL_MAP_BYTES:,}); it was not read.")
    pins = []
    for i, raw in enumerate(data["pins"]):
        try:
            pins.append(pin_from_json(raw))
        except (ValueError, RecursionError, MemoryError) as exc:
            raise ValueError(f"{path.name} is damaged: pin {i + 1} cannot be read ({str(exc).rstrip('.')}).") from None
    names = [p.name for p in pins]
    if len(set(names)) != len(names):
        raise ValueError(f"{path.name} is damaged: two pins share a name.")
    return pins


def check_timing_forms(timing: dict[str, Any], cfg: AttentionConfig) -> None:
    """A timing holds the forms of its configuration's kind, and no other kind's."""
    own = kind_named(cfg.attention).timing_forms_key
    for kind in KINDS.values():
        key = kind.timing_forms_key
        if key and (key in timing) != (key == own):
            raise ValueError(f"its timing's {kind.short} forms ({key}) do not match its configuration "
                             f"({cfg.mode_label}): only the timing of a layer of that kind has them")
