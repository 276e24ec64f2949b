"""Token eviction on real weights: the presses serving stacks use (kvpress's definitions) scored on one
prefill of a context, and the loss of the text that follows against each compressed cache."""
