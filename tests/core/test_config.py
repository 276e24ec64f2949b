import pytest

from core.arch.config import AttentionConfig, divisors, nearest, valid_n_heads, valid_n_kv_heads


def test_defaults_are_mha_and_derive_head_dim():
    cfg = AttentionConfig(d_model=4096, n_heads=32)
    assert cfg.n_kv_heads == 32 and cfg.mode == "MHA" and cfg.head_dim == 128 and cfg.group_size == 1


@pytest.mark.parametrize(
    "kv, mode, label", [(32, "MHA", "MHA"), (8, "GQA", "GQA-8 (group 4)"), (1, "MQA", "MQA")]
)
def test_mode(kv, mode, label):
    cfg = AttentionConfig(d_model=4096, n_heads=32, n_kv_heads=kv)
    assert (cfg.mode, cfg.mode_label) == (mode, label)


@pytest.mark.parametrize(
    "fields, words",
    [
        ({"d_model": 768, "n_heads": 7}, "does not divide d_model"),
        ({"d_model": 768, "n_heads": 12, "n_kv_heads": 5}, "does not divide n_heads"),
        ({"d_model": 0}, "at least 1"),
        ({"seq_len": -3}, "at least 1"),
        ({"batch_size": 0}, "at least 1"),
        ({"n_layers": 0}, "at least 1"),
        ({"dtype": "int8"}, "not supported"),
        ({"phase": "train"}, "prefill or decode"),
        ({"d_model": 7.5}, "whole number"),
        ({"n_heads": True}, "whole number"),
        ({"causal": "yes"}, "true or false"),
    ],
)
def test_invalid_configs_raise_a_sentence(fields, words):
    with pytest.raises(ValueError, match=words) as err:
        AttentionConfig(**fields)
    assert str(err.value).endswith(".")


def test_error_lists_valid_choices():
    with pytest.raises(ValueError, match="choose n_kv_heads from 1, 2, 3, 4, 6, 12"):
        AttentionConfig(d_model=768, n_heads=12, n_kv_heads=5)


def test_valid_lists_are_exactly_the_divisors():
    assert divisors(12) == [1, 2, 3, 4, 6, 12]
    assert valid_n_heads(768) == [d for d in range(1, 769) if 768 % d == 0]
    assert valid_n_kv_heads(32) == [1, 2, 4, 8, 16, 32]
    for h in valid_n_heads(576):
        AttentionConfig(d_model=576, n_heads=h)


def test_nearest_snaps_and_prefers_larger_on_tie():
    assert nearest(5, [1, 2, 4, 8]) == 4
    assert nearest(6, [4, 8]) == 8
    assert nearest(100, [1, 3]) == 3


def test_head_dim_warnings_follow_the_rule_of_thumb():
    assert AttentionConfig(d_model=768, n_heads=12).head_dim_warnings() == []
    narrow = AttentionConfig(d_model=768, n_heads=48).head_dim_warnings()  # h = 16
    assert any("below 32" in n for n in narrow)
    wide = AttentionConfig(d_model=1024, n_heads=2).head_dim_warnings()  # h = 512
    assert any("above 256" in n for n in wide)
    odd = AttentionConfig(d_model=576, n_heads=16).head_dim_warnings()  # h = 36
    assert any("multiple of 8" in n for n in odd)


def test_round_trip_through_dict_and_unknown_field():
    cfg = AttentionConfig(d_model=512, n_heads=8, n_kv_heads=2, causal=True)
    assert AttentionConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="unknown configuration field"):
        AttentionConfig.from_dict({"d_model": 8, "heads": 2})
