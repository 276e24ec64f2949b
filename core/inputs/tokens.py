"""A simple tokenizer for random-weight mode: words, numbers and punctuation marks.

Torch-free so widgets can show the tokens; core/inputs/embedding.py turns them into vectors.
"""

from __future__ import annotations

import re

MAX_DISPLAY_TOKENS = 256  # the most tokens a heatmap shows (the text beyond is counted, not drawn)
DEFAULT_TEXT = "The chef who trained in Lucknow cooked biryani"
# A word (letters, digits, apostrophes), or any single visible character that is not a space.
_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)*|[^\w\s]|_", re.UNICODE)


def simple_tokenize(text: str) -> list[str]:
    """'The chef, 2 cooks!' -> ['The', 'chef', ',', '2', 'cooks', '!']. Control characters are dropped."""
    cleaned = "".join(ch if ch.isprintable() or ch.isspace() else " " for ch in text)
    return _TOKEN.findall(cleaned)


def display_tokens(tokens: list[str], seq_len: int, limit: int) -> list[str]:
    """The tokens the heatmaps show: the first min(seq_len, limit) of the text."""
    return tokens[: max(0, min(seq_len, limit))]
