"""_http: internal package."""
