"""server: internal package."""
