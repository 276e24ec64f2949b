"""The frontier's sentence: the least costly method under the budget, from the points' own numbers."""

import torch

from core.models.frontier.run import row_js
from core.models.frontier.summary import best_under, budget_sentence
from core.models.surgery import js_divergence


def _p(method, fraction, cost, label):
    return {"method": method, "kv_fraction": fraction, "cost": cost, "setting_label": label}


POINTS = [_p("baseline", 1.0, 0.0, ""), _p("heads", 1 / 3, 6.2, "K=1"), _p("latent_pca", 1 / 3, 1.08, "r=128"),
          _p("latent_pca", 1 / 2, 0.4, "r=192"), _p("window_sinks", 0.26, 0.23, "W=256"),
          _p("window_sinks", 0.51, 0.01, "W=512"), _p("quant", 0.281, 0.093, "q4_0"), _p("quant", 0.531, 0.001, "q8_0")]


def test_the_least_costly_point_inside_the_budget_wins_and_the_rest_follow_in_order():
    best = best_under(POINTS, 1 / 3)
    assert {m: p["setting_label"] for m, p in best.items()} == {
        "heads": "K=1", "latent_pca": "r=128", "window_sinks": "W=256", "quant": "q4_0"}
    text = budget_sentence(POINTS, 1 / 3, "causal", "SmolLM2-135M")
    assert text.startswith("At 1/3 of SmolLM2-135M's KV cache, quantised loses least: +0.093 loss "
                           "(q4_0, 0.281 of the cache).")
    assert text.index("window + sinks +0.230") < text.index("latent (PCA) +1.080") < text.index("pooling +6.200")
    # q8_0 is 34/32 bytes a value: 0.531 of a 16-bit cache is over a half, and so is 0.51
    half = budget_sentence(POINTS, 1 / 2, "causal", "m")
    assert half.startswith("At 1/2 of m's KV cache, quantised loses least: +0.093 loss (q4_0, 0.281 of the cache).")
    assert "q8_0" not in half and "W=512" not in half
    assert "No measured point fits" in budget_sentence(POINTS, 1 / 100, "causal", "m")


def test_row_js_is_the_float64_divergence_and_never_infinite():
    p = torch.rand(4, 50).softmax(-1)
    q = torch.rand(4, 50).softmax(-1)
    assert torch.allclose(row_js(p, q).double(), js_divergence(p, q), atol=1e-6)
    tiny = torch.zeros(1, 3)
    tiny[0, 0], tiny[0, 1] = 1.0, 1e-45  # a subnormal weight against an exact zero
    other = torch.tensor([[1.0, 0.0, 0.0]])
    assert torch.isfinite(row_js(tiny, other)).all() and float(row_js(other, other)) == 0.0
