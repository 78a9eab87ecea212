"""codec stage."""
