"""Plate 6, data movement (docs/plates/06-data-movement.md): bytes against FLOPs, and the roofline."""
