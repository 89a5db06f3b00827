"""Plate 1, the next-token loop (docs/plates/01-next-token.md)."""
