"""Error codes, the root of trio_mcp's exceptions, and the protocol layer's.

:class:`MCPError` lives here, in the dependency-free protocol, so that every
layer above (session, client, server, transports) can derive from it without
the protocol importing any of them.

Spec: BP-07, BP-23..BP-27 and the error-code table (spec-requirements §27).
"""

from __future__ import annotations

import enum
from typing import Any


class ErrorCode(enum.IntEnum):
    """JSON-RPC and MCP error codes used on the wire."""

    #: Invalid JSON was received (JSON-RPC 2.0; the reply's id is null).
    PARSE_ERROR = -32700
    #: The JSON is not a valid JSON-RPC request object.
    INVALID_REQUEST = -32600
    #: Unknown method, wrong direction, or a capability that was not declared.
    METHOD_NOT_FOUND = -32601
    #: The params do not match the method's schema.
    INVALID_PARAMS = -32602
    #: The handler failed unexpectedly (no internals are sent).
    INTERNAL_ERROR = -32603
    #: ``resources/read`` of an unknown URI (handshake era).
    RESOURCE_NOT_FOUND = -32002
    #: URL elicitation must complete first (2025-11-25 only).
    URL_ELICITATION_REQUIRED = -32042
    # 2026-07-28 allocations (``data`` shapes: trio_mcp.types.versioning).
    #: HTTP headers missing, malformed or disagreeing with the body (HTTP 400).
    HEADER_MISMATCH = -32020
    #: The request needs a client capability its ``_meta`` did not declare.
    MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
    #: The request's protocol version is not supported; ``data.supported`` lists
    #: what is. A modern-only server answers ``initialize`` with it.
    UNSUPPORTED_PROTOCOL_VERSION = -32022
    # Implementation-defined band (-32000..-32019), documented in spec_notes/errors.md.
    #: The session is closing or closed; the request was not (or no longer) handled.
    SESSION_CLOSED = -32000
    #: The handler was cancelled locally (its deadline, or shutdown) while the peer waited.
    REQUEST_CANCELLED_LOCALLY = -32001
    #: Too many requests already wait for a handler slot; this one was not started.
    TOO_MANY_REQUESTS = -32005


class MCPError(Exception):
    """The root of every exception trio_mcp raises on purpose.

    ``except trio_mcp.MCPError`` catches any MCP failure: an error answer
    (:class:`~trio_mcp.RPCError`), a closed session, a timeout, a protocol
    violation by either side (:class:`ProtocolError`), a failing tool.
    """


class ProtocolError(MCPError):
    """Base class of the errors the sans-I/O protocol raises.

    Abstract, as h11's: :class:`LocalProtocolError` (our side broke the
    protocol) and :class:`RemoteProtocolError` (the peer did) are what is
    raised, so a handler can always tell the two apart.

    Not raised for bad input from the peer: that becomes an event
    (:class:`~trio_mcp.protocol.InvalidMessage` or :class:`~trio_mcp.protocol.Ignored`)
    and the session goes on.
    """

    def __init__(self, *args: object) -> None:
        if type(self) is ProtocolError:
            raise TypeError(
                "ProtocolError is abstract: raise LocalProtocolError or RemoteProtocolError"
            )
        super().__init__(*args)


class LocalProtocolError(ProtocolError):
    """We tried to do something the protocol forbids (our bug, or our caller's)."""


class NotJSON(LocalProtocolError):
    """What we were about to send is not JSON: NaN or Infinity, an integer
    beyond 64 bits, a lone surrogate, or an object JSON has no form for."""


class RemoteProtocolError(ProtocolError):
    """The peer broke the protocol in a way that ends the session (e.g. version mismatch)."""


class MessageTooLarge(RemoteProtocolError):
    """A message from the peer exceeded the configured size bound."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"message of {size} bytes exceeds the limit of {limit} bytes")
        self.size = size
        self.limit = limit


class UnsupportedProtocolVersion(RemoteProtocolError):
    """The server answered ``initialize`` with a version this client cannot speak.

    Spec: LC-09.
    """

    def __init__(self, offered: str, supported: tuple[str, ...]) -> None:
        super().__init__(
            f"server chose protocol version {offered!r}; this client speaks " + ", ".join(supported)
        )
        self.offered = offered
        self.supported = supported


def error_data(**fields: Any) -> dict[str, Any]:
    """Build an error ``data`` object, leaving out fields that are None."""
    return {key: value for key, value in fields.items() if value is not None}
