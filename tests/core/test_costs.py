"""The Costs value (core/costs.py) is what the panel shows: its figures are the report's for the same configuration
(the CLI, pins and exports read the report), each kind's rows appear for that kind only, in the panel's order."""

import pytest

from core.arch.config import AttentionConfig
from core.arch.presets import find_preset
from core.costs import costs, merged, row_titles
from core.counts import model_counts
from core.report import build_report


@pytest.mark.parametrize("preset", ["llama-3-8b", "gemma-3-27b", "deepseek-v3", "gpt-oss-20b"])
def test_every_figure_is_the_reports(preset):
    cfg = find_preset(preset).apply(AttentionConfig(seq_len=8192, batch_size=2, dtype="bfloat16"))
    c, report = costs(cfg), build_report(cfg)
    value = {r.key: r.value for r in c.rows}
    assert value["params"] == f"{report['params']['total']:,}"
    assert value["params_model"] == f"{model_counts(cfg.architecture(), cfg).params:,}"
    assert value["kv_token"] == f"{report['kv_cache']['bytes_per_token']:,} B"
    assert value["kv_total"] == f"{report['kv_cache']['bytes_total']:,} B"
    for key, part in (("flops", "total"), ("flops_proj", "projections"), ("flops_core", "attention")):
        assert value[key] == f"{report['flops'][part]:,}"
    projections = {k for k in report["params"] if k not in ("total", "total_mha", "qk_norm", "sinks")}
    shown = {r.key for r in c.rows if r.name}
    assert shown == projections  # W_q..W_o, or MLA's seven, named as the report names them
    assert ("mla_kv" in value) == (cfg.widths is not None) == ("mla" in report)
    assert ("kv_split" in value) == (cfg.window is not None)
    order = [k for k, _, _ in row_titles()]
    assert [r.key for r in c.rows] == [k for k in order if k in value]


def test_a_change_is_said_against_the_mha_layer_and_coloured_by_its_sign():
    gqa = costs(AttentionConfig(d_model=4096, n_heads=32, n_kv_heads=8, seq_len=1024))
    assert gqa.row("kv_total").vs == ("-75.0%", -1) and gqa.row("flops_core").vs == ("=", 0)
    assert gqa.baseline_name == "MHA" and gqa.row("params").vs[1] == -1


def test_each_kinds_projections_keep_their_order_in_one_list():
    assert merged([("q", "k", "v", "o"), ("q", "q_a", "q_a_norm", "q_b", "kv_a", "kv_a_norm", "kv_b", "o")]) == [
        "q", "k", "v", "q_a", "q_a_norm", "q_b", "kv_a", "kv_a_norm", "kv_b", "o"]
