"""What a model's attention is: one LayerSpec per layer (core/arch/layer.py), gathered into an
Architecture (core/arch/model.py). Counts, views, pins and reports read these."""
