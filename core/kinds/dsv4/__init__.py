"""DeepSeek-V4's attention (a window in every layer, compressed sparse or heavily compressed entries beyond it) as a
layer kind."""
