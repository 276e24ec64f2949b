"""`attention-sandbox plan`: does a model fit on these GPUs at this batch and context, the longest context
and largest batch that do, KV heads per GPU under tensor parallelism, decode bounds and the layer's
roofline. --json prints the object the README documents; --list-gpus the catalogue."""

from __future__ import annotations

import argparse
import json

from core.plan.engines.engine_plan import ENGINES, engine_plan
from core.plan.engines.llamacpp import N_UBATCH
from core.plan.engines.vllm import GPU_MEMORY_UTILIZATION
from core.plan.engines.vllm_plan import OVERHEAD_BYTES
from core.plan.fit import CHECKPOINT, RESERVE, WEIGHT_BYTES, kv_format_of
from core.plan.gpus import THIS_MACHINE, catalogue, find_gpu
from core.plan.report import engine_lines, parse_count, plan_inputs, plan_json, plan_lines
from core.plan.weights import WeightParts


def add_plan_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("plan")
    g.add_argument("--gpu", default="h100-sxm", help=f"a catalogue GPU (see --list-gpus) or {THIS_MACHINE} "
                                                     "(measured now); default h100-sxm")
    g.add_argument("--gpu-memory-gib", type=float, metavar="GIB",
                   help="your card's memory in GiB as nvidia-smi shows it (MiB / 1024), instead of the catalogue's")
    g.add_argument("--gpus", type=int, default=1, help="GPUs in all (default 1); beyond --tp they split the layers")
    g.add_argument("--tp", type=int, default=1, help="tensor-parallel degree, a divisor of the query heads (default 1)")
    g.add_argument("--context", type=int, help="tokens a sequence holds (default: --seq-len)")
    g.add_argument("--weights-dtype", choices=[*WEIGHT_BYTES, CHECKPOINT],
                   help="every weight in one dtype, or checkpoint: each part in the format its checkpoint stores it "
                        "(gpt-oss's MXFP4 experts, DeepSeek-V3's and Qwen3's block-scaled fp8); default: checkpoint for "
                        "a preset that knows its formats, else bf16")
    g.add_argument("--params", type=count, help="the whole model's parameters, such as 70553706496 or 70.55B "
                                                "(default: the preset's)")
    g.add_argument("--active-params", type=count, help="a mixture of experts: the parameters one token runs "
                                                       "(default: the preset's; decode reads and runs these)")
    g.add_argument("--reserve", type=float, default=RESERVE,
                   help=f"fraction of each GPU's memory kept for activations and the runtime (default {RESERVE})")
    g.add_argument("--engine", choices=list(ENGINES), help="also plan as the engine allocates: its KV capacity (what "
                                                           "it would log) and the command that serves the plan")
    g.add_argument("--mem-fraction-static", type=float,
                   help="SGLang's fraction of each GPU for the weights and the token pool (default: by TP, 0.88 at 1)")
    g.add_argument("--n-ubatch", type=int, default=N_UBATCH,
                   help=f"llama.cpp's physical batch (-ub, default {N_UBATCH}): a sliding layer keeps W + it cells")
    g.add_argument("--gpu-memory-utilization", type=float, default=GPU_MEMORY_UTILIZATION,
                   help=f"vLLM's fraction of each GPU it may use (default {GPU_MEMORY_UTILIZATION})")
    g.add_argument("--engine-overhead-gib", type=float, default=OVERHEAD_BYTES / 2**30,
                   help="vLLM's activation peak and memory outside torch, in GiB (default "
                        f"{OVERHEAD_BYTES / 2**30:g}; from a log: total x utilization - weights - 'Available KV cache "
                        "memory')")
    g.add_argument("--list-gpus", action="store_true", help="list the GPU catalogue and exit")
    g.add_argument("--list-presets", action="store_true", help="list the presets (with their parameter counts)")
    g.add_argument("--json", action="store_true", help="one JSON object")


def count(text: str) -> int:
    try:
        return parse_count(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def check_engine_flags(args: argparse.Namespace) -> None:
    """Every engine flag given is a value its engine takes, whichever engine is asked for (NaN fails each range)."""
    if not 0.05 <= args.gpu_memory_utilization <= 1:
        raise ValueError(f"--gpu-memory-utilization is a fraction from 0.05 to 1, not {args.gpu_memory_utilization:g}.")
    if args.mem_fraction_static is not None and not 0.05 <= args.mem_fraction_static <= 1:
        raise ValueError(f"--mem-fraction-static is a fraction from 0.05 to 1, not {args.mem_fraction_static:g}.")
    if not 1 <= args.n_ubatch <= 2**20:
        raise ValueError(f"--n-ubatch must be from 1 to 1,048,576, not {args.n_ubatch:,}.")
    if not 0 <= args.engine_overhead_gib <= 2**20:
        raise ValueError(f"--engine-overhead-gib must be from 0 to 1,048,576 GiB, not {args.engine_overhead_gib:g}.")


def cmd_plan(args: argparse.Namespace) -> int:
    from core.arch.presets import find_preset, load_presets
    from sandbox.cli.args import config_from_args

    if args.list_presets:
        for p in load_presets():
            print(f"{p.key:<20} {p.name}: {f'{p.params:,} parameters' if p.params else 'no count: give --params'}"
                  + (f", {p.active_params:,} active" if p.active_params else ""))
        return 0
    if args.list_gpus:
        if args.json:
            print(json.dumps([g.to_json() for g in catalogue()], indent=1))
            return 0
        for g in catalogue():
            print(f"{g.id:<10} {g.name}: {g.memory_bytes / 2**30:.2f} GiB as the driver reports it ({g.datasheet_gb:g} GB "
                  f"on the datasheet), {g.bandwidth_bytes_s / 1e12:g} TB/s, "
                  f"bf16 {g.tflops['bf16']:g} TFLOP/s dense. {g.source}")
        return 0
    if args.kv_dtype is not None:
        args.kv_dtype = kv_format_of(args.kv_dtype)  # fp8 -> fp8_e4m3, as the config knows it
    cfg = config_from_args(args, "bfloat16")
    params = args.params
    preset = find_preset(args.preset) if args.preset else None
    if params is None:
        if preset is None or preset.params is None:
            raise ValueError("give the whole model's parameter count with --params, or a --preset that has one.")
        params = preset.params
    if args.gpu == THIS_MACHINE:
        from core.timing.machine_roof import measure_roof

        gpu = measure_roof(args.device).gpu()
    else:
        gpu = find_gpu(args.gpu)
    if args.gpu_memory_gib is not None:
        if args.gpu == THIS_MACHINE:
            raise ValueError("this machine's memory is measured; --gpu-memory-gib types a catalogue card's.")
        gpu = gpu.with_memory_gib(args.gpu_memory_gib)
    context = args.context if args.context is not None else cfg.seq_len
    active = args.active_params if args.active_params is not None else (
        preset.active_params if preset is not None and args.params is None else None)
    weights = WeightParts.from_json(preset.weights) if preset is not None and preset.weights else None
    dtype = args.weights_dtype or (CHECKPOINT if weights is not None and args.params is None else "bf16")
    p = plan_inputs(cfg, params, gpu, args.gpus, args.tp, dtype, cfg.kv_format, cfg.batch_size, context,
                    args.reserve, preset.kind if preset else "causal", active, weights=weights)
    j = plan_json(p, cfg)
    check_engine_flags(args)
    if args.engine is not None:
        overhead = args.engine_overhead_gib
        model = preset.repo if preset is not None and preset.repo else "MODEL"
        j["engine"] = engine_plan(args.engine, p, model, utilization=args.gpu_memory_utilization,
                                  overhead_bytes=round(overhead * 2**30), mem_fraction=args.mem_fraction_static,
                                  n_ubatch=args.n_ubatch)
    if args.json:
        print(json.dumps(j, indent=1))
    else:
        print("\n".join(plan_lines(j) + engine_lines(j)))
    return 0
