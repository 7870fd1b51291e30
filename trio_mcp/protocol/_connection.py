"""``Protocol``: one side of one MCP session, without I/O.

Theory of operation
-------------------
The session feeds every inbound frame to :meth:`Protocol.receive_data` and gets
events back; it asks :meth:`Protocol.send_request` / :meth:`send_notification`
for outbound messages and hands every message to :meth:`Protocol.encode` just
before writing it. ``encode`` is the single place that decides "write this, or
nothing": a request cancelled while still queued is never written, a response to
a request the peer cancelled is never written (CN-05), and progress for a
finished request is never written (PG-10).

Two tables of :class:`RequestEntry` hold the in-flight requests, one per
direction, because the two sides' ids are separate namespaces (A-14). Finished
entries move to a bounded history for :meth:`requests`; finished and refused
inbound ids are remembered (bounded) so a peer that reuses one is refused (BP-04).

Invariants:

* every request ends in exactly one terminal state;
* at most one response per inbound id is ever produced, none after a peer cancel;
* our outbound ids are never reused (a counter), and progress tokens are our ids;
* bad input from the peer yields an event, never an exception.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from typing import Any

import attrs
import cattrs

from .. import types as mcp_types
from ._codec import DEFAULT_MAX_MESSAGE_SIZE, FrameError, decode, encode, encode_result
from ._errors import ErrorCode, LocalProtocolError, UnsupportedProtocolVersion
from ._events import (
    CancelReceived,
    ErrorReceived,
    Event,
    Ignored,
    InvalidMessage,
    NotificationReceived,
    ProgressReceived,
    RequestReceived,
    ResponseReceived,
)
from ._lifecycle import BATCH_REVISION, SUPPORTED_VERSIONS, Role, SessionState, negotiate_version
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
from ._observer import NullObserver, RequestObserver
from ._requests import (
    CancelOrigin,
    Direction,
    Progress,
    RequestEntry,
    RequestEvent,
    RequestRecord,
    RequestState,
)

# Requests and notifications either side may send before OPERATING (LC-05, LC-06).
_EARLY_REQUESTS = frozenset({"ping"})
_EARLY_NOTIFICATIONS = frozenset(
    {"notifications/message", "notifications/progress", "notifications/cancelled"}
)

#: Inbound requests (method, state, revision, batched, our role) that passed the
#: method and lifecycle checks of ``_receive_request``. Those checks read nothing
#: else (METHODS is static), so one cache serves every session: bounded by the
#: methods table, and no per-session dict.
_INBOUND_OK: dict[tuple[str, SessionState, str | None, bool, Role], MethodSpec] = {}

#: The history is a plain list while it is short (a deque costs ~760 bytes even
#: with one entry, and an idle session's history holds its initialize); past
#: this length it becomes a ``deque(maxlen=history)``.
_SHORT_HISTORY = 32


@attrs.frozen
class ProtocolStatistics:
    """Counters kept by :class:`Protocol` (the session adds its own on top)."""

    in_flight_inbound: int
    in_flight_outbound: int
    peak_in_flight_inbound: int
    completed: int
    failed: int
    cancelled: int
    ignored_events: int
    invalid_messages: int


class Protocol:
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

    # Slots: one Protocol per session, and its ~30 attributes would otherwise
    # make a ~1.5 KiB instance dict.
    __slots__ = (
        "_cancelled",
        "_completed",
        "_failed",
        "_finished_inbound",
        "_history",
        "_history_size",
        "_ignored",
        "_inbound",
        "_inbound_tokens",
        "_invalid",
        "_next_id",
        "_outbound",
        "_outbound_ok",
        "_peak_inbound",
        "_refused_ids",
        "_remember_ids",
        "clock",
        "close_reason",
        "converter",
        "instructions",
        "local_capabilities",
        "local_info",
        "max_message_size",
        "observer",
        "observing",
        "peer_capabilities",
        "peer_info",
        "peer_instructions",
        "revision",
        "role",
        "state",
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
        self.role = role
        self.local_capabilities: JSONObject = dict(capabilities or {})
        self.local_info: JSONObject = dict(info or {"name": "trio_mcp", "version": "0"})
        self.instructions = instructions
        self.supported_versions = supported_versions
        self.clock = clock
        self.max_message_size = max_message_size
        self.observer: RequestObserver = observer or NullObserver()
        #: False when nobody observes: snapshots are then not built at all.
        self.observing = observer is not None
        self.converter = converter or mcp_types.converter

        self.state = SessionState.NEW
        #: The negotiated revision, once known.
        self.revision: str | None = None
        self.peer_capabilities: JSONObject = {}
        self.peer_info: JSONObject = {}
        self.peer_instructions: str | None = None
        self.close_reason: str | None = None

        self._next_id = 1
        self._inbound: dict[RequestId, RequestEntry] = {}
        self._outbound: dict[RequestId, RequestEntry] = {}
        # Finished records, oldest first, at most history of them (see
        # _SHORT_HISTORY: a list while short, then a bounded deque).
        self._history: list[RequestEntry] | deque[RequestEntry] = []
        if history < 0:
            raise ValueError("history must be >= 0")
        self._history_size = history
        # Finished inbound entries, oldest first, bounded by remember_ids: their ids
        # may not be reused (BP-04) and their responses may still sit in the
        # writer's queue, where encode() reads their cancel_origin.
        self._finished_inbound: OrderedDict[RequestId, RequestEntry] = OrderedDict()
        # Ids of refused requests, oldest first, bounded by remember_ids (BP-04);
        # made with the first refusal (most sessions never refuse one).
        self._refused_ids: OrderedDict[RequestId, None] | None = None
        # Progress tokens of inbound requests (in flight or remembered).
        self._inbound_tokens: dict[str | int, RequestEntry] = {}
        self._remember_ids = remember_ids
        # Outbound requests (method, state, revision) that passed _check_outbound.
        self._outbound_ok: dict[tuple[str, SessionState, str | None], MethodSpec] = {}
        self._peak_inbound = 0
        # Finished requests per terminal state.
        self._completed = 0
        self._failed = 0
        self._cancelled = 0
        self._ignored = 0
        self._invalid = 0

    # ------------------------------------------------------------------ receive

    def receive_data(self, data: bytes | bytearray | memoryview | str) -> list[Event]:
        """Turn one inbound frame into events. Never raises for bad peer input."""
        items = decode(
            data,
            max_size=self.max_message_size,
            allow_batch=self.revision == BATCH_REVISION,
        )
        if len(items) == 1:
            # One message per frame is the norm: no list comprehension, no loop.
            event = self._receive_one(items[0], False)
            if type(event) is InvalidMessage and event.reply is not None:
                self._remember_refused(event.reply.id)
            return [event]
        events = [self._receive_one(item, True) for item in items]
        for event in events:
            if type(event) is InvalidMessage and event.reply is not None:
                self._remember_refused(event.reply.id)
        return events

    def _remember_refused(self, request_id: RequestId | None) -> None:
        # A refused request's id is used too: a later request reusing it is a
        # duplicate, refused with a null id, or the peer would read two responses
        # with that id (BP-04).
        if request_id is None or request_id in self._inbound:
            return
        refused = self._refused_ids
        if refused is None:
            refused = self._refused_ids = OrderedDict()
        refused[request_id] = None
        if len(refused) > self._remember_ids:
            refused.popitem(last=False)

    def _receive_one(self, item: Message | FrameError, batched: bool) -> Event:
        kind = type(item)
        # Exact-type dispatch first (the messages are final attrs classes).
        if kind is Response:
            return self._receive_response(item)  # type: ignore[arg-type]
        if kind is Request:
            return self._receive_request(item, batched)  # type: ignore[arg-type]
        if isinstance(item, FrameError):
            reply = item.reply
            if reply is not None and self._id_in_use(reply.id):
                # A malformed request reusing an id: answering with that id would
                # read as a response to the original request (same rule as for
                # duplicates; found by tests/protocol/test_connection.py).
                reply = ErrorResponse(None, reply.error)
            return self._invalid_message(reply, item.detail)
        if isinstance(item, Request):
            return self._receive_request(item, batched)
        if isinstance(item, Notification):
            return self._receive_notification(item)
        return self._receive_response(item)

    def _invalid_message(self, reply: ErrorResponse | None, detail: str) -> InvalidMessage:
        self._invalid += 1
        return InvalidMessage(reply, detail)

    def _refuse(self, request: Request, code: ErrorCode, message: str, data: Any = None) -> Event:
        return self._invalid_message(request.error(int(code), message, data), message)

    def _ignore(self, reason: str, detail: str) -> Ignored:
        self._ignored += 1
        return Ignored(reason, detail)

    def _id_in_use(self, request_id: RequestId | None) -> bool:
        """Whether the peer already used *request_id* (in flight, or remembered)."""
        refused = self._refused_ids
        return request_id is not None and (
            request_id in self._inbound
            or request_id in self._finished_inbound
            or (refused is not None and request_id in refused)
        )

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
        # The duplicate check comes first: any other refusal would carry the
        # duplicated id and read as a (second) response to the original request
        # (found by tests/protocol/test_connection.py).
        request_id = request.id
        refused = self._refused_ids
        if (
            request_id in self._inbound
            or request_id in self._finished_inbound
            or (refused is not None and request_id in refused)
        ):
            return self._refuse_duplicate(request_id)
        # The method and lifecycle checks read only the method, the state, the
        # revision and our role: a pass is cached per (method, state, revision,
        # batched) and role, in a cache all sessions share. The capability gate
        # below reads our own capabilities, which the owner may change, so it is
        # checked every time.
        key = (method, self.state, self.revision, batched, self.role)
        spec = _INBOUND_OK.get(key)
        if spec is None:
            spec = METHODS.get(method)
            if (
                spec is None
                or spec.kind is not Kind.REQUEST
                or not spec.exists_in(self.revision)
                or not spec.sender.allows(self.role.peer)
            ):
                return self._refuse(
                    request, ErrorCode.METHOD_NOT_FOUND, f"Method not found: {method}"
                )
            refusal = self._lifecycle_refusal(method, batched)
            if refusal is not None:
                return self._refuse(request, ErrorCode.INVALID_REQUEST, refusal)
            _INBOUND_OK[key] = spec
        gate = spec.gate(self.revision)
        if (
            gate is not None
            and gate.held_by(self.role, receiving=True)
            and not gate.declared_in(self.local_capabilities)
        ):
            return self._refuse(
                request,
                ErrorCode.METHOD_NOT_FOUND,
                f"Method not found: {method} ({gate} was not declared)",
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
        if method == "initialize":
            self.state = SessionState.INITIALIZING
        entry = RequestEntry(request.id, method, Direction.INBOUND, self.clock(), token)
        self._inbound[request.id] = entry
        if token is not None:
            self._inbound_tokens[token] = entry
        self._peak_inbound = max(self._peak_inbound, len(self._inbound))
        if self.observing:
            self.observer.on_transition(entry.snapshot(), None)
        return RequestReceived(request, spec, params_or_error)

    def _lifecycle_refusal(self, method: str, batched: bool) -> str | None:
        state = self.state
        if state is SessionState.CLOSED:
            return "The session is closed"
        if method == "initialize":
            if batched:
                return "initialize must not be part of a JSON-RPC batch"  # LC-12
            if self.role is Role.SERVER and state is SessionState.NEW:
                return None
            return "The session is already initialized"
        if method in _EARLY_REQUESTS or state is SessionState.OPERATING:
            return None
        if self.role is Role.SERVER and state is SessionState.INITIALIZED:
            return None  # result sent; initialized may still be in flight
        return f"Received {method!r} before initialization completed"

    def _structure_params(self, spec: MethodSpec, params: JSONObject | None) -> Any:
        if params is None:
            if spec.params_required:
                return ErrorObject(
                    int(ErrorCode.INVALID_PARAMS),
                    f"Invalid params for {spec.name}: params are required",
                )
            return None
        if spec.params_type is None:
            return None
        try:
            return self.converter.structure(params, spec.params_type)
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
            or not spec.exists_in(self.revision)
            or not spec.sender.allows(self.role.peer)
        ):
            return self._ignore("unknown-method", f"notification {method!r} ignored")
        params = self._structure_params(spec, note.params)
        if isinstance(params, ErrorObject):
            return self._ignore("malformed", f"{method}: {params.message}: {params.data}")
        if method == "notifications/initialized":
            if self.role is not Role.SERVER or self.state is not SessionState.INITIALIZED:
                return self._ignore("unexpected", f"{method} in state {self.state.value}")
            self.state = SessionState.OPERATING
        return NotificationReceived(method, spec, params, note.params)

    def _receive_cancel(self, params: JSONObject | None) -> Event:
        request_id = (params or {}).get("requestId")
        reason = (params or {}).get("reason")
        if not is_valid_request_id(request_id) or not isinstance(reason, str | None):
            return self._ignore("malformed", "notifications/cancelled without a valid requestId")
        entry = self._inbound.get(request_id)  # type: ignore[arg-type]
        if entry is None:
            entry = self._finished_inbound.get(request_id)  # type: ignore[arg-type]
            if entry is None:
                return self._ignore("unknown-id", f"cancel for unknown id {request_id!r}")
        if entry.method == "initialize":
            entry.late_events.append("peer cancel refused: initialize is not cancellable")
            return self._ignore("not-cancellable", "initialize cannot be cancelled (CN-03)")
        if entry.state.is_terminal:
            return self._receive_late_cancel(entry, reason)
        entry.request_cancel(CancelOrigin.PEER, reason)  # sets peer_cancelled
        return CancelReceived(entry.id, reason)

    def _receive_late_cancel(self, entry: RequestEntry, reason: str | None) -> Event:
        """A peer cancel for a request whose handler already finished.

        If its reply has not been written yet (it waits in the writer's queue),
        the reply is suppressed: after the peer's cancel no response is ever sent
        (CN-05, A-01). The record keeps its terminal state (cancel requested is
        not cancelled) and notes the cancel. If the reply was already written,
        the cancel crossed it on the wire and is ignored (CN-06), and recorded.
        """
        if entry.reply_written or entry.peer_cancelled:
            entry.late_events.append(f"cancel by peer in {entry.state.value}: ignored")
            return self._ignore("late", f"cancel for finished id {entry.id!r}")
        entry.peer_cancelled = True
        if entry.cancel_origin is None:
            entry.cancel_origin = CancelOrigin.PEER
            entry.cancel_reason = reason
        entry.late_events.append(
            f"cancel by peer in {entry.state.value}: the unwritten reply is suppressed"
        )
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
            return self._ignore("malformed", "notifications/progress with invalid fields")
        entry = self._outbound.get(token)  # type: ignore[arg-type]
        if entry is None or entry.progress_token != token:
            return self._ignore("unknown-id", f"progress for unknown token {token!r}")
        if entry.state is not RequestState.RUNNING:
            entry.late_events.append(f"progress in {entry.state.value}")
            return self._ignore("late", f"progress for {token!r} in {entry.state.value}")
        if entry.progress is not None and value <= entry.progress.progress:  # type: ignore[operator]
            entry.late_events.append(f"non-increasing progress {value!r}")
            return self._ignore("non-monotonic", f"progress {value!r} did not increase (PG-04)")
        entry.progress = Progress(value, total, message)  # type: ignore[arg-type]
        return ProgressReceived(entry.id, entry.progress)

    def _receive_response(self, response: Response | ErrorResponse) -> Event:
        if response.id is None:
            error = response.error if isinstance(response, ErrorResponse) else None
            return self._ignore("unknown-id", f"error without id from the peer: {error}")
        entry = self._outbound.get(response.id)
        if entry is None or entry.state is not RequestState.RUNNING:
            if entry is not None:
                entry.late_events.append(f"response in {entry.state.value}")
            else:
                for old in self._history:
                    if old.direction is Direction.OUTBOUND and old.id == response.id:
                        old.late_events.append("late response")
                        return self._ignore("late", f"late response for {response.id!r}")
            return self._ignore("unknown-id", f"response for unknown id {response.id!r}")
        if isinstance(response, ErrorResponse):
            self._finish(entry, RequestEvent.FAIL, error=response.error)
            return ErrorReceived(entry.id, response.error, remote=True)
        spec = METHODS[entry.method]
        try:
            result: Any = self.converter.structure(response.result, spec.result_type)
        except Exception as exc:
            error = ErrorObject(
                int(ErrorCode.INVALID_PARAMS),
                f"Invalid result for {entry.method} from the peer",
                {"errors": describe_structure_error(exc)},
            )
            self._finish(entry, RequestEvent.FAIL, error=error)
            return ErrorReceived(entry.id, error, remote=False)
        self._finish(entry, RequestEvent.COMPLETE)
        return ResponseReceived(entry.id, result)

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
                not declare (LC-11).
        """
        self._check_outbound(method, Kind.REQUEST)
        if method == "initialize":
            if self.role is not Role.CLIENT or self.state is not SessionState.NEW:
                raise LocalProtocolError("initialize may only be sent once, by the client")
            self.state = SessionState.INITIALIZING
        elif method not in _EARLY_REQUESTS and self.state is not SessionState.OPERATING:
            raise LocalProtocolError(
                f"cannot send {method!r} in state {self.state.value} (LC-05/LC-06)"
            )
        request_id = self._next_id
        self._next_id += 1
        raw = self._unstructure(params)
        if want_progress:
            raw = dict(raw or {})
            raw["_meta"] = {**raw.get("_meta", {}), "progressToken": request_id}
        entry = RequestEntry(
            request_id,
            method,
            Direction.OUTBOUND,
            self.clock(),
            request_id if want_progress else None,
        )
        self._outbound[request_id] = entry
        if self.observing:
            self.observer.on_transition(entry.snapshot(), None)
        return Request(request_id, method, raw)

    def send_notification(self, method: str, params: Any = None) -> Notification:
        """Make an outbound notification.

        Raises:
            LocalProtocolError: for ``notifications/cancelled`` and
                ``notifications/progress``, which only :meth:`cancel_outbound` and
                :meth:`progress_notification` make (they enforce CN-02, CN-03,
                PG-04, PG-07 and PG-10), and as :meth:`send_request` otherwise.
        """
        if method in ("notifications/cancelled", "notifications/progress"):
            raise LocalProtocolError(
                f"{method} is made by cancel_outbound()/progress_notification(), which "
                "enforce its rules"
            )
        self._check_outbound(method, Kind.NOTIFICATION)
        if (
            self.state is not SessionState.OPERATING
            and method not in _EARLY_NOTIFICATIONS
            and not (method == "notifications/initialized" and self.role is Role.CLIENT)
        ):
            raise LocalProtocolError(f"cannot send {method!r} in state {self.state.value}")
        return Notification(method, self._unstructure(params))

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
        """The handler failed: record FAILED; None if the peer cancelled."""
        entry = self._inbound.get(request_id)
        if entry is None:
            return None
        self._finish(entry, RequestEvent.FAIL, error=error)
        if entry.peer_cancelled:
            return None
        return ErrorResponse(request_id, error)

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
        (PG-07), or it has ended (PG-10).

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
        params: JSONObject = {"progressToken": entry.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None and self.revision != "2024-11-05":
            params["message"] = message
        return Notification("notifications/progress", params)

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
        if reason:
            params["reason"] = reason
        return Notification("notifications/cancelled", params)

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

    def close(self, reason: str) -> None:
        """Move to CLOSED (idempotent); every later send is refused."""
        if self.state is not SessionState.CLOSED:
            self.state = SessionState.CLOSED
            self.close_reason = reason

    # ---------------------------------------------------------- observation

    def requests(self) -> list[RequestRecord]:
        """Snapshots: recent finished records, then in-flight ones."""
        entries: Iterable[RequestEntry] = [
            *self._history,
            *self._inbound.values(),
            *self._outbound.values(),
        ]
        return [entry.snapshot() for entry in entries]

    def record(self, direction: Direction, request_id: RequestId) -> RequestRecord | None:
        """The record of one request, in flight or in the history."""
        table = self._inbound if direction is Direction.INBOUND else self._outbound
        entry = table.get(request_id)
        if entry is None:
            for old in reversed(self._history):
                if old.direction is direction and old.id == request_id:
                    return old.snapshot()
            return None
        return entry.snapshot()

    def outbound_entry(self, request_id: RequestId) -> RequestEntry | None:
        return self._outbound.get(request_id)

    def inbound_entry(self, request_id: RequestId) -> RequestEntry | None:
        return self._inbound.get(request_id)

    def in_flight(self, direction: Direction) -> list[RequestId]:
        table = self._inbound if direction is Direction.INBOUND else self._outbound
        return list(table)

    def statistics(self) -> ProtocolStatistics:
        return ProtocolStatistics(
            in_flight_inbound=len(self._inbound),
            in_flight_outbound=len(self._outbound),
            peak_in_flight_inbound=self._peak_inbound,
            completed=self._completed,
            failed=self._failed,
            cancelled=self._cancelled,
            ignored_events=self._ignored,
            invalid_messages=self._invalid,
        )

    # ------------------------------------------------------------- internals

    def _transition(
        self, entry: RequestEntry, event: RequestEvent, *, error: ErrorObject | None = None
    ) -> RequestState | None:
        old = entry.apply(event, self.clock())
        if old is not None:
            if error is not None:
                entry.error = error
            if self.observing:
                self.observer.on_transition(entry.snapshot(), old)
        return old

    def _finish(
        self, entry: RequestEntry, event: RequestEvent, *, error: ErrorObject | None = None
    ) -> None:
        # _transition inlined: this runs twice per request.
        old_state = entry.apply(event, self.clock())
        if old_state is None:
            return
        if error is not None:
            entry.error = error
        if self.observing:
            self.observer.on_transition(entry.snapshot(), old_state)
        state = entry.state
        if state is RequestState.COMPLETED:
            self._completed += 1
        elif state is RequestState.FAILED:
            self._failed += 1
        else:
            self._cancelled += 1
        history = self._history
        history.append(entry)
        if type(history) is list and len(history) > min(_SHORT_HISTORY, self._history_size):
            self._history = deque(history, maxlen=self._history_size)
        if entry.direction is Direction.OUTBOUND:
            self._outbound.pop(entry.id, None)
        else:
            self._inbound.pop(entry.id, None)
            finished = self._finished_inbound
            finished[entry.id] = entry
            if len(finished) > self._remember_ids:
                _, old = finished.popitem(last=False)
                if old.progress_token is not None and (
                    self._inbound_tokens.get(old.progress_token) is old
                ):
                    del self._inbound_tokens[old.progress_token]

    def _find_finished_inbound(self, request_id: RequestId | None) -> RequestEntry | None:
        if request_id is None:
            return None
        return self._finished_inbound.get(request_id) or self._inbound.get(request_id)


_BAD_TOKEN: Any = object()


def _progress_token(params: JSONObject | None) -> Any:
    if not params:
        return None
    meta = params.get("_meta")
    if not isinstance(meta, dict) or "progressToken" not in meta:
        return None
    token = meta["progressToken"]
    return token if is_valid_request_id(token) else _BAD_TOKEN


def _is_number(value: Any) -> bool:
    return type(value) in (int, float) and value == value  # excludes bool and NaN


def describe_structure_error(exc: BaseException) -> list[str]:
    """Readable, path-labelled lines for a cattrs structuring failure."""
    if isinstance(exc, cattrs.BaseValidationError):
        return cattrs.transform_error(exc)
    return [str(exc)]
