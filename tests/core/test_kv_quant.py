"""The simulated KV formats against independent references: llama.cpp's q8_0 and q4_0 block definitions
written out value by value (ggml-quants.c, quantize_row_q8_0_ref / quantize_row_q4_0_ref), and torch's
float8 types for fp8."""

import math
import struct

import pytest
import torch

from core.models.kv.quant import quant_dequant


def fp16(v: float) -> float:
    """A float as an IEEE half stores it (ggml's GGML_FP32_TO_FP16), independent of torch."""
    return struct.unpack("<e", struct.pack("<e", v))[0]


def roundf(v: float) -> float:
    return math.copysign(math.floor(abs(v) + 0.5), v)


def q8_0_reference(row: list[float]) -> list[float]:
    out = []
    for i in range(0, len(row), 32):
        block = row[i:i + 32]
        amax = max(abs(v) for v in block)
        d = amax / 127
        inv = 1.0 / d if d else 0.0
        out += [roundf(v * inv) * fp16(d) for v in block]
    return out


def q4_0_reference(row: list[float]) -> list[float]:
    out = []
    for i in range(0, len(row), 32):
        block = row[i:i + 32]
        amax, m = 0.0, 0.0
        for v in block:
            if abs(v) > amax:
                amax, m = abs(v), v
        d = m / -8
        inv = 1.0 / d if d else 0.0
        out += [(min(15, int(v * inv + 8.5)) - 8) * fp16(d) for v in block]
    return out


@pytest.mark.parametrize("fmt, reference", [("q8_0", q8_0_reference), ("q4_0", q4_0_reference)])
def test_block_formats_match_llama_cpp_value_by_value(fmt, reference):
    torch.manual_seed(0)
    x = torch.randn(3, 2, 64, dtype=torch.float64) * torch.tensor([0.01, 1.0, 30.0]).view(3, 1, 1).double()
    x[0, 0, :32] = 0.0  # an all-zero block
    x[1, 1, 5] = -9.0  # a block whose largest value is negative
    got = quant_dequant(x.float(), fmt)
    for a in range(3):
        for b in range(2):
            row = [float(v) for v in x[a, b].float()]
            want = torch.tensor(reference(row))
            assert torch.allclose(got[a, b].double(), want.double(), rtol=1e-6, atol=1e-7), (a, b)


def test_q4_0_keeps_sixteen_levels_and_q8_0_is_closer():
    x = torch.randn(4, 128)
    e4 = (quant_dequant(x, "q4_0") - x).abs().mean()
    e8 = (quant_dequant(x, "q8_0") - x).abs().mean()
    assert e8 < e4 / 8  # 8 bits against 4: about 16x finer steps
    assert all(len(set(quant_dequant(x, "q4_0")[r, :32].tolist())) <= 16 for r in range(4))


@pytest.mark.parametrize("fmt, dtype", [("fp8_e4m3", torch.float8_e4m3fn), ("fp8_e5m2", torch.float8_e5m2)])
def test_fp8_is_torchs_float8_with_one_scale_per_tensor(fmt, dtype):
    x = torch.randn(2, 3, 16, 64) * 5
    got = quant_dequant(x, fmt)
    scale = x.abs().max() / torch.finfo(dtype).max
    assert torch.equal(got, (x / scale).to(dtype).float() * scale)
    assert got.abs().max() == pytest.approx(float(x.abs().max()), rel=1e-6)  # the largest value is kept
    mantissa_bits = 3 if fmt == "fp8_e4m3" else 2
    rel = ((got - x).abs() / x.abs().clamp_min(1e-3))[x.abs() > 0.5]
    assert rel.max() <= 2.0 ** -(mantissa_bits + 1) + 1e-6  # half a step of the mantissa


def test_identity_formats_and_a_refused_one():
    x = torch.randn(2, 64)
    assert torch.equal(quant_dequant(x, "float32"), x)
    assert torch.equal(quant_dequant(x, "float16"), x.half().float())
    with pytest.raises(ValueError, match="not a multiple of 32"):
        quant_dequant(torch.randn(2, 48), "q4_0")
    with pytest.raises(ValueError, match="choose one of"):
        quant_dequant(x, "int3")
