"""Layer kinds: one package per kind of attention layer (core/kinds/registry.py lists them), each counting, caching, running and timing itself."""
