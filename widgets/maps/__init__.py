"""The heatmaps: one mosaic image of every head, one head large, tile titles, hover, colormaps."""
