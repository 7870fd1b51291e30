"""The connection lifecycle of both eras: states, transitions and permissions.

Theory of operation
-------------------
Everything that moves a session from one lifecycle state to another lives in
this module, as data (h11's ``_state.py``, "Rule 1")::

    client:  NEW --SEND_INITIALIZE--> INITIALIZING --RECV_INIT_RESULT--> OPERATING
             INITIALIZING --RECV_INIT_ERROR--> NEW     (refused: e.g. -32022 from a
                                                        2026-07-28-only server, VR-13)
    server:  NEW --RECV_INITIALIZE--> INITIALIZING --SEND_INIT_RESULT--> INITIALIZED
                                          --RECV_INITIALIZED--> OPERATING
             INITIALIZING --SEND_INIT_ERROR--> NEW     (the client may try again)
             NEW --START_STATELESS--> OPERATING        (a stateless HTTP exchange, HT-36)
    modern:  client NEW --START_MODERN--> MODERN       (server/discover answered, VR-11)
             server NEW --RECV_MODERN--> MODERN        (a request with modern _meta, VR-09)
    both:    any but CLOSED --CLOSE--> CLOSED          (final; every later send is refused)

The era of a connection is decided by its opening (VR-09): ``initialize`` takes
the handshake path, a request naming a 2026-07-28 version in ``_meta`` the
modern one. A ``server/discover`` probe does not decide it (the server answers
it in NEW and stays there), so a client whose probe found no common modern
version may still send ``initialize`` on the same connection (SI-14). In MODERN
there is no session: every request is checked against its own ``_meta``, and
the server sends no requests (PT-01).

:data:`LIFECYCLE` is that diagram, keyed ``[role][state][event]``; a pair that is
missing is not a transition. :class:`Lifecycle` is the one object that holds a
session's state, and :meth:`Lifecycle.process` the one place that changes it.

:data:`ALLOWED` says, per ``(role, state)``, which requests and notifications
may be sent and which requests are accepted: before OPERATING a client sends
only ``initialize`` and ``ping`` (LC-05) and a server only ``ping`` requests and
logging notifications (LC-06); a server accepts requests once its result is out,
even before ``notifications/initialized`` arrives (A-04). ``initialize`` itself
is governed by the transitions: it is accepted or sent exactly where
:data:`LIFECYCLE` has ``RECV_INITIALIZE`` or ``SEND_INITIALIZE``, never in a
JSON-RPC batch (LC-12).
"""

from __future__ import annotations

from collections.abc import Container
from typing import Final

import attrs

from ._enum import _FastEnum
from ._errors import LocalProtocolError


class SessionState(_FastEnum):
    """Where a session is in the lifecycle (spec_notes/lifecycle.md)."""

    #: Nothing exchanged yet.
    NEW = "new"
    #: Client: initialize sent. Server: initialize received, result not yet out.
    INITIALIZING = "initializing"
    #: Server only: result sent, waiting for ``notifications/initialized``.
    INITIALIZED = "initialized"
    #: Normal operation.
    #:
    #: Spec: LC-11.
    OPERATING = "operating"
    #: The modern era (2026-07-28): no session, every request self-contained.
    MODERN = "modern"
    #: Closed; ``Connection.close_reason`` says why.
    CLOSED = "closed"


class Role(_FastEnum):
    """Which end of the session this is."""

    CLIENT = "client"
    SERVER = "server"

    @property
    def peer(self) -> Role:
        return Role.SERVER if self is Role.CLIENT else Role.CLIENT


class LifecycleEvent(_FastEnum):
    """What moves a session through its lifecycle."""

    #: Client: the ``initialize`` request is made.
    SEND_INITIALIZE = "send initialize"
    #: Server: a valid ``initialize`` request arrived.
    RECV_INITIALIZE = "receive initialize"
    #: Server: the ``initialize`` result is written.
    SEND_INIT_RESULT = "send initialize result"
    #: Server: an error response to ``initialize`` is written.
    SEND_INIT_ERROR = "send initialize error"
    #: Client: the server's ``initialize`` result was accepted.
    RECV_INIT_RESULT = "receive initialize result"
    #: Client: the server answered ``initialize`` with an error.
    RECV_INIT_ERROR = "receive initialize error"
    #: Server: ``notifications/initialized`` arrived.
    RECV_INITIALIZED = "receive initialized"
    #: Server: one stateless exchange starts without a handshake.
    #:
    #: Spec: HT-36.
    START_STATELESS = "start stateless"
    #: Client: the era probe found a modern server; requests carry ``_meta``.
    START_MODERN = "start modern"
    #: Server: a request that names a modern version in ``_meta`` arrived.
    #:
    #: Spec: VR-09.
    RECV_MODERN = "receive modern request"
    #: Either side: the session ends.
    CLOSE = "close"


_NEW, _INITIALIZING, _INITIALIZED, _OPERATING, _MODERN, _CLOSED = SessionState
_CLOSE = {LifecycleEvent.CLOSE: _CLOSED}

#: The whole lifecycle, ``LIFECYCLE[role][state][event] -> new state``.
LIFECYCLE: Final[dict[Role, dict[SessionState, dict[LifecycleEvent, SessionState]]]] = {
    Role.CLIENT: {
        _NEW: {
            LifecycleEvent.SEND_INITIALIZE: _INITIALIZING,
            LifecycleEvent.START_MODERN: _MODERN,
            **_CLOSE,
        },
        _INITIALIZING: {
            LifecycleEvent.RECV_INIT_RESULT: _OPERATING,
            LifecycleEvent.RECV_INIT_ERROR: _NEW,
            **_CLOSE,
        },
        _OPERATING: _CLOSE,
        _MODERN: _CLOSE,
        _CLOSED: {},
    },
    Role.SERVER: {
        _NEW: {
            LifecycleEvent.RECV_INITIALIZE: _INITIALIZING,
            LifecycleEvent.START_STATELESS: _OPERATING,
            LifecycleEvent.RECV_MODERN: _MODERN,
            **_CLOSE,
        },
        _INITIALIZING: {
            LifecycleEvent.SEND_INIT_RESULT: _INITIALIZED,
            LifecycleEvent.SEND_INIT_ERROR: _NEW,
            **_CLOSE,
        },
        _INITIALIZED: {LifecycleEvent.RECV_INITIALIZED: _OPERATING, **_CLOSE},
        _OPERATING: _CLOSE,
        _MODERN: _CLOSE,
        _CLOSED: {},
    },
}


class _EveryMethod(Container[str]):
    """The permission "any method" (the method table's own checks still apply)."""

    def __contains__(self, method: object) -> bool:
        return True

    def __repr__(self) -> str:
        return "EVERY_METHOD"


EVERY_METHOD: Final[Container[str]] = _EveryMethod()
_EARLY_REQUESTS = frozenset({"ping"})
_EARLY_NOTIFICATIONS = frozenset(
    {"notifications/message", "notifications/progress", "notifications/cancelled"}
)


@attrs.frozen
class Permissions:
    """What one side may exchange in one lifecycle state.

    ``initialize`` is not listed: :data:`LIFECYCLE` decides it.

    Spec: LC-05, LC-06, A-04.
    """

    send_requests: Container[str]
    send_notifications: Container[str]
    receive_requests: Container[str]


_CLOSED_TO_ALL = Permissions(frozenset(), frozenset(), frozenset())
_OPERATING_ALL = Permissions(EVERY_METHOD, EVERY_METHOD, EVERY_METHOD)
# The client sends notifications/initialized when its handshake completes, and
# may probe the era with server/discover before choosing one (SI-14).
_CLIENT_EARLY = Permissions(
    _EARLY_REQUESTS | {"server/discover"},
    _EARLY_NOTIFICATIONS | {"notifications/initialized"},
    _EARLY_REQUESTS,
)
_SERVER_EARLY = Permissions(_EARLY_REQUESTS, _EARLY_NOTIFICATIONS, _EARLY_REQUESTS)

#: The permission table: what may be sent and received per ``(role, state)``.
ALLOWED: Final[dict[tuple[Role, SessionState], Permissions]] = {
    (Role.CLIENT, _NEW): _CLIENT_EARLY,
    (Role.CLIENT, _INITIALIZING): _CLIENT_EARLY,
    (Role.CLIENT, _OPERATING): _OPERATING_ALL,
    (Role.CLIENT, _MODERN): _OPERATING_ALL,
    (Role.CLIENT, _CLOSED): _CLOSED_TO_ALL,
    (Role.SERVER, _NEW): _SERVER_EARLY,
    (Role.SERVER, _INITIALIZING): _SERVER_EARLY,
    # The result is out; notifications/initialized may still be in flight.
    (Role.SERVER, _INITIALIZED): Permissions(_EARLY_REQUESTS, _EARLY_NOTIFICATIONS, EVERY_METHOD),
    (Role.SERVER, _OPERATING): _OPERATING_ALL,
    # No server-to-client requests in the modern era (PT-01, SI-07).
    (Role.SERVER, _MODERN): Permissions(frozenset(), EVERY_METHOD, EVERY_METHOD),
    (Role.SERVER, _CLOSED): _CLOSED_TO_ALL,
}


class Lifecycle:
    """The lifecycle state of one side of one session. Not thread-safe.

    :meth:`process` is the only writer of :attr:`state` and :attr:`permissions`
    (read them, never assign them): it follows :data:`LIFECYCLE`, and
    :attr:`permissions` is always ``ALLOWED[(role, state)]``.
    """

    __slots__ = ("_transitions", "permissions", "role", "state")

    def __init__(self, role: Role) -> None:
        self.role = role
        self._transitions = LIFECYCLE[role]
        #: Where the session is (a plain attribute: it is read for every message).
        self.state = SessionState.NEW
        #: What may be exchanged in the current state.
        self.permissions = ALLOWED[(role, SessionState.NEW)]

    def accepts(self, event: LifecycleEvent) -> bool:
        """Whether *event* is a transition from the current state."""
        return event in self._transitions[self.state]

    def process(self, event: LifecycleEvent) -> SessionState:
        """Apply *event* and return the new state.

        Raises:
            LocalProtocolError: *event* is not a transition from the current
                state for this role.
        """
        new = self._transitions[self.state].get(event)
        if new is None:
            raise LocalProtocolError(
                f"{event.value} is not allowed for a {self.role.value} in state {self.state.value}"
            )
        self.state = new
        self.permissions = ALLOWED[(self.role, new)]
        return new

    def request_refusal(self, method: str, *, batched: bool) -> str | None:
        """Why an inbound request for *method* is refused in this state, or None.

        Spec: LC-05, LC-06, LC-12, A-04.
        """
        if self.state is SessionState.CLOSED:
            return "The session is closed"
        if method == "initialize":
            if batched:
                return "initialize must not be part of a JSON-RPC batch"
            if self.accepts(LifecycleEvent.RECV_INITIALIZE):
                return None
            return "The session is already initialized"
        if method in self.permissions.receive_requests:
            return None
        return f"Received {method!r} before initialization completed"

    def check_send_request(self, method: str) -> None:
        """Refuse an outbound request for *method* that this state forbids;
        ``initialize`` is checked by its transition.

        Raises:
            LocalProtocolError: it may not be sent now.

        Spec: LC-05, LC-06.
        """
        if method not in self.permissions.send_requests:
            raise LocalProtocolError(
                f"cannot send {method!r} in state {self.state.value} (LC-05/LC-06)"
            )

    def check_send_notification(self, method: str) -> None:
        """Refuse an outbound notification that this state forbids.

        Raises:
            LocalProtocolError: it may not be sent now.

        Spec: LC-05, LC-06.
        """
        if method not in self.permissions.send_notifications:
            raise LocalProtocolError(f"cannot send {method!r} in state {self.state.value}")
