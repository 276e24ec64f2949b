"""Device choice, dtypes and the memory guard that refuses a run before it allocates."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from core.format import format_bytes

TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
DEVICE_CHOICES = ("auto", "cpu", "cuda", "mps")
# A run may take at most this share of the device's free memory.
MEMORY_GUARD_FRACTION = 0.8


def mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def resolve_device(choice: str = "auto") -> torch.device:
    """auto picks cuda, then mps, then cpu; an explicit choice must be available."""
    if choice not in DEVICE_CHOICES:
        raise ValueError(f"device {choice!r} is not known; choose one of {', '.join(DEVICE_CHOICES)}.")
    if choice == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if mps_available():
            return torch.device("mps")
        return torch.device("cpu")
    if choice == "cuda" and not torch.cuda.is_available():
        raise ValueError("device cuda was asked for, but torch sees no CUDA GPU; choose cpu or auto.")
    if choice == "mps" and not mps_available():
        raise ValueError("device mps was asked for, but this machine has no MPS; choose cpu or auto.")
    return torch.device(choice)


def default_dtype(device: torch.device) -> str:
    """bfloat16 on CUDA (what attention kernels are built for), float32 elsewhere."""
    return "bfloat16" if device.type == "cuda" else "float32"


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if device.type == "mps":
        return "Apple MPS"
    return f"CPU ({torch.get_num_threads()} threads)"


def free_memory_bytes(device: torch.device) -> int:
    """What the device has free now: CUDA's own count, else the host's available memory."""
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free)
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


@dataclass(frozen=True)
class MemoryCheck:
    needed_bytes: int
    free_bytes: int
    limit_bytes: int

    @property
    def ok(self) -> bool:
        return self.needed_bytes <= self.limit_bytes


def check_bytes(needed_bytes: int, device: torch.device, free_bytes: int | None = None) -> MemoryCheck:
    """needed_bytes against the device's free memory (or free_bytes) under the guard's fraction."""
    free = free_memory_bytes(device) if free_bytes is None else free_bytes
    return MemoryCheck(needed_bytes, free, int(free * MEMORY_GUARD_FRACTION))


def guard_bytes(needed_bytes: int, device: torch.device, free_bytes: int | None = None, hint: str = "") -> MemoryCheck:
    """Raise ValueError, before anything is allocated, when a run of needed_bytes would not fit; hint names what else
    to lower besides seq_len, batch_size and d_model."""
    check = check_bytes(needed_bytes, device, free_bytes)
    if not check.ok:
        raise ValueError(
            f"this run needs about {format_bytes(check.needed_bytes)} on {device.type}, but the "
            f"device has {format_bytes(check.free_bytes)} free (the guard allows "
            f"{MEMORY_GUARD_FRACTION:.0%}); lower seq_len, batch_size or d_model"
            + (f", or {hint}." if hint else ".")
        )
    return check
