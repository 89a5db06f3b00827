"""Plate 7, shrinking the cache (docs/plates/07-shrinking-the-cache.md): the size levers,
quantization, which positions to keep."""
