"""The controls: architecture sliders, workload, layout, MLA widths, model picker."""
