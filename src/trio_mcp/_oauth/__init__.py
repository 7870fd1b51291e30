"""The client side of MCP authorization: OAuth 2.1 discovery, registration, grants."""
