"""tcp stage."""
