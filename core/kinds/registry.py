"""The layer kinds, by name: the only place that lists them. Everything that asks something of a layer asks
`kind_of(spec)`; adding a kind is adding its package and one line here (docs/architecture.md)."""

from __future__ import annotations

from core.arch.layer import LayerSpec
from core.kinds.dsa.kind import DSA
from core.kinds.dsv4.kind import DSV4
from core.kinds.gated_deltanet.kind import GATED_DELTANET
from core.kinds.kda.kind import KDA
from core.kinds.kind import LayerKind
from core.kinds.lightning.kind import LIGHTNING
from core.kinds.mamba1.kind import MAMBA1
from core.kinds.mamba2.kind import MAMBA2
from core.kinds.mla.kind import MLA
from core.kinds.standard.kind import STANDARD

KINDS: dict[str, LayerKind] = {kind.name: kind for kind in (STANDARD, MLA, DSA, DSV4, GATED_DELTANET, MAMBA2, KDA, LIGHTNING, MAMBA1)}


# The kinds a configuration's own layer may be switched to (the attention type control, --attention): a recurrent
# mixer joins a model through a hybrid stack's preset (core/arch/stack.py), beside attention layers.
OWN_LAYER_KINDS: dict[str, LayerKind] = {name: kind for name, kind in KINDS.items() if not kind.has_state}


def kind_of(spec: LayerSpec) -> LayerKind:
    """The kind that counts, caches, runs, times and draws spec."""
    return KINDS[spec.kind]


def kind_named(name: str) -> LayerKind:
    """The kind of that name (a report's config.attention), or a ValueError that lists the kinds."""
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"layer kind {name!r:.30} is not known; choose one of {', '.join(KINDS)}.") from None
