"""The layer kinds' own widths, by kind name: how a spec or a file's key finds its widths class.

Kept apart from core/kinds/registry.py because the specs (core/arch) read it, and the registry's kinds read the
specs. Adding a kind with widths of its own adds one entry here (docs/architecture.md).
"""

from __future__ import annotations

from typing import Any

from core.kinds.dsa.spec import DSADims
from core.kinds.dsv4.spec import V4Dims
from core.kinds.gated_deltanet.spec import GDNWidths
from core.kinds.kda.spec import KDAWidths
from core.kinds.lightning.spec import LightningWidths
from core.kinds.mamba1.spec import Mamba1Widths
from core.kinds.mamba2.spec import Mamba2Widths
from core.kinds.mla.spec import MLADims
from core.kinds.widths import KindWidths

WIDTHS: dict[str, type[KindWidths]] = {widths.kind: widths for widths in (MLADims, DSADims, V4Dims, GDNWidths, Mamba2Widths, KDAWidths, LightningWidths, Mamba1Widths)}


def widths_from(name: str, data: Any) -> KindWidths | None:
    """A file's widths under the key name (None stays None: a standard layer)."""
    if data is None or isinstance(data, KindWidths):
        return data
    return WIDTHS[name].from_dict(data)


def split_widths(data: dict[str, Any]) -> tuple[dict[str, Any], KindWidths | None]:
    """A file's fields without the kind's key, and the widths found under it (a ValueError when two kinds' are)."""
    if not isinstance(data, dict):
        raise ValueError(f"a configuration must be an object of its fields, not {type(data).__name__}.")
    keys = [k for k in data if k in WIDTHS and data[k] is not None]
    if len(keys) > 1:
        raise ValueError(f"a layer is of one kind; this one has widths of {' and '.join(keys)}: keep one.")
    rest = {k: v for k, v in data.items() if k not in WIDTHS}
    return rest, widths_from(keys[0], data[keys[0]]) if keys else None
