"""trio_mcp.transports: transports other than the in-memory pair.

stdio (SI-01..SI-12): :func:`open_stdio_client` / :func:`open_stdio_process` spawn
a server and talk over its pipes; :func:`serve_stdio` / :func:`run_stdio` serve
over this process's stdin and stdout. :class:`LineChannel` is the newline
framing, usable over any pair of byte streams (TR-04).

Names are imported lazily so that importing this package stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY = {
    "LineChannel": "._framing",
    "LineStatistics": "._framing",
    "ExitStep": "._stdio_client",
    "ProcessEvent": "._stdio_client",
    "SAFE_ENVIRONMENT": "._stdio_client",
    "SpawnRequest": "._stdio_client",
    "StdioProcess": "._stdio_client",
    "open_stdio_client": "._stdio_client",
    "open_stdio_process": "._stdio_client",
    "safe_environment": "._stdio_client",
    "run_stdio": "._stdio_server",
    "serve_stdio": "._stdio_server",
    "StreamableHTTPApp": "._http_server",
    "serve_http": "._http_server",
    "run_http": "._http_server",
    "parse_http_option": "._http_server",
    "HttpServerTransport": "._http_session",
    "HttpClientTransport": "._http_client",
    "open_http_client": "._http_client",
    "EventStore": "._event_store",
    "MemoryEventStore": "._event_store",
    "OriginPolicy": "._http_common",
    "WebSocketTransport": "._websocket",
    "serve_websocket": "._websocket",
    "open_websocket_client": "._websocket",
    "open_websocket_transport": "._websocket",
}

if TYPE_CHECKING:
    from ._event_store import EventStore, MemoryEventStore
    from ._framing import LineChannel, LineStatistics
    from ._http_client import HttpClientTransport, open_http_client
    from ._http_common import OriginPolicy
    from ._http_server import StreamableHTTPApp, parse_http_option, run_http, serve_http
    from ._http_session import HttpServerTransport
    from ._stdio_client import (
        SAFE_ENVIRONMENT,
        ExitStep,
        ProcessEvent,
        SpawnRequest,
        StdioProcess,
        open_stdio_client,
        open_stdio_process,
        safe_environment,
    )
    from ._stdio_server import run_stdio, serve_stdio
    from ._websocket import (
        WebSocketTransport,
        open_websocket_client,
        open_websocket_transport,
        serve_websocket,
    )


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'trio_mcp.transports' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "open_stdio_client",
    "open_stdio_process",
    "StdioProcess",
    "ExitStep",
    "ProcessEvent",
    "SpawnRequest",
    "SAFE_ENVIRONMENT",
    "safe_environment",
    "serve_stdio",
    "run_stdio",
    "LineChannel",
    "LineStatistics",
    # Streamable HTTP (and the legacy HTTP+SSE endpoints), WebSocket
    "serve_http",
    "run_http",
    "parse_http_option",
    "StreamableHTTPApp",
    "HttpServerTransport",
    "open_http_client",
    "HttpClientTransport",
    "EventStore",
    "MemoryEventStore",
    "OriginPolicy",
    "serve_websocket",
    "open_websocket_client",
    "open_websocket_transport",
    "WebSocketTransport",
]
