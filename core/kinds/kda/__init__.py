"""KDA, Kimi Delta Attention (Kimi Linear): a delta rule with a per-channel decay and low-rank gates."""
