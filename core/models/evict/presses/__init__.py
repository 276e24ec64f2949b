"""The eviction methods, one module each, every one scoring a layer's prefilled cache as kvpress does."""
