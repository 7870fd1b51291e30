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

A connection has three collaborators: a :class:`RequestBook` (``_book.py``)
keeps the request records, in two tables of :class:`RequestEntry`, one per
direction, because the two sides' ids are separate namespaces (A-14), plus a
bounded history and the remembered inbound ids (BP-04); a :class:`Lifecycle`
(``_lifecycle.py``) holds the session state and what each state permits; the
negotiated :class:`Revision` (``_revisions.py``) says what differs between
revisions. This module decides: it checks and makes outbound messages, turns
inbound frames into events, and runs the inbound and outbound request
lifecycles and the handshake.

An inbound request is checked in a fixed order, so that each refusal carries
the right code and never reads as a second response to an earlier request:

1. a duplicate id (in flight, or finished with its reply not yet written):
   -32600 with a null id, which cannot read as a second answer to the first
   use (BP-04); an id reused after its first use was answered is accepted
   and counted (C-02: deployed clients do it);
2. the method: unknown, a notification, absent from the negotiated revision or
   sent the wrong way: -32601;
3. the lifecycle: only ping (and initialize, once) before the handshake ends:
   -32600 (LC-05, LC-06, LC-12);
4. the capability gate of our own capabilities: -32601 (LC-11);
5. the params, structured into the method's type: -32602 with path-labelled
   ``data``;
6. ``_meta.progressToken``, which must be a string or an integer: -32602.

A server connection serves both eras (VR-08, VR-09): its opening decides.
``initialize`` takes the handshake path above; a request naming a 2026-07-28
version in ``_meta`` (or a method only 2026-07-28 has) takes the modern path
(:meth:`Connection._receive_modern_request`), where everything is read from
*that* request's ``_meta`` (ST-01) and checked in its own order: the required
fields (-32602), the version (-32022), the method (-32601), ``clientInfo`` and
``logLevel`` (-32602), our capability gate (-32601), the params, the token. Its
result gets ``resultType``, ``serverInfo`` and the cache hints on the way out
(:meth:`Connection.respond`). A client connection chooses its era by probing
(``discover_request`` / ``start_modern``), then adds the ``_meta`` of every
request itself (ME-06).

Responses, cancellations and progress for unknown, finished or foreign ids are
ignored and recorded (CN-04, CN-06, PG-10).

A client in the 2026-07-28 era answers nothing: a request from the server (there
are none in that era) or a malformed frame is counted and left unanswered, since
any reply would be a response from the client (PT-01, SI-07).

Invariants:

* every request ends in exactly one terminal state;
* at most one response per inbound id is ever produced, none after a peer cancel;
* our outbound ids are never reused (a counter), and progress tokens are our ids;
* bad input from the peer yields an event, never an exception.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from typing import Protocol as TypingProtocol

import cattrs

from .. import types as mcp_types
from ._book import ProtocolStatistics, RequestBook
from ._codec import DEFAULT_MAX_MESSAGE_SIZE, FrameError, decode, encode, encode_result
from ._errors import ErrorCode, LocalProtocolError, UnsupportedProtocolVersion
from ._events import (
    CancelReceived,
    ErrorReceived,
    Event,
    Ignored,
    IgnoredReason,
    InvalidMessage,
    NotificationReceived,
    ProgressReceived,
    RequestReceived,
    ResponseReceived,
)
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
    is_valid_request_id,
)
from ._methods import METHODS, Kind, MethodSpec
from ._observer import RequestObserver
from ._requests import (
    CancelOrigin,
    Direction,
    Progress,
    RequestEntry,
    RequestEvent,
    RequestMeta,
    RequestRecord,
    RequestState,
)
from ._revisions import (
    ALL_VERSIONS,
    REVISIONS,
    V2025_11_25,
    Revision,
    handshake_versions,
    modern_versions,
    negotiate_version,
)

#: Inbound requests (method, state, version, batched, our role) that passed the
#: method and lifecycle checks of ``_receive_request``. Those checks read nothing
#: else (METHODS and the lifecycle tables are static), so one cache serves every
#: session: bounded by the methods table, and no per-session dict.
_INBOUND_OK: dict[tuple[str, SessionState, str | None, bool, Role], MethodSpec] = {}


_BAD_TOKEN: Any = object()

# The reserved _meta keys of a 2026-07-28 request and result (types.versioning).
_VERSION_KEY = mcp_types.PROTOCOL_VERSION_META_KEY
_CAPABILITIES_KEY = mcp_types.CLIENT_CAPABILITIES_META_KEY
_CLIENT_INFO_KEY = mcp_types.CLIENT_INFO_META_KEY
_LOG_LEVEL_KEY = mcp_types.LOG_LEVEL_META_KEY
_SERVER_INFO_KEY = mcp_types.SERVER_INFO_META_KEY
_RELATED_TASK_KEY = mcp_types.RELATED_TASK_META_KEY
_LOG_LEVELS = frozenset(level.value for level in mcp_types.LoggingLevel)
#: Modern requests (method, version) that passed the method checks of
#: ``_receive_modern_request``; like ``_INBOUND_OK`` they read only the static
#: method table, so one cache serves every connection.
_MODERN_OK: dict[tuple[str, str], MethodSpec] = {}


def _progress_token(params: JSONObject | None) -> Any:
    if not params:
        return None
    meta = params.get("_meta")
    if not isinstance(meta, dict) or "progressToken" not in meta:
        return None
    token = meta["progressToken"]
    return token if is_valid_request_id(token) else _BAD_TOKEN


#: Methods that exist only in the modern era: they open it even without _meta
#: (and are then refused for the missing fields, ME-07).
_MODERN_ONLY = frozenset(
    name
    for name, spec in METHODS.items()
    if not spec.revisions & set(handshake_versions(ALL_VERSIONS))
)


def _opens_modern(method: str, params: JSONObject | None) -> bool:
    """Whether a request on a new server connection takes the modern path (VR-09):
    it names a version in ``_meta``, or its method exists only in 2026-07-28."""
    if method == "initialize":
        return False
    if method in _MODERN_ONLY:
        return True
    meta = params.get("_meta") if params is not None else None
    return isinstance(meta, dict) and _VERSION_KEY in meta


def _is_number(value: Any) -> bool:
    return type(value) in (int, float) and value == value  # excludes bool and NaN


def describe_structure_error(exc: BaseException) -> list[str]:
    """Readable, path-labelled lines for a cattrs structuring failure."""
    if isinstance(exc, cattrs.BaseValidationError):
        return cattrs.transform_error(exc)
    return [str(exc)]


class Connection:
    """The sans-I/O state of one side of one session. Not thread-safe.

    Args:
        role: which end this is.
        capabilities: the capabilities object this side declares.
        info: this side's ``Implementation`` object (``clientInfo``/``serverInfo``).
        instructions: server only, sent in the initialize result.
        supported_versions: revisions we speak, newest first (each one of
            :data:`~trio_mcp.protocol.REVISIONS`): the handshake-era ones are
            negotiated by ``initialize``, the modern ones named per request.
            Both eras by default (a dual-era server, VR-08); without a modern
            version a server treats every request as the handshake era's;
            without a handshake version it answers ``initialize`` with -32022
            naming what it speaks (VR-13).
        clock: where timestamps come from (the session passes Trio's clock).
        max_message_size: bound on one inbound frame, in bytes (16 MiB by
            default). A frame over it is refused unparsed, with the id a bounded
            scan of its head reads (see :func:`~trio_mcp.protocol.decode`).
        history: how many finished records :meth:`requests` keeps.
        remember_ids: how many finished inbound ids are remembered to refuse reuse.
        observer: sees every request transition.
        converter: the cattrs converter of params and results.

    Raises:
        ValueError: a version in *supported_versions* is not a known revision.
    """

    # Slots: one Connection per session, and its attributes would otherwise
    # make an instance dict of ~1 KiB.
    __slots__ = (
        "_book",
        "_handshake_versions",
        "_lifecycle",
        "_modern_versions",
        "_next_id",
        "_opening_modern",
        "_outbound_ok",
        "_request_meta",
        "_supported_versions",
        "cache_hints",
        "close_reason",
        "converter",
        "instructions",
        "local_capabilities",
        "local_info",
        "max_message_size",
        "modern_capabilities",
        "peer_capabilities",
        "peer_info",
        "peer_instructions",
        "progress_interval",
        "protocol_version",
        "result_server_info",
        "revision",
        "role",
    )

    def __init__(
        self,
        role: Role,
        *,
        capabilities: JSONObject | None = None,
        info: JSONObject | None = None,
        instructions: str | None = None,
        supported_versions: tuple[str, ...] = ALL_VERSIONS,
        clock: Callable[[], float] = time.monotonic,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        history: int = 1000,
        remember_ids: int = 4096,
        observer: RequestObserver | None = None,
        converter: cattrs.Converter | None = None,
    ) -> None:
        unknown = [version for version in supported_versions if version not in REVISIONS]
        if unknown:
            raise ValueError(f"unknown protocol revisions {unknown!r}")
        self._book = RequestBook(
            clock=clock, history=history, remember_ids=remember_ids, observer=observer
        )
        self._lifecycle = Lifecycle(role)
        self.role = role
        self.local_capabilities: JSONObject = dict(capabilities or {})
        self.local_info: JSONObject = dict(info or {"name": "trio_mcp", "version": "0"})
        self.instructions = instructions
        self.supported_versions = supported_versions
        # Client, modern era: the _meta every request carries (ME-06, ME-08).
        self._request_meta: JSONObject | None = None
        #: Server, modern era: ``(ttlMs, cacheScope)`` of each cacheable method's
        #: complete results that do not set their own (CA-01); methods not
        #: listed get ``(0, "private")``: stale at once, never shared.
        self.cache_hints: dict[str, tuple[int, str]] = {}
        #: Server, modern era: put ``serverInfo`` in every result's ``_meta`` (ME-11).
        self.result_server_info = True
        #: Server, modern era: the capabilities ``server/discover`` shows, where
        #: they differ from the handshake's (2026-07-28 has no ``tasks`` slot;
        #: its extensions are in ``extensions``). None: ``local_capabilities``.
        self.modern_capabilities: JSONObject | None = None
        self.max_message_size = max_message_size
        self.converter = converter or mcp_types.converter

        #: The negotiated revision, once known.
        self.revision: Revision | None = None
        #: Its version string, once known.
        self.protocol_version: str | None = None
        self.peer_capabilities: JSONObject = {}
        self.peer_info: JSONObject = {}
        self.peer_instructions: str | None = None
        self.close_reason: str | None = None

        #: Seconds between two progress notifications of one inbound request
        #: (0: every report is sent); see :meth:`progress_notification` (PG-09).
        self.progress_interval = 0.0
        self._next_id = 1
        # Server: the transport said this connection opens in the modern era
        # (see start_stateless), so its first request is read as one.
        self._opening_modern = False
        # Outbound requests (method, state, version) that passed _check_outbound.
        self._outbound_ok: dict[tuple[str, SessionState, str | None], MethodSpec] = {}

    @property
    def supported_versions(self) -> tuple[str, ...]:
        """The revisions we speak, newest first (both eras)."""
        return self._supported_versions

    @supported_versions.setter
    def supported_versions(self, versions: tuple[str, ...]) -> None:
        unknown = [version for version in versions if version not in REVISIONS]
        if unknown:
            raise ValueError(f"unknown protocol revisions {unknown!r}")
        self._supported_versions = tuple(versions)
        self._handshake_versions = handshake_versions(self._supported_versions)
        self._modern_versions = modern_versions(self._supported_versions)

    # ------------------------------------------------------------ observation

    @property
    def state(self) -> SessionState:
        """Where the session is in its lifecycle."""
        return self._lifecycle.state

    @property
    def clock(self) -> Callable[[], float]:
        """Where timestamps come from (the session sets Trio's clock)."""
        return self._book.clock

    @clock.setter
    def clock(self, clock: Callable[[], float]) -> None:
        self._book.clock = clock

    @property
    def observer(self) -> RequestObserver:
        """What sees every request transition (a null observer by default)."""
        return self._book.observer

    @observer.setter
    def observer(self, observer: RequestObserver) -> None:
        self._book.observer = observer

    @property
    def observing(self) -> bool:
        """False when nobody observes: snapshots are then not built at all."""
        return self._book.observing

    @observing.setter
    def observing(self, observing: bool) -> None:
        self._book.observing = observing

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
    ) -> Request:
        """Make an outbound request and its QUEUED record.

        ``params`` is an attrs instance of the method's params type, a JSON
        object, or None. With *want_progress* the request carries
        ``_meta.progressToken`` (equal to its id, so unique among active requests,
        PG-02). A client in the modern era adds the protocol version, its
        capabilities and its ``clientInfo`` to every request's ``_meta``
        (ME-06, ME-08); keys the caller put in ``_meta`` are kept. *follows*
        names the round this request retries (a multi round-trip call, PT-14):
        it goes on the record only.

        Raises:
            LocalProtocolError: the method is unknown, goes the wrong way, does
                not exist in the negotiated revision, is not allowed in the current
                lifecycle state (LC-05, LC-06), or needs a capability the peer did
                not declare (LC-11); or *params* is not JSON (NaN, Infinity, a
                lone surrogate, an object JSON has no form for).
        """
        spec = self._check_outbound(method, Kind.REQUEST)
        lifecycle = self._lifecycle
        if method == "initialize":
            if not lifecycle.accepts(LifecycleEvent.SEND_INITIALIZE):
                raise LocalProtocolError("initialize may only be sent once, by the client")
            lifecycle.process(LifecycleEvent.SEND_INITIALIZE)
        else:
            lifecycle.check_send_request(method)
        request_id = self._next_id
        raw = self._unstructure(params)
        request_meta = self._request_meta
        if want_progress or request_meta is not None:
            # Fresh dicts for the params and their _meta, built by unpacking
            # (one lookup, no update call: issue #16): the caller's dicts and
            # our constant _meta are never written to, and no two requests
            # share a _meta dict. The values inside are shared as before: the
            # capabilities are the connection's own, live (ME-06).
            raw = {**raw} if raw else {}
            own = raw.get("_meta")
            if own:
                meta = {**request_meta, **own} if request_meta is not None else {**own}
            else:
                meta = {**request_meta} if request_meta is not None else {}
            if want_progress:
                meta["progressToken"] = request_id
            raw["_meta"] = meta
        request = Request(request_id, method, raw)
        # Serialized now, not by the writer: params that are not JSON fail the
        # caller here, before an id or a record is spent, and can never take
        # the writer (and the session) down.
        data = encode(request)
        self._next_id += 1
        book = self._book
        entry = RequestEntry(
            request_id,
            method,
            Direction.OUTBOUND,
            book.clock(),
            request_id if want_progress else None,
        )
        entry.encoded = data
        entry.follows = follows
        if spec.task_augmentable and raw:
            entry.task_allowed = self._asks_for_task(raw)
        book.add_outbound(entry)
        return request

    def _asks_for_task(self, raw: JSONObject) -> bool:
        """Whether outbound params *raw* let the peer answer with a task (TK-11):
        2025-11-25, they carry ``task``; 2026-07-28, their ``_meta`` declares the
        tasks extension (negotiated per request, SEP-2663)."""
        revision = self.revision
        if revision is not None and revision.tasks_utility:
            return isinstance(raw.get("task"), dict)
        if self._request_meta is None:
            return False
        capabilities = (raw.get("_meta") or {}).get(_CAPABILITIES_KEY)
        extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
        return isinstance(extensions, dict) and isinstance(
            extensions.get(mcp_types.TASKS_EXTENSION), dict
        )

    def send_notification(self, method: str, params: Any = None) -> Notification:
        """Make an outbound notification.

        Raises:
            LocalProtocolError: for ``notifications/cancelled`` and
                ``notifications/progress``, which only :meth:`cancel_outbound` and
                :meth:`progress_notification` make (they enforce CN-02, CN-03,
                PG-04, PG-07 and PG-10), and as :meth:`send_request` otherwise
                (including params that are not JSON).
        """
        if method in ("notifications/cancelled", "notifications/progress"):
            raise LocalProtocolError(
                f"{method} is made by cancel_outbound()/progress_notification(), which "
                "enforce its rules"
            )
        self._check_outbound(method, Kind.NOTIFICATION)
        self._lifecycle.check_send_notification(method)
        note = Notification(method, self._unstructure(params))
        encode(note)  # not JSON: the caller's error, never the writer's (H-07)
        return note

    def _check_outbound(self, method: str, kind: Kind) -> MethodSpec:
        if kind is not Kind.REQUEST:
            return self._check_outbound_uncached(method, kind)
        # What the checks of a request read (the revision, the peer's
        # capabilities) only changes together with the lifecycle state, so a
        # pass is cached per state. (Notifications also read our own
        # capabilities, which the owner may change: never cached.)
        key = (method, self._lifecycle.state, self.protocol_version)
        spec = self._outbound_ok.get(key)
        if spec is None:
            spec = self._outbound_ok[key] = self._check_outbound_uncached(method, kind)
        return spec

    def _check_outbound_uncached(self, method: str, kind: Kind) -> MethodSpec:
        state = self._lifecycle.state
        if state is SessionState.CLOSED:
            raise LocalProtocolError(f"session closed: {self.close_reason}")
        spec = METHODS.get(method)
        if spec is None or spec.kind is not kind:
            raise LocalProtocolError(f"unknown {kind.value} method {method!r}")
        if not spec.sender.allows(self.role):
            raise LocalProtocolError(f"a {self.role.value} does not send {method!r}")
        version = self.protocol_version
        if not spec.exists_in(version):
            raise LocalProtocolError(f"{method!r} does not exist in revision {version}")
        gate = spec.gate(version)
        if (
            gate is not None
            and gate.held_by(self.role.peer, receiving=kind is Kind.REQUEST)
            and (state is SessionState.OPERATING or state is SessionState.MODERN)
            and not gate.declared_in(self.peer_capabilities)
        ):
            raise LocalProtocolError(f"{method!r} needs the {gate}, which the peer did not declare")
        if (
            gate is not None
            and gate.holder is self.role
            and kind is Kind.NOTIFICATION
            and not gate.declared_in(self.local_capabilities)
        ):
            # A notification gated by our own capability (list_changed, resources
            # updated, logging messages, roots list_changed) may only be sent when
            # we declared it (LC-11).
            raise LocalProtocolError(f"{method!r} needs the {gate}, which we did not declare")
        return spec

    def _unstructure(self, params: Any) -> JSONObject | None:
        if params is None or isinstance(params, dict):
            return params
        return self.converter.unstructure(params)  # type: ignore[no-any-return]

    def encode(self, message: Message) -> bytes | None:
        """Bytes to write for *message*, or None when it must not be sent.

        Called by the single writer just before writing. Marks an outbound request
        RUNNING (written). Returns None for a request cancelled while queued, for
        a response the peer cancelled (CN-05), and for progress about a finished
        request (PG-10). Writing the server's answer to ``initialize`` moves the
        lifecycle on (to INITIALIZED, or back to NEW after an error).
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
                    self._initialize_answered(isinstance(message, Response))
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

    def _initialize_answered(self, succeeded: bool) -> None:
        event = LifecycleEvent.SEND_INIT_RESULT if succeeded else LifecycleEvent.SEND_INIT_ERROR
        # A session closed while the answer waited in the queue stays closed.
        if self._lifecycle.accepts(event):
            self._lifecycle.process(event)

    # ----------------------------------------------------------------- receive

    def receive_data(self, data: bytes | bytearray | memoryview | str) -> list[Event]:
        """Turn one inbound frame into events. Never raises for bad peer input."""
        revision = self.revision
        items = decode(
            data,
            max_size=self.max_message_size,
            allow_batch=revision is not None and revision.batches,
        )
        if len(items) == 1:
            # One message per frame is the norm.
            event = self._receive_one(items[0], False)
            if type(event) is InvalidMessage and event.reply is not None:
                self._refusing(event.reply.id)
            return [event]
        events: list[Event] = []
        for item in items:
            # One element at a time: a refusal's id is in use for the next one.
            event = self._receive_one(item, True)
            if type(event) is InvalidMessage and event.reply is not None:
                self._refusing(event.reply.id)
            events.append(event)
        return events

    def _refusing(self, request_id: RequestId | None) -> None:
        """A refusal with *request_id* is to be written (:meth:`encode`).

        Until it is, the id is in use (BP-04): a request reusing it is a
        duplicate, as while an accepted request's reply waits; accepted, its
        entry would take the refusal for its own reply, and one of the two
        answers would be lost. A remembered entry of an earlier use (answered,
        or the refusal would carry a null id) goes, for the same reason.
        """
        if request_id is None:
            return
        book = self._book
        if book.remembers(request_id):
            book.forget_finished(request_id)
        book.refusal_owed(request_id)

    def _receive_one(self, item: Message | FrameError, batched: bool) -> Event:
        kind = type(item)
        # Exact-type dispatch first (the messages are final attrs classes).
        if kind is Response:
            return self._receive_response(item)  # type: ignore[arg-type]
        if kind is Request:
            return self._receive_request(item, batched)  # type: ignore[arg-type]
        if isinstance(item, FrameError):
            return self._receive_frame_error(item)
        if isinstance(item, Request):
            return self._receive_request(item, batched)
        if isinstance(item, Notification):
            return self._receive_notification(item)
        return self._receive_response(item)

    def _receive_frame_error(self, item: FrameError) -> Event:
        if item.response_id is not None:
            failed = self._fail_call(item.response_id, item.detail, too_large=item.too_large)
            if failed is not None:
                return failed
        if self.role is Role.CLIENT:
            if (
                item.too_large
                and item.response_id is None
                and (item.reply is None or item.reply.id is None)
            ):
                # Over the bound with no id the head could tell: the call it may
                # answer cannot be known, so the session ends. With an id, a
                # response fails its call above and a request is answered below;
                # either way the frame was dropped whole and the session goes on.
                self._book.count_invalid()
                return InvalidMessage(None, item.detail, fatal=True)
            if item.reply is not None and item.reply.error.code == ErrorCode.PARSE_ERROR:
                # A line that is not JSON from a server is noise (a stray
                # print, a log line): counted, not answered (reliability F-06).
                return self._invalid_message(None, item.detail)
            if item.reply is not None and self._lifecycle.state is SessionState.MODERN:
                # 2026-07-28: a client writes no responses, not even an error
                # for a malformed frame (PT-01, SI-07): counted, not answered.
                return self._invalid_message(None, item.detail)
        reply = item.reply
        if reply is not None and self._book.id_in_use(reply.id):
            # A malformed request reusing an id: answering with that id would
            # read as a response to the original request (as for duplicates).
            reply = ErrorResponse(None, reply.error)
        return self._invalid_message(reply, item.detail)

    def _fail_call(
        self, request_id: RequestId, detail: str, *, too_large: bool = False
    ) -> ErrorReceived | None:
        """A malformed response for one of our requests in flight: fail it now
        (J-07, J-08), rather than leave its caller to its timeout. *too_large*:
        the response was over the frame bound (its id read from its head)."""
        book = self._book
        entry = book.outbound_entry(request_id)
        if entry is None or entry.state is not RequestState.RUNNING:
            return None
        book.count_invalid()
        what = "Oversize" if too_large else "Malformed"
        error = ErrorObject(
            int(ErrorCode.INVALID_PARAMS),
            f"{what} response for {entry.method} from the peer",
            {"errors": [detail]},
        )
        book.finish(entry, RequestEvent.FAIL, error=error)
        return ErrorReceived(entry.id, error, remote=False, too_large=too_large)

    def _invalid_message(self, reply: ErrorResponse | None, detail: str) -> InvalidMessage:
        self._book.count_invalid()
        return InvalidMessage(reply, detail)

    def _refuse(self, request: Request, code: ErrorCode, message: str, data: Any = None) -> Event:
        return self._invalid_message(request.error(int(code), message, data), message)

    def _ignore(self, reason: IgnoredReason, detail: str) -> Ignored:
        self._book.count_ignored()
        return Ignored(reason, detail)

    def _refuse_duplicate(self, request_id: RequestId) -> InvalidMessage:
        # Refused with a null id: replying with the duplicated id would look like a
        # second response to the original request (BP-04, A-14).
        return self._invalid_message(
            ErrorResponse(
                None,
                ErrorObject(
                    int(ErrorCode.INVALID_REQUEST),
                    f"Request id {request_id!r} was already used in this session",
                    {"duplicateId": request_id},
                ),
            ),
            f"duplicate id {request_id!r}",
        )

    def _receive_request(self, request: Request, batched: bool) -> Event:
        method = request.method
        if self.role is Role.CLIENT and self._lifecycle.state is SessionState.MODERN:
            # 2026-07-28: servers send no requests and clients write no
            # responses (PT-01, SI-07), so a request from the server is
            # counted and left unanswered: even an error would be a response.
            return self._invalid_message(
                None, f"request {method!r} from the server ignored: 2026-07-28 has none"
            )
        book = self._book
        # The duplicate check comes first: any other refusal would carry the
        # duplicated id and read as a (second) response to the original request.
        request_id = request.id
        if book.id_in_use(request_id):
            return self._refuse_duplicate(request_id)
        # Used before, and answered: accepted (C-02). The peer breaks BP-04, but
        # deployed clients do this (some use id 1 for everything), and refusing
        # with a null id would leave their call unanswered.
        reused = book.remembers(request_id)
        if self.role is Role.SERVER:
            # The era of a server connection: its opening decides (VR-09).
            state = self._lifecycle.state
            if self._modern_versions and (
                state is SessionState.MODERN
                or (
                    state is SessionState.NEW
                    and (self._opening_modern or _opens_modern(method, request.params))
                )
            ):
                return self._receive_modern_request(request, reused)
            if method == "initialize" and not self._handshake_versions:
                return self._refuse_handshake(request)
        # The method and lifecycle checks read only the method, the state, the
        # revision and our role: a pass is cached per (method, state, revision,
        # batched) and role, in a cache all sessions share. The capability gate
        # below reads our own capabilities, which the owner may change, so it is
        # checked every time.
        lifecycle = self._lifecycle
        version = self.protocol_version
        key = (method, lifecycle.state, version, batched, self.role)
        spec = _INBOUND_OK.get(key)
        if spec is None:
            spec = METHODS.get(method)
            if (
                spec is None
                or spec.kind is not Kind.REQUEST
                or not spec.exists_in(version)
                # Before the handshake: a method of no handshake-era revision
                # (server/discover to a handshake-only server) is unknown here.
                or (version is None and method in _MODERN_ONLY)
                or not spec.sender.allows(self.role.peer)
            ):
                return self._refuse(
                    request, ErrorCode.METHOD_NOT_FOUND, f"Method not found: {method}"
                )
            refusal = lifecycle.request_refusal(method, batched=batched)
            if refusal is not None:
                return self._refuse(request, ErrorCode.INVALID_REQUEST, refusal)
            _INBOUND_OK[key] = spec
        checked = self._check_body(request, spec, version)
        if not isinstance(checked, tuple):
            return checked
        params_or_error, token = checked
        if method == "initialize":
            lifecycle.process(LifecycleEvent.RECV_INITIALIZE)
        entry = RequestEntry(request_id, method, Direction.INBOUND, book.clock(), token)
        book.add_inbound(entry, reused=reused)
        return RequestReceived(request, spec, params_or_error, reused)

    def _receive_modern_request(self, request: Request, reused: bool) -> Event:
        """A 2026-07-28 request: everything is read from its own ``_meta``.

        Checked in this order, each refusal with the request's id: the
        required ``_meta`` fields (-32602, ME-07); the version (-32022 with
        ``supported`` and ``requested``, VR-02); the method (-32601); the
        optional ``clientInfo`` and ``logLevel`` (-32602, LG-08); our own
        capability gate (-32601); the params (-32602); the progress token
        (-32602). ``initialize`` on a connection already in the modern era is
        -32600 (VR-09). The first request other than ``server/discover`` moves
        the connection to MODERN.

        Spec: ME-06, ME-07, ME-09, VR-01, VR-02, VR-09, ST-01, LG-08.
        """
        method = request.method
        params = request.params
        if method == "initialize" and self._lifecycle.state is SessionState.MODERN:
            return self._refuse(
                request,
                ErrorCode.INVALID_REQUEST,
                "This connection already speaks 2026-07-28 (every request carries its "
                "version in _meta); initialize is not accepted on it",
            )
        meta = params.get("_meta") if params is not None else None
        if not isinstance(meta, dict):
            meta = {}
        version = meta.get(_VERSION_KEY)
        capabilities = meta.get(_CAPABILITIES_KEY)
        # Both fields are checked on every request; the list naming the
        # missing ones is only built on the refusal path (issue #16).
        if not isinstance(version, str) or not isinstance(capabilities, dict):
            missing = [
                key
                for key, value, kind in (
                    (_VERSION_KEY, version, str),
                    (_CAPABILITIES_KEY, capabilities, dict),
                )
                if not isinstance(value, kind)
            ]
            return self._refuse(
                request,
                ErrorCode.INVALID_PARAMS,
                f"Missing or invalid _meta field(s) {', '.join(missing)}: every 2026-07-28 "
                "request names its protocol version and client capabilities",
                {"missing": missing},
            )
        if version not in self._modern_versions:
            return self._refuse(
                request,
                ErrorCode.UNSUPPORTED_PROTOCOL_VERSION,
                f"Unsupported protocol version {version[:64]!r}",
                {"supported": list(self.supported_versions), "requested": version},
            )
        key = (method, version)
        spec = _MODERN_OK.get(key)
        if spec is None:
            spec = METHODS.get(method)
            if (
                spec is None
                or spec.kind is not Kind.REQUEST
                or not spec.exists_in(version)
                or not spec.sender.allows(Role.CLIENT)
            ):
                return self._refuse(
                    request, ErrorCode.METHOD_NOT_FOUND, f"Method not found: {method}"
                )
            _MODERN_OK[key] = spec
        if spec.extension is not None:
            refusal = self._extension_refusal(request, spec.extension, capabilities)
            if refusal is not None:
                return refusal
        info = meta.get(_CLIENT_INFO_KEY)
        if info is not None and not isinstance(info, dict):
            return self._refuse(
                request, ErrorCode.INVALID_PARAMS, f"_meta {_CLIENT_INFO_KEY} must be an object"
            )
        level = meta.get(_LOG_LEVEL_KEY)
        if level is not None and not (isinstance(level, str) and level in _LOG_LEVELS):
            return self._refuse(
                request,
                ErrorCode.INVALID_PARAMS,
                f"_meta {_LOG_LEVEL_KEY} must be one of {', '.join(sorted(_LOG_LEVELS))}",
            )
        checked = self._check_body(request, spec, version)
        if not isinstance(checked, tuple):
            return checked
        params_or_error, token = checked
        lifecycle = self._lifecycle
        if lifecycle.state is SessionState.NEW and method != "server/discover":
            # A probe does not decide the era; anything else does (VR-09).
            lifecycle.process(LifecycleEvent.RECV_MODERN)
            self._negotiated(version)
        book = self._book
        entry = RequestEntry(request.id, method, Direction.INBOUND, book.clock(), token)
        entry.envelope = (version, capabilities, info, level)
        book.add_inbound(entry, reused=reused)
        return RequestReceived(request, spec, params_or_error, reused)

    def _extension_refusal(
        self, request: Request, extension: str, capabilities: JSONObject
    ) -> Event | None:
        """The refusal of a 2026-07-28 request for a method of *extension*, if
        any: -32601 when we do not offer the extension (it is not in our
        ``extensions``); -32021 with ``requiredCapabilities`` when the request
        did not declare it in its own ``clientCapabilities.extensions`` (the
        extension is negotiated per request, whatever earlier requests said).
        Checked before the params, so an unknown task id never answers first.

        Spec: ME-09, SEP-2663 (TK-19).
        """
        ours = self.modern_capabilities
        offered = (self.local_capabilities if ours is None else ours).get("extensions")
        if not isinstance(offered, dict) or extension not in offered:
            return self._refuse(
                request, ErrorCode.METHOD_NOT_FOUND, f"Method not found: {request.method}"
            )
        declared = capabilities.get("extensions")
        if not isinstance(declared, dict) or not isinstance(declared.get(extension), dict):
            return self._refuse(
                request,
                ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY,
                f"{request.method} needs the {extension} extension declared in this "
                "request's clientCapabilities",
                {"requiredCapabilities": {"extensions": {extension: {}}}},
            )
        return None

    def _check_body(
        self, request: Request, spec: MethodSpec, version: str | None
    ) -> Event | tuple[Any, Any]:
        """The checks of both eras after the method's: our own capability gate
        (-32601, LC-11), the params (-32602, path-labelled ``data``) and
        ``_meta.progressToken`` (-32602, PG-01). Returns the refusal, or the
        structured params and the token."""
        gate = spec.gate(version)
        if (
            gate is not None
            and gate.held_by(self.role, receiving=True)
            and not gate.declared_in(self.local_capabilities)
        ):
            return self._refuse(
                request,
                ErrorCode.METHOD_NOT_FOUND,
                f"Method not found: {spec.name} ({gate} was not declared)",
            )
        params_or_error = self._structure_params(spec, request.params)
        if isinstance(params_or_error, ErrorObject):
            return self._invalid_message(
                ErrorResponse(request.id, params_or_error), params_or_error.message
            )
        token = _progress_token(request.params)
        if token is _BAD_TOKEN:
            return self._refuse(
                request,
                ErrorCode.INVALID_PARAMS,
                "_meta.progressToken must be a string or an integer",
            )
        return params_or_error, token

    def _refuse_handshake(self, request: Request) -> Event:
        """A modern-only server's answer to ``initialize``: -32022 naming the
        versions it speaks, so a handshake-era client fails at once (VR-13)."""
        params = request.params or {}
        requested = params.get("protocolVersion")
        return self._refuse(
            request,
            ErrorCode.UNSUPPORTED_PROTOCOL_VERSION,
            "This server does not accept initialize: it speaks only "
            + ", ".join(self._modern_versions),
            {
                "supported": list(self.supported_versions),
                "requested": requested if isinstance(requested, str) else None,
            },
        )

    def _structure_params(self, spec: MethodSpec, params: JSONObject | None) -> Any:
        if params is None:
            if spec.params_required:
                return ErrorObject(
                    int(ErrorCode.INVALID_PARAMS),
                    f"Invalid params for {spec.name}: params are required",
                )
            return None
        params_type = spec.params_type
        if params_type is None:
            return None
        try:
            return self.converter.structure(params, params_type)
        except Exception as exc:  # cattrs raises groups; they never leave this layer
            return ErrorObject(
                int(ErrorCode.INVALID_PARAMS),
                f"Invalid params for {spec.name}",
                {"errors": describe_structure_error(exc)},
            )

    def _receive_notification(self, note: Notification) -> Event:
        method = note.method
        if method == "notifications/cancelled":
            return self._receive_cancel(note.params)
        if method == "notifications/progress":
            return self._receive_progress(note.params)
        spec = METHODS.get(method)
        if (
            spec is None
            or spec.kind is not Kind.NOTIFICATION
            or not spec.exists_in(self.protocol_version)
            or not spec.sender.allows(self.role.peer)
        ):
            return self._ignore(IgnoredReason.UNKNOWN_METHOD, f"notification {method!r} ignored")
        params = self._structure_params(spec, note.params)
        if isinstance(params, ErrorObject):
            return self._ignore(
                IgnoredReason.MALFORMED, f"{method}: {params.message}: {params.data}"
            )
        if method == "notifications/initialized":
            lifecycle = self._lifecycle
            if not lifecycle.accepts(LifecycleEvent.RECV_INITIALIZED):
                return self._ignore(
                    IgnoredReason.UNEXPECTED, f"{method} in state {lifecycle.state.value}"
                )
            lifecycle.process(LifecycleEvent.RECV_INITIALIZED)
        return NotificationReceived(method, spec, params, note.params)

    def _receive_cancel(self, params: JSONObject | None) -> Event:
        request_id = (params or {}).get("requestId")
        reason = (params or {}).get("reason")
        if not is_valid_request_id(request_id) or not isinstance(reason, str | None):
            return self._ignore(
                IgnoredReason.MALFORMED, "notifications/cancelled without a valid requestId"
            )
        if self.role is Role.CLIENT and self._lifecycle.state is SessionState.MODERN:
            return self._receive_server_cancel(request_id, reason)  # type: ignore[arg-type]
        entry = self._book.known_inbound(request_id)
        if entry is None:
            return self._ignore(IgnoredReason.UNKNOWN_ID, f"cancel for unknown id {request_id!r}")
        if not METHODS[entry.method].cancellable:
            entry.note_late(f"peer cancel refused: {entry.method} is not cancellable")
            return self._ignore(
                IgnoredReason.NOT_CANCELLABLE, f"{entry.method} cannot be cancelled (CN-03)"
            )
        if entry.state.is_terminal:
            return self._receive_late_cancel(entry, reason)
        entry.request_cancel(CancelOrigin.PEER, reason)  # sets peer_cancelled
        return CancelReceived(entry.id, reason)

    def _receive_server_cancel(self, request_id: RequestId, reason: str | None) -> Event:
        """Client, 2026-07-28: the server tore down one of our
        ``subscriptions/listen`` streams (SB-10). The call fails with -32000
        saying so; a cancel naming anything else is ignored (CN-15)."""
        book = self._book
        entry = book.outbound_entry(request_id)
        if entry is None or not METHODS[entry.method].long_lived:
            return self._ignore(
                IgnoredReason.UNEXPECTED,
                f"the server cancelled {request_id!r}, which is no subscription (CN-15)",
            )
        if entry.state is not RequestState.RUNNING:
            entry.note_late(f"server cancel in {entry.state.value}")
            return self._ignore(IgnoredReason.LATE, f"server cancel for {request_id!r}")
        error = ErrorObject(
            int(ErrorCode.SESSION_CLOSED),
            f"The server ended the subscription: {reason or 'no reason given'}",
        )
        book.finish(entry, RequestEvent.FAIL, error=error)
        return ErrorReceived(entry.id, error, remote=True)

    def _receive_late_cancel(self, entry: RequestEntry, reason: str | None) -> Event:
        """A peer cancel for a request whose handler already finished.

        If its reply has not been written yet (it waits in the writer's queue),
        the reply is suppressed: after the peer's cancel no response is ever sent
        (CN-05, A-01). The record keeps its terminal state (cancel requested is
        not cancelled) and notes the cancel. If the reply was already written,
        the cancel crossed it on the wire and is ignored (CN-06), and recorded.
        """
        if entry.reply_written or entry.peer_cancelled:
            entry.note_late(f"cancel by peer in {entry.state.value}: ignored")
            return self._ignore(IgnoredReason.LATE, f"cancel for finished id {entry.id!r}")
        entry.peer_cancelled = True
        if entry.cancel_origin is None:
            entry.cancel_origin = CancelOrigin.PEER
            entry.cancel_reason = reason
        entry.note_late(f"cancel by peer in {entry.state.value}: the unwritten reply is suppressed")
        return CancelReceived(entry.id, reason)

    def _receive_progress(self, params: JSONObject | None) -> Event:
        p = params or {}
        token, value = p.get("progressToken"), p.get("progress")
        total, message = p.get("total"), p.get("message")
        if (
            not is_valid_request_id(token)
            or not _is_number(value)
            or not (total is None or _is_number(total))
            or not isinstance(message, str | None)
        ):
            return self._ignore(
                IgnoredReason.MALFORMED, "notifications/progress with invalid fields"
            )
        meta = p.get("_meta")
        related = meta.get(_RELATED_TASK_KEY) if isinstance(meta, dict) else None
        revision = self.revision
        if (
            isinstance(related, dict)
            and isinstance(related.get("taskId"), str)
            and revision is not None
            and revision.tasks_utility
        ):
            # A 2025-11-25 task's progress: its request has long been answered
            # (the token lives as long as the task), so no request record
            # takes it; it goes up as a notification for the task's holder.
            spec = METHODS["notifications/progress"]
            structured = self._structure_params(spec, params)
            if isinstance(structured, ErrorObject):
                return self._ignore(IgnoredReason.MALFORMED, f"task progress: {structured.message}")
            return NotificationReceived("notifications/progress", spec, structured, params)
        entry = self._book.outbound_entry(token)  # type: ignore[arg-type]
        if entry is None or entry.progress_token != token:
            return self._ignore(IgnoredReason.UNKNOWN_ID, f"progress for unknown token {token!r}")
        if entry.state is not RequestState.RUNNING:
            entry.note_late(f"progress in {entry.state.value}")
            return self._ignore(
                IgnoredReason.LATE, f"progress for {token!r} in {entry.state.value}"
            )
        if entry.progress is not None and value <= entry.progress.progress:  # type: ignore[operator]
            entry.note_late(f"non-increasing progress {value!r}")
            return self._ignore(
                IgnoredReason.NON_MONOTONIC, f"progress {value!r} did not increase (PG-04)"
            )
        entry.progress = Progress(value, total, message)  # type: ignore[arg-type]
        return ProgressReceived(entry.id, entry.progress)

    def _receive_response(self, response: Response | ErrorResponse) -> Event:
        if response.id is None:
            error = response.error if isinstance(response, ErrorResponse) else None
            return self._ignore(
                IgnoredReason.UNKNOWN_ID, f"error without id from the peer: {error}"
            )
        book = self._book
        entry = book.outbound_entry(response.id)
        if entry is None or entry.state is not RequestState.RUNNING:
            if entry is not None:
                entry.note_late(f"response in {entry.state.value}")
            elif book.note_late_response(response.id):
                return self._ignore(IgnoredReason.LATE, f"late response for {response.id!r}")
            return self._ignore(
                IgnoredReason.UNKNOWN_ID, f"response for unknown id {response.id!r}"
            )
        if isinstance(response, ErrorResponse):
            book.finish(entry, RequestEvent.FAIL, error=response.error)
            if entry.method == "initialize" and self._lifecycle.accepts(
                LifecycleEvent.RECV_INIT_ERROR
            ):
                # Refused: the client may try again, or (VR-13) go modern.
                self._lifecycle.process(LifecycleEvent.RECV_INIT_ERROR)
            return ErrorReceived(entry.id, response.error, remote=True)
        spec = METHODS[entry.method]
        result_type = spec.result_type
        revision = self.revision
        if revision is not None and revision.result_type:
            # absent means complete; input_required only where PT-04
            # allows it; task only to a request that declared the tasks
            # extension (SEP-2663); anything else is not ours to guess.
            kind = response.result.get("resultType", "complete")
            if spec.modern_result_type is not None:
                result_type = spec.modern_result_type
            if kind == "input_required" and spec.input_required:
                result_type = mcp_types.InputRequiredResult
                entry.input_required = True
            elif kind == mcp_types.RESULT_TYPE_TASK and entry.task_allowed:
                result_type = mcp_types.DetailedTask
            elif kind != "complete":
                error = ErrorObject(
                    int(ErrorCode.INVALID_PARAMS),
                    f"Invalid result for {entry.method} from the peer",
                    {"errors": [f"resultType {str(kind)[:64]!r} is not allowed here"]},
                )
                book.finish(entry, RequestEvent.FAIL, error=error)
                return ErrorReceived(entry.id, error, remote=False)
        elif entry.task_allowed and "task" in response.result:
            # 2025-11-25: the receiver made it a task (TK-11). One that does
            # not support tasks answers as usual, ignoring ``task`` (TK-05).
            result_type = mcp_types.CreateTaskResult
        try:
            result: Any = self.converter.structure(response.result, result_type)
        except Exception as exc:
            error = ErrorObject(
                int(ErrorCode.INVALID_PARAMS),
                f"Invalid result for {entry.method} from the peer",
                {"errors": describe_structure_error(exc)},
            )
            book.finish(entry, RequestEvent.FAIL, error=error)
            return ErrorReceived(entry.id, error, remote=False)
        book.finish(entry, RequestEvent.COMPLETE)
        return ResponseReceived(entry.id, result)

    # ------------------------------------------------------- inbound lifecycle

    def start_inbound(self, request_id: RequestId) -> bool:
        """QUEUED → RUNNING when the handler gets its slot. False if already ended."""
        entry = self._book.inbound_entry(request_id)
        return entry is not None and self._book.transition(entry, RequestEvent.START) is not None

    def respond(self, request_id: RequestId, result: Any) -> Response | ErrorResponse | None:
        """The handler returned: serialize the result, record COMPLETED, build the response.

        A result that is not valid JSON (NaN, a 65-bit integer, an unknown type)
        fails the request instead, with -32603 and no internals. Returns None when
        no response may be sent (the peer cancelled, CN-05).
        """
        entry = self._book.inbound_entry(request_id)
        if entry is None:
            return None
        if entry.state is not RequestState.RUNNING:
            # COMPLETE is not a transition from QUEUED: the record would stay
            # QUEUED forever while a response went out. The caller's bug, so raise.
            raise LocalProtocolError(f"respond() for {request_id!r} before start_inbound()")
        raw = self._unstructure(result) or {}
        if entry.envelope is not None:
            decorated = self._modern_result(entry, raw)
            if isinstance(decorated, ErrorObject):
                return self.respond_error(request_id, decorated)
            raw = decorated
        try:
            data = encode_result(request_id, raw)
        except LocalProtocolError as exc:
            return self.respond_error(
                request_id,
                ErrorObject(int(ErrorCode.INTERNAL_ERROR), f"Internal error: {exc}"),
            )
        entry.encoded = data
        self._book.finish(entry, RequestEvent.COMPLETE)
        if entry.peer_cancelled:
            return None
        return Response(request_id, raw)

    def _modern_result(self, entry: RequestEntry, raw: JSONObject) -> JSONObject | ErrorObject:
        """A 2026-07-28 result as the wire wants it: ``resultType`` (default
        ``"complete"``), ``serverInfo`` in ``_meta`` (ME-11, unless
        :attr:`result_server_info` is off), the cache hints of a complete
        cacheable result that sets none (CA-01: from :attr:`cache_hints`), no
        hints on an input-required one. An input-required result for a method
        that may not answer so (PT-04), or with neither ``inputRequests`` nor
        ``requestState`` (PT-06), is the handler's bug: -32603.

        Spec: ME-11, CA-01, PT-04, PT-06, A-21.
        """
        # Copied (the handler may hold what it returned); keys tested with
        # ``in`` and dicts built by unpacking rather than setdefault calls, on
        # every 2026-07-28 result (issue #16).
        raw = {**raw}
        if "resultType" in raw:
            result_type = raw["resultType"]
        else:
            result_type = raw["resultType"] = "complete"
        spec = METHODS[entry.method]
        if result_type == "input_required":
            if not spec.input_required or not (
                raw.get("inputRequests") or raw.get("requestState") is not None
            ):
                return ErrorObject(
                    int(ErrorCode.INTERNAL_ERROR),
                    f"Internal error: {entry.method} cannot answer with this input-required result",
                )
            raw.pop("ttlMs", None)
            raw.pop("cacheScope", None)
            entry.input_required = True
        elif spec.cacheable:
            ttl, scope = self.cache_hints.get(entry.method, (0, "private"))
            raw.setdefault("ttlMs", ttl)
            raw.setdefault("cacheScope", scope)
        if self.result_server_info:
            own = raw.get("_meta")
            if own:
                meta = {**own}
                if _SERVER_INFO_KEY not in meta:
                    meta[_SERVER_INFO_KEY] = self.local_info
            else:
                meta = {_SERVER_INFO_KEY: self.local_info}
            raw["_meta"] = meta
        return raw

    def respond_error(self, request_id: RequestId, error: ErrorObject) -> ErrorResponse | None:
        """The handler failed: record FAILED; None if the peer cancelled.

        -32042 (URL elicitation required) exists only in revisions with URL
        elicitation and only for a client that declared ``elicitation.url``
        (EL-10): to any other peer it becomes -32603 saying so, and that is what
        the record keeps.
        """
        entry = self._book.inbound_entry(request_id)
        if entry is None:
            return None
        if error.code == ErrorCode.URL_ELICITATION_REQUIRED and not self._url_elicitation_ok():
            error = ErrorObject(
                int(ErrorCode.INTERNAL_ERROR),
                "Internal error: the server needs a URL elicitation, which this client "
                f"did not declare (elicitation.url, protocol {V2025_11_25.version})",
            )
        self._book.finish(entry, RequestEvent.FAIL, error=error)
        if entry.peer_cancelled:
            return None
        return ErrorResponse(request_id, error)

    def _url_elicitation_ok(self) -> bool:
        caps = self.peer_capabilities.get("elicitation")
        revision = self.revision
        return (
            revision is not None
            and revision.url_elicitation
            and self.role is Role.SERVER
            and isinstance(caps, dict)
            and isinstance(caps.get("url"), dict)
        )

    def cancel_inbound(
        self, request_id: RequestId, origin: CancelOrigin, reason: str | None
    ) -> ErrorResponse | Notification | None:
        """The handler's scope was cancelled: record CANCELLED.

        A peer cancel gets no response at all (CN-05). A local cancel (its
        deadline, shutdown) while the peer still waits gets an error response
        with :attr:`ErrorCode.REQUEST_CANCELLED_LOCALLY`, so the peer is never
        left hanging; the transport being gone gets nothing (it cannot be sent).
        A 2026-07-28 ``subscriptions/listen`` the server abandons is ended with
        ``notifications/cancelled`` naming it instead, the one use the server
        has for that notification (SB-10, CN-15, A-12).
        """
        entry = self._book.inbound_entry(request_id)
        if entry is None:
            return None
        entry.request_cancel(origin, reason)
        self._book.finish(entry, RequestEvent.CANCEL)
        if entry.peer_cancelled or entry.cancel_origin in (
            CancelOrigin.PEER,
            CancelOrigin.TRANSPORT,
        ):
            return None
        who = (entry.cancel_origin or origin).value
        message = f"Request cancelled by the {who}"
        if entry.cancel_reason:
            message += f": {entry.cancel_reason}"
        if entry.envelope is not None and METHODS[entry.method].long_lived:
            entry.reply_written = True
            return Notification(
                "notifications/cancelled", {"requestId": request_id, "reason": message}
            )
        return ErrorResponse(
            request_id, ErrorObject(int(ErrorCode.REQUEST_CANCELLED_LOCALLY), message)
        )

    def progress_notification(
        self,
        request_id: RequestId,
        progress: float,
        total: float | None = None,
        message: str | None = None,
    ) -> Notification | None:
        """Progress for an inbound request we are handling (PG-03).

        Returns None when no progress may be sent: the request carried no token
        (PG-07), or it has ended (PG-10); or when it is rate-limited (PG-09):
        with :attr:`progress_interval` > 0, a report less than that many seconds
        after the last one *sent* for the request is not sent, unless it reaches
        *total*. Every report, sent or not, must increase and becomes the
        record's progress.

        Raises:
            LocalProtocolError: *progress* does not increase (PG-04).
        """
        entry = self._book.inbound_entry(request_id)
        if (
            entry is None
            or entry.progress_token is None
            or entry.state.is_terminal
            or entry.peer_cancelled
        ):
            return None
        if entry.progress is not None and not progress > entry.progress.progress:
            raise LocalProtocolError(
                f"progress must increase: {progress!r} after {entry.progress.progress!r} (PG-04)"
            )
        entry.progress = Progress(progress, total, message)
        interval = self.progress_interval
        if interval > 0:
            now = self._book.clock()
            last = entry.progress_sent_at
            reaches_total = total is not None and progress >= total
            if last is not None and now - last < interval and not reaches_total:
                return None
            entry.progress_sent_at = now
        params: JSONObject = {"progressToken": entry.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        revision = self.revision
        if message is not None and (revision is None or revision.progress_message):
            params["message"] = message
        note = Notification("notifications/progress", params)
        encode(note)  # NaN, a lone surrogate: the reporter's error (H-07)
        return note

    def task_progress_notification(
        self,
        token: str | int,
        progress: float,
        total: float | None = None,
        message: str | None = None,
        *,
        meta: JSONObject | None = None,
    ) -> Notification:
        """Progress for a 2025-11-25 task whose request carried *token*: that
        token stays valid for the task's whole life, past the request's end
        (``basic/utilities/tasks``, "Task Progress Notifications"), so PG-10
        does not apply; the task's work keeps PG-04's increase. *meta* is the
        related-task ``_meta`` (TK-13).

        Raises:
            LocalProtocolError: this revision has no tasks.
        """
        revision = self.revision
        if revision is None or not revision.tasks_utility:
            raise LocalProtocolError("task progress exists only where tasks do (2025-11-25)")
        params: JSONObject = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        if meta is not None:
            params["_meta"] = meta
        note = Notification("notifications/progress", params)
        encode(note)
        return note

    # ------------------------------------------------------ outbound lifecycle

    def cancel_outbound(
        self, request_id: RequestId, origin: CancelOrigin, reason: str | None = None
    ) -> Notification | None:
        """Our caller gave up on a request: record CANCELLED.

        Returns the ``notifications/cancelled`` to send, or None when none may or
        need be sent: the request was never written (the writer skips it), it
        already ended, it is not cancellable (``initialize``, CN-03: tear the
        transport down instead), or the session is closed.
        """
        entry = self._book.outbound_entry(request_id)
        if entry is None or not entry.request_cancel(origin, reason):
            return None
        was_written = entry.state is RequestState.RUNNING
        self._book.finish(entry, RequestEvent.CANCEL)
        if (
            not was_written
            or not METHODS[entry.method].cancellable
            or self._lifecycle.state is SessionState.CLOSED
        ):
            return None
        params: JSONObject = {"requestId": request_id}
        note = Notification("notifications/cancelled", params)
        if reason:
            params["reason"] = reason
            try:
                encode(note)
            except LocalProtocolError:
                # Runs on cancellation paths, which must not fail: a reason
                # that is not JSON (a lone surrogate) is left out.
                del params["reason"]
        return note

    def fail_outbound(self, request_id: RequestId, error: ErrorObject) -> None:
        """Fail an outbound request locally (e.g. the transport was lost)."""
        entry = self._book.outbound_entry(request_id)
        if entry is not None:
            self._book.finish(entry, RequestEvent.FAIL, error=error)

    # ----------------------------------------------------------- handshake

    def initialize_request(self, version: str | None = None) -> Request:
        """Client: the ``initialize`` request (LC-02, LC-07: our newest
        handshake-era version).

        Raises:
            LocalProtocolError: we speak no handshake-era version.
        """
        if version is None and not self._handshake_versions:
            raise LocalProtocolError("no handshake-era version to offer in initialize")
        return self.send_request(
            "initialize",
            {
                "protocolVersion": version or self._handshake_versions[0],
                "capabilities": self.local_capabilities,
                "clientInfo": self.local_info,
            },
        )

    def complete_handshake(self, result: mcp_types.InitializeResult) -> Notification:
        """Client: accept the initialize result and return ``notifications/initialized``.

        Raises:
            UnsupportedProtocolVersion: the server chose a version we do not speak
                (LC-09); the protocol is then closed.
            LocalProtocolError: no ``initialize`` of ours awaits its result.
        """
        version = result.protocol_version
        if version not in self._handshake_versions:
            self.close(f"unsupported protocol version {version!r}")
            raise UnsupportedProtocolVersion(version, self._handshake_versions)
        self._lifecycle.process(LifecycleEvent.RECV_INIT_RESULT)
        self._negotiated(version)
        self.peer_capabilities = self.converter.unstructure(result.capabilities)
        self.peer_info = self.converter.unstructure(result.server_info)
        self.peer_instructions = result.instructions
        return Notification("notifications/initialized", None)

    def accept_initialize(self, params: mcp_types.InitializeRequestParams) -> JSONObject:
        """Server: negotiate (LC-08) and build the initialize result (LC-03)."""
        version = negotiate_version(params.protocol_version, self._handshake_versions)
        self._negotiated(version)
        self.peer_capabilities = self.converter.unstructure(params.capabilities)
        self.peer_info = self.converter.unstructure(params.client_info)
        result: JSONObject = {
            "protocolVersion": version,
            "capabilities": self.local_capabilities,
            "serverInfo": self.local_info,
        }
        if self.instructions is not None:
            result["instructions"] = self.instructions
        return result

    def start_stateless(self, version: str) -> None:
        """Server: serve one stateless exchange of revision *version* with no handshake.

        A stateless Streamable HTTP POST stands alone, as in an initialized
        session of the revision the request names (HT-36); the connection goes
        from NEW straight to OPERATING.

        With a modern *version* (a 2026-07-28 POST: its ``MCP-Protocol-Version``
        header or its ``_meta`` named that era) the connection stays NEW, and
        its first request is read as a modern one even without ``_meta``, so
        it gets the modern refusals (-32602 naming the missing fields, -32022,
        -32601 for a method of the handshake era such as ``initialize``); that
        request then moves it to MODERN, as on any connection (VR-09).

        Raises:
            LocalProtocolError: not a server, not NEW, or *version* not supported.
        """
        if not self._lifecycle.accepts(LifecycleEvent.START_STATELESS):
            raise LocalProtocolError("start_stateless needs a new server connection")
        if version in self._modern_versions:
            self._opening_modern = True
            return
        if version not in self._handshake_versions:
            raise LocalProtocolError(f"unsupported protocol version {version!r}")
        self._negotiated(version)
        self._lifecycle.process(LifecycleEvent.START_STATELESS)

    # ---------------------------------------------------------- modern era

    def modern_meta(self, version: str) -> JSONObject:
        """Client: the ``_meta`` a 2026-07-28 request of ours carries (ME-06, ME-08)."""
        return {
            _VERSION_KEY: version,
            _CAPABILITIES_KEY: self.local_capabilities,
            _CLIENT_INFO_KEY: self.local_info,
        }

    def discover_request(self, version: str | None = None) -> Request:
        """Client: a ``server/discover`` naming *version* (default: our newest
        modern one) — the era probe of a dual-era client (SI-14, DS-05). It
        may be sent before the era is chosen and does not choose it.

        Raises:
            LocalProtocolError: we speak no modern version, or it may not be sent now.
        """
        version = version or (self._modern_versions[0] if self._modern_versions else None)
        if version is None:
            raise LocalProtocolError("no modern version to name in server/discover")
        if self._request_meta is not None:
            return self.send_request("server/discover")
        return self.send_request("server/discover", {"_meta": self.modern_meta(version)})

    def start_modern(self, version: str, result: mcp_types.DiscoverResult) -> None:
        """Client: the era is the modern one, at *version*: every later request
        carries the version, our capabilities and our ``clientInfo`` (ME-06).
        The server's capabilities, instructions and ``serverInfo`` are those of
        *result* (DS-02).

        Raises:
            LocalProtocolError: not a new client connection, or *version* is not
                one of our modern versions.
        """
        if self.role is not Role.CLIENT or not self._lifecycle.accepts(LifecycleEvent.START_MODERN):
            raise LocalProtocolError("start_modern needs a new client connection")
        if version not in self._modern_versions:
            raise LocalProtocolError(f"unsupported modern protocol version {version!r}")
        self._lifecycle.process(LifecycleEvent.START_MODERN)
        self._negotiated(version)
        self._request_meta = self.modern_meta(version)
        self.peer_capabilities = self.converter.unstructure(result.capabilities)
        info = (result.meta or {}).get(_SERVER_INFO_KEY)
        self.peer_info = dict(info) if isinstance(info, dict) else {}
        self.peer_instructions = result.instructions

    def set_request_meta(self, key: str, value: Any) -> None:
        """Client, modern era: put *key* in the ``_meta`` of every later request
        (the log level asked for: ME-15).

        Raises:
            LocalProtocolError: not a client in the modern era.
        """
        if self._request_meta is None:
            raise LocalProtocolError("per-request _meta exists only in the modern era")
        self._request_meta = {**self._request_meta, key: value}

    @property
    def modern_versions(self) -> tuple[str, ...]:
        """Our modern-era versions, newest first."""
        return self._modern_versions

    @property
    def handshake_versions(self) -> tuple[str, ...]:
        """Our handshake-era versions, newest first."""
        return self._handshake_versions

    def discover_result(self) -> JSONObject:
        """Server: the ``server/discover`` result (DS-01..DS-03); :meth:`respond`
        adds ``resultType``, ``serverInfo`` and the cache hints."""
        capabilities = self.modern_capabilities
        result: JSONObject = {
            "supportedVersions": list(self.supported_versions),
            "capabilities": self.local_capabilities if capabilities is None else capabilities,
        }
        if self.instructions is not None:
            result["instructions"] = self.instructions
        return result

    def request_meta(self, request_id: RequestId) -> RequestMeta | None:
        """What an in-flight 2026-07-28 inbound request declared in its ``_meta``
        (None for a handshake-era request, or one that has ended)."""
        entry = self._book.inbound_entry(request_id)
        if entry is None or entry.envelope is None:
            return None
        meta = entry.request_meta
        if meta is None:
            # Made once, on the first read: the same record every time after.
            meta = entry.request_meta = RequestMeta(*entry.envelope)
        return meta

    def note_follows(self, request_id: RequestId, previous: RequestId) -> None:
        """Record that an in-flight inbound request retries round *previous* of a
        multi round-trip call (read from its verified ``requestState``)."""
        entry = self._book.inbound_entry(request_id)
        if entry is not None and entry.follows is None:
            entry.follows = previous
            if self.observing:
                self.observer.on_update(entry.snapshot())

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
    # methods, and every change to a record reaches the observer.

    def attach(self, request_id: RequestId, handle: RequestHandle) -> None:
        """Keep *handle* (the session's cancel scope) with an in-flight inbound request."""
        entry = self._book.inbound_entry(request_id)
        if entry is not None:
            entry.user_data = handle

    def handle(self, request_id: RequestId) -> RequestHandle | None:
        """The handle attached to an in-flight inbound request, or None."""
        entry = self._book.inbound_entry(request_id)
        if entry is None:
            return None
        handle: RequestHandle | None = entry.user_data
        return handle

    def request_cancel(
        self, direction: Direction, request_id: RequestId, origin: CancelOrigin, reason: str | None
    ) -> bool:
        """Note that *origin* asked to cancel an in-flight request (the first asker
        wins; the record's state does not change until the request ends).

        Returns False when the request is not in flight (nothing is noted).
        """
        entry = (
            self._book.inbound_entry(request_id)
            if direction is Direction.INBOUND
            else self._book.outbound_entry(request_id)
        )
        if entry is None:
            return False
        first = entry.cancel_origin is None
        if not entry.request_cancel(origin, reason):
            return False
        if first and self.observing:
            self.observer.on_update(entry.snapshot())
        return True

    def note_worker_thread(self, request_id: RequestId) -> None:
        """Record that an in-flight inbound request's handler runs in a worker thread."""
        entry = self._book.inbound_entry(request_id)
        if entry is not None and not entry.in_worker_thread:
            entry.in_worker_thread = True
            if self.observing:
                self.observer.on_update(entry.snapshot())

    def cancel_requested(self, request_id: RequestId) -> bool:
        """Whether anyone asked to cancel an inbound request (True once it has ended)."""
        entry = self._book.inbound_entry(request_id)
        return entry is None or entry.cancel_origin is not None

    def may_send_for(self, request_id: RequestId) -> bool:
        """Whether a message about an inbound request may still be sent: it is
        in flight and the peer has not cancelled it (whoever asked to cancel
        first). After its response or the peer's cancel, nothing more is sent
        for it (CN-05, CN-16, LG-07, PG-10)."""
        entry = self._book.inbound_entry(request_id)
        return entry is not None and not entry.state.is_terminal and not entry.peer_cancelled

    def progress_token(self, request_id: RequestId) -> str | int | None:
        """The progress token of an in-flight inbound request, or None."""
        entry = self._book.inbound_entry(request_id)
        return None if entry is None else entry.progress_token


class RequestHandle(TypingProtocol):
    """What the session layer attaches to an inbound request: its cancel scope."""

    def cancel(self, reason: str | None = None) -> None:
        """Cancel the request's work."""
        ...
