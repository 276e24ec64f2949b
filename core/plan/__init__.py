"""The GPU planner: memory per GPU under tensor and pipeline parallelism, the GPU catalogue, rooflines, pins' plans."""
