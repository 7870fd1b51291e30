"""``open_session``: run a :class:`~trio_mcp._session._engine.Session` for the
duration of an ``async with`` block, in a nursery of its own."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any, NamedTuple, final

import trio

from .._transport import Identity, Transport, offers_bound
from .._util import reraise_unwrapped
from ..protocol import (
    DEFAULT_MAX_MESSAGE_SIZE,
    Connection,
    ConnectionFactory,
    RequestObserver,
)
from ._context import Dispatcher, RequestContext
from ._engine import Session


def _adopt_bound(transport: Transport, bound: int | None) -> int:
    """One frame bound for the session, which its connection is made with: the
    transport's framing and the codec must agree, or a bound raised on one is
    still cut at the other's default."""
    if bound is not None:
        if bound < 1:
            raise ValueError("max_message_size must be positive")
        if offers_bound(transport):
            transport.set_max_message_size(bound)
        return bound
    if offers_bound(transport):
        return transport.max_message_size
    return DEFAULT_MAX_MESSAGE_SIZE


def open_session(
    transport: Transport,
    protocol: ConnectionFactory,
    dispatcher: Dispatcher,
    *,
    max_concurrent: int | None = 64,
    max_queued: int | None = 1024,
    outgoing_buffer: int = 256,
    progress_idle_timeout: float | None = 60.0,
    max_duration: float | None = 600.0,
    shutdown_grace: float = 2.0,
    cancel_notify_grace: float = 0.5,
    observer: RequestObserver | None = None,
    keepalive_interval: float | None = None,
    keepalive_timeout: float | None = None,
    progress_interval: float = 0.0,
    max_message_size: int | None = None,
    reader: bool = True,
    identity: Identity | None = None,
) -> AbstractAsyncContextManager[Session]:
    """Run a session over *transport* for the duration of the ``async with`` body.

    Args:
        transport: a channel of frames (one item = one JSON-RPC message).
        protocol: makes the session's sans-I/O :class:`Connection` (its role
            decides client or server), called once as the session starts with
            the session's clock, observer, progress interval and frame bound
            (see :class:`~trio_mcp.protocol.ConnectionFactory`):
            ``functools.partial(Connection, Role.SERVER)``,
            ``Server.make_protocol``.
        dispatcher: answers the peer's requests and notifications.
        max_concurrent: inbound handlers running at once (None: no limit);
            requests beyond it wait, visibly QUEUED.
        max_queued: requests that may wait for a slot (None: no bound); one more is
            answered at once with -32005 "too many requests", FAILED, and gets no task.
            Without *max_concurrent* nothing waits and this has no effect.
        outgoing_buffer: size of the bounded outgoing queue.
        progress_idle_timeout, max_duration: defaults for :meth:`Session.request`.
        shutdown_grace: how long inbound requests may settle at shutdown.
        cancel_notify_grace: bound on each small wait of the cancellation and
            shutdown paths (queueing a cancel, flushing, closing the transport).
        observer: sees every request transition and every frame (the
            connection is made with it).
        keepalive_interval: ping the peer this many seconds after each answered ping
            (None: no keepalive).
        keepalive_timeout: a ping unanswered for this many seconds (default:
            ``keepalive_interval``) closes the session as a connection failure: close
            origin TRANSPORT, reason ``"ping timeout after Ns"``, pending calls fail
            with :class:`SessionClosed`.
        progress_interval: rate limit of the progress *we* send: at most one
            notification per inbound request every this many seconds; reports in between
            are not sent (the record still shows them), except one that reaches its
            ``total``. 0 (the default) sends every report, which peers and the
            conformance suite expect.
        max_message_size: the bound on one inbound frame, in bytes, for this session:
            the connection is made with it, and it is set on the transport when it
            offers :class:`~trio_mcp.lowlevel.BoundedTransport` (stdio framing, the HTTP
            client). None: the transport's own bound when it has one, else 16 MiB. It is
            also the memory one frame may take while it is read. A frame over it is
            refused unparsed: a request answered -32600 with the id read from its head
            or tail, a response failing its call with
            :class:`~trio_mcp.ResponseTooLarge`; the session goes on.
        reader: False: no reader task. Either the owner hands every inbound
            frame to the session itself (:meth:`Session.feed`, then
            :meth:`Session.feed_eof` when the peer's side ends; the
            transport's ``receive`` is never called), for frames that arrive
            in the owner's task anyway (a 2026-07-28 POST); or the owner reads
            the transport in its own task (:meth:`Session.read_transport`),
            when it has nothing else to do while the session lives (a
            server's task per session).
        identity: who the peer's requests come from, kept up to date by
            the transport's owner (the HTTP application makes one per
            session); each request's context keeps the caller current when
            it arrived (``RequestContext.caller``). None: anonymous.

    Cancellation:
        Leaving the body, normally, by an exception or by cancellation, runs the
        shutdown sequence (see :meth:`Session.aclose`), bounded and shielded. An
        exception group holding a single real error is unwrapped to that error.
        When a scope *enclosing* the session is cancelled (the owner's cancel),
        the session's tasks are cancelled with it: handlers get no grace and
        nothing more is written for them (no -32001 replies, no
        ``notifications/cancelled``); records still end and the transport is
        still closed. The exception is an open long-lived stream (a 2026-07-28
        ``subscriptions/listen``): it is shielded from that cancel, and the
        shutdown first ends it with its final result, written before the
        session closes (shielded, bounded by *cancel_notify_grace*). A handler
        that shields itself delays the exit for as long as it shields (its
        late reply is dropped).

    Spec: R-09, PI-03, PI-05, TO-07, PG-09, BP-28, PI-04.
    """
    if isinstance(protocol, Connection):
        raise TypeError(
            "open_session takes what makes the connection, such as "
            "functools.partial(Connection, role) or Server.make_protocol, not a Connection"
        )
    if not progress_interval >= 0:
        raise ValueError("progress_interval must be >= 0")
    if max_queued is not None and max_queued < 0:
        raise ValueError("max_queued must be >= 0 (or None)")
    return _OpenSession(
        transport,
        protocol,
        dispatcher,
        {
            "max_concurrent": max_concurrent,
            "max_queued": max_queued,
            "outgoing_buffer": outgoing_buffer,
            "progress_idle_timeout": progress_idle_timeout,
            "max_duration": max_duration,
            "shutdown_grace": shutdown_grace,
            "cancel_notify_grace": cancel_notify_grace,
            "identity": identity,
        },
        _Extras(
            observer,
            keepalive_interval,
            keepalive_timeout,
            progress_interval,
            max_message_size,
            reader,
        ),
    )


class _Extras(NamedTuple):
    """What :func:`open_session` sets up around the :class:`Session` itself
    (a tuple: made for every 2026-07-28 POST, and dropped once entered)."""

    observer: RequestObserver | None
    keepalive_interval: float | None
    keepalive_timeout: float | None
    progress_interval: float
    max_message_size: int | None
    reader: bool


@final
class _OpenSession:
    """The context manager :func:`open_session` returns.

    A class, not an ``@asynccontextmanager`` generator: the server's task per
    session holds it for the session's life, and a generator (its frame, its
    context manager, Trio's record of a live async generator) takes the idle
    Streamable HTTP session over its memory bound (measured in
    ``bench/README.md``, "Why the engine is shaped as it is"). So it enters
    and leaves the nursery itself, doing what the generator would, in the same
    order: open the nursery, start the session; at the exit, shut the session
    down (``aclose``), cancel the nursery, leave it with the body's exception,
    and give back the one real error of an exception group. Entered once.
    """

    __slots__ = ("_nursery", "_nursery_manager", "_session", "_setup")

    def __init__(
        self,
        transport: Transport,
        protocol: ConnectionFactory,
        dispatcher: Dispatcher,
        options: dict[str, Any],
        extras: _Extras,
    ) -> None:
        # Dropped once entered: an idle session keeps none of it.
        self._setup: (
            tuple[Transport, ConnectionFactory, Dispatcher, dict[str, Any], _Extras] | None
        ) = (
            transport,
            protocol,
            dispatcher,
            options,
            extras,
        )
        self._nursery_manager: AbstractAsyncContextManager[trio.Nursery] | None = None
        self._nursery: trio.Nursery | None = None
        self._session: Session | None = None

    async def __aenter__(self) -> Session:
        if self._setup is None:
            raise RuntimeError("open_session(...) can be entered only once")
        transport, make_protocol, dispatcher, options, extras = self._setup
        self._setup = None
        protocol = make_protocol(
            # The run's clock itself, not trio.current_time(): the same reading
            # (MockClock included) without a run-context lookup, and the
            # connection reads it five times per request.
            clock=trio.lowlevel.current_clock().current_time,
            observer=extras.observer,
            progress_interval=extras.progress_interval,
            max_message_size=_adopt_bound(transport, extras.max_message_size),
        )
        manager = trio.open_nursery()
        nursery = await manager.__aenter__()
        try:
            session = Session(transport, protocol, dispatcher, nursery, RequestContext, **options)
            session._start(extras.keepalive_interval, extras.keepalive_timeout, extras.reader)
        except BaseException as error:
            # As a failure in a generator's body before its yield: the
            # nursery is left with it (its tasks cancelled and waited for).
            try:
                await manager.__aexit__(type(error), error, error.__traceback__)
            except BaseExceptionGroup as group:
                reraise_unwrapped(group)
            raise
        self._nursery_manager, self._nursery, self._session = manager, nursery, session
        return session

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: object,
    ) -> bool:
        try:
            await self._leave(exc)
        except BaseException as error:
            if error is exc:
                return False  # the body's own exception goes on, as it was
            raise
        # Left without an exception, or the nursery absorbed the body's (a
        # Cancelled of its own scope): nothing propagates.
        return True

    async def _leave(self, exc: BaseException | None) -> None:
        """The generator's tail, with the body's exception *exc* in flight."""
        manager, nursery, session = self._nursery_manager, self._nursery, self._session
        if manager is None or nursery is None or session is None:
            raise RuntimeError("open_session(...) was left without being entered")
        self._nursery_manager = self._nursery = self._session = None
        try:
            try:
                try:
                    if exc is not None:
                        raise exc
                finally:
                    await session.aclose("session closed by its owner")
                    nursery.cancel_scope.cancel(reason="session closed")
            except BaseException as error:
                if not await manager.__aexit__(type(error), error, error.__traceback__):
                    raise
            else:
                await manager.__aexit__(None, None, None)
        except BaseExceptionGroup as group:
            reraise_unwrapped(group)
