"""A pin's frontier point read back from a workspace: its label is the one its settings make, it changes
every layer, and anything else is refused in a sentence."""

import pytest

from core.report import check_model_context, model_context

FIDELITY = {"layer": 0, "all_layers": True, "js_divergence_mean": 0.01, "output_rel_error": 0.02, "loss_before": 3.0,
            "loss_after": 3.1, "embedding_cosine": None, "kv_cache_bytes_before": 1000, "kv_cache_bytes_after": 281}
POINT = {"method": "quant", "setting": "q4_0", "sinks": 0, "label": "quantised KV, q4_0"}


def context(**point):
    return model_context("smollm2-135m", "SmolLM2-135M", FIDELITY, "every layer's KV: x", "text", "causal",
                         {**POINT, **point})


def test_a_point_reads_back_as_it_was_written():
    assert check_model_context(context(), "model")["kv_point"] == POINT
    sinks = {"method": "window_sinks", "setting": 60, "sinks": 4, "label": "window + 4 sinks, W=60"}
    assert check_model_context(context(**sinks), "model")["kv_point"] == sinks
    evict = {"method": "evict", "setting": "snapkv@0.75", "sinks": 0, "label": "SnapKV evicting 0.75 of the text"}
    assert check_model_context(context(**evict), "model")["kv_point"] == evict


@pytest.mark.parametrize("point, words", [
    ({"method": "window_sinks", "setting": 8, "sinks": 4096, "label": "quantised KV, q4_0"},
     "label must be 'window \\+ 4096 sinks, W=8'"),
    ({"method": "window", "setting": 4, "sinks": 100, "label": "sliding window, W=4"}, "only window_sinks keeps sink"),
    ({"sinks": 7}, "only window_sinks keeps sink"),
    ({"label": "<h1>BIG</h1>"}, "label must be 'quantised KV, q4_0'"),
    ({"label": ""}, "label must be"),
    ({"method": "heads", "setting": 1, "label": "fewer KV heads (pooled), K=1"}, "method must be one of"),
    ({"method": "evict", "setting": "pyramid@0.5", "label": "x"}, "eviction method 'pyramid' is not known"),
    ({"method": "evict", "setting": "snapkv@1", "label": "x"}, "an eviction is a press and a ratio"),
    ({"method": "evict", "setting": 5, "label": "x"}, "setting must be text"),
    ({"method": "evict", "setting": "snapkv@5e-1", "label": "x"}, "written as a plain number"),
    ({"method": "evict", "setting": "snapkv@ 0.5", "label": "x"}, "written as a plain number"),
    ({"method": "evict", "setting": "snapkv@0.99999", "label": "x"}, "at most 0.9999"),
    ({"method": "evict", "setting": "tova@0.5", "label": "TOVA evicting 0.7 of the text"},
     "label must be 'TOVA evicting 0.5 of the text'"),
])
def test_a_point_whose_label_or_knob_is_wrong_is_refused(point, words):
    with pytest.raises(ValueError, match=words):
        check_model_context(context(**point), "model")


def test_a_point_on_one_layer_only_is_refused():
    d = context()
    d["all_layers"] = False
    with pytest.raises(ValueError, match="all_layers must be true"):
        check_model_context(d, "model")
