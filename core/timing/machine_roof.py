"""This machine's roof, measured: the best of a few large matmuls (peak FLOP/s in the timing dtype) and of a
few large copies (bandwidth: each copy reads and writes its bytes), and the device's memory. The planner's
"this machine" is these figures, so a layer timed here sits under a roof measured the same way."""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass

import torch

from core.device import device_name, resolve_device
from core.plan.gpus import GPU, this_machine
from core.timing.timer import synchronize

REPEATS = 5


@dataclass(frozen=True)
class MachineRoof:
    name: str
    device: str
    dtype: str  # the catalogue's name of the dtype measured: fp32 or bf16
    memory_bytes: int
    peak_flops: float
    bandwidth_bytes_s: float
    how: str

    def gpu(self) -> GPU:
        return this_machine(self.name, self.memory_bytes, self.peak_flops, self.bandwidth_bytes_s, self.dtype, self.how)

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def memory_bytes(device: torch.device) -> int:
    if device.type == "cuda":
        return int(torch.cuda.get_device_properties(device).total_memory)
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))  # the machine's RAM (an MPS GPU shares it)


def _best(fn, device: torch.device) -> float:
    fn()
    synchronize(device)
    best = float("inf")
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        fn()
        synchronize(device)
        best = min(best, time.perf_counter() - t0)
    return best


def measure_roof(choice: str = "auto") -> MachineRoof:
    device = resolve_device(choice)
    gpu = device.type != "cpu"
    dtype = torch.bfloat16 if gpu else torch.float32
    n = 8192 if gpu else 1024
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    matmul_s = _best(lambda: a @ b, device)
    size = (256 if gpu else 64) * 2**20  # bytes: beyond any cache
    src = torch.empty(size // 4, device=device, dtype=torch.float32)
    dst = torch.empty_like(src)
    copy_s = _best(lambda: dst.copy_(src), device)
    name = device_name(device)
    what = "bf16" if gpu else "fp32"
    how = (f"the best of {REPEATS} {n} x {n} {what} matmuls ({2 * n**3 / matmul_s / 1e12:.3g} TFLOP/s) and of "
           f"{REPEATS} copies of {size // 2**20} MiB ({2 * size / copy_s / 1e9:.3g} GB/s, read and write)"
           + ("" if gpu else f", on {torch.get_num_threads()} threads"))
    return MachineRoof(name, device.type, what, memory_bytes(device), 2 * n**3 / matmul_s, 2 * size / copy_s, how)
