"""trio_mcp.extensions: how an application extends MCP, for both roles.

As :mod:`trio_mcp.tasks` gathers MCP tasks, this namespace gathers the points
where trio_mcp is extended without forking it.

**Middleware** is an ordered chain of async contexts around every request and
notification a session handles, inbound and outbound: a :class:`Middleware`
is called with each :class:`Call` and returns the async context manager that
wraps it (an ``@asynccontextmanager`` function is one). Register it with
``Server.add_middleware(...)`` or ``open_client(..., middleware=[...])``
(every ``open_*_client`` passes it on). The first registered is the
outermost. A middleware's own failure is a :class:`MiddlewareError`: that
request fails with -32603, and nothing else does.
"""

from ._errors import MiddlewareError
from ._session._middleware import Call, Middleware

__all__ = [
    # middleware: what wraps every message, both roles
    "Middleware",
    "Call",
    "MiddlewareError",
]
