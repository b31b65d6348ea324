"""SillyTavern regex scripts as applied to text: shared by the display and (next) prompts."""
