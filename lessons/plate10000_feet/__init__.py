"""Transformers at 10,000 feet (docs/plates/10000-feet.md): the stack of layers."""
