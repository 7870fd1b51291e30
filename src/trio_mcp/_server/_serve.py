"""Serving one session of a :class:`~trio_mcp.Server`, and the notices it is owed.

The registry (``trio_mcp._server._registry``) is shared by every session it serves; what
belongs to one session lives in a :class:`Peer`: its log level, its resource
subscriptions, and the ``list_changed`` / ``resources/updated`` notices queued
for it. Registry changes only *queue* notices (synchronously, coalescing
repeats); :func:`serve_session` runs a small delivery task next to each
session from its first notice on (an idle session keeps no task for it), so a
slow client never blocks the code that changed the registry, and notices queued
during the handshake wait for ``notifications/initialized``.

Spec: TL-02, RS-05, RS-06, PR-03.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from typing import Any, Protocol

import trio

from .. import types as mcp_types
from .._errors import SessionClosed
from .._session import Dispatcher, Session, open_session
from .._telemetry._switch import watching
from .._transport import Identity, Transport
from .._util import covers
from ..protocol import (
    Connection,
    HeaderAnnotation,
    LocalProtocolError,
    RequestObserver,
    SessionState,
)

logger = logging.getLogger("trio_mcp.server")


#: The subscriptions of a session that has none (most): shared, never changed.
_NO_SUBSCRIPTIONS: frozenset[str] = frozenset()


class Peer:
    """What the server keeps per session: log level, subscriptions, queued notices.

    Most sessions never subscribe nor get a notice, and a server holds many
    idle ones, so what those need is made on first use: the set of
    subscriptions, the delivery task, the event that wakes it.
    """

    __slots__ = ("_serving", "_subscriptions", "log_level", "pending", "wake")

    def __init__(self) -> None:
        self.log_level: mcp_types.LoggingLevel | None = None
        self._subscriptions: set[str] | None = None
        #: (method, uri or None) to deliver; a set, so repeats coalesce.
        self.pending: dict[tuple[str, str | None], None] = {}
        #: Set to wake the delivery task; made by the task before it waits.
        self.wake: trio.Event | None = None
        # The session served, while no delivery task runs for it yet: the
        # first notice starts one in the session's nursery.
        self._serving: Session | None = None

    @property
    def subscriptions(self) -> AbstractSet[str]:
        """The URIs subscribed to (``resources/subscribe``), read-only."""
        subscriptions = self._subscriptions
        return _NO_SUBSCRIPTIONS if subscriptions is None else subscriptions

    def subscribe(self, uri: str) -> None:
        """Subscribe to *uri* (``resources/subscribe``; idempotent)."""
        if self._subscriptions is None:
            self._subscriptions = set()
        self._subscriptions.add(uri)

    def unsubscribe(self, uri: str) -> None:
        """Drop the subscription to *uri*, if any (``resources/unsubscribe``)."""
        if self._subscriptions is not None:
            self._subscriptions.discard(uri)

    def push(self, method: str, uri: str | None = None) -> None:
        """Queue a notice (coalescing repeats) and wake the delivery task."""
        self.pending[(method, uri)] = None
        self.ready()

    def ready(self) -> None:
        """Wake the delivery task, starting it if a notice waits and none runs yet."""
        if self.wake is not None:
            self.wake.set()
        if self.pending and self._serving is not None:
            session, self._serving = self._serving, None
            session.start_soon(deliver, session, self, name="trio_mcp notices")

    def deliver_for(self, session: Session) -> None:
        """From now on a notice starts :func:`deliver` for *session* in the
        session's own nursery (at once if notices are already queued)."""
        self._serving = session
        self.ready()

    def stop_delivering(self) -> None:
        """No notice starts a delivery task any more (the session is over)."""
        self._serving = None


class SessionServer(Dispatcher, Protocol):
    """What :func:`serve_session` serves: :class:`~trio_mcp.Server` is one.

    It makes each session's connection, answers the session (as its
    :class:`~trio_mcp.lowlevel.Dispatcher`), and keeps a :class:`Peer` per
    session for the notices it queues.
    """

    #: The revisions served, newest first (both eras unless narrowed).
    protocol_versions: tuple[str, ...]

    def make_protocol(
        self,
        *,
        clock: Callable[[], float],
        observer: RequestObserver | None,
        progress_interval: float,
        max_message_size: int,
    ) -> Connection:
        """A fresh server-side connection for one session, configured with the
        session's settings (a :class:`~trio_mcp.protocol.ConnectionFactory`)."""
        ...

    def tool_header_annotations(self, name: str) -> tuple[HeaderAnnotation, ...]:
        """The ``x-mcp-header`` annotations of tool *name* (empty: none, or no such tool)."""
        ...

    def peer_of(self, session: Session) -> Peer:
        """The :class:`Peer` kept for *session* (made on first use)."""
        ...


def subscribed(subscriptions: AbstractSet[str], uri: str) -> bool:
    """Whether an update of *uri* concerns these subscriptions: the URI itself
    or a parent of it (RS-06: an update may concern a sub-resource)."""
    return uri in subscriptions or any(covers(s, uri) for s in subscriptions)


async def deliver(session: Session, peer: Peer) -> None:
    """Send *peer*'s queued list-changed and resource-updated notices until cancelled.

    Notices not negotiated in this session (its capabilities were fixed when
    it started) are dropped with a debug log.

    Cancellation: a task of the session's nursery (:meth:`Session.start_soon`),
    cancelled with the session's tasks once the session has shut down; a
    notice that was not queued yet is dropped.
    """
    while True:
        if not peer.pending or session.state is not SessionState.OPERATING:
            # Nothing to send, or kept until notifications/initialized
            # arrives: a notice or the handshake's end wakes us.
            peer.wake = trio.Event()
            await peer.wake.wait()
            continue
        pending, peer.pending = peer.pending, {}
        for method, uri in pending:
            params = {"uri": uri} if uri is not None else None
            try:
                await session.notify(method, params)
            except LocalProtocolError as exc:
                logger.debug("%s not sent: %s", method, exc)
            except SessionClosed:
                return


async def serve_session(
    server: SessionServer,
    transport: Transport,
    *,
    identity: Identity | None = None,
    task_status: trio.TaskStatus[Session] = trio.TASK_STATUS_IGNORED,
    **session_options: Any,
) -> None:
    """Serve one session of *server* over *transport* until it closes.

    *identity* is who the peer's requests come from, when the transport's
    owner authenticated it (the HTTP application hands one to each session);
    None: anonymous. *session_options* go to
    :func:`~trio_mcp.lowlevel.open_session`.

    ``task_status.started`` receives the :class:`Session` (for ``nursery.start``).
    Next to the session runs, from the first one queued, the task that
    delivers this session's list-changed and resource-updated notifications.
    A server with a task runner (``server.tasks``) has it running for the
    session: this call opens it unless an outer entry point did (then that one
    owns it), so a session served on its own shuts its tasks down when it ends
    (TK, shutdown).

    Cancellation:
        Cancelling this call shuts the session down in the documented order
        (bounded), then re-raises ``Cancelled``: handlers are cancelled at
        once, and each open 2026-07-28 ``subscriptions/listen`` first gets its
        final ``complete`` result (see :func:`~trio_mcp.lowlevel.open_session`).
    """
    tasks = getattr(server, "tasks", None)
    # The process's scopes (lifespan, tasks, bus relay) when the server has them.
    serving = getattr(server, "serving", None)
    async with (
        # A server's tasks outlive their requests; a session served on its own
        # (stdio, a test pair) owns the runner, one of many shares its owner's.
        serving()
        if serving is not None
        else tasks.serving()
        if tasks is not None
        else contextlib.nullcontext(),
        # No reader task: this task reads (read_transport), as it has nothing
        # else to do, and the notices are delivered by a task of the session's
        # own nursery. A task and a nursery less of every idle session (a
        # server holds many).
        open_session(
            transport,
            server.make_protocol,
            server,
            reader=False,
            identity=identity,
            **session_options,
        ) as session,
        watching(getattr(server, "telemetry", None), session),
    ):
        peer = server.peer_of(session)
        # The session lifespan (handshake era: a session is a client's).
        scope = getattr(server, "session_scope", None)
        async with scope(session) if scope is not None else contextlib.nullcontext():
            task_status.started(session)
            peer.deliver_for(session)
            try:
                await session.read_transport()
            finally:
                peer.stop_delivering()
