"""A model folder's config.json read before anything is loaded: every field the app uses checked
for type and range (so a broken config is named as such, not blamed on the tokenizer), and the
memory the load would take estimated and compared with what the machine has, so a huge config is
refused with the bytes it needs instead of growing until the kernel kills the app.

Torch-free. The parameter count is the architecture's own formula (llama, mistral, qwen2: embeddings,
attention, a gated MLP and RMSNorms, an output head unless tied; bert: embeddings with positions and
token types, attention with biases, MLP, LayerNorms, pooler); tests check it against the real
module built on the meta device.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.arch.model import MAX_LAYERS
from core.files import schema
from core.format import format_bytes

LOAD_BYTES_PER_PARAM = 4  # the app loads weights as float32
CAPTURE_TOKENS = 1024  # the longest text the app runs (core/models/inspect.py MAX_MODEL_TOKENS)
MAX_WIDTH = 2**20
MAX_VOCAB = 2**24


@dataclass(frozen=True)
class FolderModel:
    """What config.json says, checked."""

    model_type: str
    d_model: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    max_positions: int
    tied: bool
    qkv_bias: bool  # qwen2: biases on q, k and v
    type_vocab: int = 0  # bert: token-type embeddings

    @property
    def params(self) -> int:
        d, L, H, K, h, inner, V = (self.d_model, self.n_layers, self.n_heads, self.n_kv_heads, self.head_dim,
                                   self.intermediate, self.vocab)
        if self.model_type == "bert":
            embeddings = V * d + self.max_positions * d + self.type_vocab * d + 2 * d
            layer = 4 * (d * d + d) + 2 * d + (d * inner + inner) + (inner * d + d) + 2 * d
            return embeddings + L * layer + (d * d + d)  # + pooler
        attention = d * H * h + 2 * d * K * h + H * h * d + ((H + 2 * K) * h if self.qkv_bias else 0)
        layer = attention + 3 * d * inner + 2 * d  # gated MLP, two RMSNorms
        return V * d + L * layer + d + (0 if self.tied else V * d)

    @property
    def capture_bytes(self) -> int:
        """Every layer's attention maps for the longest text, as the app keeps them (float32)."""
        tokens = min(self.max_positions, CAPTURE_TOKENS)
        return self.n_layers * self.n_heads * tokens * tokens * 4

    @property
    def load_bytes(self) -> int:
        return self.params * LOAD_BYTES_PER_PARAM + self.capture_bytes


# The config's other numbers that the model's own code reads, with the range in which it computes anything sound:
# rope_theta NaN or rms_norm_eps -1 ran to the end with NaN everywhere (and "JS divergence 0 bits"), sliding_window
# -5 passed every check and failed in the forward.
NUMBERS = {"rope_theta": (1e-6, 1e12), "rms_norm_eps": (1e-30, 0.5), "layer_norm_eps": (1e-30, 0.5),
           "initializer_range": (0.0, 10.0), "attention_dropout": (0.0, 1.0), "hidden_dropout_prob": (0.0, 1.0),
           "attention_probs_dropout_prob": (0.0, 1.0), "partial_rotary_factor": (1e-6, 1.0)}
WHOLES = {"sliding_window": (1, 2**24), "max_window_layers": (0, 2**16), "pad_token_id": (0, 2**31),
          "bos_token_id": (0, 2**31), "eos_token_id": (0, 2**31)}
FLAGS = ("use_sliding_window", "use_cache", "attention_bias", "mlp_bias")
ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "longrope", "llama3")


def check_numbers(cfg: dict[str, Any], where: str) -> None:
    """Every other config field the app's models read: its type and range, finite (a ValueError names the first)."""
    try:
        for key, (lo, hi) in NUMBERS.items():
            if cfg.get(key) is not None:
                schema.number(cfg[key], f"{where}: {key}", lo, hi)
        for key, (lo, hi) in WHOLES.items():
            value = cfg.get(key)
            if isinstance(value, list) and key == "eos_token_id":  # several end tokens
                schema.sequence(value, f"{where}: {key}", 64)
                for i, v in enumerate(value):
                    schema.whole(v, f"{where}: {key}[{i}]", lo, hi)
            elif value is not None:
                schema.whole(value, f"{where}: {key}", lo, hi)
        for key in FLAGS:
            if cfg.get(key) is not None:
                schema.flag(cfg[key], f"{where}: {key}")
        for key in ("rope_parameters", "rope_scaling"):  # transformers 5 nests rope_theta here
            rope = cfg.get(key)
            if rope is None:
                continue
            rope = schema.mapping(rope, f"{where}: {key}")
            if rope.get("rope_theta") is not None:
                schema.number(rope["rope_theta"], f"{where}: {key}.rope_theta", *NUMBERS["rope_theta"])
            for name in ("factor", "beta_fast", "beta_slow", "attention_factor", "low_freq_factor", "high_freq_factor"):
                if rope.get(name) is not None:
                    schema.number(rope[name], f"{where}: {key}.{name}", 1e-6, 1e6)
            if rope.get("original_max_position_embeddings") is not None:
                schema.whole(rope["original_max_position_embeddings"], f"{where}: {key}.original_max_position_embeddings",
                             1, 2**24)
            if rope.get("rope_type", rope.get("type")) is not None:
                schema.choice(rope.get("rope_type", rope.get("type")), f"{where}: {key}.rope_type", ROPE_TYPES)
    except ValueError as exc:
        raise ValueError(f"{exc}; fix the config or choose another folder.") from None


def read_config(cfg: dict[str, Any], name: str) -> FolderModel:
    """config.json -> FolderModel, or ValueError naming the field that is wrong."""
    where = f"{name}/config.json"

    def field(key: str, lo: int, hi: int, default: Any = None) -> int:
        value = cfg.get(key, default)
        if value is None:
            raise ValueError(f"{where} has no {key}; the folder cannot be loaded.")
        try:
            return schema.whole(value, f"{where}: {key}", lo, hi)
        except ValueError as exc:
            raise ValueError(f"{exc}; fix the config or choose another folder.") from None

    model_type = str(cfg.get("model_type"))
    d = field("hidden_size", 1, MAX_WIDTH)
    layers = field("num_hidden_layers", 1, MAX_LAYERS)
    heads = field("num_attention_heads", 1, 2**16)
    kv = field("num_key_value_heads", 1, heads, heads) if model_type != "bert" else heads
    if heads % kv:
        raise ValueError(f"{where}: num_key_value_heads {kv} does not divide num_attention_heads {heads}; "
                         "the folder cannot be loaded.")
    explicit = cfg.get("head_dim")
    if explicit is None:
        if d % heads:
            raise ValueError(f"{where}: num_attention_heads {heads} does not divide hidden_size {d} and there is "
                             "no head_dim; the folder cannot be loaded.")
        head_dim = d // heads
    else:
        head_dim = field("head_dim", 1, MAX_WIDTH)
    inner = field("intermediate_size", 1, 2**24)
    vocab = field("vocab_size", 1, MAX_VOCAB)
    positions = field("max_position_embeddings", 1, 2**24, 512 if model_type == "bert" else 2048)
    tied = cfg.get("tie_word_embeddings", model_type != "bert")
    if not isinstance(tied, bool):
        raise ValueError(f"{where}: tie_word_embeddings must be true or false, not {tied!r:.30}.")
    types = field("type_vocab_size", 0, 2**16, 2) if model_type == "bert" else 0
    check_numbers(cfg, where)
    return FolderModel(model_type, d, layers, heads, kv, head_dim, inner, vocab, positions, tied,
                       qkv_bias=model_type == "qwen2", type_vocab=types)


def check_fits(model: FolderModel, name: str, free_bytes: int, fraction: float) -> None:
    """Refuse, before loading, a model whose weights and attention maps would not fit."""
    need, limit = model.load_bytes, int(free_bytes * fraction)
    if need > limit:
        raise ValueError(f"{name} needs about {format_bytes(need)} to load ({model.params:,} parameters as float32 "
                         f"and the attention maps of {min(model.max_positions, CAPTURE_TOKENS):,} tokens), but this "
                         f"machine has {format_bytes(free_bytes)} free (the app uses at most {fraction:.0%}); "
                         "choose a smaller model.")
