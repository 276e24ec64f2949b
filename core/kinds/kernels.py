"""The torch side of each layer kind, by the names of core/kinds/registry.py: how it is timed and what draws its
heatmaps. Imported only where torch is (the worker, the CLI, tests)."""

from __future__ import annotations

from core.arch.layer import LayerSpec
from core.kinds.dsa.kernels import DSAKernels
from core.kinds.dsv4.kernels import V4Kernels
from core.kinds.gated_deltanet.kernels import GDNKernels
from core.kinds.kda.kernels import KDAKernels
from core.kinds.kernel import LayerKernels
from core.kinds.lightning.kernels import LightningKernels
from core.kinds.mamba1.kernels import Mamba1Kernels
from core.kinds.mamba2.kernels import Mamba2Kernels
from core.kinds.mla.kernels import MLAKernels
from core.kinds.standard.kernels import StandardKernels

KERNELS: dict[str, LayerKernels] = {k.name: k for k in (StandardKernels(), MLAKernels(), DSAKernels(), V4Kernels(), GDNKernels(), Mamba2Kernels(), KDAKernels(), LightningKernels(), Mamba1Kernels())}


def kernels_of(spec: LayerSpec) -> LayerKernels:
    """The kernels that time and draw spec."""
    return KERNELS[spec.kind]
