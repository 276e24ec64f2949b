"""What a random-weight layer reads: tokens from a text and their seeded embeddings."""
