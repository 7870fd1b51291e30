"""The server's notifications to a client: one table, by method.

Theory of operation
-------------------
The session handles cancellation and the progress of a call itself; every
other notification of the server reaches :meth:`ServerNotifications.dispatch`.
A notice of a 2026-07-28 listen stream goes to its stream first
(:meth:`~trio_mcp._client._subscriptions.Subscriptions.claim`); any other to
its handler in :attr:`ServerNotifications.table`:

* ``notifications/{tools,prompts,resources}/list_changed``: the cached list
  is refreshed (CA-06);
* ``notifications/resources/updated``: to the open ``resource_updates``
  blocks that cover the URI (RS-06);
* ``notifications/message``: to the log handler (LG-01);
* ``notifications/tasks/status`` and a task's ``notifications/progress``
  (2025-11-25): to the task's handle (TK-13, TK-14);
* ``notifications/elicitation/complete``: ends the wait for that URL
  elicitation (EL-08, EL-09).

Anything else is ignored.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from .. import types as mcp_types
from ..protocol import NotificationReceived
from ._cache import CHANGED_NOTES, ListCache
from ._handlers import ClientHandlers
from ._subscriptions import Subscriptions
from ._tasks import ClientTasks

logger = logging.getLogger("trio_mcp.client")
server_log = logging.getLogger("trio_mcp.server_log")

#: Receives each ``notifications/message`` (sync or async).
LogHandler = Callable[[mcp_types.LoggingMessageNotificationParams], Any]
#: Handles one notification; an awaitable it returns is awaited.
NotificationHandler = Callable[[NotificationReceived], Awaitable[Any] | None]

_PY_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


def default_log_handler(params: mcp_types.LoggingMessageNotificationParams) -> None:
    """The server's log messages to the ``trio_mcp.server_log`` Python logger."""
    level = _PY_LEVELS.get(params.level.value, logging.INFO)
    server_log.log(level, "%s: %s", params.logger or "server", params.data)


class ServerNotifications:
    """How one client handles each notification of its server (see the module
    docstring).

    Args:
        cache: the client's cached lists.
        subscriptions: the client's resource watchers and listen streams.
        tasks: the client's tasks.
        handlers: the client's handlers (URL elicitations).
        log: receives the params of each ``notifications/message`` (the
            client's ``log_handler``; sync or async).
    """

    __slots__ = ("_cache", "_handlers", "_log", "_subscriptions", "_tasks", "table")

    def __init__(
        self,
        cache: ListCache,
        subscriptions: Subscriptions,
        tasks: ClientTasks,
        handlers: ClientHandlers,
        log: LogHandler,
    ) -> None:
        self._cache = cache
        self._subscriptions = subscriptions
        self._tasks = tasks
        self._handlers = handlers
        self._log = log
        #: The handler of each notification the client acts on, by method.
        self.table: dict[str, NotificationHandler] = {
            **dict.fromkeys(CHANGED_NOTES, self._list_changed),
            "notifications/resources/updated": self._resource_updated,
            "notifications/message": self._log_message,
            "notifications/tasks/status": self._task_status,
            "notifications/progress": self._task_progress,
            "notifications/elicitation/complete": self._elicitation_completed,
        }

    async def dispatch(self, event: NotificationReceived) -> None:
        """Handle one notification of the server (see the module docstring).

        Cancellation: only an async *log* waits; it is cancelled with the
        session's reader.
        """
        if self._subscriptions.claim(event):
            return
        handler = self.table.get(event.method)
        if handler is not None:
            pending = handler(event)
            if pending is not None:
                await pending

    def _list_changed(self, event: NotificationReceived) -> None:
        self._cache.mark_dirty(event.method)

    def _resource_updated(self, event: NotificationReceived) -> None:
        self._subscriptions.resource_updated(event.params)

    def _log_message(self, event: NotificationReceived) -> Awaitable[Any] | None:
        value = self._log(event.params)
        return value if inspect.isawaitable(value) else None

    def _task_status(self, event: NotificationReceived) -> None:
        self._tasks.notified(event.params)

    def _task_progress(self, event: NotificationReceived) -> None:
        # Only a task's progress reaches here (a call's goes to its caller).
        self._tasks.progressed(event.params)

    def _elicitation_completed(self, event: NotificationReceived) -> None:
        if not self._handlers.elicitation_completed(event.params.elicitation_id):
            logger.debug("ignored completion of unknown elicitation %s", event.params)
