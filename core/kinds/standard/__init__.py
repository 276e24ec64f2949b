"""The standard attention layer (MHA/GQA/MQA, windows, sinks): its counts, kernels, masks and timing."""
