"""The collaborators of a client over one session, made together, and the
nursery they run in.

Theory of operation
-------------------
A :class:`~trio_mcp.Client` is made before its session exists; once the
session is open and the era chosen, :class:`ClientParts` makes what the client
delegates to, each given what it needs and in the order each needs the one
before: the cached lists (``_cache``), the input rounds and the tool calls
(``_calls``), the tasks (``_tasks``), the one-round-trip requests
(``_requests``). :meth:`ClientParts.running`
is the lifetime of the client's nursery: in it the 2026-07-28 listen streams
(``_subscriptions``) are opened and the server's notifications are handled
(``_notifications``; ignored before). With discovery every list the server
declared is fetched first, in 2026-07-28 once the list-change stream is
acknowledged (listen before listing: a change made meanwhile cannot leave a
list stale); then the list refresher runs until the block is left.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

import trio

from .._session import Session
from ..protocol import NotificationReceived
from ..protocol._headers import ToolHeaderRules
from ._cache import ListCache
from ._calls import InputRounds, ToolCalls
from ._era import Negotiated
from ._handlers import ClientHandlers
from ._notifications import LogHandler, ServerNotifications
from ._requests import Requests
from ._subscriptions import Subscriptions
from ._tasks import ClientTasks
from ._tool_headers import usable_tools


class ClientParts:
    """What one client delegates to over one session (see the module docstring).

    Args:
        session: the client's session.
        negotiated: the era and what the server declared in it.
        handlers: answer the server's requests.
        log: receives each ``notifications/message`` (the client's log handler).
        tool_headers: the rules of a transport that mirrors tool arguments
            into headers, else None.
        max_pages: bound on the pages of one list.
        max_input_rounds: bound on the input-required rounds of one call.
        declare_tasks: the client's ``tasks=``.
    """

    __slots__ = (
        "_log",
        "cache",
        "handlers",
        "notifications",
        "requests",
        "rounds",
        "tasks",
        "tool_calls",
    )

    def __init__(
        self,
        session: Session,
        negotiated: Negotiated,
        handlers: ClientHandlers,
        log: LogHandler,
        tool_headers: ToolHeaderRules | None,
        *,
        max_pages: int,
        max_input_rounds: int,
        declare_tasks: bool,
    ) -> None:
        revision = session.protocol.revision
        assert revision is not None  # negotiated before the client runs
        self.handlers = handlers
        self._log = log
        self.cache = ListCache(
            session.request,
            session.protocol.peer_capabilities,
            max_pages=max_pages,
            cache_hints=revision.cache_hints,
            tool_filter=partial(usable_tools, tool_headers) if tool_headers is not None else None,
        )
        self.rounds = InputRounds(session, handlers, max_input_rounds)
        self.tasks = ClientTasks(
            session, self.rounds.answer, declare=declare_tasks, max_pages=max_pages
        )
        self.tool_calls = ToolCalls(session, self.rounds, self.tasks, self.cache, tool_headers)
        self.requests = Requests(session, modern=negotiated.era == "modern")
        #: The table of the server's notifications, once running.
        self.notifications: ServerNotifications | None = None

    @asynccontextmanager
    async def running(
        self, session: Session, *, discover: bool, probe_timeout: float
    ) -> AsyncIterator[Subscriptions]:
        """The client's nursery, for the duration of the block; yields the
        subscriptions that live in it. With *discover* every list the server
        declared is fetched first (in 2026-07-28 once the list-change stream
        is acknowledged, waiting at most *probe_timeout*).

        Cancellation:
            A cancel during discovery leaves the block at once. Leaving the
            block (also by cancellation) cancels the nursery: the refresher and
            the listen streams end with it.
        """
        async with trio.open_nursery() as nursery:
            subscriptions = Subscriptions(session, nursery)
            self.notifications = ServerNotifications(
                self.cache, subscriptions, self.tasks, self.handlers, self._log
            )
            revision = session.protocol.revision
            if discover:
                if revision is not None and revision.listen_subscriptions:
                    # Listen before listing: a change made before the stream
                    # is acknowledged would leave an earlier list stale.
                    await subscriptions.open_list_changes(probe_timeout)
                await self.cache.discover()
            nursery.start_soon(self.cache.run_refresher, name="trio_mcp list refresher")
            try:
                yield subscriptions
            finally:
                nursery.cancel_scope.cancel(reason="client closed")

    async def notified(self, event: NotificationReceived) -> None:
        """Handle one core notification of the server (ignored before the
        client runs).

        Cancellation: as :meth:`ServerNotifications.dispatch`.
        """
        if self.notifications is not None:
            await self.notifications.dispatch(event)
