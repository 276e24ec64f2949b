"""Layer kinds: one package per kind of attention layer (standard, mla), each counting, caching, running and timing itself."""
