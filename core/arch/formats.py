"""KV-cache element formats: how many bytes a cache spends on its values.

The plain types spend a whole number of bytes per value. llama.cpp's block formats store blocks of
32 values along head_dim with one fp16 scale: q8_0 is 34 bytes a block (2 + 32 int8), q4_0 is 18
(2 + 32 4-bit values), so head_dim must be a multiple of 32 for them. fp8's per-tensor scale is not
counted (a few bytes a layer).
"""

from __future__ import annotations

# name -> (bytes of one block, values in one block)
KV_FORMATS: dict[str, tuple[int, int]] = {
    "float32": (4, 1),
    "bfloat16": (2, 1),
    "float16": (2, 1),
    "fp8_e4m3": (1, 1),
    "fp8_e5m2": (1, 1),
    "q8_0": (34, 32),
    "q4_0": (18, 32),
}
STATE_FORMATS = ("float32", "bfloat16", "fp8_e4m3")  # how a recurrent state may be kept: engines keep float32
KV_FORMAT_NOTES = {
    "float32": "4 bytes a value",
    "bfloat16": "2 bytes a value",
    "float16": "2 bytes a value",
    "fp8_e4m3": "1 byte a value (vLLM, SGLang, TensorRT-LLM on Hopper/Blackwell)",
    "fp8_e5m2": "1 byte a value (wider range, fewer mantissa bits than e4m3)",
    "q8_0": "34 bytes per 32 values: an fp16 scale + 32 int8 (llama.cpp)",
    "q4_0": "18 bytes per 32 values: an fp16 scale + 32 4-bit values (llama.cpp)",
}


def check_kv_format(name: object, head_dim: int) -> str:
    """name if it is a known format that fits head_dim; a ValueError that says what to change otherwise."""
    if not isinstance(name, str) or name not in KV_FORMATS:
        shown = repr(name) if len(repr(name)) <= 30 else "that value"
        raise ValueError(f"KV-cache dtype {shown} is not known; choose one of {', '.join(KV_FORMATS)}.")
    block = KV_FORMATS[name][1]
    if head_dim % block:
        raise ValueError(f"the {name} KV format stores blocks of {block} values along head_dim, and head_dim "
                         f"{head_dim} is not a multiple of {block}; choose a head_dim that is, or another format.")
    return name


def kv_format_bytes(n_values: int, name: str) -> int:
    """Bytes of n_values cached values in format name (n_values a whole number of blocks)."""
    block_bytes, block_values = KV_FORMATS[name]
    return n_values // block_values * block_bytes


def bytes_per_value(name: str) -> float:
    block_bytes, block_values = KV_FORMATS[name]
    return block_bytes / block_values
