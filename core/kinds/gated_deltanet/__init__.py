"""Gated DeltaNet (Qwen3-Next, Qwen3.5, OLMo-Hybrid): a linear-attention layer with a delta-rule matrix state."""
