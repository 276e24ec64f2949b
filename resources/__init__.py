"""Presets, texts and icons the app ships."""

from functools import lru_cache
from pathlib import Path

TEXTS = Path(__file__).resolve().parent / "texts"
EVAL_TEXT = TEXTS / "eval_alice.txt"  # the KV frontier's evaluation text (texts/SOURCES.md)
CALIB_TEXT = TEXTS / "calib_declaration.txt"  # its calibration text, for the data-aware latent fit
ALICE_CONTINUED = TEXTS / "alice_continued.txt"  # the rest of Chapter II, Chapters III and IV (texts/SOURCES.md)


@lru_cache(maxsize=1)
def long_text() -> str:
    """The Long tab's shipped text: Alice's first four chapters, 10,470 SmolLM2 tokens (the evaluation text
    and its continuation, one story)."""
    eval_text = EVAL_TEXT.read_text(encoding="utf-8").rstrip()
    return eval_text + " " + ALICE_CONTINUED.read_text(encoding="utf-8")
