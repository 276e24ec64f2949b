"""The GPU catalogue (resources/gpus.json): memory as the driver reports it (what engines plan against; the
datasheet's decimal GB beside it), bandwidth and dense peak throughput per compute dtype, each with its source;
a card of the user's own memory; and "this machine", measured (core/timing/machine_roof.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources

CATALOGUE = resources.files("resources").joinpath("gpus.json")  # read through the package, wherever it is installed
THIS_MACHINE = "this-machine"
MIN_GIB, MAX_GIB = 0.25, 2**20  # a card's memory a user may type: a quarter GiB to a PiB
# the compute dtype a weights dtype runs its matmuls in: quantised integer weights are dequantised to bf16
COMPUTE_DTYPE = {"fp32": "fp32", "bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "int8": "bf16", "int4": "bf16"}


@dataclass(frozen=True)
class GPU:
    id: str
    name: str
    memory_bytes: int  # as the driver reports it (nvidia-smi's MiB x 2^20): an "80 GB" H100 is 79.65 GiB
    bandwidth_bytes_s: float
    tflops: dict[str, float] = field(hash=False)  # compute dtype -> dense peak TFLOP/s
    source: str
    vendor: str = ""
    datasheet_gb: float | None = None  # the datasheet's figure, in GB of 10^9 bytes (None: measured or typed)
    memory_source: str = ""  # where memory_bytes comes from

    def with_memory_gib(self, gib: float) -> GPU:
        """This card with the memory a user typed, in GiB as nvidia-smi or the engine's log shows it."""
        if isinstance(gib, bool) or not isinstance(gib, (int, float)) or not MIN_GIB <= gib <= MAX_GIB:
            raise ValueError(f"a GPU's memory must be from {MIN_GIB:g} to {MAX_GIB:,} GiB, not {gib!r:.30}; type it "
                             "as nvidia-smi shows it (81559 MiB is 79.65 GiB).")
        return replace(self, memory_bytes=round(gib * 2**30), datasheet_gb=None,
                       memory_source=f"typed by the user: {gib:g} GiB")

    def peak_flops(self, dtype: str) -> tuple[float, str]:
        """Dense peak FLOP/s for `dtype` and the dtype it is the peak of: a GPU without fp8 tensor cores
        (A100) runs fp8 weights' matmuls in bf16, a CPU everything in fp32."""
        for d in (dtype, "bf16", "fp16", "fp32"):
            if d in self.tflops:
                return self.tflops[d] * 1e12, d
        raise ValueError(f"{self.name} has no throughput figure; give it one for {dtype}.")

    @property
    def ridge(self) -> float:
        """FLOP per byte where the bf16 roof meets the bandwidth slope (H200 about 206)."""
        return self.peak_flops("bf16")[0] / self.bandwidth_bytes_s

    def to_json(self) -> dict[str, object]:
        return {"id": self.id, "name": self.name, "vendor": self.vendor, "memory_bytes": self.memory_bytes,
                "datasheet_gb": self.datasheet_gb, "memory_source": self.memory_source,
                "bandwidth_bytes_s": self.bandwidth_bytes_s, "tflops": dict(self.tflops), "source": self.source}


@cache
def catalogue() -> tuple[GPU, ...]:
    data = json.loads(CATALOGUE.read_text(encoding="utf-8"))
    return tuple(GPU(g["id"], g["name"], g["memory_mib"] * 2**20, g["bandwidth_tb_s"] * 1e12, dict(g["tflops"]),
                     g["source"], g.get("vendor", ""), g["memory_gb"], g["memory_source"]) for g in data["gpus"])


def gpu_ids() -> list[str]:
    return [g.id for g in catalogue()]


def find_gpu(gpu_id: str) -> GPU:
    for g in catalogue():
        if g.id == gpu_id:
            return g
    shown = repr(gpu_id) if len(repr(gpu_id)) <= 30 else "that name"
    raise ValueError(f"GPU {shown} is not in the catalogue; choose one of {', '.join(gpu_ids())} "
                     f"(or {THIS_MACHINE}).")


def this_machine(name: str, memory_bytes: int, peak_flops: float, bandwidth_bytes_s: float, dtype: str,
                 how: str) -> GPU:
    """The device the app runs on, from its own measurements (how: what was measured, said as the source)."""
    if memory_bytes <= 0 or peak_flops <= 0 or bandwidth_bytes_s <= 0:
        raise ValueError("this machine's memory, throughput and bandwidth must be measured before it is planned for.")
    for value, what, lo, hi in ((memory_bytes, "memory", 2**20, 2**50), (peak_flops, "peak FLOP/s", 1e6, 1e18),
                                (bandwidth_bytes_s, "bandwidth", 1e6, 1e15)):
        if not lo <= value <= hi:  # a machine outside these is a damaged measurement, not a machine
            raise ValueError(f"this machine's {what} of {value:.3g} is not a measurement of a machine "
                             f"({lo:.3g} to {hi:.3g}); measure it again.")
    return GPU(THIS_MACHINE, name, int(memory_bytes), float(bandwidth_bytes_s), {dtype: peak_flops / 1e12},
               f"measured on this machine: {how}", "")
