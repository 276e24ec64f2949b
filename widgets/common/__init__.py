"""Small widgets and helpers every tab uses: axes, ticks, steady labels, wheel-safe controls, frame gate."""
