"""Plate 5, the KV cache (docs/plates/05-kv-cache.md): decoding with and without it, and its size."""
