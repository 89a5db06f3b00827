"""Plate 4, attention (docs/plates/04-attention.md)."""
