"""The configuration flags shared by the CLI's commands, and the parser that fails in one line."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from core.config import DTYPE_BYTES, PHASES, AttentionConfig
from core.presets import find_preset

PROG = "attention-sandbox"


class UsageError(Exception):
    """Bad command-line input: exit 2 with this one sentence on stderr."""


class OneLineParser(argparse.ArgumentParser):
    """argparse prints usage plus an error; we print one clear line and exit 2."""

    def error(self, message: str) -> NoReturn:
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
    g.add_argument("--bias", action=argparse.BooleanOptionalAction, default=None, help="projection biases")
    g.add_argument("--phase", choices=PHASES, help="prefill (default) or decode")
    g.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "mps"], help="where to time")


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
}


def config_from_args(args: argparse.Namespace, default_dtype: str) -> AttentionConfig:
    """Defaults, then the preset, then explicit flags. Raises ValueError on a bad combination."""
    fields: dict[str, object] = {"dtype": default_dtype}
    if args.preset is not None:  # '--preset ""' is a mistake to name, not a preset to ignore
        fields.update(find_preset(args.preset).fields)
    explicit = {FLAG_FIELDS[k]: v for k, v in vars(args).items() if k in FLAG_FIELDS and v is not None}
    if "n_heads" in explicit and "n_kv_heads" not in explicit and not args.preset:
        explicit["n_kv_heads"] = explicit["n_heads"]
    fields.update(explicit)
    return AttentionConfig(**fields)  # type: ignore[arg-type]
