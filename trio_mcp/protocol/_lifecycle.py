"""The handshake-era lifecycle: states, versions, negotiation.

Theory of operation
-------------------
::

    client:  NEW --send initialize--> INITIALIZING --result ok--> OPERATING
    server:  NEW --recv initialize--> INITIALIZING --send result--> INITIALIZED
                                          --recv notifications/initialized--> OPERATING
    both:    any --close(reason)--> CLOSED   (final; every later send is refused)

Before OPERATING a client sends only ``initialize`` and ``ping`` (LC-05) and a
server only ``ping`` requests and logging notifications (LC-06). A server accepts
requests once its result is out, even before ``notifications/initialized``
arrives (A-04). The server answers an unknown version with its newest (LC-08);
the client refuses a version it cannot speak (LC-09).
"""

from __future__ import annotations

import enum


class SessionState(enum.Enum):
    """Where a session is in the lifecycle (spec_notes/lifecycle.md)."""

    #: Nothing exchanged yet.
    NEW = "new"
    #: Client: initialize sent. Server: initialize received, result not yet out.
    INITIALIZING = "initializing"
    #: Server only: result sent, waiting for ``notifications/initialized``.
    INITIALIZED = "initialized"
    #: Normal operation (LC-11).
    OPERATING = "operating"
    #: Closed; ``Connection.close_reason`` says why.
    CLOSED = "closed"


class Role(enum.Enum):
    """Which end of the session this is."""

    CLIENT = "client"
    SERVER = "server"

    @property
    def peer(self) -> Role:
        return Role.SERVER if self is Role.CLIENT else Role.CLIENT


#: Handshake-era revisions this library speaks, newest first.
SUPPORTED_VERSIONS: tuple[str, ...] = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
#: What a client offers and a server counter-offers by default.
LATEST_VERSION = SUPPORTED_VERSIONS[0]
#: The only revision whose receivers must accept JSON-RPC batches (BP-18).
BATCH_REVISION = "2025-03-26"


def negotiate_version(requested: str, supported: tuple[str, ...] = SUPPORTED_VERSIONS) -> str:
    """The server's answer to a requested version (LC-08): echo it or offer our newest."""
    return requested if requested in supported else supported[0]
