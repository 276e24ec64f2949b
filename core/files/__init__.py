"""Reading and writing files safely: atomic writes, bounded reads, typed checks, JSON without NaN."""
