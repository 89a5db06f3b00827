"""Plate 9, decoding faster (docs/plates/09-decoding-faster.md): speculative decoding and Flash-Decoding."""
