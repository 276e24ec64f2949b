"""Lightning attention (MiniMax-01): decayed linear attention with an output gate."""
