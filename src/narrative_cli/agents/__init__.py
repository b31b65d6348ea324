"""agents stage."""
