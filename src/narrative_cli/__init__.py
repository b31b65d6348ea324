"""narrative-cli: SillyTavern-style stories in a terminal, through a multi-agent pipeline."""

__version__ = "0.1.0"

__all__ = ["__version__"]
