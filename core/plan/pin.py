"""A pin's plan: the Plan tab's inputs kept with the pin (and its workspace file), and the figures the
Compare table shows for it, recounted from them (core/plan/fit.py), never read back from a file."""

from __future__ import annotations

from typing import Any

from core.arch.config import AttentionConfig
from core.arch.model import Architecture
from core.files import schema
from core.plan.fit import CHECKPOINT, WEIGHT_BYTES, PlanInput, decode_bounds, kv_format_of, plan
from core.plan.gpus import GPU, MAX_GIB, MIN_GIB, THIS_MACHINE, find_gpu, gpu_ids, this_machine
from core.plan.weights import WeightParts

PLAN_KEYS = ("gpu", "n_gpus", "tp", "weights_dtype", "kv_dtype", "batch", "context", "params", "reserve")
# a MoE's active count; an encoder's kind; a typed memory; the checkpoint's parts and formats
OPTIONAL_KEYS = ("active_params", "kind", "memory_gib", "weights")
MACHINE_KEYS = ("name", "memory_bytes", "peak_flops", "bandwidth_bytes_s", "dtype", "how")


def gpu_of(d: dict[str, Any]) -> GPU:
    if d["gpu"] == THIS_MACHINE:
        m = d["machine"]
        return this_machine(m["name"], m["memory_bytes"], m["peak_flops"], m["bandwidth_bytes_s"], m["dtype"], m["how"])
    gpu = find_gpu(d["gpu"])
    return gpu.with_memory_gib(d["memory_gib"]) if d.get("memory_gib") is not None else gpu


def plan_input(d: dict[str, Any], cfg: AttentionConfig, arch: Architecture | None) -> PlanInput:
    weights = WeightParts.from_json(d["weights"]) if d.get("weights") is not None else None
    return PlanInput(arch or cfg.architecture(d.get("kind", "causal")), d["params"], gpu_of(d), d["n_gpus"], d["tp"],
                     d["weights_dtype"], d["kv_dtype"], d["batch"], d["context"], d["reserve"], d.get("active_params"),
                     weights, cfg.state_format)


def check_pin_plan(d: Any, where: str, cfg: AttentionConfig, arch: Architecture | None) -> dict[str, Any]:
    """A plan read back from a file: its fields and types, then the plan itself (a ValueError names what)."""
    d = schema.mapping(d, where)
    expected = set(PLAN_KEYS) | ({"machine"} if d.get("gpu") == THIS_MACHINE else set())
    expected |= {k for k in OPTIONAL_KEYS if k in d}
    if set(d) != expected:
        raise ValueError(f"{where} needs exactly the fields {', '.join(sorted(expected))}")
    schema.choice(d["gpu"], f"{where}.gpu", (*gpu_ids(), THIS_MACHINE))
    schema.choice(d["weights_dtype"], f"{where}.weights_dtype", (*WEIGHT_BYTES, CHECKPOINT))
    schema.text(d["kv_dtype"], f"{where}.kv_dtype", 40)
    kv_format_of(d["kv_dtype"])
    for k, hi in (("n_gpus", 4096), ("tp", 4096), ("batch", 2**20), ("context", 2**30), ("params", 10**14)):
        schema.whole(d[k], f"{where}.{k}", 1, hi)
    schema.number(d["reserve"], f"{where}.reserve", 0.0, 0.99)
    if "active_params" in d:
        schema.whole(d["active_params"], f"{where}.active_params", 1, d["params"])
    if "kind" in d:
        schema.choice(d["kind"], f"{where}.kind", ("causal", "encoder"))
    if "memory_gib" in d:
        if d.get("gpu") == THIS_MACHINE:
            raise ValueError(f"{where}.memory_gib is a catalogue card's typed memory; this machine's is measured")
        schema.number(d["memory_gib"], f"{where}.memory_gib", MIN_GIB, MAX_GIB)
    if "machine" in d:
        m = schema.mapping(d["machine"], f"{where}.machine")
        if set(m) != set(MACHINE_KEYS):
            raise ValueError(f"{where}.machine needs exactly the fields {', '.join(MACHINE_KEYS)}")
        schema.text(m["name"], f"{where}.machine.name", 200)
        schema.text(m["how"], f"{where}.machine.how", 1000)
        schema.choice(m["dtype"], f"{where}.machine.dtype", ("fp32", "bf16", "fp16"))
        schema.whole(m["memory_bytes"], f"{where}.machine.memory_bytes", 2**20, 2**50)
        schema.number(m["peak_flops"], f"{where}.machine.peak_flops", 1e6, 1e18)
        schema.number(m["bandwidth_bytes_s"], f"{where}.machine.bandwidth_bytes_s", 1e6, 1e15)
    try:
        plan_input(d, cfg, arch)
    except ValueError as exc:
        raise ValueError(f"{where} does not fit its configuration: {exc}") from None
    return d


def plan_summary(d: dict[str, Any], cfg: AttentionConfig, arch: Architecture | None) -> dict[str, Any]:
    """What the Compare table shows of a pin's plan."""
    p = plan_input(d, cfg, arch)
    r = plan(p)
    decode = decode_bounds(p).tokens_per_s(p.batch) if p.arch.kind == "causal" else None
    return {"gpus": f"{p.n_gpus} x {p.gpu.name} ({p.gpu.memory_bytes / 2**30:,.2f} GiB), TP {p.tp}, "
                    f"{p.weights_dtype} weights, {p.kv_dtype} KV, "
                    f"B {p.batch} x {p.context:,}",
            "fits": "yes" if r.fits else "no", "memory_per_gpu": r.weights + r.kv_cache + r.reserve,
            "kv_per_gpu": r.kv_cache, "max_context": r.max_context, "max_batch": r.max_batch, "decode_tokens_s": decode}
