"""Changes to a real model's KV cache: quantised formats, windows with sinks, latent projections, and how they apply."""
