"""trio_mcp.tasks: requests whose record outlives their response.

As :mod:`trio.to_thread` gathers what runs work in a thread, this namespace
gathers MCP tasks (``basic/utilities/tasks`` in 2025-11-25, the
``io.modelcontextprotocol/tasks`` extension in 2026-07-28), for both roles.

A server's tasks run in a :class:`TaskRunner` and are kept in a
:class:`TaskStore` (:class:`MemoryTaskStore` by default): give
``Server(tasks=TaskRunner(store, ...))`` to set their bounds or to share one
store between workers. Open ``server.tasks.running()`` yourself when you
serve sessions with :func:`~trio_mcp.lowlevel.open_session` (the ``serve_*``
functions do). :class:`RedisTaskStore` is the store every worker of a
scaled-out server shares; it needs the ``redis`` extra (coredis) and is
imported on first use (without the extra, asking for it raises an
:class:`ImportError` that is also a :class:`~trio_mcp.MCPError`, whose
message names the extra to install). A store that cannot be reached raises
:class:`TaskStoreUnavailable`; every store error is a :class:`TaskStoreError`.

A client's ``Client.call_tool(..., as_task=True)`` hands back a
:class:`TaskHandle`: the task the call became, to wait for, poll or cancel.
"""

from typing import TYPE_CHECKING, Any

from ._client._tasks import TaskHandle
from ._errors import MissingExtra
from ._tasks._runner import TaskRunner
from ._tasks._store import MemoryTaskStore, TaskStore, TaskStoreError, TaskStoreUnavailable

__all__ = [
    # where a server's tasks run and are kept
    "TaskRunner",
    "TaskStore",
    "MemoryTaskStore",
    "RedisTaskStore",
    # what a store raises
    "TaskStoreError",
    "TaskStoreUnavailable",
    # RedisTaskStore without the redis extra (also an ImportError)
    "MissingExtra",
    # what Client.call_tool(as_task=True) hands back
    "TaskHandle",
]

if TYPE_CHECKING:
    from ._tasks._redis_store import RedisTaskStore


def __getattr__(name: str) -> Any:
    # The Redis store needs coredis (the redis extra): imported only when asked for.
    if name == "RedisTaskStore":
        try:
            from ._tasks._redis_store import RedisTaskStore
        except ModuleNotFoundError as error:
            if error.name is None or error.name.partition(".")[0] != "coredis":
                raise
            raise MissingExtra("RedisTaskStore", "redis") from None
        globals()[name] = RedisTaskStore
        return RedisTaskStore
    raise AttributeError(f"module 'trio_mcp.tasks' has no attribute {name!r}")
