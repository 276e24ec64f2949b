"""The commands' --json is JSON any strict parser takes: a figure that is not finite is null, never bare NaN."""

import json
import math

from core.files import finite_json


def test_nan_and_infinities_are_null_at_any_depth_and_the_rest_unchanged():
    value = {"loss": math.nan, "rows": [1.5, math.inf, {"x": -math.inf, "n": 3, "s": "NaN"}], "t": (2.0, math.nan)}
    text = finite_json.dumps(value)
    assert "NaN" not in text.replace('"NaN"', "") and "Infinity" not in text
    assert json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c))) == {
        "loss": None, "rows": [1.5, None, {"x": None, "n": 3, "s": "NaN"}], "t": [2.0, None]}
