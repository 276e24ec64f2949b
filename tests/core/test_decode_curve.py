"""A random-weight layer's decode curve: the step timed at each context, a local layer reading at most
its window, and the least-squares slope and bandwidth from the points."""

import math

import pytest
import torch

from core.arch.config import AttentionConfig
from core.counts import layer_kv_bytes_per_token
from core.models.decode_run import CurvePoint, DecodeCurve, curve_lengths, decode_curve


def test_a_local_layers_step_reads_at_most_its_window():
    cfg = AttentionConfig(d_model=64, n_heads=4, n_kv_heads=2, seq_len=512, causal=True, window=100,
                          layer_pattern="local")
    spec = cfg.layer_spec(0)
    curve = decode_curve(cfg, spec, [16, 80, 300, 512], torch.device("cpu"), budget_s=0.005)
    assert [p.cached for p in curve.points] == [16, 80, 100, 100]
    assert [p.kv_bytes for p in curve.points] == [layer_kv_bytes_per_token(spec, "float32") * n for n in (16, 80, 100, 100)]
    assert all(p.p25_ms <= p.median_ms <= p.p75_ms for p in curve.points)


def test_the_fit_recovers_a_known_slope_and_its_bandwidth():
    per_token = 2 * 8 * 128 * 2  # bytes a token: K and V of 8 heads of 128 in bf16
    curve = DecodeCurve(points=[CurvePoint(n, n, 0.05 + 0.0004 * n, 0, 0, per_token * n) for n in (16, 1000, 4000, 8000)])
    curve.fit()
    assert curve.slope_ms_per_1k == pytest.approx(0.4)
    assert curve.intercept_ms == pytest.approx(0.05)
    assert curve.bandwidth_gbs == pytest.approx(per_token / 0.0004e-3 / 1e9)  # bytes a token / seconds a token
    flat = DecodeCurve(points=[CurvePoint(100, c, 1.0, 1, 1, 1) for c in (100, 200)])
    flat.fit()  # one length read: nothing to fit
    assert math.isnan(flat.slope_ms_per_1k) and flat.to_json()["slope_ms_per_1k_tokens"] is None


def test_curve_lengths_span_the_context():
    lengths = curve_lengths(8192, 12)
    assert lengths[0] == 16 and lengths[-1] == 8192 and len(lengths) == 12 and lengths == sorted(lengths)


def test_no_bandwidth_is_claimed_from_noise_or_from_a_few_dozen_tokens():
    noisy = DecodeCurve(points=[CurvePoint(n, n, ms, 0, 0, 8 * n) for n, ms in
                                ((16, 1.0), (1000, 2.5), (2000, 0.9), (3000, 2.2), (4000, 1.6))])
    noisy.fit()
    assert noisy.slope_ms_per_1k > 0 and noisy.r2 < 0.8 and math.isnan(noisy.bandwidth_gbs)
    short = DecodeCurve(points=[CurvePoint(n, n, 0.1 + 0.01 * n, 0, 0, 8 * n) for n in (16, 32, 48)])
    short.fit()  # a perfect line over 32 tokens read: still no bandwidth
    assert short.r2 == pytest.approx(1.0) and math.isnan(short.bandwidth_gbs)
