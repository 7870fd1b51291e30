"""The server layer: the registry, its features, the context and the serve_*/run_* entry points."""
