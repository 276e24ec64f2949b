"""The numbers beside the maps: costs, timing, fidelity, the attention mode's badge."""
