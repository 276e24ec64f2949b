"""The Long tab: the long map, its zoom, per-head figures and the decode timeline."""
