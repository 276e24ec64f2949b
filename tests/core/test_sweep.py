import math

import pytest

from core.arch.config import AttentionConfig
from core.counts import flop_counts, kv_cache_bytes, param_counts
from core.study.lessons import LESSONS, caption_heads, caption_kv, caption_seq, find_lesson
from core.study.sweep import (
    MAX_POINTS,
    SweepResult,
    fitted_exponent,
    flatten,
    parse_values,
    plan_sweep,
    run_point,
)


@pytest.mark.parametrize("text, values", [
    ("1,2,4,8", [1, 2, 4, 8]),
    (" 32, 16 ,8;4 ", [32, 16, 8, 4]),
    ("128..16384 log", [128, 256, 512, 1024, 2048, 4096, 8192, 16384]),
    ("128..16384 log 3", [128, 1448, 16384]),
    ("1..64 step 16", [1, 17, 33, 49]),
    ("3..6", [3, 4, 5, 6]),
    ("4,4,2", [4, 2]),
])
def test_parse_values(text, values):
    assert parse_values(text) == values


@pytest.mark.parametrize("text, words", [
    ("", "at least one value"),
    ("1,x", "not a whole number"),
    ("1..100", "at most 64"),
    (",".join(map(str, range(1, MAX_POINTS + 2))), "more than a sweep takes"),
    ("10..2", "not run backwards"),
])
def test_parse_values_refuses_with_a_sentence(text, words):
    with pytest.raises(ValueError, match=words):
        parse_values(text)


def test_invalid_values_are_skipped_with_their_reason():
    base = AttentionConfig(d_model=4096, n_heads=32, n_kv_heads=8)
    points = plan_sweep(base, "n_kv_heads", [32, 5, 8, 1])
    assert [p.config is not None for p in points] == [True, False, True, True]
    assert "does not divide n_heads" in points[1].reason
    rows = [run_point(p, None) for p in points]
    assert [r.status for r in rows] == ["ok", "skipped", "ok", "ok"]


def test_sweep_points_carry_the_engine_numbers():
    base = AttentionConfig(d_model=768, n_heads=12, seq_len=256, n_layers=4)
    for p in plan_sweep(base, "seq_len", [1, 100, 4096]):
        row = run_point(p, None)
        cfg = base.with_(seq_len=p.value)
        assert row.report["params"] == param_counts(cfg).to_dict()
        assert row.report["flops"] == flop_counts(cfg).to_dict()
        assert row.report["kv_cache"] == kv_cache_bytes(cfg).to_dict()


def test_n_heads_sweep_of_mha_stays_mha_and_gqa_keeps_kv():
    mha = plan_sweep(AttentionConfig(d_model=768, n_heads=12), "n_heads", [1, 64])
    assert all(p.config.mode == "MHA" for p in mha)
    gqa = plan_sweep(AttentionConfig(d_model=768, n_heads=12, n_kv_heads=4), "n_heads", [2, 8])
    assert gqa[0].config is None and gqa[1].config.kv_heads == 4


def test_memory_guard_refusal_is_a_refused_row():
    def guard(cfg):
        raise ValueError("this run needs about 9 GiB on cpu, but the device has 1 GiB free")

    row = run_point(plan_sweep(AttentionConfig(), "seq_len", [8])[0], guard)
    assert row.status == "refused" and "needs about" in row.reason


def test_unknown_knob():
    with pytest.raises(ValueError, match="cannot sweep"):
        plan_sweep(AttentionConfig(), "dtype", [1])


def test_flatten_and_exponent():
    assert flatten({"config": {"a": 1}, "timing": None}) == {"config.a": 1}
    assert fitted_exponent([1, 2, 4, 8], [3, 12, 48, 192]) == pytest.approx(2.0)
    assert math.isnan(fitted_exponent([1], [1]))


def _run(lesson, timing=None):
    base = lesson.base_config(AttentionConfig())
    result = SweepResult(lesson.knob)
    result.rows = [run_point(p, timing) for p in plan_sweep(base, lesson.knob, lesson.values)]
    return result


def test_lesson_captions_state_the_numbers():
    heads = _run(find_lesson("heads"))
    assert all(r.status == "ok" for r in heads.rows) and len(heads.rows) == 12
    text = caption_heads(heads)
    assert "n_heads 1→64 at d_model 768" in text and "2.36M at every point (spread 0.0%)" in text
    kv = _run(find_lesson("kv"))
    text = caption_kv(kv)
    assert "n_kv_heads 32→1" in text and "(x0.0312, exactly linear in n_kv_heads)" in text
    seq = _run(find_lesson("seq"))
    text = caption_seq(seq)
    assert "core FLOPs x16,384 (grows as T^2.00)" in text and "projections x128 (T^1.00)" in text


def test_kv_caption_reads_measured_times():
    fake = {"median_ms": 1.0, "p25_ms": 1.0, "p75_ms": 1.0, "tflops": 1.0, "core_median_ms": 1.0,
            "core_tflops": 1.0, "prefill_ms": 10.0, "decode_ms": 2.0}
    result = _run(find_lesson("kv"), timing=lambda cfg: {**fake, "decode_ms": cfg.kv_heads / 16})
    assert "decode 2 ms→0.0625 ms (-97%)" in caption_kv(result)
    # the seeds' three, windows, MLA's latent vs grouped
    assert {lesson.key for lesson in LESSONS} == {"heads", "kv", "seq", "windows", "latent"}
