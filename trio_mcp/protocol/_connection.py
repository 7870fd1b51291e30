"""``Connection``: one side of one MCP session, without I/O.

Theory of operation
-------------------
The session feeds every inbound frame to :meth:`Connection.receive_data` and gets
events back; it asks :meth:`Connection.send_request` / :meth:`send_notification`
for outbound messages and hands every message to :meth:`Connection.encode` just
before writing it. ``encode`` is the single place that decides "write this, or
nothing": a request cancelled while still queued is never written, a response to
a request the peer cancelled is never written (CN-05), and progress for a
finished request is never written (PG-10).

The class is built in three layers, one module each: :class:`RequestBook`
(``_book.py``) keeps the records, in two tables of :class:`RequestEntry`, one
per direction, because the two sides' ids are separate namespaces (A-14), plus
a bounded history and the remembered inbound ids (BP-04); :class:`Receiver`
(``_receiving.py``) turns inbound frames into events; this module adds the
sending side, the inbound and outbound request lifecycles and the handshake.

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
from ._codec import DEFAULT_MAX_MESSAGE_SIZE, encode, encode_result
from ._errors import ErrorCode, LocalProtocolError, UnsupportedProtocolVersion
from ._lifecycle import SUPPORTED_VERSIONS, Role, SessionState, negotiate_version
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
from ._methods import METHODS, Kind, MethodSpec
from ._observer import RequestObserver
from ._receiving import EARLY_NOTIFICATIONS, EARLY_REQUESTS, Receiver
from ._requests import (
    CancelOrigin,
    Direction,
    Progress,
    RequestEntry,
    RequestEvent,
    RequestState,
)


class Connection(Receiver):
    """The sans-I/O state of one side of one session. Not thread-safe.

    Args:
        role: which end this is.
        capabilities: the capabilities object this side declares.
        info: this side's ``Implementation`` object (``clientInfo``/``serverInfo``).
        instructions: server only, sent in the initialize result.
        supported_versions: revisions we speak, newest first.
        clock: where timestamps come from (the session passes Trio's clock).
        max_message_size: bound on one inbound frame, in bytes.
        history: how many finished records :meth:`requests` keeps.
        remember_ids: how many finished inbound ids are remembered to refuse reuse.
        observer: sees every request transition.
    """

    # Slots: one Connection per session, and its ~30 attributes would otherwise
    # make a ~1.5 KiB instance dict (the records' slots are RequestBook's, the
    # state the receiving half reads is Receiver's).
    __slots__ = (
        "_next_id",
        "_outbound_ok",
        "close_reason",
        "instructions",
        "local_info",
        "peer_capabilities",
        "peer_info",
        "peer_instructions",
        "progress_interval",
        "supported_versions",
    )

    def __init__(
        self,
        role: Role,
        *,
        capabilities: JSONObject | None = None,
        info: JSONObject | None = None,
        instructions: str | None = None,
        supported_versions: tuple[str, ...] = SUPPORTED_VERSIONS,
        clock: Callable[[], float] = time.monotonic,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        history: int = 1000,
        remember_ids: int = 4096,
        observer: RequestObserver | None = None,
        converter: cattrs.Converter | None = None,
    ) -> None:
        super().__init__(clock=clock, history=history, remember_ids=remember_ids, observer=observer)
        self.role = role
        self.local_capabilities: JSONObject = dict(capabilities or {})
        self.local_info: JSONObject = dict(info or {"name": "trio_mcp", "version": "0"})
        self.instructions = instructions
        self.supported_versions = supported_versions
        self.max_message_size = max_message_size
        self.converter = converter or mcp_types.converter

        self.state = SessionState.NEW
        #: The negotiated revision, once known.
        self.revision: str | None = None
        self.peer_capabilities: JSONObject = {}
        self.peer_info: JSONObject = {}
        self.peer_instructions: str | None = None
        self.close_reason: str | None = None

        #: Seconds between two progress notifications of one inbound request
        #: (0: every report is sent); see :meth:`progress_notification` (PG-09).
        self.progress_interval = 0.0
        self._next_id = 1
        # Outbound requests (method, state, revision) that passed _check_outbound.
        self._outbound_ok: dict[tuple[str, SessionState, str | None], MethodSpec] = {}

    # --------------------------------------------------------------------- send

    def send_request(
        self, method: str, params: Any = None, *, want_progress: bool = False
    ) -> Request:
        """Make an outbound request and its QUEUED record.

        ``params`` is an attrs instance of the method's params type, a JSON
        object, or None. With *want_progress* the request carries
        ``_meta.progressToken`` (equal to its id, so unique among active requests,
        PG-02).

        Raises:
            LocalProtocolError: the method is unknown, goes the wrong way, does
                not exist in the negotiated revision, is not allowed in the current
                lifecycle state (LC-05, LC-06), or needs a capability the peer did
                not declare (LC-11); or *params* is not JSON (NaN, Infinity, a
                lone surrogate, an object JSON has no form for).
        """
        self._check_outbound(method, Kind.REQUEST)
        if method == "initialize":
            if self.role is not Role.CLIENT or self.state is not SessionState.NEW:
                raise LocalProtocolError("initialize may only be sent once, by the client")
            self.state = SessionState.INITIALIZING
        elif method not in EARLY_REQUESTS and self.state is not SessionState.OPERATING:
            raise LocalProtocolError(
                f"cannot send {method!r} in state {self.state.value} (LC-05/LC-06)"
            )
        request_id = self._next_id
        raw = self._unstructure(params)
        if want_progress:
            raw = dict(raw or {})
            raw["_meta"] = {**raw.get("_meta", {}), "progressToken": request_id}
        request = Request(request_id, method, raw)
        # Serialized now, not by the writer: params that are not JSON fail the
        # caller here, before an id or a record is spent, and can never take
        # the writer (and the session) down.
        data = encode(request)
        self._next_id += 1
        entry = RequestEntry(
            request_id,
            method,
            Direction.OUTBOUND,
            self.clock(),
            request_id if want_progress else None,
        )
        entry.encoded = data
        self._outbound[request_id] = entry
        if self.observing:
            self.observer.on_transition(entry.snapshot(), None)
        return request

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
        if (
            self.state is not SessionState.OPERATING
            and method not in EARLY_NOTIFICATIONS
            and not (method == "notifications/initialized" and self.role is Role.CLIENT)
        ):
            raise LocalProtocolError(f"cannot send {method!r} in state {self.state.value}")
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
        key = (method, self.state, self.revision)
        spec = self._outbound_ok.get(key)
        if spec is None:
            spec = self._outbound_ok[key] = self._check_outbound_uncached(method, kind)
        return spec

    def _check_outbound_uncached(self, method: str, kind: Kind) -> MethodSpec:
        if self.state is SessionState.CLOSED:
            raise LocalProtocolError(f"session closed: {self.close_reason}")
        spec = METHODS.get(method)
        if spec is None or spec.kind is not kind:
            raise LocalProtocolError(f"unknown {kind.value} method {method!r}")
        if not spec.sender.allows(self.role):
            raise LocalProtocolError(f"a {self.role.value} does not send {method!r}")
        if not spec.exists_in(self.revision):
            raise LocalProtocolError(f"{method!r} does not exist in revision {self.revision}")
        gate = spec.gate(self.revision)
        if (
            gate is not None
            and gate.held_by(self.role.peer, receiving=kind is Kind.REQUEST)
            and self.state is SessionState.OPERATING
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
            # we declared it (LC-11; found by tests/protocol/test_connection.py).
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
        request (PG-10).
        """
        if isinstance(message, Request):
            entry = self._outbound.get(message.id)
            if entry is None or entry.state is not RequestState.QUEUED:
                return None
            self._transition(entry, RequestEvent.START)
            if entry.encoded is not None:
                data, entry.encoded = entry.encoded, None
                return data
        elif isinstance(message, Response | ErrorResponse):
            entry = self._find_finished_inbound(message.id)
            if entry is not None:
                if entry.peer_cancelled or entry.reply_written:
                    return None
                entry.reply_written = True
                if entry.method == "initialize" and self.role is Role.SERVER:
                    self.state = (
                        SessionState.INITIALIZED
                        if isinstance(message, Response)
                        else SessionState.NEW
                    )
                if entry.encoded is not None:
                    data, entry.encoded = entry.encoded, None
                    return data
        elif message.method == "notifications/progress":
            # Progress is checked against the record when queued (PG-10); here only
            # a peer cancel that arrived meanwhile stops it.
            token = (message.params or {}).get("progressToken")
            entry = self._inbound_tokens.get(token)  # type: ignore[arg-type]
            if entry is not None and (entry.peer_cancelled or entry.reply_written):
                return None
        return encode(message)

    # ------------------------------------------------------- inbound lifecycle

    def start_inbound(self, request_id: RequestId) -> bool:
        """QUEUED → RUNNING when the handler gets its slot. False if already ended."""
        entry = self._inbound.get(request_id)
        return entry is not None and self._transition(entry, RequestEvent.START) is not None

    def respond(self, request_id: RequestId, result: Any) -> Response | ErrorResponse | None:
        """The handler returned: serialize the result, record COMPLETED, build the response.

        A result that is not valid JSON (NaN, a 65-bit integer, an unknown type)
        fails the request instead, with -32603 and no internals. Returns None when
        no response may be sent (the peer cancelled, CN-05).
        """
        entry = self._inbound.get(request_id)
        if entry is None:
            return None
        if entry.state is not RequestState.RUNNING:
            # COMPLETE is not a transition from QUEUED: the record would stay
            # QUEUED forever while a response went out (found by
            # tests/protocol/test_connection.py). The caller's bug, so raise.
            raise LocalProtocolError(f"respond() for {request_id!r} before start_inbound()")
        raw = self._unstructure(result) or {}
        try:
            data = encode_result(request_id, raw)
        except LocalProtocolError as exc:
            return self.respond_error(
                request_id,
                ErrorObject(int(ErrorCode.INTERNAL_ERROR), f"Internal error: {exc}"),
            )
        entry.encoded = data
        self._finish(entry, RequestEvent.COMPLETE)
        if entry.peer_cancelled:
            return None
        return Response(request_id, raw)

    def respond_error(self, request_id: RequestId, error: ErrorObject) -> ErrorResponse | None:
        """The handler failed: record FAILED; None if the peer cancelled.

        -32042 (URL elicitation required) exists only in 2025-11-25 and only for
        a client that declared ``elicitation.url`` (EL-10): to any other peer it
        becomes -32603 saying so, and that is what the record keeps.
        """
        entry = self._inbound.get(request_id)
        if entry is None:
            return None
        if error.code == ErrorCode.URL_ELICITATION_REQUIRED and not self._url_elicitation_ok():
            error = ErrorObject(
                int(ErrorCode.INTERNAL_ERROR),
                "Internal error: the server needs a URL elicitation, which this client "
                "did not declare (elicitation.url, protocol 2025-11-25)",
            )
        self._finish(entry, RequestEvent.FAIL, error=error)
        if entry.peer_cancelled:
            return None
        return ErrorResponse(request_id, error)

    def _url_elicitation_ok(self) -> bool:
        caps = self.peer_capabilities.get("elicitation")
        return (
            self.revision == "2025-11-25"
            and self.role is Role.SERVER
            and isinstance(caps, dict)
            and isinstance(caps.get("url"), dict)
        )

    def cancel_inbound(
        self, request_id: RequestId, origin: CancelOrigin, reason: str | None
    ) -> ErrorResponse | None:
        """The handler's scope was cancelled: record CANCELLED.

        A peer cancel gets no response at all (CN-05). A local cancel (its
        deadline, shutdown) while the peer still waits gets an error response
        with :attr:`ErrorCode.REQUEST_CANCELLED_LOCALLY`, so the peer is never
        left hanging; the transport being gone gets nothing (it cannot be sent).
        """
        entry = self._inbound.get(request_id)
        if entry is None:
            return None
        entry.request_cancel(origin, reason)
        self._finish(entry, RequestEvent.CANCEL)
        if entry.peer_cancelled or entry.cancel_origin in (
            CancelOrigin.PEER,
            CancelOrigin.TRANSPORT,
        ):
            return None
        who = (entry.cancel_origin or origin).value
        message = f"Request cancelled by the {who}"
        if entry.cancel_reason:
            message += f": {entry.cancel_reason}"
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
        entry = self._inbound.get(request_id)
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
            now = self.clock()
            last = entry.progress_sent_at
            reaches_total = total is not None and progress >= total
            if last is not None and now - last < interval and not reaches_total:
                return None
            entry.progress_sent_at = now
        params: JSONObject = {"progressToken": entry.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None and self.revision != "2024-11-05":
            params["message"] = message
        note = Notification("notifications/progress", params)
        encode(note)  # NaN, a lone surrogate: the reporter's error (H-07)
        return note

    # ------------------------------------------------------ outbound lifecycle

    def cancel_outbound(
        self, request_id: RequestId, origin: CancelOrigin, reason: str | None = None
    ) -> Notification | None:
        """Our caller gave up on a request: record CANCELLED.

        Returns the ``notifications/cancelled`` to send, or None when none may or
        need be sent: the request was never written (the writer skips it), it
        already ended, it is ``initialize`` (CN-03: tear the transport down
        instead), or the session is closed.
        """
        entry = self._outbound.get(request_id)
        if entry is None or not entry.request_cancel(origin, reason):
            return None
        was_written = entry.state is RequestState.RUNNING
        self._finish(entry, RequestEvent.CANCEL)
        if not was_written or entry.method == "initialize" or self.state is SessionState.CLOSED:
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
        entry = self._outbound.get(request_id)
        if entry is not None:
            self._finish(entry, RequestEvent.FAIL, error=error)

    # ----------------------------------------------------------- handshake

    def initialize_request(self, version: str | None = None) -> Request:
        """Client: the ``initialize`` request (LC-02, LC-07: our newest version)."""
        return self.send_request(
            "initialize",
            {
                "protocolVersion": version or self.supported_versions[0],
                "capabilities": self.local_capabilities,
                "clientInfo": self.local_info,
            },
        )

    def complete_handshake(self, result: Any) -> Notification:
        """Client: accept the initialize result and return ``notifications/initialized``.

        Raises:
            UnsupportedProtocolVersion: the server chose a version we do not speak
                (LC-09); the protocol is then closed.
        """
        version = result.protocol_version
        if version not in self.supported_versions:
            self.close(f"unsupported protocol version {version!r}")
            raise UnsupportedProtocolVersion(version, self.supported_versions)
        self.revision = version
        self.peer_capabilities = self.converter.unstructure(result.capabilities)
        self.peer_info = self.converter.unstructure(result.server_info)
        self.peer_instructions = result.instructions
        self.state = SessionState.OPERATING
        return Notification("notifications/initialized", None)

    def accept_initialize(self, params: Any) -> JSONObject:
        """Server: negotiate (LC-08) and build the initialize result (LC-03)."""
        version = negotiate_version(params.protocol_version, self.supported_versions)
        self.revision = version
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

        Raises:
            LocalProtocolError: not a server, not NEW, or *version* not supported.
        """
        if self.role is not Role.SERVER or self.state is not SessionState.NEW:
            raise LocalProtocolError("start_stateless needs a new server connection")
        if version not in self.supported_versions:
            raise LocalProtocolError(f"unsupported protocol version {version!r}")
        self.revision = version
        self.state = SessionState.OPERATING

    def close(self, reason: str) -> None:
        """Move to CLOSED (idempotent); every later send is refused."""
        if self.state is not SessionState.CLOSED:
            self.state = SessionState.CLOSED
            self.close_reason = reason

    # The session layer's handles on a request
    #
    # The layer above never holds a RequestEntry: what it keeps with a request
    # (its cancel handle) and what it writes to a record goes through these
    # methods, and every change to a record reaches the observer.

    def attach(self, request_id: RequestId, handle: RequestHandle) -> None:
        """Keep *handle* (the session's cancel scope) with an in-flight inbound request."""
        entry = self.inbound_entry(request_id)
        if entry is not None:
            entry.user_data = handle

    def handle(self, request_id: RequestId) -> RequestHandle | None:
        """The handle attached to an in-flight inbound request, or None."""
        entry = self.inbound_entry(request_id)
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
            self.inbound_entry(request_id)
            if direction is Direction.INBOUND
            else self.outbound_entry(request_id)
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
        entry = self.inbound_entry(request_id)
        if entry is not None and not entry.in_worker_thread:
            entry.in_worker_thread = True
            if self.observing:
                self.observer.on_update(entry.snapshot())

    def cancel_requested(self, request_id: RequestId) -> bool:
        """Whether anyone asked to cancel an inbound request (True once it has ended)."""
        entry = self.inbound_entry(request_id)
        return entry is None or entry.cancel_origin is not None

    def progress_token(self, request_id: RequestId) -> str | int | None:
        """The progress token of an in-flight inbound request, or None."""
        entry = self.inbound_entry(request_id)
        return None if entry is None else entry.progress_token


class RequestHandle(TypingProtocol):
    """What the session layer attaches to an inbound request: its cancel scope."""

    def cancel(self, reason: str | None = None) -> None:
        """Cancel the request's work."""
        ...
