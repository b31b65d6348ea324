"""ui stage."""
