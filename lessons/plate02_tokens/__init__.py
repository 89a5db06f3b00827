"""Plate 2, tokens (docs/plates/02-tokens.md); real_token_counts.json holds production tokenizers' counts."""
