"""Plate 3, embeddings (docs/plates/03-embeddings.md)."""
