"""load stage."""
