"""The configuration flags shared by the CLI's commands, and the parser that fails in one line."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import NoReturn

from core.arch.config import DTYPE_BYTES, PHASES, AttentionConfig
from core.arch.formats import KV_FORMATS
from core.arch.presets import find_preset
from core.kinds.mla.spec import MLADims

PROG = "attention-sandbox"


class UsageError(Exception):
    """Bad command-line input: exit 2 with this one sentence on stderr."""


class OneLineParser(argparse.ArgumentParser):
    """argparse prints usage plus an error; we print one clear line and exit 2."""

    def error(self, message: str) -> NoReturn:
        if "expected one argument" in message:
            message += " (a value that starts with '-' is written --flag=VALUE, such as --layer-pattern=-1:1)"
        if len(message) > 300:  # argparse echoes the value: a 5,000-digit number is cut, not printed
            message = message[:200] + f"… ({len(message):,} characters)"
        raise UsageError(message)


def seed_value(text: str) -> int:
    """--seed: a whole number from 0 to 2^32 - 1 (what the probe's random generator takes)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seed takes a whole number from 0 to {2**32 - 1:,}, not {text[:20]!r}") from None
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"--seed must be from 0 to {2**32 - 1:,}, not {text[:24]}; choose another seed")
    return value


def fail(message: str) -> NoReturn:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    sys.exit(2)


def add_config_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("configuration (explicit flags override --preset)")
    g.add_argument("--preset", help="fill the configuration from a preset (see --list-presets)")
    g.add_argument("--d-model", type=int, help="model width (default 768)")
    g.add_argument("--heads", type=int, help="query heads (default 12)")
    g.add_argument("--kv-heads", type=int, help="key/value heads (default: --heads, i.e. MHA)")
    g.add_argument("--seq-len", type=int, help="tokens per sequence (default 1024)")
    g.add_argument("--batch", type=int, help="sequences (default 1)")
    g.add_argument("--layers", type=int, help="layers, for the KV cache (default 12)")
    g.add_argument("--dtype", choices=list(DTYPE_BYTES), help="default: bfloat16 on CUDA, float32 elsewhere")
    g.add_argument("--causal", action=argparse.BooleanOptionalAction, default=None, help="causal mask")
    g.add_argument("--bias", nargs="?", const="all", default=None, metavar="none|qkv|all",
                   help="projection biases: none, qkv (q, k and v only: Qwen2) or all four (GPT-2, gpt-oss); "
                        "--bias alone is all")
    g.add_argument("--no-bias", dest="bias", action="store_const", const="none", help="no projection biases")
    g.add_argument("--head-dim", type=int, help="a head width of its own (default: d_model / heads); "
                                                "heads then need not divide d_model")
    g.add_argument("--qk-norm", action=argparse.BooleanOptionalAction, default=None,
                   help="RMSNorm over head_dim on q and k (Qwen3, Gemma 3)")
    g.add_argument("--window", type=int, help="sliding window W: keys a query sees, itself included "
                                              "(with no --layer-pattern, every layer is local)")
    g.add_argument("--layer-pattern", metavar="global|local|alternate|N:1|LIST",
                   help="which layers are local: alternate (layer 0 local), 5:1 (Gemma 3), or one letter a layer "
                        "such as LLG (L local, G global)")
    g.add_argument("--sinks", action=argparse.BooleanOptionalAction, default=None,
                   help="learned attention sinks, one logit per head (gpt-oss)")
    g.add_argument("--kv-dtype", metavar="FORMAT", help="the KV cache's format: " + ", ".join(KV_FORMATS)
                                                       + " (default: --dtype); timing still runs in --dtype")
    g.add_argument("--attention", choices=["standard", "mla"],
                   help="standard (MHA/GQA/MQA: --heads, --kv-heads) or mla (multi-head latent attention, DeepSeek: "
                        "the widths below, DeepSeek-V3's by default)")
    for flag, what in MLA_FLAGS.items():
        g.add_argument(f"--{flag}", type=int, metavar="N", help=what)
    g.add_argument("--phase", choices=PHASES, help="prefill (default) or decode")
    g.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "mps"], help="where to time")


MLA_FLAGS = {  # flag -> help; each sets the MLADims field of the same name (and implies --attention mla)
    "q-lora-rank": "MLA: the low-rank query's width (0: a plain W_q; DeepSeek-V3 1536)",
    "kv-lora-rank": "MLA: the cached latent's width (DeepSeek-V3 512)",
    "qk-nope-dim": "MLA: each head's query/key width without position (128)",
    "qk-rope-dim": "MLA: the RoPE part of each query and of the one shared key, even (64)",
    "v-head-dim": "MLA: each head's value width (128)",
}
MLA_FLAG_FIELDS = {"q_lora_rank": "q_lora_rank", "kv_lora_rank": "kv_lora_rank", "qk_nope_dim": "qk_nope_head_dim",
                   "qk_rope_dim": "qk_rope_head_dim", "v_head_dim": "v_head_dim"}

FLAG_FIELDS = {
    "d_model": "d_model",
    "heads": "n_heads",
    "kv_heads": "n_kv_heads",
    "seq_len": "seq_len",
    "batch": "batch_size",
    "layers": "n_layers",
    "dtype": "dtype",
    "causal": "causal",
    "bias": "bias",
    "phase": "phase",
    "head_dim": "explicit_head_dim",
    "qk_norm": "qk_norm",
    "window": "window",
    "layer_pattern": "layer_pattern",
    "sinks": "sinks",
    "kv_dtype": "kv_dtype",
}


def config_from_args(args: argparse.Namespace, default_dtype: str) -> AttentionConfig:
    """Defaults, then the preset, then explicit flags. Raises ValueError on a bad combination."""
    fields: dict[str, object] = {"dtype": default_dtype}
    if args.preset is not None:  # '--preset ""' is a mistake to name, not a preset to ignore
        fields.update(find_preset(args.preset).fields)
    explicit = {FLAG_FIELDS[k]: v for k, v in vars(args).items() if k in FLAG_FIELDS and v is not None}
    if "n_heads" in explicit and "n_kv_heads" not in explicit and not args.preset:
        explicit["n_kv_heads"] = explicit["n_heads"]
    if "window" in explicit and "layer_pattern" not in explicit and fields.get("layer_pattern", "global") == "global":
        explicit["layer_pattern"] = "local"  # --window alone: every layer local (Mistral-7B-v0.1)
    if "window" in explicit and "causal" not in explicit:
        explicit["causal"] = True  # a window is causal; only an explicit --no-causal is refused
    fields.update(explicit)
    fields["mla"] = mla_from_args(args, fields.get("mla"))  # type: ignore[arg-type]
    if fields["mla"] is not None:
        given = [flag for flag, name in (("--kv-heads", "n_kv_heads"), ("--head-dim", "explicit_head_dim"))
                 if name in explicit and explicit[name] != (fields.get("n_heads") if name == "n_kv_heads" else None)]
        if given:
            raise ValueError(f"an MLA layer rebuilds one key and value per query head from its latent; drop "
                             f"{' and '.join(given)} (set --kv-lora-rank and the head widths) or use --attention standard.")
        fields.pop("n_kv_heads", None)
    return AttentionConfig(**fields)  # type: ignore[arg-type]


def mla_from_args(args: argparse.Namespace, preset: MLADims | None) -> MLADims | None:
    """--attention and the MLA width flags over the preset's MLA (or DeepSeek-V3's widths)."""
    widths = {MLA_FLAG_FIELDS[k]: v for k, v in vars(args).items() if k in MLA_FLAG_FIELDS and v is not None}
    attention = getattr(args, "attention", None)
    if attention == "standard":
        if widths:
            raise ValueError(f"--{next(f for f, n in MLA_FLAG_FIELDS.items() if n in widths).replace('_', '-')} is an "
                             "MLA width; drop it or use --attention mla.")
        return None
    if attention is None and not widths:
        return preset
    try:
        return replace(preset or MLADims(), **widths)
    except ValueError as exc:  # name the flag beside the field: "MLA's qk_rope_head_dim (--qk-rope-dim) ..."
        text = str(exc)
        for dest, field in MLA_FLAG_FIELDS.items():
            text = text.replace(f"MLA's {field} ", f"MLA's {field} (--{dest.replace('_', '-')}) ", 1)
        raise ValueError(text) from None
