"""A plan as the CLI's JSON and the Plan tab read it: the inputs, the GPU and its source, the per-GPU bytes
by part, fits, the limits, the KV heads per GPU, the decode bounds and the layer's roofline points."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from core.config import AttentionConfig, divisors
from core.plan import (
    PlanInput,
    decode_bounds,
    gpu_kv_bytes,
    kv_heads_per_gpu,
    plan,
    reserve_bytes,
    stage_kv_bytes,
    stages,
    weight_bytes,
)
from core.roofline import roofline

PER_GPU = ("weights", "kv_cache", "reserve", "free", "capacity")


def plan_inputs(cfg: AttentionConfig, params: int, gpu, n_gpus: int, tp: int, weights_dtype: str, kv_dtype: str,
                batch: int, context: int, reserve: float, kind: str = "causal") -> PlanInput:
    """The plan of cfg's model (its layers, as the app counts them) at this workload; kind encoder: no cache."""
    return PlanInput(cfg.architecture(kind), params, gpu, n_gpus, tp, weights_dtype, kv_dtype, batch, context,
                     reserve)


def memory_curve(p: PlanInput, longest: int | None) -> list[tuple[int, int]]:
    """(context, per-GPU bytes: weights + KV + allowance) at powers of two around the plan's context."""
    top = max(4 * p.context, 2 * (longest or 0), 4096)
    contexts = [2**k for k in range(8, 31) if 2**k <= min(top, 2**24)]
    fixed = weight_bytes(p) + reserve_bytes(p)
    return [(c, fixed + gpu_kv_bytes(p, context=c)) for c in contexts]


def tp_sweep(p: PlanInput) -> list[dict[str, int]]:
    """Per-GPU bytes at every TP degree the heads allow, the pipeline stages as they are (n_gpus = t x pp)."""
    out = []
    standard = {s for s in p.arch.layers if s.mla is None}
    for t in divisors(max(s.n_heads for s in p.arch.layers)):
        try:
            q = replace(p, tp=t, n_gpus=t * p.pp)
        except ValueError:
            continue  # a degree the heads cannot share out
        heads = min(kv_heads_per_gpu(s, t) for s in standard) if standard else None
        out.append({"tp": t, "weights": weight_bytes(q), "kv_cache": gpu_kv_bytes(q), "reserve": reserve_bytes(q),
                    "kv_heads_per_gpu": heads})
    return out


def plan_json(p: PlanInput, cfg: AttentionConfig) -> dict[str, Any]:
    r = plan(p)
    d = decode_bounds(p)
    layer = cfg.with_(seq_len=p.context, batch_size=p.batch, kv_dtype=p.kv_dtype)
    points = roofline(layer, p.gpu, p.weights_dtype, p.kv_dtype)
    out = r.to_json()
    return {
        "inputs": {"params": p.params, "n_gpus": p.n_gpus, "tp": p.tp, "pp": p.pp, "weights_dtype": p.weights_dtype,
                   "kv_dtype": p.kv_dtype, "batch": p.batch, "context": p.context, "reserve_fraction": p.reserve,
                   "n_layers": p.arch.n_layers, "kind": p.arch.kind,
                   "windowed": all(s.window is not None for s in p.arch.layers)},  # every cache stops at its window
        "gpu": p.gpu.to_json(),
        "per_gpu": {k: out[k] for k in PER_GPU},
        "fits": r.fits,
        "max_context": r.max_context,
        "max_batch": r.max_batch,
        "kv_heads_per_gpu": r.kv_heads_per_gpu,
        "kv_replication": r.kv_replication,
        "layers_per_stage": r.layers_per_stage,
        "stage_kv_cache": [stage_kv_bytes(p, layers, p.context, p.batch) for layers in stages(p.arch.n_layers, p.pp)],
        "memory_curve": memory_curve(p, r.max_context),
        "tp_sweep": tp_sweep(p),
        "decode": d.to_json(p.batch) if p.arch.kind == "causal" else None,
        "roofline": {phase: pt.to_json() for phase, pt in points.items()},
    }


def gb(n: float) -> str:
    """Bytes as the GPU datasheets count them: 80.0 GB is 80e9 bytes."""
    return f"{n / 1e9:,.1f} GB" if abs(n) >= 1e8 else f"{n / 1e6:,.1f} MB"


def rate(x: float) -> str:
    """Tokens a second: 685, 85.6, 0.0167 (never '0.0' for a slow but real rate)."""
    return f"{x:,.0f}" if x >= 1000 else f"{x:.3g}"


def seconds(s: float) -> str:
    return f"{s * 1e6:.3g} us" if s < 1e-3 else f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.3g} s"


def verdict(j: dict[str, Any]) -> str:
    """One sentence: fits or not, by how much, and the limits."""
    g, per, i = j["gpu"], j["per_gpu"], j["inputs"]
    where = f"{i['n_gpus']} x {g['name']}" if i["n_gpus"] > 1 else f"one {g['name']}"
    windows = i.get("windowed", False)
    ctx = (("no limit from memory (every layer's cache stops at its window)" if windows else
            "beyond 2^40 tokens: memory sets no limit") if j["max_context"] is None else f"{j['max_context']:,} tokens")
    tokens = f"{i['context']:,} token{'' if i['context'] == 1 else 's'}"
    limits = (f"the longest context at batch {i['batch']:,} is {ctx}; the largest batch at {tokens} is "
              f"{j['max_batch']:,}" if j["max_batch"] is not None else "an encoder keeps no KV cache")
    if j["fits"]:
        return f"Fits on {where} with {gb(per['free'])} free a GPU; {limits}."
    return f"Does not fit on {where}: {gb(-per['free'])} short a GPU; {limits}."


def heads_sentence(j: dict[str, Any]) -> str:
    i = j["inputs"]
    if j["kv_heads_per_gpu"] is None:
        return f"MLA: every GPU of the TP group keeps the whole latent ({j['kv_replication']} copies)."
    copies = j["kv_replication"]
    extra = (f"; beyond TP = KV heads each head is replicated on {copies} GPUs, so the cache a GPU holds stops "
             "shrinking" if copies > 1 else "")
    heads = j["kv_heads_per_gpu"]
    return f"TP {i['tp']}: {heads} KV head{'s' if heads > 1 else ''} a GPU{extra}."


def plan_lines(j: dict[str, Any]) -> list[str]:
    """The CLI's table."""
    g, per, i = j["gpu"], j["per_gpu"], j["inputs"]
    lines = [f"{g['name']} x {i['n_gpus']} (TP {i['tp']}, {i['pp']} pipeline stage(s) of {j['layers_per_stage']} "
             f"layers), weights {i['weights_dtype']}, KV {i['kv_dtype']}, batch {i['batch']}, context {i['context']:,}",
             f"  source: {g['source']}", "per GPU:"]
    for k in PER_GPU:
        lines.append(f"  {k.replace('_', ' '):<10} {per[k]:>20,} B  {gb(per[k])}")
    lines += [verdict(j), heads_sentence(j)]
    if j["decode"] is not None:
        d = j["decode"]
        lines.append(f"decode: {rate(d['tokens_per_s'])} tokens/s at batch {i['batch']:,} at most ({d['bound']}-bound: "
                     f"a step reads {gb(d['bytes_per_gpu'])} a GPU, {seconds(d['step_s'])})")
    for phase, pt in j["roofline"].items():
        lines.append(f"one layer's {phase} on one GPU: {pt['intensity']:,.3g} FLOP/B, {pt['limit']}-bound, at most "
                     f"{pt['bound_flops'] / 1e12:.4g} TFLOP/s, {seconds(pt['ideal_s'])} at best")
    return lines
