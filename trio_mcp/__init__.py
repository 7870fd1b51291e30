"""trio_mcp: the Model Context Protocol on Trio, client and server.

Every session is a nursery; every request has its own cancel scope and an
observable record (queued, running, completed, failed, cancelled) that says who
cancelled it and why.
"""

from ._client import Client, open_client
from ._context import RequestContext
from ._errors import (
    InvalidPeerResult,
    MCPError,
    RequestTimeout,
    RPCError,
    SessionClosed,
)
from ._server import Context, Server, ToolError, serve_session
from ._session import Dispatcher, Session, SessionStatistics, open_session
from ._transport import Transport
from ._version import __version__
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

__all__ = [
    "__version__",
    # high level
    "Server",
    "Context",
    "ToolError",
    "Client",
    "open_client",
    "serve_session",
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
    # errors
    "MCPError",
    "RPCError",
    "SessionClosed",
    "RequestTimeout",
    "InvalidPeerResult",
    "ErrorCode",
]
