"""state stage."""
