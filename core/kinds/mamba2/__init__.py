"""Mamba-2 / SSD (Nemotron-H, Granite 4.0-H, Falcon-H1, Bamba): a state-space mixer with a fixed state a sequence."""
