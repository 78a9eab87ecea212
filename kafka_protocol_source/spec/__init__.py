"""spec stage."""
