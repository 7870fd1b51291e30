"""trio_mcp.testing: in-memory transports and helpers for testing MCP code."""

from ._check_transport import PairFactory, check_transport, memory_pair
from ._memory import MemoryTransport, memory_transport_pair
from ._pair import open_memory_client

__all__ = [
    "MemoryTransport",
    "memory_transport_pair",
    "memory_pair",
    "open_memory_client",
    "check_transport",
    "PairFactory",
]
