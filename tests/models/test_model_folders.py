"""'Open a local Hugging Face folder': what loads, and every folder that must be refused."""

import json

import pytest

from core.models.inspect import inspect
from core.models.source import load_folder, load_model, models_unavailable_reason
from tests.models.conftest import copy_folder


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory, minilm):
    """A small randomly initialised BERT with MiniLM's tokenizer, saved like any HF folder."""
    from transformers import BertConfig, BertModel

    folder = tmp_path_factory.mktemp("tiny-bert")
    cfg = BertConfig(vocab_size=minilm.tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=64, max_position_embeddings=64)
    BertModel(cfg).save_pretrained(folder)
    minilm.tokenizer.save_pretrained(folder)
    return folder


def test_a_random_model_saved_to_a_folder_loads_and_runs(tiny_bert):
    m = load_folder(tiny_bert)
    assert (m.kind, m.n_layers, m.n_heads, m.d_model) == ("encoder", 2, 4, 32)
    r = inspect(m, "a small test", 1)
    assert r.before.attentions[1].shape[0] == 4


def test_refusals(tiny_bert, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="no config.json"):
        load_model(str(empty))
    with pytest.raises(ValueError, match="is neither a shipped model nor a folder; choose smollm2-135m or minilm-l6"):
        load_model(str(tmp_path / "missing"))
    broken = copy_folder(tiny_bert, tmp_path / "broken")
    (broken / "config.json").write_text("{ not json")
    with pytest.raises(ValueError, match="config.json is broken"):
        load_model(str(broken))
    remote = copy_folder(tiny_bert, tmp_path / "remote")
    cfg = json.loads((remote / "config.json").read_text())
    (remote / "config.json").write_text(json.dumps({**cfg, "auto_map": {"AutoModel": "evil.Model"}}))
    with pytest.raises(ValueError, match="never runs code"):
        load_model(str(remote))
    other = copy_folder(tiny_bert, tmp_path / "gpt2")
    (other / "config.json").write_text(json.dumps({**cfg, "model_type": "gpt2"}))
    with pytest.raises(ValueError, match="is a gpt2"):
        load_model(str(other))
    no_tok = copy_folder(tiny_bert, tmp_path / "notok", skip=("tokenizer.json", "vocab.txt", "tokenizer_config.json"))
    with pytest.raises(ValueError, match="no tokenizer"):
        load_model(str(no_tok))
    wrong = copy_folder(tiny_bert, tmp_path / "wrong")
    (wrong / "config.json").write_text(json.dumps({**cfg, "hidden_size": 64, "intermediate_size": 128}))
    with pytest.raises(ValueError, match="do not match its config.json"):
        load_model(str(wrong))
    no_weights = copy_folder(tiny_bert, tmp_path / "noweights", skip=("model.safetensors",))
    with pytest.raises(ValueError, match="no weights"):
        load_model(str(no_weights))


def test_pickle_only_folder_is_refused_unless_confirmed(tiny_bert, tmp_path):
    import torch
    from safetensors.torch import load_file

    pk = copy_folder(tiny_bert, tmp_path / "pickle", skip=("model.safetensors",))
    torch.save(load_file(str(tiny_bert / "model.safetensors")), pk / "pytorch_model.bin")
    with pytest.raises(ValueError, match="only pickle weights"):
        load_model(str(pk))
    m = load_model(str(pk), allow_pickle=True)
    assert m.n_heads == 4


def test_without_the_extra_the_reason_says_what_to_install(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "transformers" else real(name, *a))
    reason = models_unavailable_reason()
    assert "[models] extra" in reason and "transformers" in reason
    with pytest.raises(ValueError, match="models\\] extra"):
        load_model("minilm-l6")
