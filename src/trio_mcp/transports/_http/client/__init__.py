"""client: internal package."""
