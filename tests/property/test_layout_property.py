"""Generated 2026 layouts: every one is either accepted with counts equal to a brute-force reference
(layer by layer, row by row, written here independently of core/kinds/standard/counts.py) or refused with a sentence,
in core and through the CLI."""

import json
from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from core.arch.config import AttentionConfig
from core.counts import flop_counts, kv_cache_bytes, param_counts
from tests.property.cli_run import run_main

# Bytes per value of each KV format, written again here (q8_0: 34 B per 32 values, q4_0: 18 B per 32).
FORMAT_BYTES = {"float32": Fraction(4), "bfloat16": Fraction(2), "float16": Fraction(2), "fp8_e4m3": Fraction(1),
                "fp8_e5m2": Fraction(1), "q8_0": Fraction(34, 32), "q4_0": Fraction(18, 32)}

layouts = st.fixed_dictionaries({
    "d_model": st.integers(1, 512),
    "n_heads": st.integers(1, 16),
    "kv_div": st.integers(1, 16),
    "explicit_head_dim": st.one_of(st.none(), st.integers(1, 160), st.sampled_from([32, 64, 128, 256])),
    "n_layers": st.integers(1, 14),
    "window": st.one_of(st.none(), st.integers(1, 80), st.integers(-2, 0), st.just(2**20 + 1)),
    "layer_pattern": st.one_of(st.sampled_from(["global", "local", "alternate", "1:1", "5:1", "2:1", "", "x"]),
                               st.text(alphabet="LGlg, ", max_size=16)),
    "seq_len": st.integers(1, 300),
    "batch_size": st.integers(1, 3),
    "causal": st.booleans(),
    "bias": st.sampled_from([False, True, "qkv", "none", "all", "o"]),
    "qk_norm": st.booleans(),
    "sinks": st.booleans(),
    "kv_dtype": st.one_of(st.none(), st.sampled_from(list(FORMAT_BYTES) + ["int4"])),
    "phase": st.sampled_from(["prefill", "decode"]),
})


def expected_local(pattern: str, n_layers: int, window) -> list[bool] | None:
    """Which layers are local, or None when the pattern cannot describe n_layers (written again here).
    Without a window, the pattern must still be one and name no local layer."""
    if window is None:
        local = expected_local(pattern, n_layers, 1)
        return None if local is None or any(local) else local
    p = pattern.strip().lower()
    if p == "global":
        return [False] * n_layers
    if p == "local":
        return [True] * n_layers
    if p == "alternate":
        return [i % 2 == 0 for i in range(n_layers)]
    if p.endswith(":1") and p[:-2].isdigit():
        n = int(p[:-2])
        return [(i + 1) % (n + 1) != 0 for i in range(n_layers)] if n >= 1 else None
    letters = [c for c in p.upper() if c not in ", "]
    if not letters or set(letters) - {"L", "G"} or len(letters) != n_layers:
        return None
    return [c == "L" for c in letters]


def reference(f: dict) -> dict | None:
    """Counts of the layout, or None when it must be refused."""
    d, H, T, B, L, W = f["d_model"], f["n_heads"], f["seq_len"], f["batch_size"], f["n_layers"], f["window"]
    if H % f["kv_div"]:
        return None
    K = H // f["kv_div"]
    h = f["explicit_head_dim"] if f["explicit_head_dim"] is not None else (d // H if d % H == 0 else None)
    if h is None or (W is not None and not 1 <= W <= 2**20) or f["bias"] == "o" or f["kv_dtype"] == "int4":
        return None
    local = expected_local(f["layer_pattern"], L, W)
    if local is None or (any(local) and not f["causal"]):
        return None
    fmt = f["kv_dtype"] or "float32"
    if fmt in ("q8_0", "q4_0") and h % 32:
        return None
    biases = {True: "all", False: "none"}.get(f["bias"], f["bias"])
    params = d * H * h + 2 * d * K * h + H * h * d
    params += (H * h + 2 * K * h) * (biases != "none") + d * (biases == "all")
    params += 2 * h * f["qk_norm"] + H * f["sinks"]
    # KV: every layer's cache, token by token (a local layer keeps the last W), in the format's bytes.
    kv = sum(2 * K * h * FORMAT_BYTES[fmt] * B * (min(T, W) if loc else T) for loc in local)
    # Layer 0's core, query by query: the keys each one scores.
    w0 = W if local[0] else None
    if f["phase"] == "decode":
        core = 4 * B * H * h * (min(T, w0) if w0 else T)
    elif f["causal"]:
        exact = sum(min(i + 1, w0) if w0 else i + 1 for i in range(T))
        core = 4 * B * H * h * exact - 2 * B * H * h * (min(T, w0) if w0 else T)  # the convention's diagonal
    else:
        core = 4 * B * H * h * T * T
    return {"params": params, "kv": kv, "core": core}


def build(f: dict) -> AttentionConfig:
    fields = {k: v for k, v in f.items() if k != "kv_div"}
    return AttentionConfig(n_kv_heads=f["n_heads"] // f["kv_div"] if f["n_heads"] % f["kv_div"] == 0 else 0, **{
        k: v for k, v in fields.items() if k != "n_kv_heads"})


@given(layouts)
def test_a_layout_is_counted_exactly_or_refused(f):
    ref = reference(f)
    try:
        cfg = build(f)
    except ValueError as exc:
        assert ref is None, (f, exc)
        assert str(exc)[-1] in ".)" and len(str(exc)) < 400
        return
    assert ref is not None, f
    assert param_counts(cfg).total == ref["params"]
    assert kv_cache_bytes(cfg).bytes_total == ref["kv"]
    assert flop_counts(cfg).attention == ref["core"]


@given(layouts)
def test_the_cli_counts_a_layout_or_exits_2_with_one_line(f):
    argv = ["report", "--json", "--d-model", str(f["d_model"]), "--heads", str(f["n_heads"]),
            "--kv-heads", str(max(1, f["n_heads"] // f["kv_div"])), "--layers", str(f["n_layers"]),
            "--seq-len", str(f["seq_len"]), "--batch", str(f["batch_size"]), "--phase", f["phase"],
            "--causal" if f["causal"] else "--no-causal", "--bias", {True: "all", False: "none"}.get(f["bias"], f["bias"])]
    argv += ["--qk-norm"] if f["qk_norm"] else []
    argv += ["--sinks"] if f["sinks"] else []
    argv += ["--head-dim", str(f["explicit_head_dim"])] if f["explicit_head_dim"] is not None else []
    argv += ["--window", str(f["window"]), "--layer-pattern", f["layer_pattern"]] if f["window"] is not None else []
    argv += ["--kv-dtype", f["kv_dtype"]] if f["kv_dtype"] is not None else []
    code, out, err = run_main(argv)
    if code == 0:
        report = json.loads(out)
        fields = {k: v for k, v in f.items() if k not in ("kv_div", "layer_pattern")}
        pattern = f["layer_pattern"] if f["window"] is not None else "global"  # the CLI was given no pattern
        cfg = AttentionConfig(**fields, layer_pattern=pattern, n_kv_heads=max(1, f["n_heads"] // f["kv_div"]))
        assert report["kv_cache"]["bytes_total"] == kv_cache_bytes(cfg).bytes_total
        assert report["params"]["total"] == param_counts(cfg).total
    else:
        assert code == 2, (argv, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("attention-sandbox: error: ") and "Traceback" not in lines[0]
