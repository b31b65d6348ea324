"""lore stage."""
