"""Local/global layer patterns: which layers of a model attend through a sliding window.

Spelled as the CLI and the workspace store them:
- "global": every layer sees every earlier token (the default);
- "local": every layer is windowed (Mistral-7B-v0.1);
- "alternate": local, global, local, ... (layer 0 local: Gemma 2, gpt-oss);
- "N:1": N local layers then one global (Gemma 3 is "5:1": layer i global when (i + 1) % 6 == 0);
- an explicit list, one letter a layer: "LLG..." (L local, G global; commas and spaces ignored).
"""

from __future__ import annotations

import re

NAMED = ("global", "local", "alternate")
_RATIO = re.compile(r"^\s*(\d{1,5})\s*:\s*1\s*$")


def canonical_pattern(pattern: object) -> str:
    """The pattern in its stored spelling ("global", "local", "alternate", "5:1" or "LLG..."), or a ValueError."""
    if not isinstance(pattern, str):
        raise ValueError("the layer pattern must be text: global, local, alternate, N:1 or a list of L and G.")
    text = pattern.strip().lower()
    if text in NAMED:
        return text
    ratio = _RATIO.match(text)
    if ratio:
        n = int(ratio.group(1))
        if not 1 <= n <= 4095:
            raise ValueError(f"a pattern N:1 needs N from 1 to 4095 local layers per global one, not {n}.")
        return f"{n}:1"
    letters = re.sub(r"[\s,]", "", text).upper()
    if not letters:
        raise ValueError("the layer pattern names no layer; give global, local, alternate, N:1 or a list of L and G.")
    if set(letters) - {"L", "G"} or len(letters) > 4096:
        shown = pattern if len(pattern) <= 30 else pattern[:27] + "..."
        raise ValueError(f"layer pattern {shown!r} is not known; choose global, local, alternate, N:1 (such as 5:1) "
                         "or one letter a layer, L local and G global (such as LLG).")
    return letters


def local_layers(pattern: str, n_layers: int) -> tuple[bool, ...]:
    """For each of n_layers layers, whether it is local under the canonical pattern."""
    if pattern == "global":
        return (False,) * n_layers
    if pattern == "local":
        return (True,) * n_layers
    if pattern == "alternate":
        return tuple(i % 2 == 0 for i in range(n_layers))
    if pattern.endswith(":1"):
        period = int(pattern[:-2]) + 1
        return tuple((i + 1) % period != 0 for i in range(n_layers))
    if len(pattern) != n_layers:
        raise ValueError(f"the layer pattern lists {len(pattern)} layers but the model has {n_layers}; "
                         f"give one letter (L or G) for each of the {n_layers} layers.")
    return tuple(c == "L" for c in pattern)
