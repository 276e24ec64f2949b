"""Multi-head latent attention (DeepSeek-V2/V3, Kimi K2): its spec, counts, kernel (naive and absorbed) and timing."""
