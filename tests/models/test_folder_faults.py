"""Hostile model folders: each is refused with one sentence, before anything large is loaded, and
nothing from the folder runs; the app's memory estimate matches the real modules."""

import json
import pickle

import pytest
import torch

from core.models.folder_config import read_config
from core.models.source import load_model
from tests.models.conftest import copy_folder


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory, smollm2):
    """A small random Llama with SmolLM2's tokenizer, saved as any HF folder is."""
    from transformers import LlamaConfig, LlamaForCausalLM

    folder = tmp_path_factory.mktemp("tiny-llama")
    cfg = LlamaConfig(vocab_size=smollm2.tokenizer.vocab_size, hidden_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, intermediate_size=128, max_position_embeddings=256)
    LlamaForCausalLM(cfg).save_pretrained(folder)
    smollm2.tokenizer.save_pretrained(folder)
    return folder


def _edit_config(folder, **changes):
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(changes)
    (folder / "config.json").write_text(json.dumps(cfg))


@pytest.mark.parametrize("changes", [
    {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
     "intermediate_size": 14336, "num_hidden_layers": 32, "vocab_size": 128256, "tie_word_embeddings": False},
    {"model_type": "qwen2", "hidden_size": 896, "num_attention_heads": 14, "num_key_value_heads": 2,
     "intermediate_size": 4864, "num_hidden_layers": 3, "vocab_size": 1000, "tie_word_embeddings": True},
    {"model_type": "mistral", "hidden_size": 256, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 48,
     "intermediate_size": 512, "num_hidden_layers": 2, "vocab_size": 500, "tie_word_embeddings": False},
    {"model_type": "bert", "hidden_size": 384, "num_attention_heads": 12, "intermediate_size": 1536,
     "num_hidden_layers": 6, "vocab_size": 30522, "max_position_embeddings": 512, "type_vocab_size": 2},
])
def test_the_parameter_estimate_equals_the_real_modules_on_the_meta_device(changes):
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

    config = AutoConfig.for_model(**changes)
    cls = AutoModel if changes["model_type"] == "bert" else AutoModelForCausalLM
    with torch.device("meta"):
        model = cls.from_config(config)
    real = sum(p.numel() for p in model.parameters())  # tied weights are one parameter
    assert read_config(config.to_dict(), "x").params == real


def test_a_huge_config_is_refused_with_the_bytes_it_needs_before_loading(tiny_llama, tmp_path):
    huge = copy_folder(tiny_llama, tmp_path / "huge")
    _edit_config(huge, hidden_size=65536, num_attention_heads=64, num_key_value_heads=64, intermediate_size=65536)
    with pytest.raises(ValueError, match=r"huge needs about \d+ GiB to load \([\d,]+ parameters as float32 .* choose a smaller model") as exc:
        load_model(str(huge))
    assert "\n" not in str(exc.value)
    deep = copy_folder(tiny_llama, tmp_path / "deep")
    _edit_config(deep, num_hidden_layers=10**6)
    with pytest.raises(ValueError, match="num_hidden_layers must be from 1 to 4,096"):
        load_model(str(deep))


@pytest.mark.parametrize("changes, words", [
    ({"num_attention_heads": 0}, "num_attention_heads must be from 1"),
    ({"num_hidden_layers": -1}, "num_hidden_layers must be from 1"),
    ({"hidden_size": "64"}, "hidden_size must be a whole number"),
    ({"num_key_value_heads": 3}, "does not divide num_attention_heads"),
    ({"vocab_size": 1e400}, "vocab_size must be a whole number"),
    # each once passed the checks: a TypeError, a crash in the forward, or NaN everywhere and exit 0
    ({"model_type": ["llama"]}, "is a model of unknown type"),
    ({"model_type": {"a": 1}}, "is a model of unknown type"),
    ({"sliding_window": -5}, "sliding_window must be from 1"),
    ({"rope_theta": float("nan")}, "rope_theta must be a finite number"),
    ({"rms_norm_eps": -1}, "rms_norm_eps must be a finite number"),
    ({"use_sliding_window": "yes"}, "use_sliding_window must be true or false"),
    ({"rope_parameters": {"rope_theta": float("nan"), "rope_type": "default"}}, "rope_parameters.rope_theta must be"),
    ({"rope_parameters": {"rope_theta": 10000.0, "rope_type": "yarn", "factor": -3}}, "rope_parameters.factor must be"),
    ({"rope_parameters": {"rope_type": "zzz"}}, "rope_parameters.rope_type must be one of"),
    ({"rope_parameters": "string"}, "rope_parameters must be an object"),
])
def test_a_broken_config_is_named_as_the_config(tiny_llama, tmp_path, changes, words):
    folder = copy_folder(tiny_llama, tmp_path / "cfg")
    _edit_config(folder, **changes)
    with pytest.raises(ValueError, match=words) as exc:
        load_model(str(folder))
    assert "tokenizer" not in str(exc.value) and "config.json" in str(exc.value)


@pytest.mark.parametrize("content", [b"", b"garbage, not safetensors at all", b"\xff" * 8 + b"{}",
                                     b"\x10\x00\x00\x00\x00\x00\x00\x00{\"a\": [1, 2, 3]}"])
def test_damaged_safetensors_give_one_sentence(tiny_llama, tmp_path, content):
    folder = copy_folder(tiny_llama, tmp_path / "bad")
    (folder / "model.safetensors").write_bytes(content)
    with pytest.raises(ValueError, match="the weights in bad do not match its config.json or cannot be read") as exc:
        load_model(str(folder))
    assert "\n" not in str(exc.value)


def test_truncated_safetensors_give_one_sentence(tiny_llama, tmp_path):
    folder = copy_folder(tiny_llama, tmp_path / "short")
    data = (tiny_llama / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="cannot be read"):
        load_model(str(folder))


class Payload:  # pickled as a class instance: torch's weights_only unpickler refuses it
    def __reduce__(self):
        return (print, ("this must never run",))


def test_a_pickle_the_safe_loader_blocks_is_one_sentence_and_never_runs(tiny_llama, tmp_path, capsys):
    folder = copy_folder(tiny_llama, tmp_path / "evil", skip=("model.safetensors",))
    with open(folder / "pytorch_model.bin", "wb") as f:
        pickle.dump({"model.embed_tokens.weight": Payload()}, f, protocol=2)
    with pytest.raises(ValueError, match="cannot be read") as exc:
        load_model(str(folder), allow_pickle=True)
    assert "\n" not in str(exc.value) and "this must never run" not in capsys.readouterr().out


def test_weights_with_missing_or_no_tensors_are_refused_naming_them(tiny_llama, tmp_path, capfd):
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(tiny_llama / "model.safetensors"))
    empty = copy_folder(tiny_llama, tmp_path / "empty", skip=("model.safetensors",))
    save_file({}, str(empty / "model.safetensors"))
    with pytest.raises(ValueError, match="the file lacks lm_head.weight, model.embed_tokens.weight, .* and 18 more"):
        load_model(str(empty))
    some = copy_folder(tiny_llama, tmp_path / "some", skip=("model.safetensors",))
    save_file({k: v for k, v in tensors.items() if "layers.1." not in k}, str(some / "model.safetensors"))
    with pytest.raises(ValueError, match=r"lacks model\.layers\.1\..* and \d+ more"):
        load_model(str(some))
    extra = copy_folder(tiny_llama, tmp_path / "extra", skip=("model.safetensors",))
    save_file({**tensors, "not.a.weight": torch.zeros(2)}, str(extra / "model.safetensors"))
    capfd.readouterr()
    with pytest.raises(ValueError, match="has tensors the model does not have: not.a.weight"):
        load_model(str(extra))
    assert capfd.readouterr().err == ""  # transformers' multi-line load report is not printed first


def test_loading_prints_no_report_and_a_remote_code_tokenizer_is_refused_without_advice(tiny_llama, tmp_path, capfd):
    load_model(str(tiny_llama))
    out, err = capfd.readouterr()
    assert out == "" and err == ""  # no progress bars, no multi-line load report
    remote = copy_folder(tiny_llama, tmp_path / "remote-tok")
    tcfg = json.loads((remote / "tokenizer_config.json").read_text())
    (remote / "tokenizer_config.json").write_text(json.dumps({**tcfg, "auto_map": {"AutoTokenizer": ["evil.Tok", None]}}))
    with pytest.raises(ValueError, match="never runs code") as exc:
        load_model(str(remote))
    assert "trust_remote_code" not in str(exc.value)


@pytest.mark.parametrize("kind", ["fifo", "zero", "huge", "nested"])
@pytest.mark.parametrize("name", ["config.json", "tokenizer_config.json"])
def test_a_config_that_is_a_pipe_a_device_huge_or_nested_is_one_sentence_at_once(tiny_llama, tmp_path, kind, name):
    """/dev/zero ran to 3.2 GB in 4 s and a FIFO froze the window for good: every such file is refused unread."""
    import os

    folder = copy_folder(tiny_llama, tmp_path / "bad")
    target = folder / name
    target.unlink()
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "zero":
        target.symlink_to("/dev/zero")
    elif kind == "huge":
        with open(target, "wb") as f:
            f.truncate(6 * 2**30)  # 6 GB of holes: nothing on the disk, and never read
    else:
        target.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(ValueError) as exc:
        load_model(str(folder))
    text = str(exc.value)
    assert name in text and "\n" not in text
    assert any(w in text for w in ("not a regular file", "the app reads at most", "nested too deeply")), text
