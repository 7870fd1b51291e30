"""trio_mcp: the Model Context Protocol on Trio, client and server.

Every session is a nursery; every request has its own cancel scope and an
observable record (queued, running, completed, failed, cancelled) that says who
cancelled it and why.

This namespace is what an application uses: a :class:`Server` and the ways to
run it, a :class:`Client` and the ways to connect it, and the :class:`MCPError`
tree. The session kernel (``Session``, ``open_session``, ``Dispatcher``,
``RequestContext``, the request records) is in :mod:`trio_mcp.lowlevel`, the
sans-I/O protocol in :mod:`trio_mcp.protocol`, the channels in
:mod:`trio_mcp.transports`.

Names are imported lazily (PEP 562), so ``import trio_mcp.protocol`` (the
sans-I/O layer) does not import trio, and start-up stays quick.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports
from ._version import __version__

# name -> module that defines it
_LAZY = {
    "Context": "._server._context",
    "Server": "._server._registry",
    "ToolError": "._server._tools",
    "Header": "._server._schema",
    "RequestStateSealer": "._server._request_state",
    "RequestStateError": "._server._request_state",
    "MemoryNonceStore": "._server._request_state",
    "serve_session": "._server._serve",
    "serve_stdio": "._server._entry",
    "run_stdio": "._server._entry",
    "http_app": "._server._entry",
    "serve_http": "._server._entry",
    "run_http": "._server._entry",
    "parse_http_option": "._server._entry",
    "serve_websocket": "._server._entry",
    "Client": "._client._client",
    "open_client": "._client._open",
    "run_client": "._client._open",
    "ToolCallError": "._client._calls",
    "open_stdio_client": "._client._connect",
    "open_http_client": "._client._connect",
    "open_websocket_client": "._client._connect",
    "ClientGroup": "._client._multi",
    "open_clients": "._client._multi",
    "FormElicitation": "._client._elicitation",
    "URLElicitation": "._client._elicitation",
    "url_elicitation": "._client._elicitation",
    "HiddenCharacter": "._client._hidden_text",
    "HiddenKind": "._client._hidden_text",
    "find_hidden_text": "._client._hidden_text",
    "find_hidden_text_in_tool": "._client._hidden_text",
    "MCPError": ".protocol._errors",
    "HandshakeRefused": "._errors",
    "InvalidPeerResult": "._errors",
    "ResponseTooLarge": "._errors",
    "RequestTimeout": "._errors",
    "RPCError": "._errors",
    "SessionClosed": "._errors",
    "URLElicitationRequired": "._errors",
    "WorkerExited": "._server._workers",
}

if TYPE_CHECKING:
    from ._client._calls import ToolCallError
    from ._client._client import Client
    from ._client._connect import open_http_client, open_stdio_client, open_websocket_client
    from ._client._elicitation import FormElicitation, URLElicitation, url_elicitation
    from ._client._hidden_text import (
        HiddenCharacter,
        HiddenKind,
        find_hidden_text,
        find_hidden_text_in_tool,
    )
    from ._client._multi import ClientGroup, open_clients
    from ._client._open import open_client, run_client
    from ._errors import (
        HandshakeRefused,
        InvalidPeerResult,
        RequestTimeout,
        ResponseTooLarge,
        RPCError,
        SessionClosed,
        URLElicitationRequired,
    )
    from ._server._context import Context
    from ._server._entry import (
        http_app,
        parse_http_option,
        run_http,
        run_stdio,
        serve_http,
        serve_stdio,
        serve_websocket,
    )
    from ._server._registry import Server
    from ._server._request_state import MemoryNonceStore, RequestStateError, RequestStateSealer
    from ._server._schema import Header
    from ._server._serve import serve_session
    from ._server._tools import ToolError
    from ._server._workers import WorkerExited
    from .protocol._errors import MCPError


__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY)

__all__ = [
    "__version__",
    # a server, and the ways to run it
    "Server",
    "Context",
    "ToolError",
    "Header",
    "RequestStateSealer",
    "RequestStateError",
    "MemoryNonceStore",
    "serve_session",
    "serve_stdio",
    "run_stdio",
    "http_app",
    "serve_http",
    "run_http",
    "parse_http_option",
    "serve_websocket",
    # a client, and the ways to connect it
    "Client",
    "open_client",
    "run_client",
    "open_stdio_client",
    "open_http_client",
    "open_websocket_client",
    "open_clients",
    "ClientGroup",
    "ToolCallError",
    # what a host shows its user: elicitations, hidden text in tool metadata
    "FormElicitation",
    "URLElicitation",
    "url_elicitation",
    "find_hidden_text",
    "find_hidden_text_in_tool",
    "HiddenCharacter",
    "HiddenKind",
    # errors: every exception trio_mcp raises on purpose is an MCPError
    "MCPError",
    "RPCError",
    "URLElicitationRequired",
    "SessionClosed",
    "RequestTimeout",
    "InvalidPeerResult",
    "ResponseTooLarge",
    "HandshakeRefused",
    "WorkerExited",
]
