"""Real-model work on the runner's worker: load, run a text, change heads, measure fidelity.
Results cross to the GUI as plain numpy arrays and dicts."""

from __future__ import annotations

import numpy as np

from core.kinds.standard.layer import MAX_DISPLAY_TOKENS
from core.models.choices import ModelShape
from core.models.forward_cache import ForwardCache
from core.models.head_roles import all_layer_scores, head_scores, induction_probe_ids
from core.models.inspect import HeadChange, inspect
from core.models.kv.latent import LatentBasis
from core.models.kv.methods import KVMethod
from core.models.source import LoadedModel
from sandbox.jobs.model_view import ModelView


def shape_of(m: LoadedModel) -> ModelShape:
    return ModelShape.of(m)


def change_for(shape: ModelShape, n_heads: int, n_kv_heads: int, all_layers: bool,
               kv: KVMethod | None = None) -> HeadChange:
    if kv is not None:  # a frontier point: the model's own heads, its KV changed in every layer
        return HeadChange(all_layers=True, kv=kv)
    pool = shape.pool_for(n_heads, n_kv_heads)
    return HeadChange(n_kv_heads=None if pool == shape.n_kv_heads else pool,
                      n_heads=None if n_heads == shape.n_heads else n_heads, all_layers=all_layers)


def compute_model_view(m: LoadedModel, key: str, text: str, layer: int, n_heads: int, n_kv_heads: int,
                       all_layers: bool, probe: str = "text", seed: int = 0,
                       cache: ForwardCache | None = None, kv: KVMethod | None = None,
                       bases: dict[int, LatentBasis] | None = None) -> tuple[list[str], ModelView]:
    """The view of one layer; with a cache, a new layer or change of the same tokens reuses their
    unchanged forward and its head scores."""
    shape = shape_of(m)
    ids, repeat = None, None
    if probe == "induction":
        ids, repeat = induction_probe_ids(m.tokenizer.vocab_size, seed=seed, bos=m.tokenizer.bos_token_id)
    change = change_for(shape, n_heads, n_kv_heads, all_layers, kv)
    result = inspect(m, text, layer, change, ids=ids, cache=cache, bases=bases)
    derived = cache.derived if cache is not None else {}
    roles_key = ("roles", tuple(repeat) if repeat else None)
    if roles_key not in derived:
        derived[roles_key] = all_layer_scores(result.before.attentions, result.ids, repeat)
    roles = derived[roles_key]
    shown = result.after.attentions[layer] if result.after is not None else result.before.attentions[layer]
    shown_roles = head_scores(shown, result.ids, repeat)
    n = min(len(result.tokens), MAX_DISPLAY_TOKENS)

    def cut(a: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(a[:, :n, :n])  # (H, n, n)

    overview = np.concatenate([cut(a) for a in result.before.attentions])  # (L * H, n, n)
    after = cut(result.after.attentions[layer]) if result.after is not None else None
    fidelity = {k: v for k, v in result.to_json().items() if k != "tokens"}
    changed_everywhere = None
    if change.all_layers and result.after is not None:
        changed_everywhere = np.concatenate([cut(a) for a in result.after.attentions])  # (L * H', n, n)
    kept = None
    if result.after is not None and result.after.kept and layer in result.after.kept:
        keep, scores = result.after.kept[layer]  # (K, T) each
        kept = (np.ascontiguousarray(keep[:, :n]), np.ascontiguousarray(scores[:, :n]))
    view = ModelView(key, layer, change.all_layers, overview, cut(result.before.attentions[layer]), after, fidelity,
                     len(result.tokens), roles, shown_roles, changed_everywhere, kept)
    return result.tokens[:n], view
