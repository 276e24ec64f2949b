"""Any config.json in a model folder is read as a checked shape or refused with a sentence naming
the field, before anything is loaded; an accepted one has the size the formula gives."""

import json

from hypothesis import given
from hypothesis import strategies as st

from core.models.folder_config import check_fits, read_config
from core.models.source import check_folder

odd = st.one_of(st.none(), st.booleans(), st.text(max_size=5), st.floats(allow_nan=True, allow_infinity=True),
                st.integers(), st.integers(min_value=2**40, max_value=10**400), st.lists(st.integers(), max_size=2))
size = st.one_of(st.integers(min_value=1, max_value=4096), odd)
configs = st.fixed_dictionaries({
    "model_type": st.sampled_from(["llama", "mistral", "qwen2", "bert"]),
    "hidden_size": size, "num_hidden_layers": st.one_of(st.integers(min_value=-3, max_value=10**6), odd),
    "num_attention_heads": size, "num_key_value_heads": size, "intermediate_size": size, "vocab_size": size,
    "max_position_embeddings": size,
}, optional={"head_dim": size, "tie_word_embeddings": st.one_of(st.booleans(), odd), "type_vocab_size": size})


@given(configs)
def test_any_config_is_read_or_refused_with_a_sentence(cfg):
    try:
        shape = read_config(cfg, "folder")
    except ValueError as exc:
        msg = str(exc)
        assert msg.startswith("folder/config.json") and msg.endswith(".") and "\n" not in msg, msg
        return
    assert 1 <= shape.n_layers <= 4096 and shape.n_heads % shape.n_kv_heads == 0
    assert shape.params > 0 and shape.load_bytes >= 4 * shape.params
    try:
        check_fits(shape, "folder", free_bytes=8 * 2**30, fraction=0.8)
    except ValueError as exc:
        assert "needs about" in str(exc) and shape.load_bytes > 0.8 * 8 * 2**30


@given(st.one_of(st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=4), max_size=5),
                 st.lists(st.integers(), max_size=3), st.text(max_size=10), st.integers()))
def test_any_config_file_content_is_refused_with_a_sentence(tmp_path_factory, content):
    folder = tmp_path_factory.mktemp("cfg")
    (folder / "config.json").write_text(json.dumps(content))
    try:
        check_folder(folder)
    except ValueError as exc:
        assert "\n" not in str(exc)
