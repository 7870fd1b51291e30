"""trio_mcp.transports: channels of frames, and servers of channels that take a handler.

Nothing here knows a ``Server`` or a ``Client``: the entry points that run one
over these (``trio_mcp.serve_stdio``, ``trio_mcp.open_http_client``, ...) live
with them, in the top-level namespace.

stdio: :func:`open_stdio_process` spawns a server and talks over its pipes;
:func:`open_stdio_server_transport` is this process's stdin and stdout.
:class:`LineChannel` is the newline framing, usable over any pair of byte streams.
Streamable HTTP: :class:`StreamableHTTPApp` (an ASGI application that hands each
session's :class:`HttpServerTransport`, with the identity of its caller, to a handler;
:func:`serve_http_app` runs it on hypercorn) and :class:`HttpClientTransport`
(:func:`open_http_transport`). WebSocket: :class:`WebSocketTransport`
(:func:`open_websocket_transport`, :func:`serve_websocket_transports`).

Names are imported lazily so that importing this package stays cheap.

Spec: SI-01..SI-12.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_LAZY = {
    "LineChannel": "._framing",
    "LineStatistics": "._framing",
    "open_stdio_server_transport": "._stdio_server",
    "ExitStep": "._stdio_client",
    "ProcessEvent": "._stdio_client",
    "SAFE_ENVIRONMENT": "._stdio_client",
    "SpawnRequest": "._stdio_client",
    "StdioProcess": "._stdio_client",
    "open_stdio_process": "._stdio_client",
    "safe_environment": "._stdio_client",
    "StreamableHTTPApp": "._http.server._app",
    "serve_http_app": "._http.server._app",
    "Drain": "._http.server._drain",
    "HttpServerTransport": "._http.server._transport",
    "HttpClientTransport": "._http.client._transport",
    "open_http_transport": "._http.client._transport",
    "EventStore": "._http.server._event_store",
    "MemoryEventStore": "._http.server._event_store",
    "OriginPolicy": "._http._common",
    "WebSocketTransport": "._websocket",
    "serve_websocket_transports": "._websocket",
    "open_websocket_transport": "._websocket",
}

if TYPE_CHECKING:
    from ._framing import LineChannel, LineStatistics
    from ._http._common import OriginPolicy
    from ._http.client._transport import HttpClientTransport, open_http_transport
    from ._http.server._app import StreamableHTTPApp, serve_http_app
    from ._http.server._drain import Drain
    from ._http.server._event_store import EventStore, MemoryEventStore
    from ._http.server._transport import HttpServerTransport
    from ._stdio_client import (
        SAFE_ENVIRONMENT,
        ExitStep,
        ProcessEvent,
        SpawnRequest,
        StdioProcess,
        open_stdio_process,
        safe_environment,
    )
    from ._stdio_server import open_stdio_server_transport
    from ._websocket import (
        WebSocketTransport,
        open_websocket_transport,
        serve_websocket_transports,
    )


__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY)

__all__ = [
    "open_stdio_process",
    "StdioProcess",
    "ExitStep",
    "ProcessEvent",
    "SpawnRequest",
    "SAFE_ENVIRONMENT",
    "safe_environment",
    "open_stdio_server_transport",
    "LineChannel",
    "LineStatistics",
    # Streamable HTTP (and the legacy HTTP+SSE endpoints), WebSocket
    "StreamableHTTPApp",
    "serve_http_app",
    "Drain",
    "HttpServerTransport",
    "open_http_transport",
    "HttpClientTransport",
    "EventStore",
    "MemoryEventStore",
    "OriginPolicy",
    "serve_websocket_transports",
    "open_websocket_transport",
    "WebSocketTransport",
]
