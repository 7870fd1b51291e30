"""The client layer: Client, its cache and handlers, and the open_*_client entry points."""
