"""Plate 8, serving the cache (docs/plates/08-serving-the-cache.md): paging and batching."""
