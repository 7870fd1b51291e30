"""trio_mcp.testing: in-memory transports and helpers for testing MCP code."""

from ._memory import MemoryTransport, memory_transport_pair
from ._pair import open_memory_client

__all__ = ["MemoryTransport", "memory_transport_pair", "open_memory_client"]
