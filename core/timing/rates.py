"""Rough sustained rates, only to estimate a timing before it runs (and refuse one of minutes): torch-free, so the
estimate is made wherever the layer is counted."""

from __future__ import annotations

ASSUMED_FLOPS_PER_S = {"cpu": 1.0e11, "mps": 2.0e12, "cuda": 1.0e14}
