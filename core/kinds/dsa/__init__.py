"""DeepSeek sparse attention (MLA with a lightning indexer) as a layer kind."""
