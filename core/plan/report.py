"""A plan as the CLI's JSON and the Plan tab read it: the inputs, the GPU and its source, the per-GPU bytes
by part, fits, the limits, the KV heads per GPU, the decode bounds and the layer's roofline points."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Any

from core.arch.config import AttentionConfig, divisors
from core.arch.model import Architecture
from core.plan.fit import (
    CHECKPOINT,
    WEIGHT_BYTES,
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
from core.plan.roofline import layer_kinds, roofline
from core.plan.weights import PART_NAMES, WeightParts

PER_GPU = ("weights", "kv_cache", "reserve", "free", "capacity", "state")

SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}


def parse_count(text: str) -> int:
    """'70,553,706,496', '70.55B', '1.04T' -> a whole number of parameters; a ValueError says what to type."""
    grouped = r"[0-9]{1,3}(?:,[0-9]{3})+|[0-9]{1,3}(?:_[0-9]{3})+|[0-9]{1,15}"  # 1,234,567 or 1_234 or 1234
    m = re.fullmatch(rf"\s*({grouped})(\.[0-9]{{1,6}})?\s*([kKmMbBgGtT]?)\s*", text or "", flags=re.ASCII)
    if not m:
        raise ValueError("type the model's parameter count, such as 70,553,706,496 or 70.55B.")
    digits = m.group(1).replace(",", "").replace("_", "") + (m.group(2) or "")
    value = round(float(digits) * SUFFIX[m.group(3).lower()])
    if not 1 <= value <= 10**14:
        raise ValueError("a parameter count is from 1 to 100T.")
    return value


def plan_inputs(cfg: AttentionConfig, params: int, gpu, n_gpus: int, tp: int, weights_dtype: str, kv_dtype: str,
                batch: int, context: int, reserve: float, kind: str = "causal",
                active_params: int | None = None, arch: Architecture | None = None,
                weights: WeightParts | None = None) -> PlanInput:
    """The plan of cfg's model (its layers, as the app counts them) at this workload; kind encoder: no cache. arch:
    a real model's layers as they are (a change to one layer changes that layer only), in place of cfg's."""
    return PlanInput(arch or cfg.architecture(kind), params, gpu, n_gpus, tp, weights_dtype, kv_dtype, batch, context,
                     reserve, active_params, weights, cfg.state_format)


def trained_context_note(j: dict[str, Any], name: str, trained_tokens: int) -> str:
    """A sentence when the context asked, or the longest that fits, is beyond what the model was made to read
    (its max_position_embeddings); empty when neither is."""
    if trained_tokens <= 0:
        return ""
    asked, longest = j["inputs"]["context"], j.get("max_context")
    over = []
    if asked > trained_tokens:
        over.append(f"the context asked ({asked:,} tokens)")
    if longest is not None and longest > trained_tokens:
        over.append(f"the longest that fits in memory ({longest:,} tokens)")
    if not over:
        return ""
    return (f"{' and '.join(over).capitalize()} {'is' if len(over) == 1 else 'are'} beyond {name}'s "
            f"{trained_tokens:,}-token context: the model reads no more than {trained_tokens:,} tokens.")


def memory_curve(p: PlanInput, longest: int | None) -> list[tuple[int, int]]:
    """(context, per-GPU bytes: weights + KV + allowance) at powers of two around the plan's context."""
    top = max(4 * p.context, 2 * (longest or 0), 4096)
    contexts = [2**k for k in range(8, 31) if 2**k <= min(top, 2**24)]
    fixed = weight_bytes(p) + reserve_bytes(p)
    return [(c, fixed + gpu_kv_bytes(p, context=c)) for c in contexts]


def tp_sweep(p: PlanInput) -> list[dict[str, int]]:
    """Per-GPU bytes at every TP degree the heads allow, the pipeline stages as they are (n_gpus = t x pp)."""
    out = []
    for t in divisors(max(s.n_heads for s in p.arch.layers)):
        try:
            q = replace(p, tp=t, n_gpus=t * p.pp)
        except ValueError:
            continue  # a degree the heads cannot share out
        split = [h for h in (kv_heads_per_gpu(s, t) for s in set(p.arch.layers)) if h is not None]
        heads = min(split) if split else None
        out.append({"tp": t, "weights": weight_bytes(q), "kv_cache": gpu_kv_bytes(q), "reserve": reserve_bytes(q),
                    "kv_heads_per_gpu": heads})
    return out


def plan_json(p: PlanInput, cfg: AttentionConfig) -> dict[str, Any]:
    r = plan(p)
    d = decode_bounds(p)
    layer = cfg.with_(seq_len=p.context, batch_size=p.batch, kv_dtype=p.kv_dtype)
    kinds = layer_kinds(layer)  # a global layer's points, and a local layer's when the model has both
    points = roofline(layer, p.gpu, p.attention_dtype, p.kv_dtype, kinds.get("global", 0))
    local = roofline(layer, p.gpu, p.attention_dtype, p.kv_dtype, kinds["local"]) if len(kinds) > 1 else None
    out = r.to_json()
    return {
        "inputs": {"params": p.params, "active_params": p.active_params, "n_gpus": p.n_gpus, "tp": p.tp, "pp": p.pp, "weights_dtype": p.weights_dtype,
                   "kv_dtype": p.kv_dtype, "batch": p.batch, "context": p.context, "reserve_fraction": p.reserve,
                   "n_layers": p.arch.n_layers, "kind": p.arch.kind,
                   "windowed": all(s.window is not None for s in p.arch.layers),  # every cache stops at its window
                   **({"state_dtype": p.state_dtype} if out["state"] else {})},  # a recurrent stack's state format
        "gpu": p.gpu.to_json(),
        "per_gpu": {k: out[k] for k in PER_GPU if k != "state" or out[k]},  # a recurrent stack's state, when any
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
        "roofline_local": {phase: pt.to_json() for phase, pt in local.items()} if local else None,
        "weights": weights_json(p),
    }


def weights_json(p: PlanInput) -> dict[str, Any] | None:
    """The weights by part in the plan's formats (the checkpoint's, or every part in the plan's dtype), with the
    published checkpoint's size beside their sum; None for a model whose parts are not known."""
    if p.weights is None or p.weights.total != p.params:  # a typed count is another model's: its parts are unknown
        return None
    if p.weights_dtype == CHECKPOINT:
        return {"mode": CHECKPOINT, **p.weights.to_json()}
    by_part = {part: math.ceil(n * WEIGHT_BYTES[p.weights_dtype]) for part, n in p.weights.params}
    return {"mode": p.weights_dtype, "parts": {part: {"params": n, "format": p.weights_dtype,
                                                      "bits": WEIGHT_BYTES[p.weights_dtype] * 8, "bytes": by_part[part]}
                                               for part, n in p.weights.params},
            "total_bytes": sum(by_part.values()), "checkpoint_bytes": p.weights.checkpoint_bytes,
            "source": p.weights.source}


def gib(n: float) -> str:
    """Bytes as the driver and the engines count them: an "80 GB" H100 is 79.6 GiB (81,559 MiB)."""
    return f"{n / 2**30:,.1f} GiB" if abs(n) >= 2**30 / 10 else f"{n / 2**20:,.1f} MiB"


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
        return f"Fits on {where} with {gib(per['free'])} free a GPU; {limits}."
    if per["weights"] + per["reserve"] > per["capacity"]:
        return (f"Does not fit on {where}: the weights ({gib(per['weights'])} a GPU) and the allowance "
                f"({gib(per['reserve'])}) alone exceed a GPU's {gib(per['capacity'])}, before any KV cache; use more "
                "GPUs or smaller weights.")
    return f"Does not fit on {where}: {gib(-per['free'])} short a GPU; {limits}."


def decode_sentence(j: dict[str, Any]) -> str:
    """The decode bound and what sets it: the bytes a step reads, or the FLOPs it does, through every stage."""
    d, i = j["decode"], j["inputs"]
    stages = f" through {i['pp']} pipeline stages one after another" if i["pp"] > 1 else ""
    moe = (f" (its {i['active_params'] / 1e9:,.3g}B active parameters' share and its cache: a mixture of experts)"
           if i.get("active_params") else "")
    return (f"Decode: at most {rate(d['tokens_per_s'])} tokens/s for the batch of {i['batch']:,} "
            f"({rate(d['tokens_per_s_per_sequence'])} a sequence), {seconds(d['step_s'])} a step{stages}: a GPU reads "
            f"{gib(d['bytes_per_gpu'])} a stage{moe} ({seconds(d['step_s_bandwidth'])} at full bandwidth) and computes "
            f"{d['flops_per_gpu'] / 1e12:,.3g} TFLOP ({seconds(d['step_s_compute'])} at peak): {d['bound']}-bound. "
            "No communication counted.")


def roof_lines(j: dict[str, Any]) -> list[str]:
    """Each roofline point in words: one layer (a global one, and a local one when there are both) on one GPU."""
    out = []
    for points in (j["roofline"], j.get("roofline_local") or {}):
        for phase, pt in points.items():
            out.append(f"one {pt['layer_kind']} layer's {phase} on one GPU: {pt['intensity']:,.3g} FLOP/B, "
                       f"{pt['limit']}-bound, at most {pt['bound_flops'] / 1e12:.4g} TFLOP/s "
                       f"({pt['peak_dtype']} roof), {seconds(pt['ideal_s'])} at best")
    return out


def heads_sentence(j: dict[str, Any]) -> str:
    i = j["inputs"]
    if j["kv_heads_per_gpu"] is None:
        copies = j["kv_replication"]
        return (f"Its cache is not split by heads: every GPU of the TP group keeps all of it "
                f"({copies} {'copy' if copies == 1 else 'copies'}).")
    copies = j["kv_replication"]
    extra = (f"; beyond TP = KV heads each head is replicated on {copies} GPUs, so the cache a GPU holds stops "
             "shrinking" if copies > 1 else "")
    heads = j["kv_heads_per_gpu"]
    return f"TP {i['tp']}: {heads} KV head{'s' if heads > 1 else ''} a GPU{extra}."


def weights_sentence(j: dict[str, Any]) -> list[str]:
    """The Plan tab's line of the weights by part (none for a model whose parts are not known)."""
    w = j.get("weights")
    if w is None:
        return []
    parts = " · ".join(f"{PART_NAMES[p]} {gib(d['bytes'])} {d['format']}" for p, d in w["parts"].items()
                       if d["bytes"] >= 2**30 / 100)
    published = f" (the published checkpoint: {gib(w['checkpoint_bytes'])})" if w["checkpoint_bytes"] else ""
    how = "as the checkpoint stores them" if w["mode"] == CHECKPOINT else f"all {w['mode']}"
    return [f"Weights, {how}: {parts} = {gib(w['total_bytes'])}{published}."]


def weights_lines(j: dict[str, Any]) -> list[str]:
    """The whole model's weights by part and format, their sum beside the published checkpoint's size."""
    w = j.get("weights")
    if w is None:
        return []
    lines = [f"weights by part ({'as the checkpoint stores them' if w['mode'] == CHECKPOINT else 'all ' + w['mode']}):"]
    for part, d in w["parts"].items():
        lines.append(f"  {PART_NAMES[part]:<38} {d['params']:>16,} x {d['format']:<12} ({d['bits']:.4g} bits) "
                     f"{gib(d['bytes']):>10}")
    published = f"; the published checkpoint: {gib(w['checkpoint_bytes'])}" if w["checkpoint_bytes"] else ""
    lines.append(f"  {'sum':<38} {gib(w['total_bytes'])}{published}")
    return lines


def engine_sentence(j: dict[str, Any]) -> str:
    """The verdict of the engine's mode in a sentence (empty without one)."""
    e = j.get("engine")
    if e is None:
        return ""
    if e.get("refusal"):
        return e["refusal"]
    context, state = j["inputs"]["context"], e.get("state")
    if e["engine"] == "vllm":
        pages = (f" A request also takes one page of each group of recurrent layers, {state['layers']} layers' state "
                 f"({gib(state['sequence_bytes'])} a sequence on a GPU, each layer's padded to the attention page of "
                 f"{e['block_size']} tokens)." if state else "")
        groups = (f" (its log's token figure shares the blocks among all {e['groups']} groups of layers, the "
                  "recurrent ones included, so it undercounts what the attention layers hold)" if state else "")
        return (f"As vLLM allocates it ({e['gpu_memory_utilization']:.0%} of each GPU, less the weights and "
                f"{gib(e['overhead_bytes'])} of overhead): {e['tokens']:,} tokens of KV cache{groups}, "
                f"{e['max_concurrency']:.2f} requests of {context:,} tokens at once.{pages}")
    if e["engine"] == "sglang":
        slots = (f" Its state pool holds {e['mamba_slots']:,} requests' recurrent state ({gib(state['sequence_bytes'])} "
                 f"each on a GPU), enough for {e['max_running_requests']:,} running requests (each takes one slot, "
                 "and more while its radix cache keeps states to reuse: 3 by default)." if state else "")
        return (f"As SGLang allocates it (mem_fraction_static {e['mem_fraction_static']:g}): a pool of "
                f"{e['tokens']:,} tokens, {e['max_concurrency']:.2f} requests of {context:,} tokens at once.{slots}")
    recurrent = e.get("recurrent")
    held = (f"{gib(e['bytes'] - recurrent['bytes'])} of KV cache and {gib(recurrent['bytes'])} of recurrent state"
            if recurrent else f"{gib(e['bytes'])} of KV cache")
    sliding = any(c["window"] is not None for c in e["caches"])
    return (f"As llama.cpp allocates it: {held} for {j['inputs']['batch']} sequence(s) of {context:,} tokens"
            + (f" (a sliding layer keeps its window and n_ubatch {e['n_ubatch']})." if sliding else "."))


def engine_lines(j: dict[str, Any], with_command: bool = True) -> list[str]:
    """As the engine allocates: the lines it would log, and the command that serves the plan (the Plan tab shows the
    command in a line of its own: with_command False)."""
    e = j.get("engine")
    if e is None:
        return []
    if e["engine"] == "vllm":
        how = (f"gpu_memory_utilization {e['gpu_memory_utilization']:g}, overhead {gib(e['overhead_bytes'])}; blocks "
               f"of {e['block_size']} tokens, {e['groups']} group(s) of {e['group_size']} layers")
    elif e["engine"] == "sglang":
        layers = "attention layers" if e.get("state") else "layers"
        how = f"mem_fraction_static {e['mem_fraction_static']:g}; {e['cell_bytes']:,} B a token, all its {layers} on a GPU"
    else:
        how = f"n_ubatch {e['n_ubatch']}; {gib(e['bytes'])} of cache in all, every GPU's layers together"
    name = {"vllm": "vLLM", "sglang": "SGLang"}.get(e["engine"], e["engine"])
    lines = [f"As {name} allocates it ({how}):"] + [f"  {line}" for line in e["log"]]
    if e.get("note"):
        lines.append(f"  ({e['note']})")
    if e.get("refusal"):
        return [*lines, e["refusal"]]
    return [*lines, "serve it with:", "  " + " ".join(e["command"])] if with_command else lines


def plan_lines(j: dict[str, Any]) -> list[str]:
    """The CLI's table."""
    g, per, i = j["gpu"], j["per_gpu"], j["inputs"]
    lines = [f"{g['name']} x {i['n_gpus']} (TP {i['tp']}, {i['pp']} pipeline stage(s) of {j['layers_per_stage']} "
             f"layers), weights {i['weights_dtype']}, KV {i['kv_dtype']}, batch {i['batch']}, context {i['context']:,}",
             f"  source: {g['source']}", "per GPU:"]
    for k in (k for k in PER_GPU if k in per):  # a recurrent stack's state only where there is one
        lines.append(f"  {k.replace('_', ' '):<10} {per[k]:>20,} B  {gib(per[k])}")
    lines += weights_lines(j)
    lines += [verdict(j), heads_sentence(j)]
    if j["decode"] is not None:
        lines.append(decode_sentence(j))
    return lines + roof_lines(j)
