"""The KV frontier: every way of shrinking a real model's cache, run, cached and summed up in a sentence."""
