"""trio_mcp.testing: in-memory transports, the transport checker and the protocol pair."""

from ._check_transport import PairFactory, check_transport, memory_pair
from ._memory import MemoryTransport, memory_transport_pair
from ._pair import open_memory_client
from ._protocol_pair import (
    FULL_CLIENT_CAPABILITIES,
    FULL_SERVER_CAPABILITIES,
    FakeClock,
    ProtocolPair,
    RecordingObserver,
)

__all__ = [
    "MemoryTransport",
    "memory_transport_pair",
    "memory_pair",
    "open_memory_client",
    "check_transport",
    "PairFactory",
    "ProtocolPair",
    "FakeClock",
    "RecordingObserver",
    "FULL_CLIENT_CAPABILITIES",
    "FULL_SERVER_CAPABILITIES",
]
