"""Big arrays cross from the worker to the window in shared memory, not through the pipe: a 64-head mosaic
(16 MiB) costs the window's process 30-34 ms of CPU pickled over the socket, 13-15 ms copied out of shared
memory (bench/transfer.py). Small arrays stay in the pickle.

The worker owns each block: it creates it, sends its name, and unlinks it when the window says it has its
copy ("release"); a block left behind by a window that died is unlinked by the worker's resource tracker
when the worker leaves.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from multiprocessing import resource_tracker
from multiprocessing.shared_memory import SharedMemory
from typing import Any

import numpy as np

MIN_SHARED_BYTES = 1 << 20  # smaller arrays ride in the pickle: a block costs more than copying them


@dataclass(frozen=True)
class SharedArray:
    name: str
    shape: tuple[int, ...]
    dtype: str


def _share(arr: np.ndarray, blocks: dict[str, SharedMemory]) -> SharedArray:
    block = SharedMemory(create=True, size=max(1, arr.nbytes))
    np.ndarray(arr.shape, arr.dtype, buffer=block.buf)[...] = arr
    blocks[block.name] = block
    return SharedArray(block.name, arr.shape, arr.dtype.str)


def _copy_out(ref: SharedArray) -> np.ndarray:
    block = SharedMemory(name=ref.name)
    try:
        resource_tracker.unregister(block._name, "shared_memory")  # the worker owns it, not this process
        return np.array(np.ndarray(ref.shape, np.dtype(ref.dtype), buffer=block.buf))  # the window's own copy
    finally:
        block.close()


def _map_fields(obj: Any, fn: Any) -> Any:
    """obj with fn applied to its array fields, one dataclass level down too (a result's ModelView)."""
    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        return obj
    changes = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        new = fn(value) if isinstance(value, np.ndarray | SharedArray) else (
            _map_fields(value, fn) if dataclasses.is_dataclass(value) and not isinstance(value, type) else value)
        if new is not value:
            changes[f.name] = new
    return dataclasses.replace(obj, **changes) if changes else obj


def to_shared(obj: Any, blocks: dict[str, SharedMemory]) -> Any:
    """In the worker: big array fields moved into new blocks (kept in `blocks` until released)."""
    return _map_fields(obj, lambda a: _share(a, blocks) if isinstance(a, np.ndarray) and a.nbytes >= MIN_SHARED_BYTES
                       else a)


def from_shared(obj: Any) -> tuple[Any, list[str]]:
    """In the window: the arrays copied out; returns the object and the names to release."""
    names: list[str] = []

    def take(a: Any) -> Any:
        if isinstance(a, SharedArray):
            names.append(a.name)
            return _copy_out(a)
        return a

    return _map_fields(obj, take), names


def release(names: list[str], blocks: dict[str, SharedMemory]) -> None:
    """In the worker: the window has its copies; free the blocks."""
    for name in names:
        block = blocks.pop(name, None)
        if block is not None:
            block.close()
            block.unlink()


def release_all(blocks: dict[str, SharedMemory]) -> None:
    release(list(blocks), blocks)
