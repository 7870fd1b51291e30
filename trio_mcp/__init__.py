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
    "Client": "._client",
    "open_client": "._client",
    "run_client": "._client",
    "ToolCallError": "._client",
    "HiddenCharacter": "._hidden_text",
    "HiddenKind": "._hidden_text",
    "find_hidden_text": "._hidden_text",
    "find_hidden_text_in_tool": "._hidden_text",
    "ClientGroup": "._multi",
    "open_clients": "._multi",
    "open_stdio_client": ".transports._stdio_client",
    "serve_stdio": ".transports._stdio_server",
    "RequestContext": "._context",
    "SlowStepReporter": "._diagnostics",
    "InvalidPeerResult": "._errors",
    "MCPError": "._errors",
    "RequestTimeout": "._errors",
    "RPCError": "._errors",
    "SessionClosed": "._errors",
    "URLElicitationRequired": "._errors",
    "FormElicitation": "._elicitation",
    "URLElicitation": "._elicitation",
    "url_elicitation": "._elicitation",
    "Context": "._server",
    "Server": "._server",
    "ToolError": "._server",
    "serve_session": "._server",
    "Dispatcher": "._session",
    "Session": "._session",
    "SessionStatistics": "._session",
    "open_session": "._session",
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
    from ._client import Client, ToolCallError, open_client, run_client
    from ._context import RequestContext
    from ._diagnostics import SlowStepReporter
    from ._elicitation import FormElicitation, URLElicitation, url_elicitation
    from ._errors import (
        InvalidPeerResult,
        MCPError,
        RequestTimeout,
        RPCError,
        SessionClosed,
        URLElicitationRequired,
    )
    from ._hidden_text import (
        HiddenCharacter,
        HiddenKind,
        find_hidden_text,
        find_hidden_text_in_tool,
    )
    from ._multi import ClientGroup, open_clients
    from ._server import (
        Context,
        Server,
        ToolError,
        serve_session,
    )
    from ._session import (
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
