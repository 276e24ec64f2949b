"""The configuration flags shared by the CLI's commands, and the parser that fails in one line."""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields, is_dataclass, replace
from typing import NoReturn

from core.arch.config import DTYPE_BYTES, PHASES, AttentionConfig
from core.arch.formats import KV_FORMATS, STATE_FORMATS
from core.arch.presets import find_preset
from core.kinds.kind import CliFlag, LayerKind
from core.kinds.registry import KINDS, OWN_LAYER_KINDS
from core.kinds.widths import KindWidths

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
    g.add_argument("--state-dtype", metavar="FORMAT", choices=STATE_FORMATS,
                   help="a recurrent layer's state (Gated DeltaNet, Mamba ...): " + ", ".join(STATE_FORMATS)
                        + " (default float32, as engines keep it)")
    g.add_argument("--attention", choices=list(OWN_LAYER_KINDS),
                   help="the layer kind: " + "; ".join(f"{k.name} ({k.cli_help})" for k in OWN_LAYER_KINDS.values())
                        + " (recurrent layers come with the hybrid presets)")
    for flag in WIDTH_FLAGS.values():
        g.add_argument(f"--{flag.flag}", type=int, metavar="N", help=flag.help)
    g.add_argument("--phase", choices=PHASES, help="prefill (default) or decode")
    g.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "mps"], help="where to time")


# Flags that set a layer kind's widths (and imply --attention <kind>): argparse's dest -> flag, and the kinds that
# take it in the registry's order (a kind that builds on another takes its flags too: DSA MLA's).
WIDTH_FLAGS: dict[str, CliFlag] = {f.flag.replace("-", "_"): f for kind in KINDS.values() for f in kind.cli_flags}
WIDTH_KINDS: dict[str, list[LayerKind]] = {}
for _kind in KINDS.values():
    for _flag in _kind.cli_flags:
        WIDTH_KINDS.setdefault(_flag.flag.replace("-", "_"), []).append(_kind)

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
    "state_dtype": "state_dtype",
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
    fields["widths"] = widths_from_args(args, fields.get("widths"))  # type: ignore[arg-type]
    widths = fields["widths"]
    if widths is not None:
        given = [flag for flag, name in (("--kv-heads", "n_kv_heads"), ("--head-dim", "explicit_head_dim"))
                 if name in explicit and explicit[name] != (fields.get("n_heads") if name == "n_kv_heads" else None)]
        if given:
            raise ValueError(f"{widths.heads_rule}; drop {' and '.join(given)} (set its widths) or use --attention "
                             "standard.")
        fields.pop("n_kv_heads", None)
    return AttentionConfig(**fields)  # type: ignore[arg-type]


def widths_from_args(args: argparse.Namespace, preset: KindWidths | None) -> KindWidths | None:
    """--attention and a kind's width flags over the preset's widths (or the kind's widths type's defaults)."""
    given = {dest: v for dest, v in vars(args).items() if dest in WIDTH_FLAGS and v is not None}
    attention = getattr(args, "attention", None)
    takers = [k.name for k in KINDS.values() if all(k in WIDTH_KINDS[dest] for dest in given)] if given else []
    wanted = attention or (takers[0] if takers else None)  # the first kind that takes every flag given
    stray = [dest for dest in given if wanted not in [k.name for k in WIDTH_KINDS[dest]]]
    if stray:
        kind = WIDTH_KINDS[stray[0]][0]
        raise ValueError(f"--{WIDTH_FLAGS[stray[0]].flag} sets a width of {kind.short} layers; drop it or use "
                         f"--attention {kind.name}.")
    if wanted is None:
        return preset
    widths_type = KINDS[wanted].widths_type
    if widths_type is None:
        return None
    # the preset's own widths where they are this kind's; another kind's widths carry over the fields both have
    # (DeepSeek-V2-Lite's MLA ranks into DSA), so --attention mla on a DSA preset drops its indexer
    shared = {k: v for k, v in preset.to_dict().items() if k in {f.name for f in fields(widths_type)}} \
        if preset is not None and is_dataclass(widths_type) else {}
    start = preset if type(preset) is widths_type else widths_type(**shared) if shared else widths_type()
    try:
        return replace(start, **{WIDTH_FLAGS[dest].field: v for dest, v in given.items()})  # type: ignore[type-var]
    except ValueError as exc:  # name the flag beside the field: "MLA's qk_rope_head_dim (--qk-rope-dim) ..."
        text = str(exc)
        for dest in given:
            field = WIDTH_FLAGS[dest].field
            text = text.replace(f"'s {field} ", f"'s {field} (--{WIDTH_FLAGS[dest].flag}) ", 1)
        raise ValueError(text) from None
