"""The compress protocol's text: the evaluation text tokenized whole by the model's tokenizer (no special tokens),
its first C tokens the context and the next N the continuation. Defaults fixed so that figures reproduce."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.models.source import LoadedModel

CONTEXT = 1024
CONTINUATION = 256


@dataclass(frozen=True)
class CompressText:
    context: torch.Tensor  # (1, C) token ids
    continuation: torch.Tensor  # (1, N) token ids, at positions C..C+N-1

    @property
    def length(self) -> int:
        return int(self.context.shape[1])


def compress_text(m: LoadedModel, text: str, context: int = CONTEXT, continuation: int = CONTINUATION) -> CompressText:
    """The context and continuation of `text` for `m`; a ValueError that says what to change when it is short."""
    if not 16 <= context <= 8192 or not 2 <= continuation <= 4096:
        raise ValueError(f"the context is 16 to 8,192 tokens and the continuation 2 to 4,096, not {context:,} and "
                         f"{continuation:,}.")
    if context + continuation > m.max_tokens:
        raise ValueError(f"{m.name} reads at most {m.max_tokens:,} tokens and the continuation takes {continuation:,}; "
                         f"give a context of at most {m.max_tokens - continuation:,} tokens.")
    ids = m.tokenizer(text, add_special_tokens=False)["input_ids"]
    if len(ids) < context + continuation:
        raise ValueError(f"the text makes {len(ids):,} tokens for {m.name}; the compress protocol needs "
                         f"{context + continuation:,} ({context:,} of context and {continuation:,} to follow): give a "
                         "longer text or a shorter context.")
    return CompressText(torch.tensor([ids[:context]]), torch.tensor([ids[context: context + continuation]]))
