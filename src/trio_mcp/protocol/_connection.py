"""``Connection``: one side of one MCP session, without I/O.

Theory of operation
-------------------
The session feeds every inbound frame to :meth:`Connection.receive_data` and gets
events back; it asks :meth:`Connection.send_request` / :meth:`send_notification`
for outbound messages and hands every message to :meth:`Connection.encode` just
before writing it. ``encode`` is the single place that decides "write this, or
nothing": a request cancelled while still queued is never written, a response to
a request the peer cancelled is never written (CN-05), and progress for a
finished request is never written (PG-10). It is this library's analogue of
h11's ``send``, in two steps because that decision must wait until write time.

A connection has collaborators, each given what it needs at construction and
none of them seeing the connection:

* a :class:`RequestBook` (``_book.py``) keeps the request records, in two
  tables of :class:`RequestEntry`, one per direction, because the two sides'
  ids are separate namespaces (A-14), plus a bounded history and the
  remembered inbound ids (BP-04);
* a :class:`Lifecycle` (``_lifecycle.py``) holds the session state and what
  each state permits; the negotiated :class:`Revision` (``_revisions.py``)
  says what differs between revisions;
* one object per era holds that era's rules: ``HandshakeEra``
  (``_handshake.py``: ``initialize``, the handshake's checks, the stateless
  start, 2025-11-25 tasks) and ``ModernEra`` (``_modern.py``: the per-request
  ``_meta``, ``server/discover``, its checks, its results). The connection
  keeps the era in force in ``_era`` and swaps it when the first message
  decides (``_era.py``), as h11 re-picks its reader and writer from
  ``READERS``/``WRITERS`` when its state changes;
* the rules both eras share: ``MessageReader`` (``_reader.py``) reads what the
  peer sent into events, ``SendChecks`` (``_sending.py``) checks what we send
  and ``OutboundMessages`` there makes it (the ids, the ``_meta``, the
  records), ``Replies`` (``_replies.py``) answers the peer's requests,
  ``Cancellation`` (``_cancel.py``) and ``ProgressReports`` (``_progress.py``)
  apply those utilities both ways.

This module holds the connection itself: its configuration, the outbound
requests, ``encode``, the receive dispatch, the answers to inbound requests,
and the entry points of the handshake, the modern era, cancellation and
progress, which record what the rules decide (the version, the peer).

An inbound request is checked in a fixed order, so that each refusal carries
the right code and never reads as a second response to an earlier request:

1. a duplicate id (in flight, or finished with its reply not yet written):
   -32600 with a null id, which cannot read as a second answer to the first
   use (BP-04); an id reused after its first use was answered is accepted
   and counted (C-02: deployed clients do it);
2. the era's own checks: the method and the lifecycle in the handshake era,
   the request's ``_meta``, version and method in 2026-07-28 (see
   ``_handshake.py`` and ``_modern.py``, each in its era's order);
3. the capability gate of our own capabilities: -32601 (LC-11);
4. the params, structured into the method's type: -32602 with path-labelled
   ``data``;
5. ``_meta.progressToken``, which must be a string or an integer: -32602.

A server connection serves both eras (VR-08, VR-09): until its opening decides,
each request is read by the era it names (``ModernEra.opens``). A client
connection chooses its era by probing (``discover_request`` / ``start_modern``).

Responses, cancellations and progress for unknown, finished or foreign ids are
ignored and recorded (CN-04, CN-06, PG-10).

Configuration (capabilities, info, versions, cache hints, the clock, the
observer, the progress interval, the frame bound) is given at construction and
read-only after it: a session hands its own settings to the function that makes
its connection (:class:`ConnectionFactory`).

Invariants:

* every request ends in exactly one terminal state;
* at most one response per inbound id is ever produced, none after a peer cancel;
* our outbound ids are never reused (a counter), and progress tokens are our ids;
* bad input from the peer yields an event, never an exception.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any
from typing import Protocol as TypingProtocol

import cattrs

from .. import types as mcp_types
from ._book import ProtocolStatistics, RequestBook
from ._cancel import Cancellation
from ._codec import DEFAULT_MAX_MESSAGE_SIZE, FrameError, decode, encode
from ._era import NO_CUSTOM_METHODS, UNKNOWN_PEER, Era, Peer, Side
from ._errors import LocalProtocolError, UnsupportedProtocolVersion
from ._events import (
    Event,
    InvalidMessage,
    RequestReceived,
)
from ._handshake import HandshakeEra
from ._lifecycle import Lifecycle, LifecycleEvent, Role, SessionState
from ._messages import (
    ErrorObject,
    ErrorResponse,
    JSONObject,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
)
from ._methods import Kind, MethodSpec
from ._modern import ModernEra
from ._observer import RequestObserver
from ._progress import ProgressReports
from ._reader import MessageReader
from ._replies import Replies
from ._requests import (
    CancelOrigin,
    Direction,
    RequestEntry,
    RequestEvent,
    RequestMeta,
    RequestRecord,
    RequestState,
)
from ._revisions import (
    ALL_VERSIONS,
    REVISIONS,
    Revision,
)
from ._sending import OutboundMessages, SendChecks

_RELATED_TASK_KEY = mcp_types.RELATED_TASK_META_KEY


class ConnectionFactory(TypingProtocol):
    """What makes a session's :class:`Connection`, given the session's own settings.

    :func:`~trio_mcp.lowlevel.open_session` calls it once, when the session
    starts, so that the connection is configured at construction: with the
    Trio run's clock, the session's observer, its progress interval and its
    frame bound. ``functools.partial(Connection, Role.SERVER)`` is one, and so
    is ``Server.make_protocol``.
    """

    def __call__(
        self,
        *,
        clock: Callable[[], float],
        observer: RequestObserver | None,
        progress_interval: float,
        max_message_size: int,
    ) -> Connection:
        """The connection of one session."""
        ...


class Connection:
    """The sans-I/O state of one side of one session. Not thread-safe.

    Configured at construction only: every argument below is read-only after it.

    Args:
        role: which end this is.
        capabilities: the capabilities object this side declares. Kept as
            given (never copied, never changed): many sessions may share it.
        info: this side's ``Implementation`` object (``clientInfo``/``serverInfo``),
            kept as given.
        instructions: server only, sent in the initialize and discover results.
        supported_versions: revisions we speak, newest first (each one of
            :data:`~trio_mcp.protocol.REVISIONS`): the handshake-era ones are negotiated
            by ``initialize``, the modern ones named per request. Both eras by default
            (a dual-era server); without a modern version a server treats every request
            as the handshake era's; without a handshake version it answers
            ``initialize`` with -32022 naming what it speaks.
        modern_capabilities, cache_hints, result_server_info: a server's 2026-07-28
            results: the capabilities a ``server/discover`` answer declares, the cache
            hints (ttl and scope) each list result carries, and whether results carry
            ``serverInfo`` in their ``_meta``.
        clock: where timestamps come from (a session passes Trio's clock).
        observer: sees every request transition (None: nobody, and snapshots
            are then not built at all).
        progress_interval: seconds between two progress notifications of one inbound
            request (0: every report is sent); see :meth:`progress_notification`.
        max_message_size: bound on one inbound frame, in bytes (16 MiB by
            default). A frame over it is refused unparsed, with the id a bounded
            scan of its head reads (see :func:`~trio_mcp.protocol.decode`).
        history: how many finished records :meth:`requests` keeps.
        remember_ids: how many finished inbound ids are remembered to refuse reuse.
        converter: the cattrs converter of params and results.
        custom_methods: the methods outside the core set this side answers
            (rows made by :func:`~trio_mcp.protocol.custom_method`), by name.

    Raises:
        ValueError: a version in *supported_versions* is not a known revision,
            or *progress_interval* is negative.

    Spec: VR-13, PG-09, VR-08.
    """

    # Slots: one Connection per session, and its attributes would otherwise
    # make an instance dict of ~1 KiB.
    __slots__ = (
        "_book",
        "_cancellation",
        "_era",
        "_handshake",
        "_lifecycle",
        "_max_message_size",
        "_modern",
        "_outbound",
        "_peer_capabilities",
        "_peer_info",
        "_peer_instructions",
        "_progress",
        "_reader",
        "_replies",
        "_sending",
        "_side",
        "close_reason",
        "protocol_version",
        "revision",
    )

    def __init__(
        self,
        role: Role,
        *,
        capabilities: JSONObject | None = None,
        info: JSONObject | None = None,
        instructions: str | None = None,
        supported_versions: tuple[str, ...] = ALL_VERSIONS,
        modern_capabilities: JSONObject | None = None,
        cache_hints: dict[str, tuple[int, str]] | None = None,
        result_server_info: bool = True,
        clock: Callable[[], float] = time.monotonic,
        observer: RequestObserver | None = None,
        progress_interval: float = 0.0,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        history: int = 1000,
        remember_ids: int = 4096,
        converter: cattrs.Converter | None = None,
        custom_methods: Mapping[str, MethodSpec] | None = None,
    ) -> None:
        unknown = [version for version in supported_versions if version not in REVISIONS]
        if unknown:
            raise ValueError(f"unknown protocol revisions {unknown!r}")
        if not progress_interval >= 0:
            raise ValueError("progress_interval must be >= 0")
        self._book = RequestBook(
            clock=clock, history=history, remember_ids=remember_ids, observer=observer
        )
        self._lifecycle = lifecycle = Lifecycle(role)
        self._side = side = Side(
            role,
            capabilities or {},
            info or {"name": "trio_mcp", "version": "0"},
            instructions,
            tuple(supported_versions),
            converter or mcp_types.converter,
            custom_methods or NO_CUSTOM_METHODS,
        )
        self._max_message_size = max_message_size
        self._progress = ProgressReports(self._book, progress_interval)
        self._cancellation = Cancellation(self._book)
        self._sending = SendChecks(side, lifecycle)
        self._outbound = OutboundMessages(side, self._book)
        self._handshake = HandshakeEra(side, lifecycle)
        self._modern = ModernEra(
            side,
            lifecycle,
            discover_capabilities=modern_capabilities,
            cache_hints=cache_hints,
            result_server_info=result_server_info,
        )
        self._replies = Replies(role, self._book, self._modern, self._outbound)
        # The era in force: the handshake's until the opening decides otherwise.
        self._era: Era = self._handshake
        self._reader = MessageReader(
            side,
            self._book,
            handshake=self._handshake,
            progress=self._progress,
            cancellation=self._cancellation,
        )
        #: The negotiated revision, once known.
        self.revision: Revision | None = None
        #: Its version string, once known.
        self.protocol_version: str | None = None
        # Who the peer said it is, once the era is decided (Peer's fields:
        # three slots cost less than a tuple kept per connection).
        self._peer_capabilities, self._peer_info, self._peer_instructions = UNKNOWN_PEER
        self.close_reason: str | None = None

    # ---------------------------------------------------------- configuration

    @property
    def role(self) -> Role:
        """Which end this is."""
        return self._side.role

    @property
    def local_capabilities(self) -> JSONObject:
        """The capabilities this side declares (never change them)."""
        return self._side.capabilities

    @property
    def local_info(self) -> JSONObject:
        """This side's ``Implementation`` object."""
        return self._side.info

    @property
    def modern_capabilities(self) -> JSONObject | None:
        """Server: the capabilities ``server/discover`` shows (None: :attr:`local_capabilities`)."""
        return self._modern.discover_capabilities

    @property
    def supported_versions(self) -> tuple[str, ...]:
        """The revisions we speak, newest first (both eras)."""
        return self._side.supported_versions

    @property
    def handshake_versions(self) -> tuple[str, ...]:
        """Our handshake-era versions, newest first."""
        return self._handshake.versions

    @property
    def modern_versions(self) -> tuple[str, ...]:
        """Our modern-era versions, newest first."""
        return self._modern.versions

    @property
    def clock(self) -> Callable[[], float]:
        """Where timestamps come from."""
        return self._book.clock

    @property
    def observer(self) -> RequestObserver:
        """What sees every request transition (a null observer by default)."""
        return self._book.observer

    @property
    def observing(self) -> bool:
        """False when nobody observes: snapshots are then not built at all."""
        return self._book.observing

    @property
    def progress_interval(self) -> float:
        """Seconds between two progress notifications of one inbound request.

        Spec: PG-09.
        """
        return self._progress.interval

    @property
    def max_message_size(self) -> int:
        """The bound on one inbound frame, in bytes."""
        return self._max_message_size

    # ------------------------------------------------------------ observation

    @property
    def state(self) -> SessionState:
        """Where the session is in its lifecycle."""
        return self._lifecycle.state

    @property
    def peer_capabilities(self) -> JSONObject:
        """The capabilities the peer declared (``{}`` before the era is decided)."""
        return self._peer_capabilities

    @property
    def peer_info(self) -> JSONObject:
        """The peer's ``Implementation`` object, as it declared it."""
        return self._peer_info

    @property
    def peer_instructions(self) -> str | None:
        """The server's instructions (client side), if it gave any."""
        return self._peer_instructions

    def requests(self) -> list[RequestRecord]:
        """Snapshots: recent finished records, then in-flight ones."""
        return self._book.requests()

    def record(self, direction: Direction, request_id: RequestId) -> RequestRecord | None:
        """The record of one request, in flight or in the history."""
        return self._book.record(direction, request_id)

    def in_flight(self, direction: Direction) -> list[RequestId]:
        """The ids of the requests in flight in *direction*."""
        return self._book.in_flight(direction)

    def statistics(self) -> ProtocolStatistics:
        """The counters of the requests and messages seen so far."""
        return self._book.statistics()

    # -------------------------------------------------------------------- send

    def send_request(
        self,
        method: str,
        params: Any = None,
        *,
        want_progress: bool = False,
        follows: RequestId | None = None,
        custom: bool = False,
    ) -> Request:
        """Make an outbound request and its QUEUED record.

        ``params`` is an attrs instance of the method's params type, a JSON object, or
        None. With *want_progress* the request carries ``_meta.progressToken`` (equal to
        its id, so unique among active requests). A client in the modern era adds the
        protocol version, its capabilities and its ``clientInfo`` to every request's
        ``_meta``; keys the caller put in ``_meta`` are kept. *follows* names the round
        this request retries (a multi round-trip call): it goes on the record only.
        With *custom*, a method outside the core set that this side does not
        define is the peer's custom method: its params and result are JSON objects.

        Raises:
            LocalProtocolError: the method is unknown, goes the wrong way, does not
                exist in the negotiated revision, is not allowed in the current
                lifecycle state, or needs a capability the peer did not declare; or
                *params* is not JSON (NaN, Infinity, a lone surrogate, an object JSON
                has no form for).

        Spec: ME-06, ME-08, LC-05, LC-06, LC-11, PG-02, PT-14.
        """
        spec = self._check_outbound(method, Kind.REQUEST, custom)
        if method == "initialize":
            self._handshake.send_initialize()
        else:
            self._lifecycle.check_send_request(method)
        return self._outbound.request(
            method,
            spec,
            params,
            self._era,
            self.revision,
            want_progress=want_progress,
            follows=follows,
        )

    def send_notification(
        self, method: str, params: Any = None, *, custom: bool = False
    ) -> Notification:
        """Make an outbound notification (*custom*: as :meth:`send_request`).

        Raises:
            LocalProtocolError: for ``notifications/cancelled`` and
                ``notifications/progress``, which only :meth:`cancel_outbound` and
                :meth:`progress_notification` make (they enforce the rules on cancels
                and progress), and as :meth:`send_request` otherwise (including params
                that are not JSON).

        Spec: CN-02, CN-03, PG-04, PG-07, PG-10.
        """
        if method in ("notifications/cancelled", "notifications/progress"):
            raise LocalProtocolError(
                f"{method} is made by cancel_outbound()/progress_notification(), which "
                "enforce its rules"
            )
        self._check_outbound(method, Kind.NOTIFICATION, custom)
        self._lifecycle.check_send_notification(method)
        return self._outbound.notification(method, params)

    def rewrite_request(self, request: Request, params: JSONObject | None) -> Request:
        """*request*, still QUEUED, with new *params* (a middleware edited
        them): the record keeps its id; what is written is the new request.

        Raises:
            LocalProtocolError: the request is no longer QUEUED, or *params*
                are not JSON.
        """
        return self._outbound.rewrite(request, params)

    def to_json(self, value: Any) -> JSONObject | None:
        """*value* (an attrs instance of the data model, a JSON object or
        None) in its wire form, with the session's converter."""
        return self._outbound.to_json(value)

    def restructure_params(self, spec: MethodSpec, params: JSONObject | None) -> Any:
        """*params* read into *spec*'s params type, as a request's are when it
        arrives, or the -32602 :class:`ErrorObject` that refuses them."""
        return self._reader.structure_params(spec, params)

    def _check_outbound(self, method: str, kind: Kind, custom: bool = False) -> MethodSpec:
        if self._lifecycle.state is SessionState.CLOSED:
            raise LocalProtocolError(f"session closed: {self.close_reason}")
        return self._sending.check(
            method, kind, self.protocol_version, self._peer_capabilities, custom=custom
        )

    def encode(self, message: Message) -> bytes | None:
        """Bytes to write for *message*, or None when it must not be sent.

        Called by the single writer just before writing. Marks an outbound request
        RUNNING (written). Returns None for a request cancelled while queued, for a
        response the peer cancelled, and for progress about a finished request. Writing
        the server's answer to ``initialize`` moves the lifecycle on (to INITIALIZED, or
        back to NEW after an error).

        Spec: CN-05, PG-10.
        """
        book = self._book
        if isinstance(message, Request):
            entry = book.outbound_entry(message.id)
            if entry is None or entry.state is not RequestState.QUEUED:
                return None
            book.transition(entry, RequestEvent.START)
            if entry.encoded is not None:
                data, entry.encoded = entry.encoded, None
                return data
        elif isinstance(message, Response | ErrorResponse):
            if type(message) is ErrorResponse and book.refusal_written(message.id):
                # A refusal answers a request that has no entry; an entry with
                # the same id is a later request's, whose reply this is not.
                return encode(message)
            entry = book.known_inbound(message.id)
            if entry is not None:
                if entry.peer_cancelled or entry.reply_written:
                    return None
                entry.reply_written = True
                if entry.method == "initialize":
                    self._handshake.initialize_answered(isinstance(message, Response))
                if entry.encoded is not None:
                    data, entry.encoded = entry.encoded, None
                    return data
        elif message.method == "notifications/progress":
            # Progress is checked against the record when queued (PG-10); here only
            # a peer cancel that arrived meanwhile stops it. A task's progress
            # (tagged with its task) outlives its request's reply by design.
            params = message.params or {}
            meta = params.get("_meta")
            if not (isinstance(meta, dict) and _RELATED_TASK_KEY in meta):
                entry = book.inbound_by_token(params.get("progressToken"))
                if entry is not None and (entry.peer_cancelled or entry.reply_written):
                    return None
        return encode(message)

    # ----------------------------------------------------------------- receive

    def receive_data(self, data: bytes | bytearray | memoryview | str) -> list[Event]:
        """Turn one inbound frame into events. Never raises for bad peer input."""
        revision = self.revision
        items = decode(
            data,
            max_size=self._max_message_size,
            allow_batch=revision is not None and revision.batches,
        )
        if len(items) == 1:
            # One message per frame is the norm.
            event = self._receive_one(items[0], False)
            if type(event) is InvalidMessage and event.reply is not None:
                self._book.refusing(event.reply.id)
            return [event]
        events: list[Event] = []
        for item in items:
            # One element at a time: a refusal's id is in use for the next one
            # (until it is written, BP-04: see RequestBook.refusing).
            event = self._receive_one(item, True)
            if type(event) is InvalidMessage and event.reply is not None:
                self._book.refusing(event.reply.id)
            events.append(event)
        return events

    def _receive_one(self, item: Message | FrameError, batched: bool) -> Event:
        kind = type(item)
        # Exact-type dispatch first (the messages are final attrs classes).
        if kind is Response:
            return self._reader.response(item, self._era)  # type: ignore[arg-type]
        if kind is Request:
            return self._receive_request(item, batched)  # type: ignore[arg-type]
        if isinstance(item, FrameError):
            return self._reader.frame_error(item, self._era)
        if isinstance(item, Request):
            return self._receive_request(item, batched)
        if isinstance(item, Notification):
            return self._reader.notification(item, self._era, self.protocol_version, self.revision)
        return self._reader.response(item, self._era)

    def _receive_request(self, request: Request, batched: bool) -> Event:
        method = request.method
        era = self._era
        reader = self._reader
        if era.silent:
            # 2026-07-28: servers send no requests and clients write no
            # responses (PT-01, SI-07), so a request from the server is
            # counted and left unanswered: even an error would be a response.
            return reader.invalid(
                None, f"request {method!r} from the server ignored: 2026-07-28 has none"
            )
        book = self._book
        # The duplicate check comes first: any other refusal would carry the
        # duplicated id and read as a (second) response to the original request.
        request_id = request.id
        if book.id_in_use(request_id):
            return reader.duplicate(request_id)
        # Used before, and answered: accepted (C-02). The peer breaks BP-04, but
        # deployed clients do this (some use id 1 for everything), and refusing
        # with a null id would leave their call unanswered.
        reused = book.remembers(request_id)
        if (
            era is self._handshake
            and self._lifecycle.state is SessionState.NEW
            and self._side.role is Role.SERVER
            and self._modern.opens(request)
        ):
            # The era of a server connection: its opening decides (VR-09).
            era = self._modern
        admission = era.check_request(request, batched, self.protocol_version)
        if isinstance(admission, ErrorObject):
            return reader.refusal(request_id, admission)
        spec, version, envelope, opens = admission
        checked = reader.body(request, spec, version)
        if not isinstance(checked, tuple):
            return checked
        params_or_error, token = checked
        if opens is not None:
            self._lifecycle.process(opens)
            if opens is LifecycleEvent.RECV_MODERN and version is not None:
                # The first 2026-07-28 request decides the era (VR-09).
                self._negotiated(version)
                self._era = self._modern
        entry = RequestEntry(request_id, method, Direction.INBOUND, book.clock(), token)
        if envelope is not None:
            entry.envelope = envelope
        book.add_inbound(entry, reused=reused)
        return RequestReceived(request, spec, params_or_error, reused)

    # ------------------------------------------------------- inbound lifecycle

    def start_inbound(self, request_id: RequestId) -> bool:
        """QUEUED → RUNNING when the handler gets its slot. False if already ended."""
        entry = self._book.inbound_entry(request_id)
        return entry is not None and self._book.transition(entry, RequestEvent.START) is not None

    def respond(self, request_id: RequestId, result: Any) -> Response | ErrorResponse | None:
        """The handler returned: serialize the result, record COMPLETED, build the response.

        A result that is not valid JSON (NaN, a 65-bit integer, an unknown type) fails
        the request instead, with -32603 and no internals. Returns None when no response
        may be sent (the peer cancelled).

        Spec: CN-05.
        """
        return self._replies.result(request_id, result, self.revision, self._peer_capabilities)

    def respond_error(self, request_id: RequestId, error: ErrorObject) -> ErrorResponse | None:
        """The handler failed: record FAILED; None if the peer cancelled.

        -32042 (URL elicitation required) exists only in revisions with URL elicitation
        and only for a client that declared ``elicitation.url``: to any other peer it
        becomes -32603 saying so, and that is what the record keeps.

        Spec: EL-10.
        """
        return self._replies.error(request_id, error, self.revision, self._peer_capabilities)

    def cancel_inbound(
        self, request_id: RequestId, origin: CancelOrigin, reason: str | None
    ) -> ErrorResponse | Notification | None:
        """The handler's scope was cancelled: record CANCELLED, and return what to
        write: nothing after a peer cancel or with the transport gone; -32001 for a
        local cancel, so the peer is never left hanging; ``notifications/cancelled``
        ending a 2026-07-28 ``subscriptions/listen``.

        Spec: CN-05, SB-10, CN-15, A-12.
        """
        return self._cancellation.inbound(request_id, origin, reason)

    def progress_notification(
        self,
        request_id: RequestId,
        progress: float,
        total: float | None = None,
        message: str | None = None,
    ) -> Notification | None:
        """Progress for an inbound request we are handling.

        Returns None when no progress may be sent: the request carried no token, or it
        has ended; or when it is rate-limited: with :attr:`progress_interval` > 0, a
        report less than that many seconds after the last one *sent* for the request is
        not sent, unless it reaches *total*. Every report, sent or not, must increase
        and becomes the record's progress.

        Raises:
            LocalProtocolError: *progress* does not increase.

        Spec: PG-03, PG-07, PG-10, PG-09, PG-04.
        """
        return self._progress.notification(request_id, progress, total, message, self.revision)

    def task_progress_notification(
        self,
        token: str | int,
        progress: float,
        total: float | None = None,
        message: str | None = None,
        *,
        meta: JSONObject | None = None,
    ) -> Notification:
        """Progress for a 2025-11-25 task whose request carried *token*: that token
        stays valid for the task's whole life, past the request's end
        (``basic/utilities/tasks``, "Task Progress Notifications"), so the rule "no
        progress after the response" does not apply; the values must still increase.
        *meta* is the related-task ``_meta``.

        Raises:
            LocalProtocolError: this revision has no tasks.

        Spec: TK-13, PG-04, PG-10.
        """
        note = self._handshake.task_progress(self.revision, token, progress, total, message, meta)
        encode(note)
        return note

    # ------------------------------------------------------ outbound lifecycle

    def cancel_outbound(
        self, request_id: RequestId, origin: CancelOrigin, reason: str | None = None
    ) -> Notification | None:
        """Our caller gave up on a request: record CANCELLED. Returns the
        ``notifications/cancelled`` to send, or None when none may or need be sent
        (never written, ended, not cancellable, or closed).

        Spec: CN-03.
        """
        closed = self._lifecycle.state is SessionState.CLOSED
        return self._cancellation.outbound(request_id, origin, reason, closed=closed)

    def fail_outbound(self, request_id: RequestId, error: ErrorObject) -> None:
        """Fail an outbound request locally (e.g. the transport was lost)."""
        self._book.fail_outbound(request_id, error)

    # ----------------------------------------------------------- handshake era
    #
    # The rules are HandshakeEra's (_handshake.py); the connection records
    # what they decide: the version, and the peer as it declared itself.

    def initialize_request(self, version: str | None = None) -> Request:
        """Client: the ``initialize`` request (our newest handshake-era version).

        Raises:
            LocalProtocolError: we speak no handshake-era version.

        Spec: LC-02, LC-07.
        """
        return self.send_request("initialize", self._handshake.initialize_params(version))

    def complete_handshake(self, result: mcp_types.InitializeResult) -> Notification:
        """Client: accept the initialize result and return ``notifications/initialized``.

        Raises:
            UnsupportedProtocolVersion: the server chose a version we do not speak; the protocol is
            then closed.
            LocalProtocolError: no ``initialize`` of ours awaits its result.

        Spec: LC-09.
        """
        try:
            peer = self._handshake.complete(result)
        except UnsupportedProtocolVersion:
            self.close(f"unsupported protocol version {result.protocol_version!r}")
            raise
        self._decided(result.protocol_version, peer, self._handshake)
        return Notification("notifications/initialized", None)

    def accept_initialize(self, params: mcp_types.InitializeRequestParams) -> JSONObject:
        """Server: negotiate and build the initialize result.

        Spec: LC-08, LC-03.
        """
        version, peer, result = self._handshake.accept_initialize(params)
        self._decided(version, peer, self._handshake)
        return result

    def start_stateless(self, version: str) -> None:
        """Server: serve one stateless exchange of revision *version* with no handshake.

        A handshake-era *version*: NEW straight to OPERATING. A modern one (a 2026-07-28
        POST) decides the era while the connection stays NEW: its first request is read
        as a modern one even without ``_meta`` (and refused as such), and moves it to
        MODERN.

        Raises:
            LocalProtocolError: not a server, not NEW, or *version* not supported.

        Spec: HT-36, VR-09.
        """
        if not self._lifecycle.accepts(LifecycleEvent.START_STATELESS):
            raise LocalProtocolError("start_stateless needs a new server connection")
        if version in self._modern.versions:
            # The transport decided the era: the first request is read as its.
            self._era = self._modern
            return
        self._handshake.start_stateless(version)
        self._negotiated(version)

    # ------------------------------------------------------------- modern era
    #
    # The rules are ModernEra's (_modern.py); the connection records what
    # they decide, as for the handshake.

    def discover_request(self, version: str | None = None) -> Request:
        """Client: a ``server/discover`` naming *version* (default: our newest modern
        one) — the era probe of a dual-era client. It may be sent before the era is
        chosen and does not choose it.

        Raises:
            LocalProtocolError: we speak no modern version, or it may not be sent now.

        Spec: SI-14, DS-05.
        """
        return self.send_request("server/discover", self._modern.discover_params(version))

    def start_modern(self, version: str, result: mcp_types.DiscoverResult) -> None:
        """Client: the era is the modern one, at *version*: every later request carries
        the version, our capabilities and our ``clientInfo``. The server's capabilities,
        instructions and ``serverInfo`` are those of *result*.

        Raises:
            LocalProtocolError: not a new client connection, or *version* is not
                one of our modern versions.

        Spec: ME-06, DS-02.
        """
        self._decided(version, self._modern.start(version, result), self._modern)

    def set_request_meta(self, key: str, value: Any) -> None:
        """Client, modern era: put *key* in the ``_meta`` of every later request (the
        log level asked for).

        Raises:
            LocalProtocolError: not a client in the modern era.

        Spec: ME-15.
        """
        self._modern.add_request_meta(key, value)

    def discover_result(self) -> JSONObject:
        """Server: the ``server/discover`` result; :meth:`respond` adds ``resultType``,
        ``serverInfo`` and the cache hints.

        Spec: DS-01..DS-03.
        """
        return self._modern.discover_result()

    def request_meta(self, request_id: RequestId) -> RequestMeta | None:
        """What an in-flight 2026-07-28 inbound request declared in its ``_meta``
        (None for a handshake-era request, or one that has ended)."""
        entry = self._book.inbound_entry(request_id)
        return None if entry is None else self._modern.declared(entry)

    def _decided(self, version: str, peer: Peer, era: Era) -> None:
        """The era and its version are decided, and *peer* is who the peer said it is."""
        self._negotiated(version)
        self._peer_capabilities, self._peer_info, self._peer_instructions = peer
        self._era = era

    def _negotiated(self, version: str) -> None:
        self.protocol_version = version
        self.revision = REVISIONS[version]

    def close(self, reason: str) -> None:
        """Move to CLOSED (idempotent); every later send is refused."""
        if self._lifecycle.accepts(LifecycleEvent.CLOSE):
            self._lifecycle.process(LifecycleEvent.CLOSE)
            self.close_reason = reason

    # The session layer's handles on a request
    #
    # The layer above never holds a RequestEntry: what it keeps with a request
    # (its cancel handle) and what it writes to a record goes through these
    # methods (the book's, but for the three read on every request), and
    # every change to a record reaches the observer.

    def attach(self, request_id: RequestId, handle: RequestHandle) -> None:
        """Keep *handle* (the session's cancel scope) with an in-flight inbound request."""
        entry = self._book.inbound_entry(request_id)
        if entry is not None:
            entry.user_data = handle

    def handle(self, request_id: RequestId) -> RequestHandle | None:
        """The handle attached to an in-flight inbound request, or None."""
        handle: RequestHandle | None = self._book.handle(request_id)
        return handle

    def request_cancel(
        self, direction: Direction, request_id: RequestId, origin: CancelOrigin, reason: str | None
    ) -> bool:
        """Note that *origin* asked to cancel an in-flight request (the first asker
        wins; the record's state does not change until the request ends).

        Returns False when the request is not in flight (nothing is noted).
        """
        return self._book.request_cancel(direction, request_id, origin, reason)

    def note_worker_thread(self, request_id: RequestId) -> None:
        """Record that an in-flight inbound request's handler runs in a worker thread."""
        self._book.note_worker_thread(request_id)

    def note_follows(self, request_id: RequestId, previous: RequestId) -> None:
        """Record that an in-flight inbound request retries round *previous* of a
        multi round-trip call (read from its verified ``requestState``)."""
        self._book.note_follows(request_id, previous)

    def cancel_requested(self, request_id: RequestId) -> bool:
        """Whether anyone asked to cancel an inbound request (True once it has ended)."""
        entry = self._book.inbound_entry(request_id)
        return entry is None or entry.cancel_origin is not None

    def may_send_for(self, request_id: RequestId) -> bool:
        """Whether a message about an inbound request may still be sent: it is in flight
        and the peer has not cancelled it (whoever asked to cancel first). After its
        response or the peer's cancel, nothing more is sent for it.

        Spec: CN-05, CN-16, LG-07, PG-10.
        """
        return self._book.may_send_for(request_id)

    def progress_token(self, request_id: RequestId) -> str | int | None:
        """The progress token of an in-flight inbound request, or None."""
        return self._book.progress_token(request_id)


class RequestHandle(TypingProtocol):
    """What the session layer attaches to an inbound request: its cancel scope."""

    def cancel(self, reason: str | None = None) -> None:
        """Cancel the request's work."""
        ...
