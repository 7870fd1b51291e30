"""What a server holds per process and per session: its lifespans, its task
runner and its bus relay, entered by :meth:`Server.running`.

Theory of operation
-------------------
A ``Server`` may be given ``lifespan=``, an async context manager factory
called with the server, entered once per process before anything is served
and left after the last session and task have ended (its value, e.g. a
database pool, is ``server.lifespan_state`` and ``ctx.lifespan`` in
handlers); and ``session_lifespan=``, called with each
:class:`~trio_mcp.lowlevel.Session` that :func:`serve_session` serves (stdio,
WebSocket, a handshake-era HTTP session), entered when the session opens and
left when it ends (its value is ``ctx.session_state``). 2026-07-28 HTTP
requests are not sessions: they see the process's lifespan only.

:meth:`Lifespans.running` enters, in order: the lifespan, the bus and the
request states' nonce store (a ``RedisBus`` or ``RedisNonceStore`` not yet
open is opened), the task runner (``server.tasks``), the
bus relay (``Server(bus=...)``); and leaves them in
the reverse order, so tasks are cancelled (cause SHUTDOWN) while the pool
they use is still open. Every ``serve_*`` entry point enters
:meth:`Lifespans.serving`, which is :meth:`running` unless an outer entry
point already runs it; with ``serve_http(workers=N)`` each worker process
enters it once.

Cancellation: leaving :meth:`running` (normally or cancelled) stops the
relay, cancels the tasks, then leaves the lifespan; an exception leaving the
block leaves as itself.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from typing import TYPE_CHECKING, Any

import trio

from .._util import unwrapping
from ._fanout import Fanout

if TYPE_CHECKING:
    from .._bus._base import Bus
    from .._session import Session
    from .._tasks._runner import TaskRunner

#: A lifespan: called with the server (or the session), entered once.
Lifespan = Callable[[Any], AbstractAsyncContextManager[Any]]

_UNSET: Any = object()


class NotServing(RuntimeError):
    """The lifespan's value was asked for outside :meth:`Server.running`."""


def _opened(resource: object) -> AbstractAsyncContextManager[object]:
    """*resource* to enter for the block when it must be opened and is not
    yet (a ``RedisBus``, a ``RedisNonceStore``); else nothing to do. The task
    runner opens its store the same way."""
    if isinstance(resource, AbstractAsyncContextManager) and not getattr(resource, "is_open", True):
        return resource
    return nullcontext()


class Lifespans:
    """One server's per-process and per-session scopes (see the module docstring)."""

    def __init__(
        self,
        owner: Any,
        tasks: TaskRunner,
        lifespan: Lifespan | None,
        session_lifespan: Lifespan | None,
        bus: Bus | None,
        deliver: Callable[[str, str | None], None],
        resync: Callable[[], None],
    ) -> None:
        self._owner = owner
        self._tasks = tasks
        self._lifespan = lifespan
        self._session_lifespan = session_lifespan
        self._bus = bus
        self.fanout = Fanout(bus, deliver, resync) if bus is not None else None
        self._state: Any = _UNSET
        self._running = False
        #: How many times :meth:`running` was entered (a statistic for tests).
        self.entered = 0
        self._sessions: weakref.WeakKeyDictionary[Session, Any] = weakref.WeakKeyDictionary()

    @property
    def is_running(self) -> bool:
        return self._running

    @property
    def state(self) -> Any:
        """The value the lifespan's ``async with`` gave (None without a lifespan)."""
        if self._state is _UNSET:
            raise NotServing(
                "the server's lifespan is not entered: serve it with a serve_* "
                "function or enter 'async with server.running():'"
            )
        return self._state

    def session_state(self, session: Session) -> Any:
        """The value *session*'s session lifespan gave (None without one)."""
        return self._sessions.get(session)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        if self._running:
            raise RuntimeError("the server is already running")
        self._running = True
        self.entered += 1
        try:
            lifespan = (
                self._lifespan(self._owner) if self._lifespan is not None else nullcontext(None)
            )
            async with unwrapping(), lifespan as state:
                self._state = state
                try:
                    async with (
                        _opened(self._bus),
                        _opened(getattr(self._owner.request_state, "nonce_store", None)),
                        self._tasks.serving(),
                        trio.open_nursery() as nursery,
                    ):
                        if self.fanout is not None:
                            await nursery.start(self.fanout.run)
                        try:
                            yield
                        finally:
                            nursery.cancel_scope.cancel(reason="the server is shutting down")
                finally:
                    self._state = _UNSET
        finally:
            self._running = False

    def serving(self) -> AbstractAsyncContextManager[None]:
        """:meth:`running`, unless it is running already (then a no-op)."""
        if self._running:
            return nullcontext()
        return self.running()

    def session(self, session: Session) -> AbstractAsyncContextManager[Any]:
        """The session lifespan for *session* (a no-op without one)."""
        if self._session_lifespan is None:
            return nullcontext()
        return self._session_scope(session)

    @asynccontextmanager
    async def _session_scope(self, session: Session) -> AsyncIterator[Any]:
        assert self._session_lifespan is not None
        async with self._session_lifespan(session) as state:
            self._sessions[session] = state
            try:
                yield state
            finally:
                self._sessions.pop(session, None)
