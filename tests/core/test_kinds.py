"""The layer-kind registry: one list of kinds, the torch side under the same names, and every figure a caller asks
of a layer answered by the layer's own kind (the totals are sums of it, checked against a hand count here)."""

import pytest

from core.arch.config import AttentionConfig
from core.arch.presets import find_preset
from core.counts import kv_cache_bytes, layer_kv_bytes, model_counts, param_counts
from core.kinds.kernels import KERNELS, kernels_of
from core.kinds.registry import KINDS, kind_named, kind_of


def test_the_kinds_and_their_kernels_are_listed_under_the_same_names():
    assert set(KINDS) == set(KERNELS) == {"standard", "mla"}
    for name, kind in KINDS.items():
        assert kind.name == name and KERNELS[name].name == name and kind.title


def test_an_unknown_kind_is_refused_with_the_list():
    with pytest.raises(ValueError, match="choose one of standard, mla"):
        kind_named("mamba")


@pytest.mark.parametrize("preset", ["llama-3-8b", "deepseek-v3", "gemma-3-27b"])
def test_each_layer_is_counted_by_its_own_kind(preset):
    cfg = find_preset(preset).apply(AttentionConfig(seq_len=4096, batch_size=2, dtype="bfloat16"))
    arch = cfg.architecture()
    spec = cfg.layer_spec()
    kind = kind_of(spec)
    assert kind.name == spec.kind == ("mla" if cfg.mla is not None else "standard")
    assert kernels_of(spec) is KERNELS[spec.kind]
    # The model's totals are the sums of each layer's kind, layer by layer (no n_layers x one layer).
    params = sum(kind_of(s).params(cfg.d_model, s).total for s in arch.layers)
    kv = sum(kind_of(s).cache_bytes_per_token(s, cfg.kv_format) * min(cfg.seq_len, s.window or cfg.seq_len)
             * cfg.batch_size + kind_of(s).state_bytes(s, cfg.kv_format) * cfg.batch_size for s in arch.layers)
    counts = model_counts(arch, cfg)
    assert counts.params == params and counts.kv_bytes_total == kv == kv_cache_bytes(cfg).bytes_total
    assert sum(layer_kv_bytes(s, cfg) for s in arch.layers) == kv
    assert param_counts(cfg).total == kind.params(cfg.d_model, spec).total


def test_a_standard_layer_caches_k_and_v_of_every_kv_head_and_mla_its_latent():
    gqa = AttentionConfig(d_model=4096, n_heads=32, n_kv_heads=8, dtype="bfloat16").layer_spec()
    assert KINDS["standard"].cache_bytes_per_token(gqa, "bfloat16") == 2 * 8 * 128 * 2
    v3 = find_preset("deepseek-v3").apply(AttentionConfig(dtype="bfloat16")).layer_spec()
    assert KINDS["mla"].cache_bytes_per_token(v3, "bfloat16") == (512 + 64) * 2  # DeepSeek-V3: 1,152 B
    assert KINDS["mla"].label(v3) == "MLA (latent 512 + rope 64)"
    assert KINDS["standard"].label(gqa) == "GQA-8 (group 4)"
