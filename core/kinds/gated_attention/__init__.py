"""Gated softmax attention (Qwen3-Next's and Qwen3.5's full layers): standard attention with a sigmoid output gate."""
