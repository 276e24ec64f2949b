"""The export dialog and the frame an exported heatmap carries."""
