"""Long contexts: a layer's attention over thousands of tokens without its T x T matrix, its inputs and its cost up front."""
