"""Presets, texts and icons the app ships."""

from pathlib import Path

TEXTS = Path(__file__).resolve().parent / "texts"
EVAL_TEXT = TEXTS / "eval_alice.txt"  # the KV frontier's evaluation text (texts/SOURCES.md)
CALIB_TEXT = TEXTS / "calib_declaration.txt"  # its calibration text, for the data-aware latent fit
