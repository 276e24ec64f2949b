"""Timing an expert would trust: the timer, its statistics and noise, the CPU's load and this machine's roof."""
