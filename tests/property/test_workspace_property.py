"""Damaged workspaces: every one is refused with a ValueError naming what is wrong, whatever the
damage (crafted cases, then hypothesis-generated JSON in every field); nothing else escapes."""

import base64
import json
import zlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.arch.config import AttentionConfig
from core.report import build_report
from core.study.workspace import Pin, load_workspace, pin_to_json, save_workspace

CFG = AttentionConfig(d_model=64, n_heads=4, n_kv_heads=2, seq_len=16)
TIMING = {"device": "cpu", "device_name": "CPU (2 threads)", "backend": "flash", "dtype": "float32",
          "median_ms": 1.0, "p25_ms": 0.9, "p75_ms": 1.1, "tflops": 0.1, "reps": 5, "core_median_ms": 0.5,
          "core_p25_ms": 0.4, "core_p75_ms": 0.6, "core_tflops": 0.2, "fused_qkv_ms": 0.1, "separate_qkv_ms": 0.2,
          "prefill_ms": 1.0, "decode_ms": 0.1}


def good_pin() -> dict:
    probs = np.full((4, 2, 2), 0.5, dtype=np.float32)
    return pin_to_json(Pin("A", CFG, build_report(CFG, TIMING), "x y", ["x", "y"], probs, seed=1, device="cpu"))


def workspace(**pin_changes) -> dict:
    return {"app": "attention-sandbox", "schema": 2, "pins": [{**good_pin(), **pin_changes}]}


def refused(tmp_path, data, words="") -> str:
    path = tmp_path / "bad.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    with pytest.raises(ValueError) as exc:
        load_workspace(path)
    msg = str(exc.value)
    assert "\n" not in msg and msg.endswith(".") and words in msg, msg
    return msg


def test_a_good_file_loads(tmp_path):
    path = tmp_path / "ok.json"
    path.write_text(json.dumps(workspace()))
    (pin,) = load_workspace(path)
    assert pin.report["timing"] == TIMING and pin.probs.shape == (4, 2, 2)


def zeros_b64(n_bytes: int) -> str:
    return base64.b64encode(zlib.compress(bytes(n_bytes), 9)).decode()


@pytest.mark.parametrize("data, words", [
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ({"app": "attention-sandbox", "schema": 2, "pins": 5}, "pins must be a list"),
    ({"app": "attention-sandbox", "schema": 2, "pins": None}, "pins must be a list"),
    ({"app": "attention-sandbox", "schema": "1", "pins": []}, "schema must be a whole number"),
    ({"app": "attention-sandbox", "schema": True, "pins": []}, "schema must be a whole number"),
    ({"app": "attention-sandbox", "schema": 2, "pins": ["A"]}, "the pin must be an object"),
    (workspace(report=[]), "report must be an object"),
    (workspace(seed=1e400), "seed must be a whole number"),
    (workspace(seed=-1), "seed must be from 0"),
    (workspace(name=7), "name must be text"),
    (workspace(config={"d_model": "64"}), "d_model must be a whole number"),
    (workspace(config=None), "config must be an object"),
    (workspace(tokens="x y"), "tokens must be a list"),
    (workspace(probs={"dtype": "float32", "shape": [1e400, 2, 2], "zlib_b64": ""}), "probs.shape must be a whole"),
    (workspace(probs={"dtype": "float32", "shape": [40000, 256, 256], "zlib_b64": ""}), "more than a workspace may"),
    (workspace(probs={"dtype": "float32", "shape": [3000, 256, 256], "zlib_b64": ""}), "more than a pin may hold"),
    # 100 MB of zeros in a few hundred KB, declared as 16 bytes: decompression stops at the declared size.
    (workspace(probs={"dtype": "float32", "shape": [1, 2, 2], "zlib_b64": zeros_b64(100 * 2**20)}), "does not match"),
    (workspace(probs={"dtype": "float32", "shape": [4, 2, 2], "zlib_b64": "!!!"}), "not valid compressed data"),
    (workspace(probe="everything"), "probe must be one of text, induction"),
    (workspace(architecture={"d_model": 64, "layers": [{"spec": {"n_heads": 4}, "count": 1}]}),
     "this one lacks n_kv_heads, head_dim"),
    (workspace(architecture={"d_model": 64, "layers": [{"spec": {"n_heads": 4, "n_kv_heads": 2, "head_dim": 16},
                                                        "count": 10**9}]}), "count from 1"),
    (workspace(model={"name": "x"}), "model has the wrong fields"),
])
def test_crafted_damage_is_refused_with_a_sentence(tmp_path, data, words):
    refused(tmp_path, data, words)


@pytest.mark.parametrize("timing, words", [
    ("fast", "report.timing must be an object"),
    ({**TIMING, "median_ms": "x"}, "report.timing.median_ms must be a number"),
    ({**TIMING, "median_ms": float("nan")}, "report.timing.median_ms must be a finite number"),
    ({**TIMING, "reps": 2.5}, "report.timing.reps must be a whole number"),
    ({"median_ms": 1.0}, "report.timing has the wrong fields"),
])
def test_a_wrongly_typed_timing_is_refused_naming_the_field(tmp_path, timing, words):
    data = workspace()
    data["pins"][0]["report"]["timing"] = timing
    refused(tmp_path, json.dumps(data, allow_nan=True), words)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12,
)
FIELDS = ["name", "config", "report", "text", "tokens", "seed", "device", "probe", "architecture", "model", "probs"]


@given(st.sampled_from(FIELDS), json_values)
def test_any_value_in_any_field_loads_or_is_refused_with_a_sentence(field, value):
    import tempfile
    from pathlib import Path

    data = workspace(**{field: value})
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "w.json"
        path.write_text(json.dumps(data, allow_nan=True))
        try:
            pins = load_workspace(path)
        except ValueError as exc:
            assert "\n" not in str(exc) and str(exc).endswith(".")
            return
    assert len(pins) == 1 and pins[0].config == CFG  # what was accepted is still the valid pin


@given(json_values)
def test_any_json_file_is_refused_or_read(value):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "w.json"
        path.write_text(json.dumps({"app": "attention-sandbox", "schema": 2, "pins": value}, allow_nan=True))
        try:
            load_workspace(path)
        except ValueError as exc:
            assert "\n" not in str(exc)


def test_a_file_that_saves_reads_back(tmp_path):
    path = tmp_path / "w.json"
    save_workspace(path, [Pin("A", CFG, build_report(CFG, TIMING))])
    assert load_workspace(path)[0].report["timing"] == TIMING


def maps_b64(values: np.ndarray, cut: int = 0) -> str:
    packed = zlib.compress(np.ascontiguousarray(values, dtype=np.float32).tobytes())
    return base64.b64encode(packed[: len(packed) - cut] if cut else packed).decode()


def test_found_by_trying_to_break_it(tmp_path):
    """Each case a hostile tester found: every one is now a refusal with a sentence."""
    huge_layer = {"d_model": 64, "kind": "causal",
                  "layers": [{"spec": CFG.layer_spec().to_dict(), "count": 1},
                             {"spec": {"n_heads": 10**300, "n_kv_heads": 10**300, "head_dim": 10**300}, "count": 1}]}
    refused(tmp_path, workspace(architecture=huge_layer), "n_heads must be a whole number from 1 to 65,536")
    many = {"app": "attention-sandbox", "schema": 2,
            "pins": [{**good_pin(), "name": f"P{i}", "probs": {"dtype": "float32", "shape": [8, 4096, 4096],
                                                                "zlib_b64": ""}} for i in range(40)]}
    refused(tmp_path, many, "in all, more than a workspace may hold")
    refused(tmp_path, workspace(config={**CFG.to_dict(), "dtype": ["float32"]}), "dtype ['float32'] is not supported")
    model = {"key": "smollm2-135m", "name": "SmolLM2-135M", "layer": 0, "all_layers": False, "changed": "nothing",
             "probe": "text", "kind": "causal", "js_divergence_mean": None, "output_rel_error": None,
             "loss_before": 1.0, "loss_after": None, "embedding_cosine": None, "kv_cache_bytes_before": 0,
             "kv_cache_bytes_after": 0}
    refused(tmp_path, workspace(model=model), "must carry its architecture")
    nan = np.full((4, 2, 2), np.nan)
    refused(tmp_path, workspace(probs={"dtype": "float32", "shape": [4, 2, 2], "zlib_b64": maps_b64(nan)}),
            "not attention weights")
    refused(tmp_path, workspace(probs={"dtype": "float32", "shape": [4, 2, 2], "zlib_b64": maps_b64(np.full((4, 2, 2), 7))}),
            "not attention weights")
    refused(tmp_path, workspace(probs={"dtype": "float32", "shape": [4, 2, 2],
                                       "zlib_b64": maps_b64(np.full((4, 2, 2), 0.5), cut=4)}), "cut short")
    refused(tmp_path, json.dumps(workspace())[:-1] + ', "x": ' + "9" * 4400 + "}", "a number too long to read")
    with pytest.raises(ValueError, match="zero is not a regular file"):
        load_workspace(__import__("pathlib").Path("/dev/zero"))
    edited = workspace()
    edited["pins"][0]["report"]["params"]["q"] = float(edited["pins"][0]["report"]["params"]["q"])  # 4096.0
    path = tmp_path / "float.json"
    path.write_text(json.dumps(edited))
    (pin,) = load_workspace(path)
    assert type(pin.report["params"]["q"]) is int  # equal numbers, and the pin keeps the integer
