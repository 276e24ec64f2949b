"""Which preset a configuration is: the fast path passes over presets without applying them, and must name the
same preset as applying every one would."""

import itertools

from core.arch.config import AttentionConfig
from core.arch.presets import load_presets
from widgets.controls.preset_match import PresetMatch


def by_applying_all(presets, cfg) -> int:
    return next((i for i, p in enumerate(presets, 1) if p.apply(cfg) == cfg), 0)


def test_the_match_is_the_one_applying_every_preset_finds():
    presets = list(load_presets())
    bases = [AttentionConfig(), AttentionConfig(d_model=768, n_heads=12, n_kv_heads=4, seq_len=1024, causal=True),
             AttentionConfig(d_model=4096, n_heads=32, n_kv_heads=8, seq_len=512, batch_size=3, dtype="bfloat16")]
    configs = [p.apply(b) for p, b in itertools.product(presets, bases)]
    configs += [c.with_(n_layers=c.n_layers + 1) for c in configs[:10]]  # a preset's shape, one layer more: Custom
    configs += bases
    matcher = PresetMatch(presets)
    found = [matcher.index(c) for c in configs]
    assert found == [by_applying_all(presets, c) for c in configs]
    assert sum(f > 0 for f in found) >= len(presets) * len(bases)  # every preset is found on its own shape
    assert 0 in found
