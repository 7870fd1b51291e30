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

An **extension** (:class:`Extension`) is named by identifier
(``com.example/shout``): its settings are declared in
``capabilities.extensions`` (``initialize`` and ``server/discover`` for a
server; ``initialize`` and every 2026-07-28 request's ``_meta`` for a
client), and its methods are answered in both eras. Install one with
``Server.add_extension(...)`` or ``open_client(..., extensions=[...])``.
A **custom method** outside any extension is ``@server.on_request(name)`` /
``@server.on_notification(name)`` (``custom_requests=`` and
``custom_notifications=`` of ``open_client``); ``Client.call(method,
params)`` and ``Client.notify`` send any method. A core method is never
redefined.
"""

from ._errors import MiddlewareError
from ._extensions._registry import Extension, missing_capabilities
from ._session._middleware import Call, Middleware

__all__ = [
    # extensions: named by identifier, installed whole or not at all
    "Extension",
    "missing_capabilities",
    # middleware: what wraps every message, both roles
    "Middleware",
    "Call",
    "MiddlewareError",
]
