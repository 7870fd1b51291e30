"""trio_mcp.lowlevel: the session kernel, for code that drives sessions itself.

As :mod:`trio.lowlevel` is to :mod:`trio`: what a transport author, a custom
dispatcher or an observer needs, kept out of the application-level namespace
(``trio_mcp``). :func:`open_session` runs one session (its own nursery, reader
task and writer) over a :data:`Transport`, answering the peer with a
:class:`Dispatcher`; every request is an observable :class:`RequestRecord`, and a
task a request became is a :class:`TaskHandle` (``Client.call_tool(..., as_task=True)``).

A server's tasks run in a :class:`TaskRunner` and are kept in a
:class:`TaskStore` (:class:`MemoryTaskStore` by default): give
``Server(tasks=TaskRunner(store, ...))`` to set their bounds or share one store
between workers. Open ``server.tasks.running()`` yourself when you serve
sessions with :func:`open_session` (the ``serve_*`` functions do).
:class:`RedisTaskStore` (the ``redis`` extra, coredis) is the store every
worker of a scaled-out server shares; it is imported on first use.
"""

from typing import TYPE_CHECKING, Any

from ._client._tasks import TaskHandle
from ._diagnostics import SlowStepReporter
from ._session._engine import Dispatcher, RequestContext, Session, SessionStatistics, open_session
from ._tasks._runner import TaskRunner
from ._tasks._store import MemoryTaskStore, TaskStore
from ._transport import Caller, Identity, Transport
from .protocol import (
    CancelOrigin,
    Direction,
    FrameDirection,
    Progress,
    RequestObserver,
    RequestRecord,
    RequestState,
    SessionState,
)

__all__ = [
    "open_session",
    "Session",
    "SessionState",
    "SessionStatistics",
    "Dispatcher",
    "RequestContext",
    "Transport",
    # who a session's requests come from
    "Caller",
    "Identity",
    # the records of requests, and who watches them
    "RequestRecord",
    "RequestState",
    "CancelOrigin",
    "Direction",
    "Progress",
    "RequestObserver",
    "FrameDirection",
    "SlowStepReporter",
    # where a server's tasks run and are kept
    "TaskRunner",
    "TaskStore",
    "MemoryTaskStore",
    "RedisTaskStore",
    # what Client.call_tool(as_task=True) hands back (the top level is full)
    "TaskHandle",
]

if TYPE_CHECKING:
    from ._tasks._redis_store import RedisTaskStore


def __getattr__(name: str) -> Any:
    # The Redis store needs coredis (an extra): imported only when asked for.
    if name == "RedisTaskStore":
        from ._tasks._redis_store import RedisTaskStore

        globals()[name] = RedisTaskStore
        return RedisTaskStore
    raise AttributeError(f"module 'trio_mcp.lowlevel' has no attribute {name!r}")
