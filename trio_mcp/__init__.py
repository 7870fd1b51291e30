"""trio_mcp: the Model Context Protocol on Trio, client and server.

Every session is a nursery; every request has its own cancel scope and an
observable record (queued, running, completed, failed, cancelled) that says who
cancelled it and why.

Names are imported lazily (PEP 562), so ``import trio_mcp.protocol`` (the
sans-I/O layer) does not import trio, and start-up stays quick.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__

# name -> module that defines it
_LAZY = {
    "Client": "._client._client",
    "open_client": "._client._client",
    "run_client": "._client._client",
    "ToolCallError": "._client._client",
    "HiddenCharacter": "._client._hidden_text",
    "HiddenKind": "._client._hidden_text",
    "find_hidden_text": "._client._hidden_text",
    "find_hidden_text_in_tool": "._client._hidden_text",
    "ClientGroup": "._client._multi",
    "open_clients": "._client._multi",
    "open_stdio_client": ".transports._stdio_client",
    "serve_stdio": ".transports._stdio_server",
    "RequestContext": "._session._context",
    "SlowStepReporter": "._diagnostics",
    "InvalidPeerResult": "._errors",
    "MCPError": "._errors",
    "RequestTimeout": "._errors",
    "RPCError": "._errors",
    "SessionClosed": "._errors",
    "URLElicitationRequired": "._errors",
    "FormElicitation": "._client._elicitation",
    "URLElicitation": "._client._elicitation",
    "url_elicitation": "._client._elicitation",
    "Context": "._server._registry",
    "Server": "._server._registry",
    "ToolError": "._server._registry",
    "serve_session": "._server._registry",
    "Dispatcher": "._session._engine",
    "Session": "._session._engine",
    "SessionStatistics": "._session._engine",
    "open_session": "._session._engine",
    "Transport": "._transport",
    "CancelOrigin": ".protocol",
    "Direction": ".protocol",
    "ErrorCode": ".protocol",
    "FrameDirection": ".protocol",
    "Progress": ".protocol",
    "RequestObserver": ".protocol",
    "RequestRecord": ".protocol",
    "RequestState": ".protocol",
    "SessionState": ".protocol",
}

if TYPE_CHECKING:
    from ._client._client import Client, ToolCallError, open_client, run_client
    from ._client._elicitation import FormElicitation, URLElicitation, url_elicitation
    from ._client._hidden_text import (
        HiddenCharacter,
        HiddenKind,
        find_hidden_text,
        find_hidden_text_in_tool,
    )
    from ._client._multi import ClientGroup, open_clients
    from ._diagnostics import SlowStepReporter
    from ._errors import (
        InvalidPeerResult,
        MCPError,
        RequestTimeout,
        RPCError,
        SessionClosed,
        URLElicitationRequired,
    )
    from ._server._registry import (
        Context,
        Server,
        ToolError,
        serve_session,
    )
    from ._session._context import RequestContext
    from ._session._engine import (
        Dispatcher,
        Session,
        SessionStatistics,
        open_session,
    )
    from ._transport import Transport
    from .protocol import (
        CancelOrigin,
        Direction,
        ErrorCode,
        FrameDirection,
        Progress,
        RequestObserver,
        RequestRecord,
        RequestState,
        SessionState,
    )
    from .transports._stdio_client import open_stdio_client
    from .transports._stdio_server import serve_stdio


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'trio_mcp' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "__version__",
    # high level
    "Server",
    "Context",
    "ToolError",
    "Client",
    "open_client",
    "run_client",
    "open_clients",
    "ClientGroup",
    "ToolCallError",
    "find_hidden_text",
    "find_hidden_text_in_tool",
    "HiddenCharacter",
    "HiddenKind",
    "FormElicitation",
    "URLElicitation",
    "url_elicitation",
    "serve_session",
    "open_stdio_client",
    "serve_stdio",
    # session level
    "open_session",
    "Session",
    "SessionState",
    "SessionStatistics",
    "Dispatcher",
    "RequestContext",
    "RequestState",
    "RequestRecord",
    "CancelOrigin",
    "Direction",
    "Progress",
    "RequestObserver",
    "FrameDirection",
    "Transport",
    "SlowStepReporter",
    # errors
    "MCPError",
    "RPCError",
    "SessionClosed",
    "RequestTimeout",
    "InvalidPeerResult",
    "URLElicitationRequired",
    "ErrorCode",
]
