"""A hybrid stack's recurrent layers as an engine keeps them: one layer's convolution inputs and recurrent state for
one sequence on one GPU, in the engine's own formats. Every engine's pool starts from these.

The formats, from the engines' source:
- vLLM (vllm/model_executor/layers/mamba/mamba_utils.py, MambaStateDtypeCalculator; vllm/config/cache.py): the
  convolution in mamba_cache_dtype, "auto" = the model's dtype; the state in mamba_ssm_cache_dtype, which takes
  "auto" (the convolution's dtype) or float32. KDA's state is float32 whatever it is told.
- SGLang (python/sglang/srt/configs/mamba_utils.py): the convolution in bfloat16 (SGLANG_MAMBA_CONV_DTYPE); the state
  in --mamba-ssm-dtype, float32 by default, or bfloat16.
- llama.cpp (src/llama-model.cpp, create_memory): both in GGML_TYPE_F32 always; -ctk and -ctv reach only the KV cache.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from core.arch.formats import STATE_FORMATS, kv_format_bytes
from core.arch.model import Architecture
from core.kinds.registry import kind_of

ENGINE_TITLES = {"vllm": "vLLM", "sglang": "SGLang", "llama.cpp": "llama.cpp"}
CONV_FORMAT = {"vllm": "bfloat16", "sglang": "bfloat16", "llama.cpp": "float32"}
STATE_TAKES = {"vllm": ("float32", "bfloat16"), "sglang": ("float32", "bfloat16"), "llama.cpp": ("float32",)}


@dataclass(frozen=True)
class EngineState:
    engine: str
    layers: int  # the recurrent layers
    conv_bytes: int  # one layer's convolution inputs (k - 1 of them), one sequence, one GPU
    recurrent_bytes: int  # one layer's recurrent state, one sequence, one GPU
    conv_format: str
    state_format: str
    asked_format: str  # the state format the plan asked for (an engine that keeps its own says so)

    @property
    def layer_bytes(self) -> int:
        return self.conv_bytes + self.recurrent_bytes

    @property
    def sequence_bytes(self) -> int:
        """Every recurrent layer's state for one sequence on one GPU."""
        return self.layers * self.layer_bytes

    @property
    def note(self) -> str:
        """A sentence when the engine keeps the state in another format than the plan's ('' when it does not)."""
        if self.state_format == self.asked_format:
            return ""
        return (f"{ENGINE_TITLES[self.engine]} keeps this model's recurrent state in {self.state_format}, not the "
                f"{self.asked_format} the plan counts; its figures here are in {self.state_format}.")

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "layer_bytes": self.layer_bytes, "sequence_bytes": self.sequence_bytes}


def engine_state(arch: Architecture, tp: int, engine: str, state_format: str) -> EngineState | None:
    """The model's recurrent layers as `engine` keeps them on one GPU of a TP group (None: it has none); a ValueError
    with a sentence for a layer the engine does not serve, or a state format it does not keep."""
    if engine not in ENGINE_TITLES:
        raise ValueError(f"engine {engine!r:.30} is not known; choose one of {', '.join(ENGINE_TITLES)}.")
    mixers = [s for s in arch.layers if kind_of(s).has_state]
    if not mixers:
        return None
    title = ENGINE_TITLES[engine]
    for spec in set(mixers):
        kind_of(spec).check_tp(spec, tp)  # its heads must share out evenly over the TP group
    for spec in mixers:
        kind = kind_of(spec)
        if engine not in kind.engines:
            others = " or ".join(ENGINE_TITLES[e] for e in kind.engines)
            raise ValueError(f"{title} serves no model with {kind.title} layers; plan this model with {others}, or "
                             "without an engine.")
    if state_format not in STATE_FORMATS:
        raise ValueError(f"state dtype {state_format!r:.30} is not known; choose one of {', '.join(STATE_FORMATS)}.")
    if engine != "llama.cpp" and state_format not in STATE_TAKES[engine]:
        raise ValueError(f"{title} keeps a recurrent state in {' or '.join(STATE_TAKES[engine])}, not "
                         f"{state_format}; choose one of those as the state format.")
    layers = {}
    for spec in set(mixers):
        kind = kind_of(spec)
        kept = kind.engine_state_formats.get(engine, state_format if engine != "llama.cpp" else "float32")
        conv = kv_format_bytes(kind.engine_conv_values(spec, tp), CONV_FORMAT[engine])
        layers[spec] = (conv, kv_format_bytes(kind.engine_recurrent_values(spec, tp), kept), kept)
    if len(set(layers.values())) > 1:
        raise ValueError(f"this model's recurrent layers keep states of different sizes, and {title} sizes its pool "
                         "for one; plan it without an engine.")
    conv, recurrent, kept = next(iter(layers.values()))
    return EngineState(engine, len(mixers), conv, recurrent, CONV_FORMAT[engine], kept, state_format)
