"""How serving engines allocate a model's KV cache: one small module an engine, each rule written from the engine's
own source (cited in it), so a plan can say the engine's number beside the model's."""
