"""torchport's version (written into reports and traces; pyproject.toml holds the same number)."""
__version__ = "0.1.0"
