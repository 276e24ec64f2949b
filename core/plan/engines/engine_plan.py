"""A plan as each engine makes it: the engine's own KV figures and the command that serves the plan (the JSON key
`engine` of `attention-sandbox plan --engine ...`, and what the Plan tab shows beside the model's figures)."""

from __future__ import annotations

from typing import Any

from core.kinds.registry import kind_of
from core.plan.engines.llamacpp import (
    MAX_CTX,
    MAX_SEQUENCES,
    N_BATCH,
    N_UBATCH,
    cache_type,
    llamacpp_caches,
    llamacpp_recurrent,
)
from core.plan.engines.sglang import KV_CACHE_DTYPE as SGLANG_KV
from core.plan.engines.sglang import sglang_pool
from core.plan.engines.state import engine_state
from core.plan.engines.vllm_plan import OVERHEAD_BYTES, stage_architectures, vllm_plan
from core.plan.fit import PlanInput, weight_bytes

ENGINES = ("vllm", "sglang", "llama.cpp")
# The arguments each command uses, with the values they take (the engines' own names: sglang's server_args.py,
# llama.cpp's common/arg.cpp); vLLM's are core/plan/engines/vllm_plan.py's SERVE_ARGS.
SGLANG_ARGS: dict[str, tuple[type, tuple[str, ...]]] = {
    "--model-path": (str, ()), "--tp-size": (int, ()), "--pp-size": (int, ()), "--context-length": (int, ()),
    "--kv-cache-dtype": (str, ("auto", "fp8_e4m3", "fp8_e5m2")), "--mem-fraction-static": (float, ()),
    "--mamba-ssm-dtype": (str, ("float32", "bfloat16"))}
LLAMACPP_ARGS: dict[str, tuple[type, tuple[str, ...]]] = {
    "-m": (str, ()), "-c": (int, ()), "-ub": (int, ()), "-b": (int, ()), "-np": (int, ()), "-ngl": (int, ()),
    "-ctk": (str, ("f32", "f16", "bf16", "q8_0", "q4_0")), "-ctv": (str, ("f32", "f16", "bf16", "q8_0", "q4_0")),
    "-fa": (str, ("on", "off", "auto"))}


def engine_plan(name: str, p: PlanInput, model: str = "MODEL", *, utilization: float = 0.9,
                overhead_bytes: int = OVERHEAD_BYTES, mem_fraction: float | None = None,
                n_ubatch: int = N_UBATCH) -> dict[str, Any]:
    """The engine's figures for the plan (a ValueError with a sentence for a format or option it does not take)."""
    if p.arch.kind == "encoder":
        raise ValueError("an encoder keeps no KV cache: there is nothing for an engine to allocate.")
    unmodelled = sorted({kind_of(s).title for s in p.arch.layers if not kind_of(s).engine_pages})
    if unmodelled:
        raise ValueError(f"an engine keeps {', '.join(unmodelled)}'s window and compressed entries in pools of its own, "
                         "which are not modelled here; plan it without an engine (the plan counts its cache at the "
                         "context).")
    if not isinstance(model, str) or not model.strip() or model.startswith("-"):
        model = "MODEL"  # a name an engine would read as a flag is not passed on
    if name == "vllm":
        return vllm_plan(p, model, utilization, overhead_bytes).to_json()
    if name == "sglang":
        pools = []
        for stage in stage_architectures(p):  # each stage's GPUs size their own pools: the tightest one serves
            state = engine_state(stage, p.tp, "sglang", p.state_dtype)
            pool = sglang_pool(stage, p.tp, p.kv_dtype, p.gpu.memory_bytes, weight_bytes(p), mem_fraction, state,
                               p.context)
            pools.append((pool.max_concurrency(p.context), pool, state, stage))
        _, pool, state, stage = min(pools, key=lambda item: item[0])
        whole = engine_state(p.arch, p.tp, "sglang", p.state_dtype)
        cmd = ["python", "-m", "sglang.launch_server", "--model-path", model, "--tp-size", str(p.tp)]
        cmd += ["--pp-size", str(p.pp)] if p.pp > 1 else []
        cmd += ["--context-length", str(p.context)]
        cmd += ["--kv-cache-dtype", SGLANG_KV[p.kv_dtype]] if p.kv_dtype in SGLANG_KV else []
        cmd += ["--mamba-ssm-dtype", whole.state_format] if whole is not None else []
        cmd += ["--mem-fraction-static", f"{pool.mem_fraction_static:g}"]
        refusal = ("SGLang would stop at start-up: the weights leave no memory for the token pool at static "
                   f"fraction {pool.mem_fraction_static:g}; raise it, or use more GPUs."
                   if pool.rest_bytes <= 0 or (state is None and pool.tokens <= 0) else
                   "SGLang would stop at start-up: its state pool holds no request's recurrent state "
                   f"({state.sequence_bytes / 2**20:,.1f} MiB on a GPU); raise the static fraction, or use more GPUs."
                   if state is not None and pool.mamba_slots < 1 else
                   f"SGLang's pool of {pool.tokens:,} tokens cannot hold one request of {p.context:,} tokens; lower the "
                   "context, raise the static fraction, or use more GPUs." if pool.cell_bytes and pool.tokens < p.context
                   else "")
        notes = ["SGLang's sliding-window pool is not modelled: every layer is counted at the full context"
                 if any(s.window is not None for s in stage.layers) else "", state.note if state is not None else ""]
        return {"engine": "sglang", **pool.to_json(), "max_concurrency": pool.max_concurrency(p.context),
                "log": pool.log(), "refusal": refusal, "command": cmd, "note": " ".join(n for n in notes if n)}
    if name == "llama.cpp":
        if isinstance(n_ubatch, bool) or not isinstance(n_ubatch, int) or not 1 <= n_ubatch <= 2**20:
            raise ValueError(f"n_ubatch must be a whole number from 1 to 1,048,576, not {n_ubatch!r:.30}.")
        kind = cache_type(p.kv_dtype)
        if p.batch > MAX_SEQUENCES:
            raise ValueError(f"llama.cpp serves at most {MAX_SEQUENCES} sequences at once (-np), not {p.batch:,}; "
                             "lower the batch.")
        if p.context * p.batch > MAX_CTX:
            raise ValueError(f"llama.cpp's context (-c, every sequence's together) is at most {MAX_CTX:,} tokens, not "
                             f"{p.context * p.batch:,}; lower the context or the batch.")
        state = engine_state(p.arch, 1, "llama.cpp", p.state_dtype)  # its layers split over GPUs, not their heads
        caches = llamacpp_caches(p.arch, p.kv_dtype, p.context * p.batch, n_ubatch, p.batch)  # -c is every sequence's
        recurrent = llamacpp_recurrent(p.arch, state, p.batch) if state is not None else None
        cmd = ["llama-server", "-m", model if model.endswith(".gguf") else f"{model.split('/')[-1]}.gguf",
               "-c", str(p.context * p.batch), "-ub", str(n_ubatch)]
        cmd += ["-b", str(n_ubatch)] if n_ubatch > N_BATCH else []  # llama.cpp caps -ub at -b (2,048 by default)
        cmd += ["-np", str(p.batch)] if p.batch > 1 or state is not None else []  # unnamed: 4 state cells
        cmd += ["-ngl", "999", "-ctk", kind, "-ctv", kind]
        cmd += ["-fa", "on"] if kind.startswith("q") else []  # a quantised V needs flash attention
        kept = {"recurrent": recurrent.to_json(), "state": state.to_json(), "note": state.note} if state else {}
        return {"engine": "llama.cpp", "n_ubatch": n_ubatch, "caches": [c.to_json() for c in caches], **kept,
                "bytes": sum(c.bytes for c in caches) + (recurrent.bytes if recurrent is not None else 0),
                "log": [c.log(p.batch, kind) for c in caches] + ([recurrent.log()] if recurrent is not None else []),
                "refusal": "", "command": cmd}
    raise ValueError(f"engine {name!r:.30} is not known; choose one of {', '.join(ENGINES)}.")
