"""The layer-kind registry: one list of kinds, the torch side under the same names, and every figure a caller asks
of a layer answered by the layer's own kind (the totals are sums of it, checked against a hand count here)."""

import pytest

from core.arch.config import AttentionConfig
from core.arch.presets import find_preset
from core.counts import kv_cache_bytes, layer_kv_bytes, model_counts, param_counts
from core.kinds.kernels import KERNELS, kernels_of
from core.kinds.registry import KINDS, kind_named, kind_of


def test_the_kinds_and_their_kernels_are_listed_under_the_same_names():
    assert set(KINDS) == set(KERNELS) == {"standard", "mla", "dsa", "dsv4", "gated_deltanet", "mamba2", "kda",
                                                 "lightning", "mamba1"}
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
    assert kind.name == spec.kind == ("mla" if cfg.widths is not None else "standard")
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


def test_every_kind_with_widths_is_found_by_its_files_key():
    """A spec's widths are saved under the kind's name, and found again by it: the two lists agree."""
    from core.kinds.widths_types import WIDTHS

    assert {name: kind.widths_type for name, kind in KINDS.items() if kind.widths_type is not None} == WIDTHS
    cfg = find_preset("deepseek-v3").apply(AttentionConfig(seq_len=64))
    saved = cfg.to_dict()
    assert "widths" not in saved and saved["mla"]["kv_lora_rank"] == 512  # the key files have always used
    assert AttentionConfig.from_dict(saved) == cfg
    spec = cfg.layer_spec()
    assert type(spec).from_dict(spec.to_dict()) == spec and spec.to_dict()["mla"] == cfg.widths.to_dict()
    with pytest.raises(ValueError, match="unknown configuration field"):
        AttentionConfig.from_dict({**saved, "widths": None})


KIND_LISTS = {"core/kinds/registry.py", "core/kinds/kernels.py", "core/kinds/widths_types.py"}


def names_in_code(path):
    """Every identifier, attribute, import and string constant of a module, docstrings and comments left out."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            yield node.lineno, node.id
        elif isinstance(node, ast.Attribute):
            yield node.lineno, node.attr
        elif isinstance(node, ast.ImportFrom):
            yield node.lineno, node.module or ""
        elif isinstance(node, ast.alias):
            yield node.lineno, node.name
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs and (
                not any(c.isspace() for c in node.value)):  # a key or a name, not a sentence of prose
            yield node.lineno, node.value


def test_no_code_outside_a_kinds_package_names_the_kind():
    """The registry is the only way in: outside core/kinds/<kind>/ (and the lists of kinds, and the presets' data),
    no identifier, import or key names a kind (comments, docstrings and sentences may use one as an example); a kind
    that builds on another's package (DSA on MLA's) names it in builds_on and may import it."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    found = []
    for name in (k for k in KINDS if k != "standard"):
        for path in sorted(p for folder in ("core", "sandbox", "widgets") for p in (root / folder).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel.startswith(f"core/kinds/{name}/") or rel in KIND_LISTS or rel == "core/arch/presets.py":
                continue
            if any(rel.startswith(f"core/kinds/{other}/") for other, kind in KINDS.items() if name in kind.builds_on):
                continue
            found += [f"{rel}:{line}: {text[:60]!r}" for line, text in names_in_code(path)
                      if re.search(rf"(?<![a-z]){name}(?![a-z])", text.lower())]
    assert not found, "\n".join(found)
