"""``Receiver``: what one side of a session does with each inbound frame.

:meth:`Receiver.receive_data` turns a frame into events and never raises for
bad peer input: every problem becomes an :class:`InvalidMessage` (with the
error response owed to the peer, if any) or an :class:`Ignored` event. A request
is checked in a fixed order, so that each refusal carries the right code and
never reads as a second response to an earlier request:

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

Responses, cancellations and progress for unknown, finished or foreign ids are
ignored and recorded (CN-04, CN-06, PG-10). :class:`~trio_mcp.protocol.Connection`
builds on this class with the sending side.
"""

from __future__ import annotations

from typing import Any

import cattrs

from ._book import RequestBook
from ._codec import FrameError, decode
from ._errors import ErrorCode
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
from ._lifecycle import BATCH_REVISION, Role, SessionState
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
from ._requests import CancelOrigin, Direction, Progress, RequestEntry, RequestEvent, RequestState

# Requests and notifications either side may send before OPERATING (LC-05, LC-06).
EARLY_REQUESTS = frozenset({"ping"})
EARLY_NOTIFICATIONS = frozenset(
    {"notifications/message", "notifications/progress", "notifications/cancelled"}
)

#: Inbound requests (method, state, revision, batched, our role) that passed the
#: method and lifecycle checks of ``_receive_request``. Those checks read nothing
#: else (METHODS is static), so one cache serves every session: bounded by the
#: methods table, and no per-session dict.
_INBOUND_OK: dict[tuple[str, SessionState, str | None, bool, Role], MethodSpec] = {}


class Receiver(RequestBook):
    """The receiving half of :class:`~trio_mcp.protocol.Connection` (which sets up
    the attributes below and is the only class made from it)."""

    # The protocol state this half reads; Connection.__init__ sets it.
    __slots__ = (
        "converter",
        "local_capabilities",
        "max_message_size",
        "revision",
        "role",
        "state",
    )
    converter: cattrs.Converter
    local_capabilities: JSONObject
    max_message_size: int
    revision: str | None
    role: Role
    state: SessionState

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
                self._refusing(event.reply.id)
            return [event]
        events = [self._receive_one(item, True) for item in items]
        for event in events:
            if type(event) is InvalidMessage and event.reply is not None:
                self._refusing(event.reply.id)
        return events

    def _refusing(self, request_id: RequestId | None) -> None:
        # A refusal carrying an id the peer used before (and had answered,
        # or it would carry a null id): the old entry must go, or encode()
        # would take the refusal for the old request's reply and suppress it.
        if request_id is not None and request_id in self._finished_inbound:
            self._forget_finished(request_id)

    def _receive_one(self, item: Message | FrameError, batched: bool) -> Event:
        kind = type(item)
        # Exact-type dispatch first (the messages are final attrs classes).
        if kind is Response:
            return self._receive_response(item)  # type: ignore[arg-type]
        if kind is Request:
            return self._receive_request(item, batched)  # type: ignore[arg-type]
        if isinstance(item, FrameError):
            if item.response_id is not None:
                failed = self._fail_call(item.response_id, item.detail)
                if failed is not None:
                    return failed
            if self.role is Role.CLIENT:
                if item.too_large:
                    self._invalid += 1
                    return InvalidMessage(None, item.detail, fatal=True)
                if item.reply is not None and item.reply.error.code == ErrorCode.PARSE_ERROR:
                    # A line that is not JSON from a server is noise (a stray
                    # print, a log line): counted, not answered (reliability F-06).
                    return self._invalid_message(None, item.detail)
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

    def _fail_call(self, request_id: RequestId, detail: str) -> ErrorReceived | None:
        """A malformed response for one of our requests in flight: fail it now
        (J-07, J-08), rather than leave its caller to its timeout."""
        entry = self._outbound.get(request_id)
        if entry is None or entry.state is not RequestState.RUNNING:
            return None
        self._invalid += 1
        error = ErrorObject(
            int(ErrorCode.INVALID_PARAMS),
            f"Malformed response for {entry.method} from the peer",
            {"errors": [detail]},
        )
        self._finish(entry, RequestEvent.FAIL, error=error)
        return ErrorReceived(entry.id, error, remote=False)

    def _invalid_message(self, reply: ErrorResponse | None, detail: str) -> InvalidMessage:
        self._invalid += 1
        return InvalidMessage(reply, detail)

    def _refuse(self, request: Request, code: ErrorCode, message: str, data: Any = None) -> Event:
        return self._invalid_message(request.error(int(code), message, data), message)

    def _ignore(self, reason: str, detail: str) -> Ignored:
        self._ignored += 1
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
        # The duplicate check comes first: any other refusal would carry the
        # duplicated id and read as a (second) response to the original request
        # (found by tests/protocol/test_connection.py).
        request_id = request.id
        if self._id_in_use(request_id):
            return self._refuse_duplicate(request_id)
        # Used before, and answered: accepted (C-02). The peer breaks BP-04, but
        # deployed clients do this (some use id 1 for everything), and refusing
        # with a null id would leave their call unanswered.
        reused = request_id in self._finished_inbound
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
        if reused:
            self._forget_finished(request_id)
            self._reused += 1
        entry = RequestEntry(request.id, method, Direction.INBOUND, self.clock(), token)
        self._inbound[request.id] = entry
        if token is not None:
            self._inbound_tokens[token] = entry
        self._peak_inbound = max(self._peak_inbound, len(self._inbound))
        if self.observing:
            self.observer.on_transition(entry.snapshot(), None)
        return RequestReceived(request, spec, params_or_error, reused)

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
        if method in EARLY_REQUESTS or state is SessionState.OPERATING:
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
