"""Mamba-1 (Jamba): a selective state-space mixer with a fixed state a sequence."""
